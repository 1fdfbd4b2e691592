package moby

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"

	"github.com/codebridge/codebridge/internal/procgroup"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// mobyEngine drives Docker, or Podman's Docker-compatible service, through
// the Docker Engine API.
type mobyEngine struct {
	name  string
	host  string // the address it was reached at
	cli   *client.Client
	log   *slog.Logger
	owner engine.Owner

	// seccomp is the security option that carries codebridge's seccomp
	// profile to this engine ("" until the first Start; see seccompOption).
	seccompMu  sync.Mutex
	seccompOpt string

	// Whether the engine is rootless, asked once (see isRootless).
	rootlessOnce sync.Once
	rootless     bool

	// The workspace volumes this bridge has seen given to the sandbox's
	// user (Docker; see ensureVolume).
	givenMu sync.Mutex
	given   map[string]bool

	// A Podman service this engine started, or nil.
	service       *exec.Cmd
	serviceDir    string
	serviceExited chan error
}

func (e *mobyEngine) Name() string { return e.name }

// ChannelPath says where a container sees the direct channel's directory:
// at [engine.ChannelDir], when the engine runs on this machine (a Unix socket
// address on Linux). An engine reached over tcp:// or ssh://, or one in a
// virtual machine (Docker Desktop, Podman machine) cannot mount it.
func (e *mobyEngine) ChannelPath(string) (string, error) {
	if !strings.HasPrefix(e.host, "unix://") {
		return "", fmt.Errorf("the engine at %s is not on this machine", e.host)
	}
	if runtime.GOOS != "linux" {
		return "", fmt.Errorf("the engine runs in a virtual machine on %s", runtime.GOOS)
	}
	return engine.ChannelDir, nil
}

func (e *mobyEngine) Close() error {
	err := e.cli.Close()
	if e.service != nil {
		done := make(chan struct{})
		go func() {
			<-e.serviceExited //nolint:errcheck // the service was stopped on purpose: how it exited says nothing
			close(done)
		}()
		procgroup.Stop(e.service, 3*time.Second, done)
		os.RemoveAll(e.serviceDir)
	}
	return err
}

// shmSize is the size of /dev/shm (POSIX shared memory and semaphores,
// which multiprocessing uses). Engines default to about this much; it is
// stated so that every writable mount has a size given here.
const shmSize = 64 << 20

// hostConfig is the hardening every sandbox container gets. Every
// writable mount is sized: /tmp, /workspace and /var/tmp (which Podman
// would otherwise add with no size under a read-only root) get
// Limits.TmpSize; /run is a small tmpfs owned by root, which the
// sandbox's user cannot write to; /dev/shm is shmSize. All of them are
// memory, counted against the memory limit.
func hostConfig(l engine.Limits) *container.HostConfig {
	l = l.WithDefaults()
	pids := l.Pids
	tmpfs := "rw,nosuid,nodev,mode=1777,size=" + strconv.FormatInt(l.TmpSize, 10)
	// The workspace holds packages installed on demand, whose compiled
	// extensions are mapped executable: Docker mounts a tmpfs noexec
	// unless told (Podman does not).
	workspace := tmpfs + ",exec"
	return &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Runtime:        l.Runtime,
		ShmSize:        shmSize,
		Tmpfs: map[string]string{"/tmp": tmpfs, "/workspace": workspace, "/var/tmp": tmpfs,
			"/run": "rw,nosuid,nodev,noexec,mode=0755,size=1m"},
		Resources: container.Resources{
			Memory:     l.Memory,
			MemorySwap: l.Memory,
			PidsLimit:  &pids,
			NanoCPUs:   int64(l.CPUs * 1e9),
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: l.NoFile, Hard: l.NoFile},
				// Explicit, because engines otherwise copy a host value
				// that some hosts do not let even root set.
				{Name: "nproc", Soft: l.Pids * 4, Hard: l.Pids * 4},
			},
		},
	}
}

func (e *mobyEngine) Start(ctx context.Context, spec engine.ContainerSpec) (engine.Container, error) {
	user := spec.User
	if user == "" {
		user = engine.DefaultUser
	}
	labels := e.owner.Labels()
	maps.Copy(labels, spec.Labels)
	cfg := &container.Config{
		Image:        spec.Image,
		Cmd:          spec.Cmd,
		Env:          spec.Env,
		User:         user,
		Labels:       labels,
		OpenStdin:    true,
		StdinOnce:    false,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	}
	hc := hostConfig(spec.Limits)
	// A detachable sandbox's runtime ends itself when no bridge comes back
	// for it; the engine removes what is left, as no bridge may be there.
	hc.AutoRemove = spec.Detachable
	if err := e.applyMounts(ctx, spec, cfg, hc); err != nil {
		return nil, err
	}
	if spec.Channel != "" {
		hc.Mounts = append(hc.Mounts, toMount(engine.Mount{Source: spec.Channel, Target: engine.ChannelDir, ReadOnly: true}))
	}
	seccompOpt, err := e.seccompOption(ctx)
	if err != nil {
		return nil, err
	}
	create := func() (client.ContainerCreateResult, error) {
		opts := client.ContainerCreateOptions{Config: cfg, HostConfig: hc}
		if seccompOpt != "" {
			h := *hc
			h.SecurityOpt = append(slices.Clip(hc.SecurityOpt), seccompOpt)
			opts.HostConfig = &h
		}
		return e.cli.ContainerCreate(ctx, opts)
	}
	created, err := create()
	if err != nil && isNotFound(err) {
		e.pull(ctx, spec.Image)
		created, err = create()
	}
	if err != nil && seccompOpt != "" && isSeccompError(err) {
		seccompOpt = e.seccompUnusable(err)
		created, err = create()
	}
	if err != nil {
		return nil, e.explainCreate(spec, err)
	}
	c := &mobyContainer{engine: e, id: created.ID}
	fail := func(err error) (engine.Container, error) {
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = c.Remove(rmCtx)
		return nil, err
	}
	if err = e.checkRuntime(ctx, created.ID, spec.Limits.Runtime); err != nil {
		return fail(err)
	}
	// Attach before start, so that not a byte of output is missed.
	if err := e.attach(ctx, c); err != nil {
		return fail(err)
	}
	if _, err := e.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return fail(fmt.Errorf("sandbox: starting container on %s: %w%s", e.name, err, startHint(spec.Limits, err)))
	}
	return c, nil
}

// attach attaches to c's stdin, stdout and stderr from now on: stdout
// becomes c.stdout, stderr goes to the log.
func (e *mobyEngine) attach(ctx context.Context, c *mobyContainer) error {
	att, err := e.cli.ContainerAttach(ctx, c.id, client.ContainerAttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return fmt.Errorf("sandbox: attaching to container %s on %s: %w", engine.Short(c.id), e.name, err)
	}
	e.streams(c, att.HijackedResponse)
	return nil
}

// streams makes a hijacked stream (an attach's, an exec's) c's: its
// connection is c's stdin, its stdout c.stdout, its stderr goes to the log.
func (e *mobyEngine) streams(c *mobyContainer, h client.HijackedResponse) {
	c.conn = h.Conn
	outR, outW := io.Pipe()
	c.stdout = outR
	c.stderr = engine.NewLogWriter("sandbox runtime: ", engine.ContainerLogBudget, e.log.With("container", engine.Short(c.id)))
	go func() {
		_, err := stdcopy.StdCopy(outW, c.stderr, h.Reader)
		c.stderr.Close()
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
	}()
}

// Exec runs cmd in the running container id, which another bridge may
// have started, as the container's user, with its stdin and stdout as the
// returned container's streams ([engine.Adopter]): removing it removes
// the container.
func (e *mobyEngine) Exec(ctx context.Context, id string, cmd []string) (engine.Container, error) {
	created, err := e.cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, AttachStdin: true, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return nil, fmt.Errorf("sandbox: running a command in container %s on %s: %w", engine.Short(id), e.name, err)
	}
	att, err := e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("sandbox: attaching to a command in container %s on %s: %w", engine.Short(id), e.name, err)
	}
	c := &mobyContainer{engine: e, id: id}
	e.streams(c, att.HijackedResponse)
	return c, nil
}

// checkRuntime makes sure the engine applied the configured OCI runtime:
// Podman's Docker-compatible API (4.x) ignores the one a client asks for,
// and a sandbox that silently runs without gVisor or Kata is worse than
// none.
func (e *mobyEngine) checkRuntime(ctx context.Context, id, want string) error {
	if want == "" {
		return nil
	}
	res, err := e.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: inspecting the new container on %s: %w", e.name, err)
	}
	got := ""
	if hc := res.Container.HostConfig; hc != nil {
		got = hc.Runtime
	}
	if got != want {
		return fmt.Errorf("sandbox: %s did not apply the OCI runtime %q (it reports %q); Podman's Docker-compatible "+
			"API ignores the runtime a client asks for: make it Podman's default (runtime = %q in the [engine] table "+
			"of containers.conf) and unset codebridge's OCI runtime setting, or use Docker with the runtime registered in daemon.json",
			e.name, want, got, want)
	}
	return nil
}

// explainCreate turns a failed create into an error that says what to do.
func (e *mobyEngine) explainCreate(spec engine.ContainerSpec, err error) error {
	image := spec.Image
	if hint := runtimeHint(spec.Limits, err); hint != "" {
		return fmt.Errorf("sandbox: creating the container on %s: %w%s", e.name, err, hint)
	}
	if isNotFound(err) {
		return fmt.Errorf("sandbox: image %q is not present on %s and was not pulled: "+
			"pull it (`podman pull %s`), or build one with `codebridge image build` "+
			"and set CODEBRIDGE_IMAGE to it: %w", image, e.name, image, err)
	}
	return fmt.Errorf("sandbox: creating the container on %s: %w", e.name, err)
}

func startHint(l engine.Limits, err error) string {
	if hint := runtimeHint(l, err); hint != "" {
		return hint
	}
	if strings.Contains(err.Error(), "setrlimit") || strings.Contains(err.Error(), "rlimit") {
		return " (this host does not let the engine set a ulimit; lower CODEBRIDGE_PIDS or check the engine's default ulimits)"
	}
	return ""
}

// runtimeHint explains an error about a configured OCI runtime.
func runtimeHint(l engine.Limits, err error) string {
	if l.Runtime == "" || !strings.Contains(strings.ToLower(err.Error()), "runtime") {
		return ""
	}
	return fmt.Sprintf(" (the OCI runtime %q is configured: install it and register it with the engine "+
		"(runtimes in containers.conf for Podman, in daemon.json for Docker), or unset the OCI runtime setting)", l.Runtime)
}

// pull pulls image. A pull that fails is reported by the create that
// follows, with a hint.
func (e *mobyEngine) pull(ctx context.Context, image string) {
	e.log.Info("pulling the sandbox image", "image", image, "engine", e.name)
	resp, err := e.cli.ImagePull(ctx, image, client.ImagePullOptions{})
	if err != nil {
		e.log.Warn("image pull failed", "image", image, "err", err)
		return
	}
	defer resp.Close()
	if err := resp.Wait(ctx); err != nil {
		e.log.Warn("image pull failed", "image", image, "err", err)
	}
}

func (e *mobyEngine) HasImage(ctx context.Context, image string) (bool, error) {
	_, err := e.cli.ImageInspect(ctx, image)
	if err == nil {
		return true, nil
	}
	if isNotFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("sandbox: inspecting image %q on %s: %w", image, e.name, err)
}

func (e *mobyEngine) List(ctx context.Context) ([]engine.ContainerInfo, error) {
	list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", engine.LabelKey+"=1"),
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing codebridge containers on %s: %w", e.name, err)
	}
	out := make([]engine.ContainerInfo, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, engine.ContainerInfo{ID: s.ID, State: string(s.State), Labels: s.Labels})
	}
	return out, nil
}

func (e *mobyEngine) RemoveStale(ctx context.Context) (int, error) {
	list, err := e.List(ctx)
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, s := range list {
		if !e.owner.IsStaleContainer(s) {
			continue
		}
		if err := e.remove(ctx, s.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
		e.log.Info("removed a container left by a bridge that is gone", "container", engine.Short(s.ID), "pid", s.Labels[engine.LabelPID])
	}
	return removed, errors.Join(errs...)
}

// mobyContainer is a container started by [mobyEngine].
type mobyContainer struct {
	engine *mobyEngine
	id     string
	conn   net.Conn
	stdout io.Reader
	stderr *engine.LogWriter

	removeOnce sync.Once
	removeErr  error
}

func (c *mobyContainer) ID() string            { return c.id }
func (c *mobyContainer) Stdout() io.Reader     { return c.stdout }
func (c *mobyContainer) Stdin() io.WriteCloser { return stdinConn{c.conn} }

// stdinConn closes only the write side of the attach connection, so the
// container sees EOF while its output can still be read.
type stdinConn struct{ net.Conn }

func (s stdinConn) Close() error {
	if cw, ok := s.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return s.Conn.Close()
}

func (c *mobyContainer) Exited(ctx context.Context, wait time.Duration) string {
	// An inspect can fail while the container is going away (Podman reads
	// /proc/PID/cgroup of a process that just ended: "no such process"):
	// only a missing container is final before the deadline.
	return engine.WaitEnded(ctx, wait, 20*time.Millisecond, c.stderr, c.ended, cerrdefs.IsNotFound)
}

// ended is how the container ended, or nil while it runs. Engines do not
// always know of an out-of-memory kill (Podman with cgroup v1 never
// does): waitEnded reads the sandbox's init too.
func (c *mobyContainer) ended(ctx context.Context) (*engine.Ended, error) {
	res, err := c.engine.cli.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	st := res.Container.State
	if st == nil || st.Running {
		return nil, nil
	}
	end := &engine.Ended{OOMKilled: st.OOMKilled, Code: st.ExitCode}
	if hc := res.Container.HostConfig; hc != nil {
		end.Memory = hc.Memory
	}
	return end, nil
}

// Detach closes this bridge's stream and leaves the container running
// ([engine.Detacher]). Podman then closes the container's stdin (with
// OpenStdin and StdinOnce false too), as the end of an exec's stream ends
// its stdin: a detachable runtime takes that as its bridge's end and waits
// for another to reach it by [mobyEngine.Exec].
func (c *mobyContainer) Detach() {
	if c.conn != nil {
		c.conn.Close()
	}
}

func (c *mobyContainer) Remove(ctx context.Context) error {
	c.removeOnce.Do(func() {
		if c.conn != nil {
			c.conn.Close()
		}
		c.removeErr = c.engine.remove(ctx, c.id)
	})
	return c.removeErr
}

// remove force-removes a container. A container that is exiting at that
// moment makes Podman answer "container state improper"; it is tried again
// until it is gone or ctx ends.
func (e *mobyEngine) remove(ctx context.Context, id string) error {
	for attempt := 0; ; attempt++ {
		_, err := e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || isNotFound(err) {
			return nil
		}
		if attempt >= 50 || ctx.Err() != nil {
			return fmt.Errorf("sandbox: removing container %s: %w", engine.Short(id), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(min(attempt+1, 5)) * 20 * time.Millisecond):
		}
	}
}

// isNotFound reports whether the engine said an object does not exist.
// Docker and Podman word this differently.
func isNotFound(err error) bool {
	if cerrdefs.IsNotFound(err) {
		return true
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "no such") || strings.Contains(s, "not found") || strings.Contains(s, "image not known")
}
