package packages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// pipHelp says what to do when pip cannot run on the host.
const pipHelp = "install pip on the host (Debian/Ubuntu: apt install python3-pip; elsewhere: python3 -m ensurepip --user), or point --pip at a pip command"

// Available says whether pip runs on the host, with its version, or why
// not. Its error is for the host (it names the command), not the sandbox.
func (in *Installer) Available(ctx context.Context) (string, error) {
	out, err := in.runPip(ctx, false, nil, "--version")
	if err != nil {
		detail := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			detail = lastLines(string(ee.Stderr), 2)
		}
		return "", fmt.Errorf("on-demand installs need pip on the host, and %q does not run (%s): %s",
			strings.Join(in.opts.Pip, " "), detail, pipHelp)
	}
	return strings.TrimSpace(string(out)), nil
}

// runPip runs pip with args and returns what it wrote on stdout; what it
// wrote on stderr goes to stderr, or, when that is nil, into the error
// ([exec.ExitError]).
//
// pip runs in a fresh, empty directory of its own (mode 0700), removed
// afterwards, so that no name pip is given is a file there and nothing
// there is on Python's path (PYTHONSAFEPATH as well). Unless user (only
// to read the user's pip configuration, see [Installer.indexArgs]), pip
// runs isolated: PIP_CONFIG_FILE is the null device, so that it reads no
// global, user or site pip.conf; --isolated and the environment without
// PIP_* variables, so that it reads no setting from the environment;
// without PYTHONPATH, PYTHONSTARTUP and PYTHONHOME; and it asks nothing.
func (in *Installer) runPip(ctx context.Context, user bool, stderr io.Writer, args ...string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "codebridge-pip-")
	if err != nil {
		return nil, fmt.Errorf("making an empty directory for pip: %w", err)
	}
	defer os.RemoveAll(dir)
	if !user {
		args = append([]string{"--isolated", "--no-input", "--disable-pip-version-check"}, args...)
	}
	cmd := exec.CommandContext(ctx, in.opts.Pip[0], append(slices.Clone(in.opts.Pip[1:]), args...)...)
	cmd.Dir = dir
	cmd.Env = pipEnv(user)
	cmd.Stderr = stderr
	return cmd.Output()
}

// pipEnv is pip's environment: the host's, without pip's and Python's own
// settings unless user.
func pipEnv(user bool) []string {
	env := []string{"PYTHONSAFEPATH=1"}
	if !user {
		env = append(env, "PIP_CONFIG_FILE="+os.DevNull)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PYTHONSAFEPATH":
		case !user && (strings.HasPrefix(k, "PIP_") || k == "PYTHONPATH" || k == "PYTHONSTARTUP" || k == "PYTHONHOME"):
		default:
			env = append(env, kv)
		}
	}
	return env
}

// download runs pip download for reqs on target into a fresh directory
// and moves the wheels into the cache. reqs are canonical requirements
// ([Requirement.String]); pip takes wheels only, so nothing is built.
func (in *Installer) download(ctx context.Context, root string, reqs []string, t Target) (*Set, error) {
	if _, err := in.Available(ctx); err != nil {
		in.opts.Log.Warn("packages: pip does not run", "err", err)
		return nil, &Error{Kind: NoPip, Msg: "on-demand installs need pip on the host, and the host's pip command does not run: the user can " + pipHelp}
	}
	dest, err := os.MkdirTemp(root, "download-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dest)
	args := []string{"download", "--only-binary=:all:", "--progress-bar=off", "--dest", dest,
		"--python-version", t.Python, "--implementation", t.Implementation}
	for _, abi := range t.ABIs {
		args = append(args, "--abi", abi)
	}
	for _, p := range t.Platforms {
		args = append(args, "--platform", p)
	}
	args = append(args, in.indexArgs(ctx)...)
	args = append(args, "--")
	args = append(args, reqs...)
	var stderr bytes.Buffer
	if _, err := in.runPip(ctx, false, &stderr, args...); err != nil {
		if ctx.Err() != nil {
			return nil, &Error{Kind: Stopped, Msg: fmt.Sprintf("the install was stopped before pip finished (%v): give the cell a longer timeout, such as run_python's timeout=120", ctx.Err())}
		}
		in.opts.Log.Warn("packages: pip download failed", "requirements", reqs, "err", err, "pip", pipErrors(stderr.String()))
		return nil, in.explain(ctx, reqs, t, stderr.String())
	}
	return in.collect(root, dest, reqs, t)
}

// collect moves the wheels pip downloaded into the cache.
func (in *Installer) collect(root, dir string, reqs []string, t Target) (*Set, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.whl"))
	if len(files) == 0 {
		return nil, &Error{Kind: Failed, Msg: fmt.Sprintf("pip downloaded no wheel for %s", strings.Join(reqs, " "))}
	}
	set := &Set{Requirements: reqs, Target: t, Index: in.opts.Index}
	for _, f := range files {
		w, err := in.store(root, f)
		if err != nil {
			return nil, fmt.Errorf("caching %s: %w", filepath.Base(f), err)
		}
		set.Wheels = append(set.Wheels, w)
		set.Downloaded += w.Size
	}
	return set, nil
}

// unreachable are words of pip's that say the index did not answer.
var unreachable = []string{"NewConnectionError", "Failed to establish a new connection", "Max retries exceeded",
	"Temporary failure in name resolution", "Name or service not known", "ConnectTimeout", "SSLError", "CERTIFICATE_VERIFY_FAILED", "ProxyError"}

// explain turns pip's failure into one of the closed set of kinds, with a
// message built by the host from the request alone: pip's words stay in
// the host's log, since they quote host paths and tracebacks. A
// requirement with no candidate is looked up again without the sandbox's
// tags, to tell a name the index does not have from a package with no
// wheel for the sandbox.
func (in *Installer) explain(ctx context.Context, reqs []string, t Target, stderr string) error {
	for _, w := range unreachable {
		if strings.Contains(stderr, w) {
			return &Error{Kind: Unreachable, Msg: "the host could not reach the package index: try again later; if it lasts, the user can check the host's network and codebridge's package_index setting"}
		}
	}
	if strings.Contains(stderr, "ResolutionImpossible") || strings.Contains(stderr, "conflicting dependencies") {
		return &Error{Kind: Conflict, Msg: fmt.Sprintf("the versions asked for (%s) conflict with each other or with their dependencies: ask for fewer or looser versions", strings.Join(reqs, " "))}
	}
	missing := ""
	if _, after, ok := strings.Cut(stderr, "No matching distribution found for "); ok {
		missing = strings.Fields(after + " ")[0]
	}
	name, err := Name(missing)
	if missing == "" || err != nil {
		return &Error{Kind: Failed, Msg: fmt.Sprintf("pip could not fetch %s for the sandbox (%s); the host's log says why", strings.Join(reqs, " "), t)}
	}
	if !in.exists(ctx, name) {
		return &Error{Kind: NotFound, Msg: fmt.Sprintf("the index has no package %s: check the spelling of the name", name)}
	}
	return &Error{Kind: NoWheel, Msg: fmt.Sprintf("%s has no wheel for the sandbox's Python (%s) on the index, only source or other platforms; the host downloads wheels only and never builds. Pick a version with a wheel, or build an image that has it: codebridge image build --packages %s",
		name, t, name)}
}

// exists asks the index whether it has any release of the normalized
// name, source or wheel, for any platform.
func (in *Installer) exists(ctx context.Context, name string) bool {
	args := append([]string{"index", "versions", name}, in.indexArgs(ctx)...)
	_, err := in.runPip(ctx, false, io.Discard, args...)
	return err == nil
}

// pipErrors keeps the lines of pip's stderr that say what went wrong, for
// the host's log.
func pipErrors(stderr string) string {
	var keep []string
	on := false
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasPrefix(line, "ERROR:") {
			on = true
		}
		if on && strings.TrimSpace(line) != "" {
			keep = append(keep, strings.TrimRight(line, " "))
		}
	}
	if len(keep) == 0 {
		return lastLines(stderr, 5)
	}
	if len(keep) > 30 {
		keep = keep[:30]
	}
	return strings.Join(keep, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
