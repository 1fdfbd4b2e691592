package sandbox

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestGraceOverLetsGoOfADetachableSandbox: a detachable session whose
// runtime does not answer within the time limit and the grace (another
// bridge may have adopted the sandbox: its channel wins) lets go of the
// sandbox instead of removing it, and starts no other for the handle: the
// session is closed and says so ([Session.LetGo]).
func TestGraceOverLetsGoOfADetachableSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		s := fakeSession(eng, Config{Grace: 2 * time.Second, Detachable: &Detachable{Digest: "d1", Key: strings.Repeat("k", 32), Principal: "p"}})
		defer s.Close()
		res, _, err := runAt(t, t.Context(), s, "hangs", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusTimeout || res.StateKept || !strings.Contains(res.Notice, "let go of the session's sandbox without removing it") {
			t.Fatalf("result %+v", res)
		}
		wantCounts(t, eng, 1, 0)
		if !s.LetGo() || s.state() != stateClosed {
			t.Fatalf("LetGo %v, state %s; want true and closed", s.LetGo(), s.state())
		}
		if _, _, err := runAt(t, t.Context(), s, "ok", time.Minute); !errors.Is(err, ErrClosed) {
			t.Fatalf("the next cell: %v, want ErrClosed (no second sandbox for the handle)", err)
		}
		wantCounts(t, eng, 1, 0)
		_ = eng.containers[0].Remove(t.Context()) // the sandbox the other bridge would hold
	})
}

// TestMovedFrameLetsGoOrTakesBack: a detachable runtime whose channel
// another bridge took over says so (a moved frame). A cell that runs
// then ends at once with the let-go notice, not at its time limit, and
// the sandbox is detached, never removed. Between cells, the next Run
// takes the channel back on the same stream (a resume frame, no new
// relay) and runs its cell there, saying where the runtime was.
func TestMovedFrameLetsGoOrTakesBack(t *testing.T) {
	cfg := Config{Grace: 2 * time.Second, Detachable: &Detachable{Digest: "d1", Key: strings.Repeat("k", 32), Principal: "p"}}
	t.Run("as a cell runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			eng := &fakeEngine{}
			s := fakeSession(eng, cfg)
			defer s.Close()
			res, _, err := runAt(t, t.Context(), s, "moves", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if res.StateKept || !strings.Contains(res.Notice, "another bridge took this session over as this call ran") || !strings.Contains(res.Notice, "without removing it") {
				t.Fatalf("result %+v", res)
			}
			if !s.LetGo() || s.state() != stateClosed {
				t.Fatalf("LetGo %v, state %s; want true, closed", s.LetGo(), s.state())
			}
			wantCounts(t, eng, 1, 0)
			_ = eng.containers[0].Remove(t.Context()) // the sandbox the other bridge holds
		})
	})
	t.Run("before the runtime read the cell", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			eng := &fakeEngine{}
			s := fakeSession(eng, cfg)
			defer s.Close()
			res, _, err := runAt(t, t.Context(), s, "moved once", time.Hour)
			if err != nil || res.Status != StatusOK || res.TakenBack == nil || s.LetGo() {
				t.Fatalf("%+v, %v; want the cell sent again on the channel taken back, and run", res, err)
			}
			wantCounts(t, eng, 1, 0)
		})
	})
	t.Run("between cells", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			eng := &fakeEngine{}
			s := fakeSession(eng, cfg)
			defer s.Close()
			if _, _, err := runAt(t, t.Context(), s, "ok, then moves", time.Hour); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the moved frame is read
			res, _, err := runAt(t, t.Context(), s, "ok", time.Hour)
			if err != nil || res.Status != StatusOK || res.TakenBack == nil || s.LetGo() {
				t.Fatalf("the cell after the move: %+v, %v; want it run, taken back", res, err)
			}
			wantCounts(t, eng, 1, 0)
		})
	})
}

// TestMovedFrameOfAStdioSandboxIsABrokenChannel: from the sandbox's side,
// code that forges a moved frame in a session that is not detachable
// (nothing can take it over) gains nothing: the cell ends as a crash,
// the sandbox is replaced, and the session is not let go.
func TestMovedFrameOfAStdioSandboxIsABrokenChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &fakeEngine{}
		s := fakeSession(eng, Config{Grace: 2 * time.Second})
		defer s.Close()
		res, _, err := runAt(t, t.Context(), s, "moves", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusCrashed || res.StateKept || s.LetGo() {
			t.Fatalf("result %+v, LetGo %v; want a crash, the sandbox replaced", res, s.LetGo())
		}
		wantCounts(t, eng, 1, 1)
	})
}
