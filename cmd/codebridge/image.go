package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/codebridge/codebridge/internal/imagebuild"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/spf13/cobra"
)

func (c *cli) imageCommand() *cobra.Command {
	image := &cobra.Command{
		Use:   "image",
		Short: "Manage the sandbox image (image build)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(c.stderr)
			_ = cmd.Usage()
			return exitCode(2)
		},
	}
	var packages []string
	var tag string
	var debian bool
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the sandbox image (from a registry base if reachable, else from Debian packages)",
		Long: `Build the sandbox image: from the registry base ` + sandbox.DefaultImage + ` when a
registry is reachable, else from Debian packages (needs root and debootstrap).
The default tag is the image codebridge uses by default when present.`,
		Args: cobra.NoArgs,
	}
	build.Flags().StringSliceVar(&packages, "packages", nil, "comma-separated Python packages to add, e.g. numpy,pandas,matplotlib")
	build.Flags().StringVar(&tag, "tag", imagebuild.DefaultTag, "name of the image to build")
	build.Flags().BoolVar(&debian, "debian", false, "skip the registry and build from Debian packages")
	var sb sandboxFlags
	image.AddCommand(c.settingsCommand(build, &sb, []string{"engine"}, commandLogLevel, func([]string) error {
		return c.buildImage(sb.Engine, tag, packages, debian)
	}))
	image.AddCommand(&cobra.Command{
		Use:   "seccomp",
		Short: "Print codebridge's seccomp profile, for Kubernetes nodes (--seccomp-localhost)",
		Long: `Print codebridge's seccomp profile (JSON, the format of Docker, Podman,
containerd and CRI-O): what the local engines load. For Kubernetes, install it
on every node under the kubelet's seccomp directory as codebridge.json, the
profile sandbox Pods name by default (--seccomp-localhost), with
deploy/kubernetes/seccomp-installer.yaml or by hand:

  codebridge image seccomp > /var/lib/kubelet/seccomp/codebridge.json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			p, err := sandbox.SeccompProfile()
			if err != nil {
				return err
			}
			_, err = c.stdout.Write(append(p, '\n'))
			return err
		},
	})
	return image
}

// rootStorageHint says, after a build run as root through sudo with
// Podman, that the image is in root's storage and how the user who ran
// sudo gets it into theirs (rootless Podman never sees root's images).
func rootStorageHint(euid int, sudoUser, engine, tag string) string {
	if euid != 0 || sudoUser == "" || sudoUser == "root" || engine == "docker" {
		return ""
	}
	return fmt.Sprintf("the image is in root's Podman storage; %s (as %s)", imagebuild.RootlessCopy(tag), sudoUser)
}

// buildImage builds the sandbox image and says how codebridge picks it up.
func (c *cli) buildImage(engine, tag string, packages []string, debian bool) error {
	var pkgs []string
	for _, p := range packages {
		if p = strings.TrimSpace(p); p != "" {
			pkgs = append(pkgs, p)
		}
	}
	if engine == "auto" {
		engine = ""
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	built, err := imagebuild.Build(ctx, imagebuild.Options{Tag: tag, Packages: pkgs, Engine: engine, DebianOnly: debian, Progress: c.stderr})
	if err != nil {
		fmt.Fprintln(c.stderr, "codebridge image build:", err)
		return errReported
	}
	fmt.Fprintf(c.stdout, "built %s\n", built)
	used := engine
	if _, err := exec.LookPath("podman"); used == "" && err != nil {
		used = "docker" // what imagebuild picks without podman
	}
	if hint := rootStorageHint(os.Geteuid(), c.getenv("SUDO_USER"), used, built); hint != "" {
		fmt.Fprintln(c.stdout, hint)
	}
	if built == imagebuild.DefaultTag {
		fmt.Fprintln(c.stdout, "codebridge uses it by default (unless CODEBRIDGE_IMAGE or --image names another image)")
	} else {
		fmt.Fprintf(c.stdout, "use it with: --image %s, or CODEBRIDGE_IMAGE=%s\n", built, built)
	}
	return nil
}
