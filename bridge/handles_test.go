package bridge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
)

// removals records the sessions a registry removed.
type removals struct {
	mu   sync.Mutex
	gone []*session
}

func (r *removals) end(s *session) func() {
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.gone = append(r.gone, s)
	}
}

func (r *removals) removed(s *session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.gone {
		if g == s {
			return true
		}
	}
	return false
}

var alice, bob = principal.Token("alice"), principal.Token("bob")

// A handle has at least 128 bits of entropy, names its session for its
// principal, and is kept only as a digest: neither the registry nor a
// listing holds it.
func TestHandleMintAndOpen(t *testing.T) {
	r := &removals{}
	h := newHandles(time.Hour, r.end)
	s := &session{}
	handle, err := h.mint(alice, s)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimPrefix(handle, handlePrefix)
	if !strings.HasPrefix(handle, handlePrefix) || len(body)*5 < 128 {
		t.Fatalf("handle %q: want %s and at least 128 bits", handle, handlePrefix)
	}
	other, _ := h.mint(alice, &session{})
	if other == handle {
		t.Fatal("two handles are the same")
	}
	got, err := h.open(handle, alice)
	if err != nil || got != s {
		t.Fatalf("alice's handle: %v, %v", got, err)
	}
	for d, e := range h.live {
		if strings.Contains(d, body) || d == handle || e.digest != d {
			t.Fatalf("the registry keeps the handle itself: %q", d)
		}
	}
	for _, i := range h.list(alice, false) {
		if strings.Contains(i.Tag, body) || (i.Tag != HandleTag(handle) && i.Tag != HandleTag(other)) {
			t.Fatalf("a listing shows %q", i.Tag)
		}
	}
	if n := len(h.list(alice, false)); n != 2 {
		t.Fatalf("alice lists %d sessions, want 2", n)
	}
	if n := len(h.list(bob, false)); n != 0 {
		t.Fatalf("bob lists %d of alice's sessions", n)
	}
}

// From the attacker's side: another principal's handle, a guessed one,
// a listed tag passed as a handle, and the handle with a changed letter
// all get the same answer, which says nothing of a session existing.
func TestHandleOfAnotherPrincipalIsUnknown(t *testing.T) {
	h := newHandles(time.Hour, (&removals{}).end)
	handle, _ := h.mint(alice, &session{})
	tag := h.list(alice, false)[0].Tag
	flipped := handle[:len(handle)-1] + "a"
	if strings.HasSuffix(handle, "a") {
		flipped = handle[:len(handle)-1] + "b"
	}
	for name, c := range map[string]struct {
		handle string
		p      principal.Principal
	}{
		"bob with alice's handle": {handle, bob},
		"a guessed handle":        {handlePrefix + strings.Repeat("a", 26), alice},
		"a listed tag":            {tag, alice},
		"one letter changed":      {flipped, alice},
		"no prefix":               {strings.TrimPrefix(handle, handlePrefix), alice},
		"the local user":          {handle, principal.Local()},
	} {
		if _, err := h.open(c.handle, c.p); !errors.Is(err, errUnknownHandle) {
			t.Errorf("%s: %v, want the unknown handle's error", name, err)
		}
	}
	if _, ok := h.endTag(handle, bob, goneEnded); ok {
		t.Fatal("bob ended alice's session by its handle")
	}
	if _, ok := h.endTag(tag, bob, goneEnded); ok {
		t.Fatal("bob ended alice's session")
	}
	if _, err := h.open(handle, alice); err != nil {
		t.Fatalf("alice's session after bob's tries: %v", err)
	}
}

// A handle after its end says it ended; the sandbox is removed; another
// principal still gets the unknown handle's answer for it.
func TestHandleAfterEnd(t *testing.T) {
	r := &removals{}
	h := newHandles(time.Hour, r.end)
	s := &session{}
	handle, _ := h.mint(alice, s)
	remove, ok := h.endTag(h.list(alice, false)[0].Tag, alice, goneEnded)
	if !ok {
		t.Fatal("alice could not end her session by its tag")
	}
	remove()
	if !r.removed(s) {
		t.Fatal("the ended session's sandbox was not removed")
	}
	if _, err := h.open(handle, alice); !errors.Is(err, errEndedHandle) {
		t.Fatalf("alice's ended handle: %v", err)
	}
	if _, err := h.open(handle, bob); !errors.Is(err, errUnknownHandle) {
		t.Fatalf("bob with alice's ended handle: %v", err)
	}
	// By the handle itself, too.
	other, _ := h.mint(alice, &session{})
	if _, ok := h.endTag(other, alice, goneEvicted); !ok {
		t.Fatal("alice could not end her session by its handle")
	}
	var ex *expiredError
	if _, err := h.open(other, alice); !errors.As(err, &ex) || !ex.evicted || !strings.Contains(err.Error(), "make room") {
		t.Fatalf("an evicted handle: %v", err)
	}
}

// A handle idle past the limit expires: its sandbox is removed and its
// next use says it expired, and after how long. Each use restarts the
// clock; a session whose cell runs does not expire.
func TestHandleIdleExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &removals{}
		h := newHandles(time.Minute, r.end)
		s := &session{}
		handle, _ := h.mint(alice, s)
		time.Sleep(50 * time.Second)
		if _, err := h.open(handle, alice); err != nil { // restarts the clock
			t.Fatal(err)
		}
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if r.removed(s) {
			t.Fatal("a session used 50 s ago expired with a limit of a minute")
		}
		s.cells.Add(1) // a cell runs: not idle
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if r.removed(s) {
			t.Fatal("a session whose cell runs expired")
		}
		s.cells.Add(-1)
		h.touch(s) // the call ends: idle from now
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if r.removed(s) {
			t.Fatal("a session whose long call ended 50 s ago expired with a limit of a minute")
		}
		time.Sleep(11 * time.Second)
		synctest.Wait()
		if !r.removed(s) {
			t.Fatal("an idle session did not expire")
		}
		var ex *expiredError
		_, err := h.open(handle, alice)
		if !errors.As(err, &ex) || ex.evicted || !strings.Contains(err.Error(), "1m0s") || !strings.Contains(err.Error(), "omit `session`") {
			t.Fatalf("an expired handle: %v", err)
		}
		if _, err := h.open(handle, bob); !errors.Is(err, errUnknownHandle) {
			t.Fatalf("bob with alice's expired handle: %v", err)
		}
		if n := h.count(); n != 0 {
			t.Fatalf("%d handles live after expiry", n)
		}
	})
}

// Closing the registry hands back every live session and refuses new
// handles.
func TestHandlesCloseAll(t *testing.T) {
	h := newHandles(time.Hour, (&removals{}).end)
	s := &session{}
	_, _ = h.mint(alice, s)
	if all := h.closeAll(); len(all) != 1 || all[0] != s {
		t.Fatalf("closeAll gave %v", all)
	}
	if _, err := h.mint(alice, &session{}); !errors.Is(err, errClosing) {
		t.Fatalf("a handle after close: %v", err)
	}
}

// TestEndSessionElsewhere: runtime.end_session of a tag this bridge does
// not hold asks the engine; a session not found there (another
// principal's reads the same) is "no session of yours", the engine's own
// failure says so and to try again, and a found one is ended.
func TestEndSessionElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name  string
		found error
		want  string
	}{
		{"not on the engine", sandbox.ErrNoTag, "no session of yours"},
		{"the engine fails", errors.New("engine down"), "engine down; try again"},
		{"ended there", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &sessionsView{handles: newHandles(time.Hour, (&removals{}).end), p: principal.Local(),
				elsewhere: func(context.Context, string, principal.Principal) error { return tc.found }}
			out, err := endSession(context.Background(), &call{sandboxHost: &sandboxHost{sessions: v}}, protocol.EndSessionParams{Session: "s-0123456789abcdef"})
			switch {
			case tc.want == "" && (err != nil || !strings.Contains(string(out), `"ended":true`)):
				t.Fatalf("got %s, %v; want it ended", out, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %s, %v; want an error with %q", out, err, tc.want)
			}
		})
	}
}
