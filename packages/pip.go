package packages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// pipHelp says what to do when pip cannot run on the host.
const pipHelp = "install pip on the host (Debian/Ubuntu: apt install python3-pip; elsewhere: python3 -m ensurepip --user), or point --pip at a pip command"

// Available says whether pip runs on the host, with its version, or why not.
func (in *Installer) Available(ctx context.Context) (string, error) {
	out, err := in.pip(ctx, "--version").Output()
	if err != nil {
		return "", in.noPip(err)
	}
	return strings.TrimSpace(string(out)), nil
}

func (in *Installer) noPip(err error) error {
	detail := err.Error()
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		detail = lastLines(string(ee.Stderr), 2)
	}
	return &Error{Kind: "pip", Msg: fmt.Sprintf("on-demand installs need pip on the host, and %q does not run (%s): %s",
		strings.Join(in.opts.Pip, " "), detail, pipHelp)}
}

// pip is a pip command with args, with pip's prompts and version check off.
func (in *Installer) pip(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, in.opts.Pip[0], append(in.opts.Pip[1:], args...)...)
	cmd.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PIP_PROGRESS_BAR=off")
	return cmd
}

// download runs pip download for reqs on target into a fresh directory
// and moves the wheels into the cache.
func (in *Installer) download(ctx context.Context, root string, reqs []string, t Target) (*Set, error) {
	if _, err := in.Available(ctx); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(root, "download-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	args := []string{"download", "--only-binary=:all:", "--dest", tmp,
		"--python-version", t.Python, "--implementation", t.Implementation}
	for _, abi := range t.ABIs {
		args = append(args, "--abi", abi)
	}
	for _, p := range t.Platforms {
		args = append(args, "--platform", p)
	}
	if in.opts.Index != "" {
		args = append(args, "--index-url", in.opts.Index)
	}
	args = append(args, "--")
	args = append(args, reqs...)
	var stderr bytes.Buffer
	cmd := in.pip(ctx, args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the install was stopped before pip finished (%v): give the cell a longer timeout, such as run_python's timeout=120", ctx.Err())
		}
		return nil, in.explain(ctx, reqs, t, stderr.String())
	}
	return in.collect(root, tmp, reqs, t)
}

// collect moves the wheels pip downloaded into the cache.
func (in *Installer) collect(root, dir string, reqs []string, t Target) (*Set, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.whl"))
	if len(files) == 0 {
		return nil, &Error{Kind: "resolve", Msg: fmt.Sprintf("pip downloaded no wheel for %s", strings.Join(reqs, " "))}
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

// explain turns pip's failure into a message: pip's own words, and what
// they mean here. A requirement with no candidate is looked up again
// without the sandbox's tags, to tell a name the index does not have from
// a package with no wheel for the sandbox.
func (in *Installer) explain(ctx context.Context, reqs []string, t Target, stderr string) error {
	said := pipErrors(stderr)
	missing := ""
	if i := strings.Index(said, "No matching distribution found for "); i >= 0 {
		missing = strings.Fields(said[i+len("No matching distribution found for "):] + " ")[0]
	}
	if missing == "" {
		return &Error{Kind: "resolve", Msg: fmt.Sprintf("pip could not install %s for the sandbox (%s). pip says:\n%s", strings.Join(reqs, " "), t, said)}
	}
	if in.exists(ctx, missing) {
		return &Error{Kind: "resolve", Msg: fmt.Sprintf("%s has no wheel for the sandbox's Python (%s) on the index, only source or other platforms; the host downloads wheels only and never builds. Pick a version with a wheel, or build an image that has it: codebridge image build --packages %s. pip says:\n%s",
			missing, t, missing, said)}
	}
	return &Error{Kind: "resolve", Msg: fmt.Sprintf("the index has no package %s: check the spelling of the name. pip says:\n%s", missing, said)}
}

// exists asks the index whether it has any release of the requirement,
// source or wheel, for any platform.
func (in *Installer) exists(ctx context.Context, req string) bool {
	name, err := Name(req)
	if err != nil {
		return false
	}
	args := []string{"index", "versions", name}
	if in.opts.Index != "" {
		args = append(args, "--index-url", in.opts.Index)
	}
	return in.pip(ctx, args...).Run() == nil
}

// pipErrors keeps the lines of pip's stderr that say what went wrong.
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
