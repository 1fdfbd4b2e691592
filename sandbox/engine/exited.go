package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ended is how a stopped container ended, as its engine reports it.
type Ended struct {
	OOMKilled bool  // the engine says the kernel's out-of-memory killer ended it
	Code      int   // the exit code of its main process (128 + a signal's number)
	Memory    int64 // its memory limit in bytes; 0: none
}

// WaitEnded is the one loop behind every engine's Exited: it asks
// inspect how the container ended until it says (a non-nil Ended), the
// container is gone, or wait has passed, pausing every between asks.
// An inspect error is final at once only when gone says so (an engine
// can fail to inspect a container that is going away) and otherwise at
// the deadline. stderr holds what the sandbox's init said of an
// out-of-memory kill, for engines that do not always know.
func WaitEnded(ctx context.Context, wait, every time.Duration, stderr *LogWriter,
	inspect func(context.Context) (*Ended, error), gone func(error) bool) string {
	deadline := time.Now().Add(wait)
	for {
		end, err := inspect(ctx)
		if err != nil && (gone(err) || time.Now().After(deadline)) {
			return "its state is unknown (" + err.Error() + ")"
		}
		if err == nil && end != nil {
			oom := end.OOMKilled || stderr.Saw(OOMMarker)
			known := oom || stderr.Saw(NotOOMMarker)
			return ExitReason(oom, known, end.Code, end.Memory)
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

// The lines the sandbox's init (pyruntime/loader.py) writes to the
// container's stderr when the runtime was killed with SIGKILL, after
// reading the memory cgroup's count of out-of-memory kills.
const (
	OOMMarker    = "codebridge init: out of memory"
	NotOOMMarker = "codebridge init: not out of memory"
)

// ExitReason explains, for the agent, how the container's main process
// ended. With the runtime's init as pid 1, the exit code is the runtime's
// own, or 128 + the signal that killed it. oom says the runtime ran out of
// memory; known says whether anyone could tell (when nobody could, a
// SIGKILL may have been the kernel's).
func ExitReason(oom, known bool, code int, memory int64) string {
	limit := ""
	if memory > 0 {
		limit = " (the limit is " + SizeText(memory) + ")"
	}
	switch {
	case oom:
		return "it ran out of memory" + limit + " and the kernel killed it; hold less in memory at once (work in chunks, or through files)"
	case code > 128 && code <= 128+64:
		sig := code - 128
		s := fmt.Sprintf("its Python process was killed by signal %d (%s)", sig, signalName(sig))
		if sig == 9 && !known {
			s += "; if the code used much memory, it ran out" + limit
		}
		return s
	}
	return fmt.Sprintf("its Python process exited with code %d (os._exit() ends the whole sandbox; "+
		"raise an exception or call sys.exit() to end just the cell)", code)
}

// signalName names the common Linux signals.
func signalName(sig int) string {
	names := map[int]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
		7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
		14: "SIGALRM", 15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS"}
	if n, ok := names[sig]; ok {
		return n
	}
	return "signal " + strconv.Itoa(sig)
}

// Short shortens an engine's hexadecimal container ID for logs, as the
// engines' own tools do; a name (a sandbox Pod's) is kept whole.
func Short(id string) string {
	if len(id) > 12 && !strings.Contains(id, "-") {
		return id[:12]
	}
	return id
}
