package sandbox

import (
	"errors"
	"io"
	"log/slog"
	"testing"
)

// An illegal move in any test of this package panics, so that a test that
// drives a session through one fails where it happened.
func init() { strictStates = true }

// TestStateTransitions: the table allows exactly the moves the lifecycle
// in the state type's doc comment draws, closed is reachable from every
// state and final, and a move the table does not allow is refused (the
// state stays as it was) with an error that says which.
func TestStateTransitions(t *testing.T) {
	legal := map[[2]state]bool{
		{stateEmpty, stateStarting}:      true,
		{stateStarting, stateReady}:      true,
		{stateStarting, stateEmpty}:      true,
		{stateReady, stateRunning}:       true,
		{stateRunning, stateReady}:       true,
		{stateRunning, stateStopping}:    true,
		{stateRunning, stateReplacing}:   true,
		{stateStopping, stateReady}:      true,
		{stateStopping, stateReplacing}:  true,
		{stateReplacing, stateEmpty}:     true,
		{stateRunning, stateRewinding}:   true,
		{stateRewinding, stateReady}:     true,
		{stateRewinding, stateReplacing}: true,
	}
	all := []state{stateEmpty, stateStarting, stateReady, stateRunning, stateStopping, stateReplacing, stateRewinding, stateClosed}
	for _, from := range all {
		for _, to := range all {
			want := legal[[2]state{from, to}] || (to == stateClosed && from != stateClosed)
			if got := from.may(to); got != want {
				t.Errorf("%s -> %s allowed %v, want %v", from, to, got, want)
			}
		}
	}

	strictStates = false
	defer func() { strictStates = true }()
	for _, from := range all {
		for _, to := range all {
			s := &Session{st: from, changed: make(chan struct{}), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			changed := s.changed
			err := s.move(to)
			switch {
			case from.may(to):
				if err != nil || s.st != to || !closed(changed) {
					t.Errorf("%s -> %s: %v, now %s", from, to, err, s.st)
				}
			case from == stateClosed:
				if !errors.Is(err, ErrClosed) || s.st != stateClosed {
					t.Errorf("closed -> %s: %v, now %s; want ErrClosed", to, err, s.st)
				}
			default:
				var te *transitionError
				if !errors.As(err, &te) || s.st != from || closed(changed) {
					t.Errorf("%s -> %s: %v, now %s; want it refused", from, to, err, s.st)
				}
			}
		}
	}
}

// TestIllegalMovePanicsInTests: in this package's tests an illegal move
// panics, naming both states.
func TestIllegalMovePanicsInTests(t *testing.T) {
	s := &Session{st: stateEmpty, changed: make(chan struct{})}
	defer func() {
		r := recover()
		if err, ok := r.(error); !ok || err.Error() != (&transitionError{stateEmpty, stateRunning}).Error() {
			t.Fatalf("recovered %v, want the transition error", r)
		}
	}()
	_ = s.move(stateRunning)
}

// state returns the session's state now.
func (s *Session) state() state {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
