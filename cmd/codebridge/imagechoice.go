package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/codebridge/codebridge/internal/imagebuild"
	"github.com/codebridge/codebridge/sandbox"
)

// imageChoice is the sandbox image codebridge uses, and whether the engine
// has it.
type imageChoice struct {
	name       string
	present    bool
	configured bool // set with --image or a variable, rather than chosen
}

// chooseImage resolves the sandbox image: the configured one when there is
// one; else the image `codebridge image build` makes, when the engine has
// it; else the registry image, which the engine pulls on first use.
func chooseImage(ctx context.Context, configured string, has func(context.Context, string) (bool, error)) (imageChoice, error) {
	if configured != "" {
		ok, err := has(ctx, configured)
		return imageChoice{name: configured, present: ok, configured: true}, err
	}
	ok, err := has(ctx, imagebuild.DefaultTag)
	if err != nil || ok {
		return imageChoice{name: imagebuild.DefaultTag, present: ok}, err
	}
	ok, err = has(ctx, sandbox.DefaultImage)
	return imageChoice{name: sandbox.DefaultImage, present: ok}, err
}

// fix is a command that makes a missing image present, so that codebridge
// uses it without further settings. A build is only ever tagged with a
// local name (localhost/...): an image built here from Debian packages is
// never named as a registry's image, which it is not.
func (c imageChoice) fix() string {
	const debian = "where no registry is reachable it builds from Debian packages, which needs root: see docs/user-guide.md, The sandbox image, for rootless Podman"
	switch {
	case !c.configured || c.name == imagebuild.DefaultTag:
		return fmt.Sprintf("codebridge image build (%s), or pull %s", debian, c.name)
	case strings.HasPrefix(c.name, "localhost/"):
		return fmt.Sprintf("codebridge image build --tag %s (%s)", c.name, debian)
	}
	return fmt.Sprintf("pull %s (podman pull %s), or build codebridge's own image with codebridge image build (%s) and use it instead: unset the image setting, or set it to %s",
		c.name, c.name, debian, imagebuild.DefaultTag)
}

// image resolves the sandbox image on eng.
func (a *app) image(ctx context.Context, eng sandbox.Engine) (imageChoice, error) {
	return chooseImage(ctx, a.sandbox.Image, eng.HasImage)
}

// chooseImage is the sandbox's image when none is configured: resolved
// as each container starts, so that an image built while codebridge runs
// is used from the next container on.
func (a *app) chooseImage(ctx context.Context, eng sandbox.Engine) (string, error) {
	choice, err := a.image(ctx, eng)
	return choice.name, err
}

// warnMissingImage says on the log when the sandbox image is missing, and
// how to fix that. It is quiet when the engine cannot be reached: the first
// call reports that.
func (a *app) warnMissingImage(ctx context.Context) {
	eng, err := a.sandboxes.Engine(ctx)
	if err != nil {
		return
	}
	choice, err := a.image(ctx, eng)
	if err != nil || choice.present {
		return
	}
	a.log.Warn("the sandbox image is not present: the first run_python call pulls it, which fails where no registry is reachable",
		"image", choice.name, "fix", choice.fix())
}
