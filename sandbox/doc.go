// Package sandbox runs the agent's Python in one persistent, hardened
// container and exchanges frames with the runtime inside it.
//
// The package has three layers:
//
//   - [Engine] and [Container] are the small borders to a container engine,
//     declared in package engine (sandbox/engine) and named here by
//     aliases (engine.go). Each engine is a package of its own: engine/moby
//     speaks the Docker Engine API, which Docker and Podman's
//     Docker-compatible service both answer, and starts a private Podman
//     service when none runs; engine/kube runs sandboxes as Kubernetes
//     Pods (build tag kubernetes). [Connect] picks one by kind.
//   - The frame channel (frame.go) is the wire format of pyruntime/PROTOCOL.md:
//     one JSON object per line over the container's stdin and stdout.
//   - [Session] (session.go, live.go, cell.go) owns one sandbox, one container at a
//     time: it starts the container on first use (or takes a started one
//     from the [WarmPool]), delivers the embedded runtime through stdin, runs
//     cells one at a time, answers the runtime's requests through the cell's
//     [Caller], enforces time limits, and replaces the container when it
//     dies, breaks the frame protocol or will not stop. Where a session is
//     in that life is one state (state.go: empty, starting, adopting,
//     ready, running, stopping, replacing, closed), changed only by moves
//     its table allows.
//   - A session made [Detachable] (adopt.go) has a sandbox that outlives
//     its bridge: [Session.Detach] lets go of it, and [Manager.Adopt] on
//     any bridge of the same engine finds it by its handle's digest and
//     principal, resumes its runtime's channel through a relay it runs in
//     the sandbox, and says where the runtime was ([Resumed]).
//
// # Security model
//
// The code that runs here is written by a model and must be treated as
// hostile. Every container is created with: no network, a read-only root
// file system, all capabilities dropped, no-new-privileges, an unprivileged
// uid (65534), memory, pids and CPU limits, explicit ulimits, and size-limited
// tmpfs mounts for /tmp and the workspace. Nothing from the host is mounted:
// the runtime arrives on stdin. Upstream credentials never enter the
// container: tool calls leave it as frames and are made by the host.
//
// The frame channel is private to the runtime: it moves the container's
// stdin and stdout to descriptors user code does not know about and turns
// fd 1 and fd 2 into pipes it reads, so nothing the code or a subprocess
// prints can be taken for a frame. A frame the runtime sends is still
// untrusted input to the host (code in the sandbox can write to the
// runtime's descriptors): the host validates it and bounds what it keeps
// (frames of at most [MaxFrame], output cut to a budget, at most 16 images
// and 32 MiB of them per result). A line that is not a frame is a
// [ProtocolError]: the container is replaced.
//
// The container's pid 1 is a minimal init forked by the runtime's loader:
// it reaps orphans, cannot be signalled from inside the container, and exits
// as the runtime did, telling on stderr whether a SIGKILL was the kernel's
// out-of-memory killer. [Container.Exited] turns that into the reason the
// agent reads ("it ran out of memory (the limit is 512 MiB)", "killed by
// signal 6 (SIGABRT)", ...).
//
// Containers carry the label [LabelKey] plus the host name, pid and start
// time of the bridge that made them, so a later bridge can remove the ones a
// killed bridge left behind without touching those of a live one. A
// detachable sandbox ([LabelHandle]) is removed only once it no longer
// runs: its runtime ends itself after its idle deadline with no bridge.
package sandbox
