package engine

import "errors"

// WorkspacePath is where the sandbox's working directory is.
const WorkspacePath = "/workspace"

// LabelWorkspace marks a container with the persistent workspace it
// mounts ("volume:NAME" or "dir:PATH"), so that the workspaces in use can
// be told. Any number of sandboxes may mount one workspace at once, as
// two terminals share a directory.
const LabelWorkspace = "io.codebridge.workspace"

// Labels of a workspace volume codebridge created (besides [LabelKey]):
// the project directory and the principal it was made for, so that
// `codebridge workspace list` can say whose files are where.
const (
	LabelProject   = "io.codebridge.project"
	LabelPrincipal = "io.codebridge.principal"
)

// DefaultWorkspaceSize is the size of a persistent workspace where the
// engine must be told one: a PersistentVolumeClaim on Kubernetes.
const DefaultWorkspaceSize = 1 << 30

// Mount is a host directory (bind) or an engine volume in the sandbox.
// For a bind, Source is a path on the engine's host, which is this host
// only for a local engine.
type Mount struct {
	Source   string // host path, or volume name when Volume
	Target   string // absolute path in the container
	Volume   bool
	ReadOnly bool
	// Labels are given to a volume when it is created ([LabelProject],
	// [LabelPrincipal]).
	Labels map[string]string
}

// Key names the mount's source as the value of [LabelWorkspace].
func (m Mount) Key() string {
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

// WorkspaceVolume is one workspace volume codebridge created on an
// engine.
type WorkspaceVolume struct {
	Name      string
	Project   string // the project directory it was made for; "" for a named one
	Principal string // "local", "token:NAME"; "" for a named one
	Created   string // as the engine says
	InUse     int    // live sandboxes that mount it now
}

// ErrNotWorkspace is the error of removing a volume codebridge did not
// create.
var ErrNotWorkspace = errors.New("not a workspace volume codebridge created")
