package engine

import "context"

// Check is one finding of an engine's own checks of what it depends on
// outside codebridge, worded for `codebridge doctor`.
type Check struct {
	Name   string
	OK     bool
	Warn   bool // works, but weaker than codebridge's promise
	Detail string
	Fix    string
}

// Checker is an engine that checks what its sandboxes' promises depend
// on and the engine cannot set itself: the kubernetes engine checks the
// seccomp filter and the pids limit from inside each new sandbox Pod, and
// the namespace's network policy when it connects.
type Checker interface {
	// Checks are the findings so far (those from inside a sandbox
	// appear once one has started).
	Checks() []Check
}

// OutsideEnder is a [Container] that can tell that something outside
// codebridge ended it (the kubernetes engine: its Pod deleted, or
// evicted by the node). Its stream then ends, perhaps in the middle of a
// frame, and its process is killed: neither the frames nor the code nor
// its memory are why.
type OutsideEnder interface {
	// EndedOutside says what ended the container from outside, or ""
	// when nothing did (or the engine cannot tell yet).
	EndedOutside(ctx context.Context) string
}
