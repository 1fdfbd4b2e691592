package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/sandbox"
)

// DefaultWorkspace keeps /workspace in an engine volume of the project the
// bridge works in (its working directory) and of the principal: files
// outlive the bridge, on local and remote engines alike; one project's
// files never show in another's; two bridges of one project share it.
const DefaultWorkspace = projectWorkspace

// projectWorkspace is the --workspace value of a volume per project.
const projectWorkspace = "project"

// ephemeralNames are the --workspace values that keep /workspace in a
// tmpfs that ends with the sandbox.
var ephemeralNames = map[string]bool{"ephemeral": true, "none": true, "tmpfs": true}

// workspaceFlags say what the sandbox's /workspace is and which host
// directories it sees besides.
type workspaceFlags struct {
	Workspace workspaceSetting `flag:"workspace" env:"CODEBRIDGE_WORKSPACE" default:"{DefaultWorkspace}" type:"where" parse:"workspace" usage:"the sandbox's /workspace: project (an engine volume of the working directory's project), an engine volume name, a host directory (a path), or ephemeral" doc:"The project is the working directory, or the first --root; a host directory is any value with a /, or starting with ~ or . (see docs/user-guide.md, A workspace that persists)."`
	Mounts    []sandbox.Mount  `flag:"mount,repeatable" env:"CODEBRIDGE_MOUNTS" type:"HOST[:CONTAINER][:ro|rw]" parse:"mounts" usage:"a host directory the code may read (repeatable; read-only unless :rw; default CONTAINER /mnt/NAME); the variable takes a ;-separated list"`
}

// persistent reports whether the workspace outlives the sandbox in an
// engine's volume (or claim).
func (g workspaceFlags) persistent() bool { return g.Workspace.project || g.Workspace.volume != "" }

// parseMounts reads a ;-separated list of mounts.
func parseMounts(v string) ([]sandbox.Mount, error) {
	var out []sandbox.Mount
	for _, one := range strings.Split(v, ";") {
		if one = strings.TrimSpace(one); one == "" {
			continue
		}
		m, err := parseMount(one)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// runPlan is what a command that runs the model's code derives from the
// settings and the host: the checked workspace and mounts, and the user
// the code runs as. The settings stay as the user gave them.
type runPlan struct {
	workspace *sandbox.Mount // nil: ephemeral
	// workspaceOf, serving HTTP, is each principal's workspace (nil:
	// every session's is its own, ephemeral).
	workspaceOf func(principal.Principal) *sandbox.Mount
	mounts      []sandbox.Mount
	user        string
}

// workspaceSetting is what --workspace asked for: nothing (ephemeral),
// the project's volume, a named engine volume, or a host directory.
type workspaceSetting struct {
	ephemeral bool
	project   bool
	volume    string
	dir       string
}

// parseWorkspace reads --workspace: "ephemeral", "project", a path (a
// host directory: it has a "/" or starts with "~" or "."), else a volume
// name.
func parseWorkspace(v string) (workspaceSetting, error) {
	v = strings.TrimSpace(v)
	switch {
	case ephemeralNames[strings.ToLower(v)]:
		return workspaceSetting{ephemeral: true}, nil
	case strings.ToLower(v) == projectWorkspace:
		return workspaceSetting{project: true}, nil
	case strings.ContainsRune(v, '/') || strings.HasPrefix(v, "~") || strings.HasPrefix(v, "."):
		return workspaceSetting{dir: v}, nil
	case volumeName(v):
		return workspaceSetting{volume: v}, nil
	}
	return workspaceSetting{}, fmt.Errorf("%q is not a workspace: give project, ephemeral, a volume name (letters, digits, . _ -) or a directory path", v)
}

func volumeName(v string) bool {
	if v == "" || len(v) > 128 {
		return false
	}
	for i, r := range v {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && strings.ContainsRune("._-", r)
		if !ok {
			return false
		}
	}
	return true
}

// parseMount reads one --mount HOST[:CONTAINER][:ro|rw] (read-only
// unless rw); the checks that need the file system come later.
func parseMount(v string) (sandbox.Mount, error) {
	parts := strings.Split(v, ":")
	m := sandbox.Mount{ReadOnly: true}
	if n := len(parts); n > 1 && (parts[n-1] == "ro" || parts[n-1] == "rw") {
		m.ReadOnly = parts[n-1] == "ro"
		parts = parts[:n-1]
	}
	if len(parts) > 2 || parts[0] == "" {
		return m, fmt.Errorf("%q is not HOST[:CONTAINER][:ro|rw] (paths with ':' cannot be mounted)", v)
	}
	m.Source = parts[0]
	if len(parts) == 2 {
		m.Target = parts[1]
	}
	return m, nil
}

// reservedTargets are container paths a mount may not take.
var reservedTargets = []string{"/", "/workspace", "/tmp", "/proc", "/sys", "/dev", "/run", "/etc", "/usr", "/bin", "/lib"}

// checkTarget says why a mount may not go to target, or is nil.
func checkTarget(target string) error {
	if !filepath.IsAbs(target) || filepath.Clean(target) != target {
		return fmt.Errorf("the container path %q must be absolute and clean (e.g. /mnt/project)", target)
	}
	for _, r := range reservedTargets {
		if target == r || r != "/" && r != "/workspace" && r != "/tmp" && strings.HasPrefix(target, r+"/") {
			return fmt.Errorf("the container path %q is the sandbox's own; use one under /mnt (the default) or /workspace", target)
		}
	}
	return nil
}

// host is what the checks of a host path know: the home directory (for
// ~), and the paths that must not reach the sandbox, with what each is.
type host struct {
	home    string
	guarded map[string]string
}

// guarded are host paths that must not reach the sandbox: the engine's
// sockets (control of the engine is control of the host), and
// codebridge's own configuration (~/MCPs, the --config files) and state.
func guarded(getenv func(string) string, up upstreamFlags, st stateFlags) map[string]string {
	g := map[string]string{
		"/run/podman/podman.sock": "the Podman engine's socket",
		"/var/run/docker.sock":    "the Docker engine's socket",
		"/run/docker.sock":        "the Docker engine's socket",
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		g[filepath.Join(d, "podman", "podman.sock")] = "the Podman engine's socket"
		g[filepath.Join(d, "docker.sock")] = "the Docker engine's socket"
	}
	for _, env := range []string{"DOCKER_HOST", "CONTAINER_HOST"} {
		if p, ok := strings.CutPrefix(getenv(env), "unix://"); ok {
			g[p] = "the engine's socket (" + env + ")"
		}
	}
	if up.home != "" {
		g[filepath.Join(up.home, "MCPs")] = "codebridge's server configuration (~/MCPs)"
	}
	for _, c := range up.Configs {
		g[c] = "a codebridge config file (--config)"
	}
	if st.StateDir != "" {
		g[st.StateDir] = "codebridge's state directory (skills, audit log)"
	}
	return g
}

// path expands ~ and makes p absolute, following symlinks, so that
// the checks see what the engine would mount.
func (h host) path(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = filepath.Join(h.home, p[1:])
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// checkSource says why a host directory may not be mounted, or is nil.
func (h host) checkSource(src string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if st.Mode()&fs.ModeSocket != 0 {
		return fmt.Errorf("%s is a socket; an engine's socket would give the sandbox control of the host", src)
	}
	if src == "/" {
		return errors.New("/ is the whole host: mount the project directory instead")
	}
	var held []string
	for _, g := range slices.Sorted(maps.Keys(h.guarded)) { // every one, in a fixed order
		real, err := filepath.EvalSymlinks(g)
		if err != nil {
			real = g
		}
		if within(real, src) {
			held = append(held, fmt.Sprintf("%s (%s)", h.guarded[g], g))
		}
	}
	if len(held) > 0 {
		return fmt.Errorf("%s holds %s, which must stay out of the sandbox: mount a directory below it instead", src, strings.Join(held, ", "))
	}
	return nil
}

// sandboxMounts checks the --mount settings and returns them for the
// sandbox. On a remote engine the paths are the engine host's: only the
// checks that do not need the file system apply then.
func (g workspaceFlags) sandboxMounts(engine string, h host) ([]sandbox.Mount, error) {
	var out []sandbox.Mount
	for _, m := range g.Mounts {
		if engine == sandbox.EngineKubernetes {
			return nil, fmt.Errorf("--mount %s refused: a sandbox Pod runs on a node of the cluster, whose files are not this machine's, "+
				"and a hostPath volume would give model-written code the node's filesystem; pass files with run_python's files argument, or use a local engine", m.Source)
		}
		src, err := h.path(m.Source)
		if err != nil {
			return nil, fmt.Errorf("--mount %s: %w", m.Source, err)
		}
		if err := h.checkSource(src); err != nil {
			return nil, fmt.Errorf("--mount %s refused: %w", m.Source, err)
		}
		if m.Target == "" {
			m.Target = "/mnt/" + filepath.Base(src)
		}
		if err := checkTarget(m.Target); err != nil {
			return nil, fmt.Errorf("--mount %s refused: %w", m.Source, err)
		}
		m.Source = src
		out = append(out, m)
	}
	return out, nil
}

// sandboxWorkspace is the persistent workspace for the sandbox, or nil
// for an ephemeral one, and the user the code runs as. A host directory is
// created when missing; the code runs as the user (or, for root, the
// directory is given to the sandbox's user), so that both can read and
// write its files.
func (g workspaceFlags) sandboxWorkspace(sb sandboxFlags, roots []string, h host) (*sandbox.Mount, string, error) {
	w := g.Workspace
	switch {
	case w.ephemeral:
		return nil, sb.User, nil
	case w.project:
		m, err := projectMount(principal.Local(), roots)
		return m, sb.User, err
	case w.volume != "":
		return &sandbox.Mount{Source: w.volume, Volume: true}, sb.User, nil
	}
	if sb.Engine == sandbox.EngineKubernetes {
		return nil, "", fmt.Errorf("--workspace %s: a host directory cannot be the workspace of a sandbox Pod, which runs on a node of the cluster "+
			"whose files are not this machine's: give project (a PersistentVolumeClaim of the project), a claim name, or ephemeral", w.dir)
	}
	dir := w.dir
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		dir = filepath.Join(h.home, dir[1:])
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("--workspace %s: %w", w.dir, err)
	}
	src, err := h.path(dir)
	if err != nil {
		return nil, "", fmt.Errorf("--workspace %s: %w", w.dir, err)
	}
	if err = h.checkSource(src); err != nil {
		return nil, "", fmt.Errorf("--workspace %s refused: %w", w.dir, err)
	}
	user, err := shareDir(src, sb.User)
	if err != nil {
		return nil, "", fmt.Errorf("--workspace %s: %w", w.dir, err)
	}
	return &sandbox.Mount{Source: src}, user, nil
}

// httpWorkspaces is how each HTTP session finds its workspace: with the
// kubernetes engine and --workspace project, the project's claim of the
// session's principal, so that no principal sees another's files; nil
// (every session's own, ephemeral) otherwise. The local engines' HTTP
// sessions stay ephemeral; a named workspace, which every principal
// would share, is refused.
func (g workspaceFlags) httpWorkspaces(engine string, roots []string) (func(principal.Principal) *sandbox.Mount, error) {
	w := g.Workspace
	if engine != sandbox.EngineKubernetes || w.ephemeral {
		return nil, nil
	}
	if !w.project {
		return nil, errors.New("--workspace: serving HTTP, each principal's workspace is its own: give project (a PersistentVolumeClaim " +
			"per principal of the project) or ephemeral")
	}
	dir, err := projectDir(roots)
	if err != nil {
		return nil, err
	}
	return func(p principal.Principal) *sandbox.Mount { return projectMountIn(p, dir) }, nil
}

// shareDir lets the sandbox's user write to a host workspace directory
// while its files stay the user's, and returns the user the code runs as:
// a normal user runs the code as themselves (unless --user was given);
// root gives the directory to the sandbox's user.
func shareDir(dir, user string) (string, error) {
	uid, gid := os.Getuid(), os.Getgid()
	if uid != 0 {
		if user == sandbox.DefaultUser {
			return strconv.Itoa(uid) + ":" + strconv.Itoa(gid), nil
		}
		return user, nil
	}
	su, sg, ok := strings.Cut(user, ":")
	u, err1 := strconv.Atoi(su)
	g, err2 := strconv.Atoi(sg)
	if !ok || err1 != nil || err2 != nil {
		return "", fmt.Errorf("the sandbox user %q is not numeric uid:gid, so the directory cannot be given to it", user)
	}
	return user, os.Chown(dir, u, g)
}

// planRun checks --workspace and --mount for a command that runs code
// (serve, exec) and returns its plan; the other commands' sandboxes
// (doctor's probe) stay ephemeral and unmounted. The sandbox's user, the
// roots, and codebridge's own files (which no mount may expose) come from
// the other groups; the settings stay as the user gave them.
func planRun(ws workspaceFlags, sb sandboxFlags, up upstreamFlags, st stateFlags, getenv func(string) string) (*runPlan, error) {
	h := host{home: up.home, guarded: guarded(getenv, up, st)}
	plan := &runPlan{}
	var err error
	if plan.workspace, plan.user, err = ws.sandboxWorkspace(sb, up.Roots, h); err != nil {
		return nil, err
	}
	if plan.mounts, err = ws.sandboxMounts(sb.Engine, h); err != nil {
		return nil, err
	}
	if err := (sandbox.Config{User: plan.user, Workspace: plan.workspace, Mounts: plan.mounts}).Validate(); err != nil {
		return nil, err
	}
	return plan, nil
}

// projectMount is the workspace volume of the project this bridge works
// in, for principal p: the first --root when one is given (a client that
// starts codebridge outside the project can name it so), else the
// working directory the client started it in; symlinks resolved.
func projectMount(p principal.Principal, roots []string) (*sandbox.Mount, error) {
	wd, err := projectDir(roots)
	if err != nil {
		return nil, err
	}
	return projectMountIn(p, wd), nil
}

// projectDir is the project's directory: the first --root, else the
// working directory, symlinks resolved.
func projectDir(roots []string) (string, error) {
	wd, err := os.Getwd()
	if len(roots) > 0 {
		wd, err = filepath.Abs(roots[0])
	}
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		return "", fmt.Errorf("--workspace project: the project's directory: %w; start codebridge in the project's directory (or give --root DIR), or give --workspace NAME or ephemeral", err)
	}
	return wd, nil
}

// projectMountIn is the workspace volume of project directory dir for
// principal p.
func projectMountIn(p principal.Principal, dir string) *sandbox.Mount {
	return &sandbox.Mount{Source: projectVolume(p, dir), Volume: true,
		Labels: map[string]string{sandbox.LabelProject: dir, sandbox.LabelPrincipal: p.String()}}
}

// projectVolume names the workspace volume of a project directory and a
// principal: "codebridge-ws-" and the directory's name, made safe, for
// people, then a digest of the principal's key and the whole path, which
// tells projects (and principals) apart.
func projectVolume(p principal.Principal, dir string) string {
	sum := sha256.Sum256([]byte(p.Key() + "\x00" + dir))
	var base strings.Builder
	for _, r := range strings.ToLower(filepath.Base(dir)) {
		if base.Len() >= 24 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			base.WriteRune(r)
		}
	}
	name := "codebridge-ws-"
	if base.Len() > 0 {
		name += base.String() + "-"
	}
	return name + hex.EncodeToString(sum[:6])
}
