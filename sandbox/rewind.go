package sandbox

import (
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// RewindTimeout bounds the wait for a rewind's answer: waking a checkpoint
// takes milliseconds, so a runtime that says nothing for this long is
// stuck, and the sandbox is replaced.
const RewindTimeout = 10 * time.Second

// maxRewoundNames bounds the names a rewind's answer keeps, and
// maxRewoundName each one: the runtime chooses them.
const (
	maxRewoundNames = 30
	maxRewoundName  = 80
)

// rewindIfAsked carries out the rewind(n) the cell's done frame asked
// for, while the cell still holds the session's turn: it sends the rewind
// frame and waits for the answer, from the checkpoint that took over or
// from the runtime as it was when the rewind could not be done. Nothing
// else is sent to the runtime meanwhile (a Put or Get would be; the
// runtime hands over the bytes it read ahead, so none is lost). A cell
// that was stopped, or a container that is gone, rewinds nothing.
func (cl *cell) rewindIfAsked(res *Result) *Result {
	if cl.rewind <= 0 || cl.stopping != "" || !res.StateKept {
		return res
	}
	cl.s.mu.Lock()
	err := cl.s.move(stateRewinding)
	cl.s.mu.Unlock()
	if err != nil { // closed meanwhile
		return res
	}
	cl.c.out.send(protocol.Rewind{N: cl.rewind}, 0, false, nil)
	r, lost := awaitAnswer[protocol.Rewound](cl, "rewind", RewindTimeout)
	if lost != nil {
		return lost
	}
	res.Rewound = boundRewound(r)
	return res
}

// awaitAnswer waits for the runtime's answer of type T to a rewind or a
// fork, which the host asks while it holds the session's turn (so no
// other cell's frames can come); other frames are logged and dropped. It
// returns the answer, or the cell's lost result when the sandbox died or
// did not answer within timeout.
func awaitAnswer[T protocol.Frame](cl *cell, what string, timeout time.Duration) (answer T, lost *Result) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-cl.c.frames:
			if !ok {
				return answer, cl.lost(StatusCrashed, "the sandbox died during the "+what+": "+cl.c.ended(cl.ctx))
			}
			if a, is := f.(T); is {
				return a, nil
			}
			cl.s.log.Debug("ignoring a frame while waiting for the runtime's answer", "to", what, "type", clipText(f.Type(), 40))
		case <-timer.C:
			return answer, cl.lost(StatusCrashed, "the sandbox did not answer the "+what+" within "+timeout.String())
		}
	}
}

// boundRewound keeps at most maxRewoundNames of each list, each name cut
// to maxRewoundName bytes, counting what it left out in More.
func boundRewound(r protocol.Rewound) *protocol.Rewound {
	cut := func(names []string) []string {
		if len(names) > maxRewoundNames {
			r.More += len(names) - maxRewoundNames
			names = names[:maxRewoundNames]
		}
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = clipText(n, maxRewoundName)
		}
		return out
	}
	r.Names, r.Modules, r.Threads = cut(r.Names), cut(r.Modules), cut(r.Threads)
	r.Error = clipText(r.Error, 2000)
	if w := r.Workspace; w != nil {
		w.Reason, w.Error = clipText(w.Reason, 400), clipText(w.Error, 400)
	}
	return &r
}
