package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
			if err := e.ensureVolume(ctx, ws.Source, cfg.User); err != nil {
				return err
			}
		} else if e.isRootless(ctx) && strings.HasPrefix(e.name, "podman") {
			// The user's own uid in the container is the user's on the
			// host, so the files the code writes are the user's.
			hc.UsernsMode = "keep-id"
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

// ensureVolume creates the workspace volume when it is missing. On Podman
// it belongs to the sandbox's user, so that the code can write to it.
func (e *mobyEngine) ensureVolume(ctx context.Context, name, user string) error {
	if _, err := e.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err == nil {
		return nil
	} else if !isNotFound(err) {
		return fmt.Errorf("sandbox: inspecting the workspace volume %q on %s: %w", name, e.name, err)
	}
	opts := client.VolumeCreateOptions{Name: name, Labels: map[string]string{LabelKey: "1"}}
	if uid, gid, ok := numericUser(user); ok && strings.HasPrefix(e.name, "podman") {
		opts.DriverOpts = map[string]string{"o": fmt.Sprintf("uid=%d,gid=%d", uid, gid)}
	}
	if _, err := e.cli.VolumeCreate(ctx, opts); err != nil {
		return fmt.Errorf("sandbox: creating the workspace volume %q on %s: %w", name, e.name, err)
	}
	e.log.Info("created the workspace volume", "volume", name)
	return nil
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
	var mine *container.Summary
	for i := range list.Items {
		if list.Items[i].ID == id {
			mine = &list.Items[i]
		}
	}
	for _, c := range list.Items {
		if c.ID == id || e.owner.owns(c.Labels) || e.owner.isStale(c.Labels) || !liveState(string(c.State)) {
			continue
		}
		if mine == nil || c.Created < mine.Created || (c.Created == mine.Created && c.ID < id) {
			return &WorkspaceBusyError{Workspace: *ws, Owner: fmt.Sprintf("pid %s on host %s", c.Labels[LabelPID], c.Labels[LabelHost])}
		}
	}
	return nil
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
