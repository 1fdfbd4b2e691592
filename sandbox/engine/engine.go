package engine

import (
	"context"
	"io"
	"time"
)

// LabelKey marks every container codebridge creates. The value is "1"; the
// owning bridge is described by the labels [LabelHost], [LabelPID] and
// [LabelStart].
const (
	LabelKey   = "io.codebridge"
	LabelHost  = "io.codebridge.host"
	LabelPID   = "io.codebridge.pid"
	LabelStart = "io.codebridge.start"
)

// ContainerSpec is what an [Engine] needs to start the sandbox container.
// The hardening itself is not configurable: engines apply all of it.
type ContainerSpec struct {
	// Image is the image reference; it must contain python3.
	Image string
	// Cmd is the command run as the container's main process.
	Cmd []string
	// Env holds KEY=VALUE pairs for the container.
	Env []string
	// Labels are added to the container, on top of the owner labels.
	Labels map[string]string
	// Limits bound the container's resources.
	Limits Limits
	// User is the uid:gid the code runs as. Empty means [DefaultUser].
	User string
	// Workspace, when set, is mounted at /workspace in place of a tmpfs,
	// so that the files outlive the container. Any number of sandboxes
	// may mount the same workspace at once.
	Workspace *Mount
	// Mounts are more host directories or volumes for the code.
	Mounts []Mount
	// Channel, when set, is the host directory that holds only the
	// bridge's socket for the direct channel; engines that can carry it
	// mount it, read-only, at [ChannelDir].
	Channel string
}

// Engine is a container engine that can run the sandbox.
type Engine interface {
	// Name says which engine this is and where it listens, for logs and
	// errors ("podman at unix:///run/podman/podman.sock").
	Name() string
	// Start creates and starts a container attached to its stdin and stdout.
	// The container is removed by [Container.Remove], never automatically.
	Start(ctx context.Context, spec ContainerSpec) (Container, error)
	// RemoveStale removes containers labelled [LabelKey] whose owning bridge
	// ran on this host and no longer runs. It returns how many it removed.
	RemoveStale(ctx context.Context) (int, error)
	// HasImage reports whether the engine has image locally.
	HasImage(ctx context.Context, image string) (bool, error)
	// List returns the containers labelled [LabelKey], with their labels.
	List(ctx context.Context) ([]ContainerInfo, error)
	// Workspaces lists the workspace volumes codebridge created.
	Workspaces(ctx context.Context) ([]WorkspaceVolume, error)
	// RemoveWorkspace removes one of them, with its files; it refuses a
	// volume codebridge did not create ([ErrNotWorkspace]).
	RemoveWorkspace(ctx context.Context, name string) error
	// Close releases the engine's connection, and stops a Podman service the
	// engine started itself.
	Close() error
}

// Container is one running sandbox container.
type Container interface {
	// ID is the engine's identifier of the container.
	ID() string
	// Stdin is the container's standard input. Closing it signals EOF.
	Stdin() io.WriteCloser
	// Stdout is the container's standard output: the runtime's frames.
	Stdout() io.Reader
	// Exited reports why the container stopped (for example "out of memory
	// (exit 137)"), waiting at most the given time for the engine to know.
	Exited(ctx context.Context, wait time.Duration) string
	// Remove kills and removes the container and closes its streams.
	Remove(ctx context.Context) error
}

// ChannelDir is where the sandbox sees the directory that holds the
// bridge's socket ([ContainerSpec.Channel]). /run is the sandbox's own
// small tmpfs (owned by root, which the sandbox's user cannot write to);
// the engine creates the mount point in it.
const ChannelDir = "/run/codebridge"

// ChannelEngine is an engine that can carry the direct channel: it makes
// the host directory dir, which holds only the bridge's socket, visible in
// the container ([ContainerSpec.Channel]) and says where the sandbox finds
// it, or why it cannot.
type ChannelEngine interface {
	ChannelPath(dir string) (string, error)
}

// ContainerInfo describes a container codebridge made.
type ContainerInfo struct {
	ID     string
	State  string // "running", "exited", ...
	Labels map[string]string
}
