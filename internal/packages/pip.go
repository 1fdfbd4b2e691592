package packages

import (
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
	version := strings.TrimSpace(string(out))
	if f := strings.Fields(version); len(f) >= 2 && f[0] == "pip" {
		if v, err := parseVersion(f[1]); err == nil && !v.Satisfies([]string{">=" + minPip}) {
			return "", fmt.Errorf("%w: %q is pip %s, and on-demand installs need pip %s or newer (its --report, which names the URL of a wheel before it is fetched): python3 -m pip install --user --upgrade pip, or point --pip at a newer pip",
				errOldPip, strings.Join(in.opts.Pip, " "), f[1], minPip)
		}
	}
	return version, nil
}

// minPip is the oldest pip the host can use: the first with pip install
// --dry-run --report.
const minPip = "22.2"

// errOldPip is [Installer.Available]'s error for a pip older than minPip.
var errOldPip = errors.New("the host's pip is too old")

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

// download resolves reqs (canonical requirements, [requirement.String])
// and their dependencies for t into a fresh directory ([Installer.resolve]:
// the host reads every dependency itself, and pip fetches only wheels by
// name), and moves the wheels into the cache.
func (in *Installer) download(ctx context.Context, root string, reqs []string, t Target) (*Set, error) {
	if _, err := in.Available(ctx); err != nil {
		in.opts.Log.Warn("packages: pip does not run", "err", err)
		msg := "on-demand installs need pip on the host, and the host's pip command does not run: the user can " + pipHelp
		if errors.Is(err, errOldPip) {
			msg = "on-demand installs need pip " + minPip + " or newer on the host: the user can upgrade it (python3 -m pip install --user --upgrade pip), or point --pip at a newer pip"
		}
		return nil, &Error{Kind: NoPip, Msg: msg}
	}
	dest, err := os.MkdirTemp(root, "download-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dest)
	dists, err := in.resolve(ctx, dest, reqs, t)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			in.opts.Log.Warn("packages: an install was refused or failed", "requirements", reqs, "why", pe.Msg)
		}
		return nil, err
	}
	set := &Set{Requirements: reqs, Target: t, Index: in.opts.Index}
	for _, d := range dists {
		w, err := in.store(root, d.file)
		if err != nil {
			return nil, fmt.Errorf("caching %s: %w", filepath.Base(d.file), err)
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
func (in *Installer) explain(ctx context.Context, reqs []string, t Target, stderr string, wants map[string]*want) error {
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
	w := wants[name]
	if w == nil {
		w = &want{name: name, by: []string{""}}
	}
	if !in.exists(ctx, name) {
		if by := slices.DeleteFunc(slices.Clone(w.by), func(s string) bool { return s == "" }); len(by) > 0 {
			return &Error{Kind: NotFound, Msg: fmt.Sprintf("the index has no package %s, which %s depends on: install another version of what needs it, or ask the index's maintainers for %s", name, strings.Join(by, " and "), name)}
		}
		return &Error{Kind: NotFound, Msg: fmt.Sprintf("the index has no package %s: check the spelling of the name", name)}
	}
	if len(w.asks) > 1 {
		return &Error{Kind: Conflict, Msg: fmt.Sprintf("the versions asked for (%s) conflict with each other or with their dependencies: no wheel of %s on the index is %s. Ask for fewer or looser versions", strings.Join(reqs, " "), name, strings.Join(w.asks, " and "))}
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
