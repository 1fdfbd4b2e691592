package sandbox

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
)

// TestFamilyCountsSessionsAndBoundsForks: a container's first session
// counts as one; each fork joins; the container goes with the last
// session to leave; a container that holds MaxForks runtimes refuses
// another, saying so, and takes one again once a fork ended.
func TestFamilyCountsSessionsAndBoundsForks(t *testing.T) {
	c := &live{}
	f := c.familyOf()
	if err := f.join(); err != nil {
		t.Fatal(err)
	}
	if f.leave() {
		t.Fatal("the first of two sessions to leave was taken for the last")
	}
	if !c.lastOfFamily() {
		t.Fatal("the last session to leave was not taken for the last")
	}
	g := (&live{}).familyOf()
	for i := 1; i < MaxForks; i++ {
		if err := g.join(); err != nil {
			t.Fatalf("fork %d refused: %v", i, err)
		}
	}
	err := g.join()
	if err == nil || !strings.Contains(err.Error(), "the most one container holds") {
		t.Fatalf("a fork past MaxForks: %v", err)
	}
	// Ending a fork makes room for another, as the error says.
	g.leave()
	if err := g.join(); err != nil {
		t.Fatalf("a fork after one ended: %v", err)
	}
	if err := g.join(); err == nil {
		t.Fatal("a fork past MaxForks after one ended and one was made")
	}
}

// TestBoundForked: what the runtime says of a fork is cut to size (the
// runtime is untrusted).
func TestBoundForked(t *testing.T) {
	threads := make([]string, 100)
	for i := range threads {
		threads[i] = strings.Repeat("t", 500)
	}
	r := boundForked(protocol.Forked{OK: true, Dir: strings.Repeat("d", 5000), Error: strings.Repeat("e", 9000),
		Threads: threads, Files: &protocol.ForkedFiles{Reason: strings.Repeat("r", 5000)}})
	if len(r.Threads) != maxRewoundNames || len(r.Threads[0]) > maxRewoundName+30 || len(r.Dir) > 230 ||
		len(r.Error) > 2030 || len(r.Files.Reason) > 430 {
		t.Fatalf("not bounded: %d threads, thread %d, dir %d, error %d, reason %d",
			len(r.Threads), len(r.Threads[0]), len(r.Dir), len(r.Error), len(r.Files.Reason))
	}
}

// relayStub is a relay's exec: it records whether its stream was ended
// and whether anyone removed the container through it.
type relayStub struct{ ended, removed bool }

type stubStdin struct{ r *relayStub }

func (s stubStdin) Write(p []byte) (int, error) { return len(p), nil }
func (s stubStdin) Close() error                { s.r.ended = true; return nil }

func (r *relayStub) ID() string                                   { return "c" }
func (r *relayStub) Stdin() io.WriteCloser                        { return stubStdin{r} }
func (r *relayStub) Stdout() io.Reader                            { return strings.NewReader("") }
func (r *relayStub) Exited(context.Context, time.Duration) string { return "" }
func (r *relayStub) Remove(context.Context) error                 { r.removed = true; return nil }

// TestSpareRelay: a relay kept for the next fork is taken once; the last
// session to leave ends it; a relay offered to a family that ended is
// ended at once. None of them removes the container.
func TestSpareRelay(t *testing.T) {
	f := (&live{}).familyOf()
	a := &relayStub{}
	f.putSpare(a)
	if got := f.takeSpare(); got != a || f.takeSpare() != nil {
		t.Fatalf("the spare relay was not taken once: %v", got)
	}
	f.putSpare(a)
	if !f.leave() || !a.ended {
		t.Fatal("the last session left and its container's spare relay still waits")
	}
	b := &relayStub{}
	f.putSpare(b)
	if !b.ended || f.takeSpare() != nil {
		t.Fatal("a relay offered to an ended family was kept")
	}
	if a.removed || b.removed {
		t.Fatal("ending a relay removed the container")
	}
}

// TestForkHandover: a runtime that no init follows yet answers a fork
// with a request for a handover; the host sends the handover frame and
// takes the forked frame that follows as the fork's answer. A runtime
// that asks again gets no second handover: the fork is refused, saying
// so, and the session goes on.
func TestForkHandover(t *testing.T) {
	eng := &fakeEngine{}
	s := fakeSession(eng, Config{})
	defer s.Close()
	res, _, err := runAt(t, t.Context(), s, "forks after a handover", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Forked; f == nil || !f.OK || f.Key != "k" || f.Handover {
		t.Fatalf("forked %+v, want the answer after the handover", res.Forked)
	}
	res, _, err = runAt(t, t.Context(), s, "asks for handovers", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Forked; f == nil || f.OK || !strings.Contains(f.Error, "second handover") {
		t.Fatalf("forked %+v, want a refusal of the second handover", res.Forked)
	}
	if res, _, err := runAt(t, t.Context(), s, "ok", time.Minute); err != nil || res.Status != StatusOK {
		t.Fatalf("the next cell: %+v, %v", res, err)
	}
}
