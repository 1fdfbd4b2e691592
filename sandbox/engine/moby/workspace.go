package moby

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/codebridge/codebridge/sandbox/engine"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// applyMounts puts the persistent workspace (instead of the tmpfs) and
// the extra mounts of spec into the container's configuration.
func (e *mobyEngine) applyMounts(ctx context.Context, spec engine.ContainerSpec, cfg *container.Config, hc *container.HostConfig) error {
	if ws := spec.Workspace; ws != nil {
		delete(hc.Tmpfs, engine.WorkspacePath)
		if ws.Volume {
			if err := e.ensureVolume(ctx, *ws, cfg.User, cfg.Image); err != nil {
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
		hc.Mounts = append(hc.Mounts, toMount(engine.Mount{Source: ws.Source, Target: engine.WorkspacePath, Volume: ws.Volume}))
		cfg.Labels[engine.LabelWorkspace] = ws.Key()
	}
	for _, m := range spec.Mounts {
		hc.Mounts = append(hc.Mounts, toMount(m))
	}
	return nil
}

func toMount(m engine.Mount) mount.Mount {
	if m.Volume {
		return mount.Mount{Type: mount.TypeVolume, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
	}
	return mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}
}

// ensureVolume creates the workspace volume when it is missing, owned by
// the sandbox's user so that the code can write to it: Podman takes the
// owner as a volume option; on Docker a one-off container gives it away.
// Two bridges that start at once may both create it: the engine keeps
// one volume of a name, and Docker answers both creates as made. So on
// Docker every bridge makes sure of the owner once, whether it made the
// volume or found it (another bridge may still be giving it away), and
// the helper leaves a volume already given as it is.
func (e *mobyEngine) ensureVolume(ctx context.Context, ws engine.Mount, user, image string) error {
	name := ws.Source
	uid, gid, numeric := numericUser(user)
	podman := strings.HasPrefix(e.name, "podman")
	created, err := e.createVolume(ctx, ws, podman && numeric, uid, gid)
	if err != nil {
		return err
	}
	if numeric && !podman && !e.wasGiven(name) {
		if err := e.giveVolume(ctx, name, image, uid, gid); err != nil {
			if created {
				_, _ = e.cli.VolumeRemove(context.WithoutCancel(ctx), name, client.VolumeRemoveOptions{})
			}
			return err
		}
		e.markGiven(name)
	}
	if created {
		e.log.Info("created the workspace volume", "volume", name)
	}
	return nil
}

// createVolume makes the volume ws names unless it exists, and says
// whether this call made it; withOwner sets its owner as Podman's volume
// option.
func (e *mobyEngine) createVolume(ctx context.Context, ws engine.Mount, withOwner bool, uid, gid uint64) (bool, error) {
	name := ws.Source
	if _, err := e.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err == nil {
		return false, nil
	} else if !isNotFound(err) {
		return false, fmt.Errorf("sandbox: inspecting the workspace volume %q on %s: %w", name, e.name, err)
	}
	labels := map[string]string{engine.LabelKey: "1"}
	for k, v := range ws.Labels {
		labels[k] = v
	}
	opts := client.VolumeCreateOptions{Name: name, Labels: labels}
	if withOwner {
		opts.DriverOpts = map[string]string{"o": fmt.Sprintf("uid=%d,gid=%d", uid, gid)}
	}
	if _, err := e.cli.VolumeCreate(ctx, opts); err != nil {
		if _, ierr := e.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); ierr == nil {
			return false, nil // another bridge made it a moment ago
		}
		return false, fmt.Errorf("sandbox: creating the workspace volume %q on %s: %w", name, e.name, err)
	}
	return true, nil
}

func (e *mobyEngine) wasGiven(name string) bool {
	e.givenMu.Lock()
	defer e.givenMu.Unlock()
	return e.given[name]
}

func (e *mobyEngine) markGiven(name string) {
	e.givenMu.Lock()
	defer e.givenMu.Unlock()
	if e.given == nil {
		e.given = map[string]bool{}
	}
	e.given[name] = true
}

// giveVolume makes the root of a volume belong to uid:gid, with a one-off
// container from the sandbox's image that has no network and no
// capability but CHOWN, and runs a few lines of Python. Only a root that
// still belongs to root (a new volume) changes: one given already, by this
// bridge or another, or one the user gave away, stays as it is (without
// CAP_FOWNER the helper could not change its mode anyway).
func (e *mobyEngine) giveVolume(ctx context.Context, name, image string, uid, gid uint64) error {
	script := fmt.Sprintf("import os\nst = os.stat('/workspace')\nif st.st_uid == 0 and (%d, %d) != (0, 0):\n"+
		"    os.chmod('/workspace', 0o700)\n    os.chown('/workspace', %d, %d)", uid, gid, uid, gid)
	cfg := &container.Config{
		Image:  image,
		User:   "0:0",
		Cmd:    []string{"python3", "-I", "-c", script},
		Labels: e.owner.Labels(),
	}
	hc := &container.HostConfig{
		NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, CapAdd: []string{"CHOWN"},
		SecurityOpt: []string{"no-new-privileges"},
		Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: engine.WorkspacePath}},
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

// Workspaces lists the workspace volumes codebridge created on the
// engine, by name, with the sandboxes that use each now.
func (e *mobyEngine) Workspaces(ctx context.Context) ([]engine.WorkspaceVolume, error) {
	vols, err := e.cli.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", engine.LabelKey)})
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing the workspace volumes on %s: %w", e.name, err)
	}
	used := map[string]int{}
	if list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", engine.LabelWorkspace)}); err == nil {
		for _, c := range list.Items {
			used[c.Labels[engine.LabelWorkspace]]++
		}
	}
	var out []engine.WorkspaceVolume
	for _, v := range vols.Items {
		out = append(out, engine.WorkspaceVolume{Name: v.Name, Project: v.Labels[engine.LabelProject], Principal: v.Labels[engine.LabelPrincipal],
			Created: v.CreatedAt, InUse: used[engine.Mount{Source: v.Name, Volume: true}.Key()]})
	}
	slices.SortFunc(out, func(a, b engine.WorkspaceVolume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveWorkspace removes a workspace volume codebridge created, and its
// files. The engine refuses while a sandbox mounts it.
func (e *mobyEngine) RemoveWorkspace(ctx context.Context, name string) error {
	v, err := e.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("sandbox: there is no workspace volume %q on %s: `codebridge workspace` lists them", name, e.name)
		}
		return fmt.Errorf("sandbox: the workspace volume %q on %s: %w", name, e.name, err)
	}
	if v.Volume.Labels[engine.LabelKey] != "1" {
		return fmt.Errorf("sandbox: %q on %s: %w (it has no %s label); remove it with the engine's own command if you mean to", name, e.name, engine.ErrNotWorkspace, engine.LabelKey)
	}
	if _, err := e.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{}); err != nil {
		return fmt.Errorf("sandbox: removing the workspace volume %q on %s: %w; if a codebridge uses it, close that client first", name, e.name, err)
	}
	return nil
}
