package sandbox

import "context"

// What the kubernetes engine checks of the cluster it runs sandboxes on,
// stated here (in both builds) because the command line names it: the
// seccomp profile the Pods get by default, and the checks' findings that
// `codebridge doctor` shows.

// DefaultSeccompLocalhost is the seccomp profile of a sandbox Pod when
// none is configured: codebridge's own (`codebridge image seccomp`
// prints it), installed on each node under the kubelet's seccomp
// directory by that name (deploy/kubernetes/seccomp-installer.yaml).
const DefaultSeccompLocalhost = "codebridge.json"

// SeccompRuntimeDefault, given as the profile, runs sandbox Pods with the
// container runtime's own profile (RuntimeDefault). containerd 1.6's lets
// io_uring through, which the start check refuses unless
// [EngineOptions.AllowWeakSeccomp].
const SeccompRuntimeDefault = "RuntimeDefault"

// EngineCheck is one finding of an engine's own checks of what it
// depends on outside codebridge, worded for `codebridge doctor`.
type EngineCheck struct {
	Name   string
	OK     bool
	Warn   bool // works, but weaker than codebridge's promise
	Detail string
	Fix    string
}

// CheckedEngine is an engine that checks what its sandboxes' promises
// depend on and the engine cannot set itself: the kubernetes engine
// checks the seccomp filter and the pids limit from inside each new
// sandbox Pod, and the namespace's network policy when it connects.
type CheckedEngine interface {
	// Checks are the findings so far (those from inside a sandbox
	// appear once one has started).
	Checks() []EngineCheck
}

// outsideEnder is a [Container] that can tell that something outside
// codebridge ended it (the kubernetes engine: its Pod deleted, or
// evicted by the node). Its stream then ends, perhaps in the middle of a
// frame, and its process is killed: neither the frames nor the code nor
// its memory are why.
type outsideEnder interface {
	// EndedOutside says what ended the container from outside, or ""
	// when nothing did (or the engine cannot tell yet).
	EndedOutside(ctx context.Context) string
}
