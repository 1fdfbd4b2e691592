package sandbox

import "fmt"

// state is where a [Session] is in its life. It is the one answer to
// "is there a container, and what is it doing": readers ask it (under the
// session's lock) instead of testing pointers or channels, and every
// change goes through [Session.move], which refuses a change the table
// below does not allow.
//
// The lifecycle:
//
//	empty ──> starting ──> ready ──> running ──> ready
//	  ^          │                     │ interrupt (timeout, cancel)
//	  │          │ failed              v
//	  ├──────────┘                  stopping ──> ready (the code stopped in its grace)
//	  │                                │ grace over, crash, broken frames
//	  └──────── replacing <────────────┘ (and running ──> replacing)
//	                ^
//	                └── rewinding <── running (the cell asked for a rewind)
//	                        └──> ready (a checkpoint took over)
//
//	any state ──> closed (final)
//
// The states:
//
//   - empty: no container; none was needed yet, or the last one was
//     removed. The next Run, Put or Get starts one.
//   - starting: one caller starts a container (or takes a ready one from
//     the warm pool and writes the host's start files into it) and greets
//     its runtime; the others wait for it. It ends ready, or empty when the
//     start failed (the next caller tries again).
//   - ready: the container's runtime waits for a cell. Put and Get use it
//     in this state and while a cell runs.
//   - running: a cell runs; the session's turn keeps it to one.
//   - stopping: the cell was interrupted (its time limit, or its caller
//     cancelled it) and has the grace ([Config.Grace]) to stop.
//   - replacing: the container died under the cell, broke the frame
//     protocol, or would not stop; it is being removed. The cell ends
//     with StateKept false and the session becomes empty.
//   - rewinding: the cell ended asking to go back n cells (rewind(n));
//     the host sends the runtime the rewind and nothing else until the
//     answer comes from the checkpoint that took over (ready), or the
//     runtime dies or does not answer (replacing). Put and Get wait.
//   - closed: [Session.Close] removed the container (a start in progress
//     is cancelled and waited for); every later Run, Put or Get is
//     [ErrClosed]. A cell that was running ends as crashed.
//
// A container that dies while the session is ready is found by the next
// cell, which ends as crashed (running -> replacing): nothing watches an
// idle container.
//
// The work that follows adds states here, not flags elsewhere. Sessions as
// handles (a sandbox adopted by another bridge, a channel resumed) would
// add "adopting" (empty -> adopting -> ready: greet a running container
// over a channel opened anew instead of starting one) and "detached"
// (ready -> detached -> adopting: the channel lost, the container kept for
// a bridge that takes it over). Fork would add "forking" (ready ->
// forking -> ready: a checkpoint woken as another session's interpreter).
// A checkpoint is taken by the runtime itself after each cell's done
// frame, with no state of the host's: see pyruntime/PROTOCOL.md.
type state uint8

// The states of a session; see [state].
const (
	stateEmpty state = iota
	stateStarting
	stateReady
	stateRunning
	stateStopping
	stateReplacing
	stateRewinding
	stateClosed
)

var stateNames = [...]string{"empty", "starting", "ready", "running", "stopping", "replacing", "rewinding", "closed"}

func (st state) String() string {
	if int(st) < len(stateNames) {
		return stateNames[st]
	}
	return fmt.Sprintf("state(%d)", st)
}

// transitions lists the states each state may move to, besides closed,
// which every state but closed may move to.
var transitions = [...][]state{
	stateEmpty:     {stateStarting},
	stateStarting:  {stateReady, stateEmpty},
	stateReady:     {stateRunning},
	stateRunning:   {stateReady, stateStopping, stateReplacing, stateRewinding},
	stateStopping:  {stateReady, stateReplacing},
	stateReplacing: {stateEmpty},
	stateRewinding: {stateReady, stateReplacing},
	stateClosed:    nil,
}

// may reports whether a session in st may move to to.
func (st state) may(to state) bool {
	if int(st) >= len(transitions) || st == stateClosed {
		return false
	}
	if to == stateClosed {
		return true
	}
	for _, next := range transitions[st] {
		if next == to {
			return true
		}
	}
	return false
}

// holds reports whether a session in st has a container it can use: the
// session's cur is set exactly then.
func (st state) holds() bool {
	return st == stateReady || st == stateRunning || st == stateStopping
}

// transitionError is a move the lifecycle does not allow: a bug in this
// package, never something a sandbox can cause.
type transitionError struct{ from, to state }

func (e *transitionError) Error() string {
	return fmt.Sprintf("sandbox: a session cannot go from %s to %s (a bug in codebridge: please report it)", e.from, e.to)
}

// strictStates makes an illegal move panic instead of being refused and
// logged; the package's tests set it.
var strictStates = false

// move changes the session's state to to. It returns [ErrClosed] when the
// session was closed meanwhile (Close may come at any time, and whoever
// moves next learns it here), and a *transitionError, logged, for a move
// the table does not allow; the state is unchanged then. The caller holds
// s.mu. Every move wakes those waiting for a change (a start, a
// replacement).
func (s *Session) move(to state) error {
	from := s.st
	if !from.may(to) {
		if from == stateClosed {
			return ErrClosed
		}
		err := &transitionError{from, to}
		if strictStates {
			panic(err)
		}
		s.log.Error(err.Error())
		return err
	}
	s.st = to
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// current returns the container while the state holds one, else nil. The
// caller holds s.mu.
func (s *Session) current() *live {
	if s.st.holds() {
		return s.cur
	}
	return nil
}
