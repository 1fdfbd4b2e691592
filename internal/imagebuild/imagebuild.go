// Package imagebuild builds the sandbox image: from an official Python
// base image when a registry is reachable, else from Debian packages with
// debootstrap (the script is embedded, so an installed binary can do it).
package imagebuild

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/codebridge/codebridge/sandbox"
)

//go:embed debootstrap.sh
var debootstrapScript string

// DefaultTag is the image a build produces when no tag is given. It is the
// one place this name is written: codebridge uses this image by default
// whenever the engine has it (else [sandbox.DefaultImage], the registry
// image), and the Makefile and the tests read it from here.
const DefaultTag = "localhost/codebridge-python:bookworm"

// Options say what to build.
type Options struct {
	// Tag names the image. Empty means DefaultTag.
	Tag string
	// Packages are Python packages to add (numpy, pandas, matplotlib...).
	Packages []string
	// Engine is the CLI that builds: "podman" or "docker". Empty picks
	// podman when installed.
	Engine string
	// Base is the registry image tried first. Empty means
	// [sandbox.DefaultImage].
	Base string
	// DebianOnly skips the registry and builds from Debian packages.
	DebianOnly bool
	// Progress receives the build's output.
	Progress io.Writer
}

// Build builds the image and returns its tag.
func Build(ctx context.Context, o Options) (string, error) {
	if o.Tag == "" {
		o.Tag = DefaultTag
	}
	if o.Base == "" {
		o.Base = sandbox.DefaultImage
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Engine == "" {
		o.Engine = "docker"
		if _, err := exec.LookPath("podman"); err == nil {
			o.Engine = "podman"
		}
	}
	if _, err := exec.LookPath(o.Engine); err != nil {
		return "", fmt.Errorf("imagebuild: %s is not installed: install Podman or Docker first", o.Engine)
	}
	if !o.DebianOnly {
		fmt.Fprintf(o.Progress, "== trying the registry base %s\n", o.Base)
		if err := o.run(ctx, nil, o.Engine, "pull", o.Base); err == nil {
			return o.Tag, o.fromRegistry(ctx)
		}
		fmt.Fprintf(o.Progress, "== no registry reachable; building from Debian packages instead\n")
	}
	return o.Tag, o.fromDebian(ctx)
}

func (o Options) fromRegistry(ctx context.Context) error {
	df := "FROM " + o.Base + "\n"
	if len(o.Packages) > 0 {
		df += "RUN pip install --no-cache-dir " + strings.Join(o.Packages, " ") + "\n"
	}
	fmt.Fprintf(o.Progress, "== building %s from %s\n", o.Tag, o.Base)
	return o.run(ctx, strings.NewReader(df), o.Engine, "build", "-t", o.Tag, "-f", "-", ".")
}

func (o Options) fromDebian(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("imagebuild: building from Debian packages needs root (debootstrap): run `%s`; %s", SudoBuild, RootlessCopy(o.Tag))
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return fmt.Errorf("imagebuild: debootstrap is not installed: apt install debootstrap")
	}
	var debs []string
	for _, p := range o.Packages {
		debs = append(debs, DebianPackage(p))
	}
	fmt.Fprintf(o.Progress, "== building %s from Debian bookworm (about a minute)\n", o.Tag)
	cmd := []string{"-s", "--", o.Tag, strings.Join(debs, ",")}
	env := append(os.Environ(), "CODEBRIDGE_BUILD_ENGINE="+o.Engine)
	return o.runEnv(ctx, strings.NewReader(debootstrapScript), env, "bash", cmd...)
}

// SudoBuild is the command that builds the image as root. sudo resets
// PATH, so it would not find a codebridge in ~/go/bin by name: the path
// is given.
const SudoBuild = `sudo "$(command -v codebridge)" image build`

// RootlessCopy says how a rootless Podman user gets an image root built:
// root's images are in root's storage, which a rootless user never sees.
func RootlessCopy(tag string) string {
	return fmt.Sprintf("with rootless Podman, then copy the image into your own storage: sudo podman save %s | podman load", tag)
}

// DebianPackage maps a Python package name to Debian's: numpy ->
// python3-numpy, scikit-learn -> python3-sklearn.
func DebianPackage(pip string) string {
	p := strings.ToLower(strings.TrimSpace(pip))
	switch p {
	case "scikit-learn", "sklearn":
		return "python3-sklearn"
	case "pillow", "pil":
		return "python3-pil"
	case "pyyaml", "yaml":
		return "python3-yaml"
	case "beautifulsoup4", "bs4":
		return "python3-bs4"
	}
	return "python3-" + p
}

func (o Options) run(ctx context.Context, stdin io.Reader, name string, args ...string) error {
	return o.runEnv(ctx, stdin, nil, name, args...)
}

func (o Options) runEnv(ctx context.Context, stdin io.Reader, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = stdin, o.Progress, o.Progress, env
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("imagebuild: %s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}
