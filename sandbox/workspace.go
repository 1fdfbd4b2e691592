package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// WorkspacePath is where the sandbox's working directory is.
const WorkspacePath = "/workspace"

// LabelWorkspace marks a container with the persistent workspace it
// mounts ("volume:NAME" or "dir:PATH"), so that a second bridge can see
// that the workspace is in use.
const LabelWorkspace = "io.codebridge.workspace"

// Mount is a host directory (bind) or an engine volume in the sandbox.
// For a bind, Source is a path on the engine's host, which is this host
// only for a local engine.
type Mount struct {
	Source   string // host path, or volume name when Volume
	Target   string // absolute path in the container
	Volume   bool
	ReadOnly bool
}

// key names the mount's source for the workspace label.
func (m Mount) key() string {
	if m.Volume {
		return "volume:" + m.Source
	}
	return "dir:" + m.Source
}

// String describes the mount for messages.
func (m Mount) String() string {
	if m.Volume {
		return "volume " + m.Source
	}
	return "directory " + m.Source
}

// WorkspaceBusyError says that another bridge's sandbox mounts the
// persistent workspace; two at once could overwrite each other's files.
type WorkspaceBusyError struct {
	Workspace Mount
	Owner     string // "pid 123 on host h"
}

func (e *WorkspaceBusyError) Error() string {
	return fmt.Sprintf("sandbox: the workspace (%s) is in use by another codebridge (%s); two sandboxes writing one workspace "+
		"could overwrite each other's files. Close the other session, or start this one with another workspace "+
		"(--workspace NAME) or an ephemeral one (--workspace ephemeral)", e.Workspace, e.Owner)
}

// applyMounts puts the persistent workspace (instead of the tmpfs) and
// the extra mounts of spec into the container's configuration.
func (e *mobyEngine) applyMounts(ctx context.Context, spec ContainerSpec, cfg *container.Config, hc *container.HostConfig) error {
	if ws := spec.Workspace; ws != nil {
		delete(hc.Tmpfs, WorkspacePath)
		if ws.Volume {
			if err := e.ensureVolume(ctx, ws.Source, cfg.User, cfg.Image); err != nil {
				return err
			}
		} else if strings.HasPrefix(e.name, "podman") && (e.ownPodman() || e.isRootless(ctx)) {
			// Rootless Podman maps the user who runs it to uid 0 of the
			// container, and every other uid to the user's subordinate
			// ones. Only as that uid can the code write the user's
			// directory and leave files the user owns; it has no
			// capability, no new privileges and the seccomp profile,
			// so it is the user on the host and nothing more. (The
			// compat API of Podman 4.3 ignores userns=keep-id.)
			cfg.User = "0:0"
		}
		hc.Mounts = append(hc.Mounts, toMount(Mount{Source: ws.Source, Target: WorkspacePath, Volume: ws.Volume}))
		cfg.Labels[LabelWorkspace] = ws.key()
	}
	for _, m := range spec.Mounts {
		hc.Mounts = append(hc.Mounts, toMount(m))
	}
	return nil
}

func toMount(m Mount) mount.Mount {
	if m.Volume {
		return mount.Mount{Type: mount.TypeVolume, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
	}
	return mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}
}

// ensureVolume creates the workspace volume when it is missing, owned by
// the sandbox's user so that the code can write to it: Podman takes the
// owner as a volume option; on Docker a one-off container gives it away.
func (e *mobyEngine) ensureVolume(ctx context.Context, name, user, image string) error {
	if _, err := e.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err == nil {
		return nil
	} else if !isNotFound(err) {
		return fmt.Errorf("sandbox: inspecting the workspace volume %q on %s: %w", name, e.name, err)
	}
	opts := client.VolumeCreateOptions{Name: name, Labels: map[string]string{LabelKey: "1"}}
	uid, gid, numeric := numericUser(user)
	podman := strings.HasPrefix(e.name, "podman")
	if numeric && podman {
		opts.DriverOpts = map[string]string{"o": fmt.Sprintf("uid=%d,gid=%d", uid, gid)}
	}
	if _, err := e.cli.VolumeCreate(ctx, opts); err != nil {
		return fmt.Errorf("sandbox: creating the workspace volume %q on %s: %w", name, e.name, err)
	}
	if numeric && !podman {
		if err := e.giveVolume(ctx, name, image, uid, gid); err != nil {
			_, _ = e.cli.VolumeRemove(context.WithoutCancel(ctx), name, client.VolumeRemoveOptions{})
			return err
		}
	}
	e.log.Info("created the workspace volume", "volume", name)
	return nil
}

// giveVolume makes the root of a new volume belong to uid:gid, with a
// one-off container from the sandbox's image that has no network and no
// capability but CHOWN, and runs one line of Python.
func (e *mobyEngine) giveVolume(ctx context.Context, name, image string, uid, gid uint64) error {
	cfg := &container.Config{
		Image:  image,
		User:   "0:0",
		Cmd:    []string{"python3", "-I", "-c", fmt.Sprintf("import os; os.chmod('/workspace', 0o700); os.chown('/workspace', %d, %d)", uid, gid)},
		Labels: e.owner.labels(),
	}
	hc := &container.HostConfig{
		NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, CapAdd: []string{"CHOWN"},
		SecurityOpt: []string{"no-new-privileges"},
		Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: WorkspacePath}},
	}
	fail := func(err error) error {
		return fmt.Errorf("sandbox: giving the new workspace volume %q to the sandbox's user on %s: %w", name, e.name, err)
	}
	created, err := e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc})
	if err != nil {
		return fail(err)
	}
	defer func() {
		_, _ = e.cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, client.ContainerRemoveOptions{Force: true})
	}()
	if _, err := e.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return fail(err)
	}
	wait := e.cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case r := <-wait.Result:
		if r.StatusCode != 0 {
			return fail(fmt.Errorf("the helper container exited with %d", r.StatusCode))
		}
		return nil
	case err := <-wait.Error:
		return fail(err)
	}
}

// numericUser reads "uid:gid" (both numbers).
func numericUser(user string) (uid, gid uint64, ok bool) {
	u, g, found := strings.Cut(user, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	return uid, gid, found && err1 == nil && err2 == nil
}

// claim makes sure that container id is the only live sandbox that mounts
// workspace ws. Of two bridges that start at once, the one whose
// container was created first keeps the workspace.
func (e *mobyEngine) claim(ctx context.Context, id string, ws *Mount) error {
	if ws == nil {
		return nil
	}
	list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelWorkspace+"="+ws.key()),
	})
	if err != nil {
		return fmt.Errorf("sandbox: checking whether the workspace is in use on %s: %w", e.name, err)
	}
	mine := e.createdAt(ctx, id)
	for _, c := range list.Items {
		if c.ID == id || e.owner.owns(c.Labels) || e.owner.isStale(c.Labels) || !liveState(string(c.State)) {
			continue
		}
		// The list's creation times are whole seconds; two bridges that
		// start in the same second are told apart by the engine's exact
		// times (a tie, or this one's time unread, refuses this one; a
		// container that can no longer be inspected is gone).
		theirs := e.createdAt(ctx, c.ID)
		if theirs == "" {
			continue
		}
		if mine == "" || theirs <= mine {
			return &WorkspaceBusyError{Workspace: *ws, Owner: fmt.Sprintf("pid %s on host %s", c.Labels[LabelPID], c.Labels[LabelHost])}
		}
	}
	return nil
}

// createdAt is when container id was created, as the engine writes it
// (RFC 3339 with nanoseconds, in UTC, so that strings compare as times),
// or "" when it cannot be read.
func (e *mobyEngine) createdAt(ctx context.Context, id string) string {
	res, err := e.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, res.Container.Created)
	if err != nil {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// liveState reports whether a container in this state may still use its
// mounts.
func liveState(s string) bool {
	switch s {
	case "exited", "dead", "removing", "stopped":
		return false
	}
	return true
}

// ownPodman reports whether this engine is a Podman service of this
// (non-root) user: one codebridge started, or one under the user's
// XDG_RUNTIME_DIR. Podman 4.3's info does not say rootless; such a service
// is.
func (e *mobyEngine) ownPodman() bool {
	if os.Getuid() == 0 {
		return false
	}
	if e.service != nil {
		return true
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	return dir != "" && strings.Contains(e.name, "unix://"+dir+"/")
}

// isRootless reports whether the engine runs rootless (its uids are
// mapped), as its info says; it asks once.
func (e *mobyEngine) isRootless(ctx context.Context) bool {
	e.rootlessOnce.Do(func() {
		info, err := e.cli.Info(ctx, client.InfoOptions{})
		if err != nil {
			return
		}
		for _, o := range info.Info.SecurityOptions {
			if strings.Contains(o, "rootless") {
				e.rootless = true
			}
		}
	})
	return e.rootless
}

// owns reports whether a container with these labels is this bridge's.
func (o owner) owns(labels map[string]string) bool {
	return labels[LabelHost] == o.host && labels[LabelPID] == strconv.Itoa(o.pid) && labels[LabelStart] == o.start
}
