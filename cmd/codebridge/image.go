package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/codebridge/codebridge/internal/imagebuild"
)

// runImage builds the sandbox image: `codebridge image build`.
func runImage(c *cli, argv []string) int {
	if len(argv) == 0 || argv[0] != "build" {
		fmt.Fprintln(c.stderr, "usage: codebridge image build [--packages numpy,pandas,matplotlib] [--tag IMAGE] [--debian]")
		return 2
	}
	var packages, tag string
	var debian bool
	s, rest, code := c.parse("image", argv[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&packages, "packages", "", "comma-separated Python packages to add")
		fs.StringVar(&tag, "tag", imagebuild.DefaultTag, "name of the image to build")
		fs.BoolVar(&debian, "debian", false, "skip the registry and build from Debian packages")
	})
	if s == nil {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(c.stderr, "codebridge image build: unexpected argument %q\n", rest[0])
		return 2
	}
	var pkgs []string
	for _, p := range strings.Split(packages, ",") {
		if p = strings.TrimSpace(p); p != "" {
			pkgs = append(pkgs, p)
		}
	}
	engine := s.engine
	if engine == "auto" {
		engine = ""
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	built, err := imagebuild.Build(ctx, imagebuild.Options{Tag: tag, Packages: pkgs, Engine: engine, DebianOnly: debian, Progress: c.stderr})
	if err != nil {
		fmt.Fprintln(c.stderr, "codebridge image build:", err)
		return 1
	}
	fmt.Fprintf(c.stdout, "built %s\nuse it with: export CODEBRIDGE_IMAGE=%s\n", built, built)
	return 0
}
