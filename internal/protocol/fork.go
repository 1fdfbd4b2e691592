package protocol

// Forking a session (PROTOCOL.md, "Fork"): a cell calls fork(); its
// [Done] carries Fork; the runtime then forks a second runtime in the
// same container and sends [Forked] before it reads another cell. The
// host reaches the fork through the resume relay with Key, as it adopts a
// detachable sandbox, and the fork answers with a [Resumed] frame.
//
// A runtime that no init follows yet (a Kubernetes Pod's, before its
// first rewind) first answers [Forked] with Handover: the host sends
// [Handover], the runtime hands its channel to a fresh copy of itself and
// becomes that copy's init (as at a first rewind), and the copy then
// forks and sends the real [Forked].
const (
	TForked   = "forked"   // runtime -> host: the fork's key and folder, or why there is none
	TEnd      = "end"      // host -> runtime: exit now (a session that leaves a container its forks still use)
	THandover = "handover" // host -> runtime: hand the channel to the copy that will fork (Forked.Handover)
)

// Forked answers the fork() of the cell before it.
type Forked struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"` // why no fork was made, when not OK
	// Key proves the host to the fork's runtime (its resume socket is
	// named by the key's SHA-256): a secret, never shown.
	Key string `json:"key,omitempty"`
	Pid int    `json:"pid,omitempty"`
	// Dir is the fork's workspace and working directory
	// (/workspace/.forks/<id>).
	Dir string `json:"dir,omitempty"`
	// Files says whether the workspace's files were copied there.
	Files *ForkedFiles `json:"files,omitempty"`
	// Threads names the threads that ran in the parent and do not run in
	// the fork.
	Threads []string `json:"threads,omitempty"`
	// Handover, with OK false, asks the host for a [Handover] frame
	// before the real answer: no init follows the runtime yet.
	Handover bool `json:"handover,omitempty"`
}

// ForkedFiles is what a fork did with its parent's workspace files.
type ForkedFiles struct {
	Copied bool   `json:"copied"`
	Bytes  int64  `json:"bytes,omitempty"`
	Reason string `json:"reason,omitempty"` // why they were not copied
}

// End asks the runtime to exit at once, as at the end of its channel:
// a detachable runtime would otherwise wait for another bridge.
type End struct{}

// Handover asks the runtime that answered [Forked] with Handover to hand
// its channel to its fresh copy now; nothing else is sent meanwhile (the
// runtime hands over the bytes it read ahead). The copy's [Forked]
// follows.
type Handover struct{}

func (Forked) Type() string   { return TForked }
func (End) Type() string      { return TEnd }
func (Handover) Type() string { return THandover }
