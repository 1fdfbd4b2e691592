package moby

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	"github.com/codebridge/codebridge/internal/procgroup"
	"github.com/moby/moby/client"
)

// Connect finds a Docker Engine API engine (Docker, or Podman's
// compatible service) and returns a connection to it.
//
// With Kind "auto" it uses DOCKER_HOST when set, then CONTAINER_HOST (a
// Podman address), then the first of the usual Podman and Docker sockets
// that answers; when none answers and podman is installed, it starts a
// private `podman system service` that lives as long as the engine.
func Connect(ctx context.Context, opts engine.Options) (engine.Engine, error) {
	opts = opts.WithDefaults()
	kind, getenv, log := opts.Kind, opts.Getenv, opts.Log
	if kind != "auto" && kind != "podman" && kind != "docker" {
		return nil, fmt.Errorf("sandbox: the Docker Engine API engine is not %q: use auto, podman or docker", kind)
	}

	cands := candidates(kind, getenv)
	var tried []string
	for _, c := range cands {
		if strings.HasPrefix(c.host, "unix://") {
			if _, err := os.Stat(strings.TrimPrefix(c.host, "unix://")); err != nil {
				tried = append(tried, c.host+" (no socket)")
				continue
			}
		}
		e, err := dial(ctx, c.kind, c.host, log)
		if err == nil {
			return e, nil
		}
		tried = append(tried, fmt.Sprintf("%s (%v)", c.host, err))
		if getenv("DOCKER_HOST") != "" || getenv("CONTAINER_HOST") != "" {
			// An explicit address that fails is an error, not a hint to
			// look elsewhere.
			return nil, fmt.Errorf("sandbox: the engine at %s does not answer: %w; %s", c.host, err, explicitFix(c.host, getenv))
		}
	}
	if kind != "docker" {
		if path, err := exec.LookPath("podman"); err == nil {
			return startPodmanService(ctx, path, log)
		}
	}
	hint := "install Podman (preferred, rootless) or Docker, or set DOCKER_HOST / CONTAINER_HOST to a running engine"
	if len(tried) == 0 {
		return nil, fmt.Errorf("sandbox: no container engine found: %s", hint)
	}
	return nil, fmt.Errorf("sandbox: no container engine answers (tried %s): %s", strings.Join(tried, "; "), hint)
}

// explicitFix says what to do when the engine at an address the user set
// does not answer.
func explicitFix(host string, getenv func(string) string) string {
	fix := "start it, or unset DOCKER_HOST/CONTAINER_HOST"
	if strings.HasPrefix(host, "tcp://") && getenv("DOCKER_CERT_PATH") == "" {
		fix += "; if it listens with TLS (as Docker's port 2376 does), set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH to the directory holding ca.pem, cert.pem and key.pem"
	}
	return fix
}

// candidate is an engine address to try.
type candidate struct{ kind, host string }

// candidates are the addresses Connect tries, in order: DOCKER_HOST and
// CONTAINER_HOST when set, else the usual sockets of the kinds allowed.
func candidates(kind string, getenv func(string) string) []candidate {
	var cands []candidate
	if h := getenv("DOCKER_HOST"); h != "" && kind != "podman" {
		cands = append(cands, candidate{"docker", h})
	}
	if h := getenv("CONTAINER_HOST"); h != "" && kind != "docker" {
		cands = append(cands, candidate{"podman", h})
	}
	if len(cands) > 0 {
		return cands
	}
	if kind != "docker" {
		for _, s := range podmanSockets(getenv) {
			cands = append(cands, candidate{"podman", "unix://" + s})
		}
	}
	if kind != "podman" {
		cands = append(cands, candidate{"docker", "unix:///var/run/docker.sock"})
		if d := getenv("XDG_RUNTIME_DIR"); d != "" {
			cands = append(cands, candidate{"docker", "unix://" + filepath.Join(d, "docker.sock")})
		}
	}
	return cands
}

// podmanSockets lists where a Podman API socket usually is, for this user.
func podmanSockets(getenv func(string) string) []string {
	var s []string
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		s = append(s, filepath.Join(d, "podman", "podman.sock"))
	}
	if os.Geteuid() == 0 {
		s = append(s, "/run/podman/podman.sock")
	}
	return s
}

func dial(ctx context.Context, kind, host string, log *slog.Logger) (*mobyEngine, error) {
	cli, err := client.New(engineOpts(kind, host)...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, err
	}
	name := kind + " at " + host
	return &mobyEngine{name: name, host: host, cli: cli, log: log.With("engine", name), owner: engine.CurrentOwner()}, nil
}

// startPodmanService starts `podman system service` on a private socket and
// connects to it. The service is this bridge's child: it stops with the
// engine, and on Linux it also dies if the bridge is killed.
func startPodmanService(ctx context.Context, podman string, log *slog.Logger) (engine.Engine, error) {
	dir, err := engine.MakeTempDir(engine.TempPodman)
	if err != nil {
		return nil, fmt.Errorf("sandbox: making a directory for the Podman socket: %w", err)
	}
	sock := filepath.Join(dir, "podman.sock")
	cmd := exec.Command(podman, "system", "service", "--time=0", "unix://"+sock)
	// conmon writes files (an "oom" marker) into its working directory,
	// which it inherits from the service: keep them out of the user's.
	cmd.Dir = dir
	cmd.Stderr = engine.NewLogWriter("podman service: ", 0, log.With("socket", sock))
	procgroup.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox: starting `podman system service`: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	log.Info("started a private Podman API service", "socket", sock, "pid", cmd.Process.Pid)

	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			e, err := dial(ctx, "podman", "unix://"+sock, log)
			if err == nil {
				e.service = cmd
				e.serviceDir = dir
				e.serviceExited = exited
				return e, nil
			}
		}
		select {
		case err := <-exited:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("sandbox: `podman system service` exited before answering (%w); run `podman info` to see why", err)
		case <-ctx.Done():
			procgroup.Kill(cmd)
			os.RemoveAll(dir)
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			procgroup.Kill(cmd)
			os.RemoveAll(dir)
			return nil, errors.New("sandbox: `podman system service` did not answer within 20s; run `podman info` to see why")
		}
	}
}
