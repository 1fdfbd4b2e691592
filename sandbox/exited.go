package sandbox

import (
	"context"
	"time"
)

// ended is how a stopped container ended, as its engine reports it.
type ended struct {
	oomKilled bool  // the engine says the kernel's out-of-memory killer ended it
	code      int   // the exit code of its main process (128 + a signal's number)
	memory    int64 // its memory limit in bytes; 0: none
}

// waitEnded is the one loop behind every engine's Exited: it asks
// inspect how the container ended until it says (a non-nil ended), the
// container is gone, or wait has passed, pausing every between asks.
// An inspect error is final at once only when gone says so (an engine
// can fail to inspect a container that is going away) and otherwise at
// the deadline. stderr holds what the sandbox's init said of an
// out-of-memory kill, for engines that do not always know.
func waitEnded(ctx context.Context, wait, every time.Duration, stderr *logWriter,
	inspect func(context.Context) (*ended, error), gone func(error) bool) string {
	deadline := time.Now().Add(wait)
	for {
		end, err := inspect(ctx)
		if err != nil && (gone(err) || time.Now().After(deadline)) {
			return "its state is unknown (" + err.Error() + ")"
		}
		if err == nil && end != nil {
			oom := end.oomKilled || stderr.saw(oomMarker)
			known := oom || stderr.saw(notOOMMarker)
			return exitReason(oom, known, end.code, end.memory)
		}
		if time.Now().After(deadline) {
			return "it stopped answering"
		}
		select {
		case <-ctx.Done():
			return "its state is unknown (" + ctx.Err().Error() + ")"
		case <-time.After(every):
		}
	}
}
