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
