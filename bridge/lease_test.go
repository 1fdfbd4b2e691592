package bridge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/sandbox/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeHolder is an engine's holds ([engine.Holder]) of one replica: a
// handle is held by another replica's call until free is closed.
type fakeHolder struct {
	free    chan struct{} // closed: no other replica holds the handle
	refused chan struct{} // closed at the first refusal
	moved   bool          // the holds it gives say another replica held the handle

	mu       sync.Mutex
	asked    int
	released int
	dropped  []string
	once     sync.Once
}

func newFakeHolder(heldElsewhere bool) *fakeHolder {
	f := &fakeHolder{free: make(chan struct{}), refused: make(chan struct{})}
	if !heldElsewhere {
		close(f.free)
	}
	return f
}

func (f *fakeHolder) Hold(_ context.Context, _ string, _ engine.Hold) (engine.Hold, error) {
	f.mu.Lock()
	f.asked++
	f.mu.Unlock()
	select {
	case <-f.free:
		return &fakeHold{f: f, lost: make(chan struct{}), moved: f.moved}, nil
	default:
		f.once.Do(func() { close(f.refused) })
		return nil, errors.Join(engine.ErrHeld, errors.New("held by replica b"))
	}
}

func (f *fakeHolder) Drop(_ context.Context, digest string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped = append(f.dropped, digest)
	return nil
}

func (f *fakeHolder) counts() (asked, released int, dropped []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked, f.released, append([]string(nil), f.dropped...)
}

type fakeHold struct {
	f     *fakeHolder
	lost  chan struct{}
	moved bool
	once  sync.Once
}

func (h *fakeHold) Moved() bool           { return h.moved }
func (h *fakeHold) Lost() <-chan struct{} { return h.lost }
func (h *fakeHold) Release(context.Context) error {
	h.f.mu.Lock()
	h.f.released++
	h.f.mu.Unlock()
	h.once.Do(func() { close(h.lost) })
	return nil
}

// leaseBridge is a bridge whose engine cannot be reached (nothing here
// starts a sandbox), with one handle session of alice registered, whose
// holds are hr's.
func leaseBridge(t *testing.T, hr engine.Holder) (*Bridge, *session, string) {
	t.Helper()
	m := sandbox.NewManager(sandbox.EngineOptions{Kind: "docker", Getenv: func(k string) string {
		if k == "DOCKER_HOST" {
			return "unix://" + t.TempDir() + "/no.sock"
		}
		return ""
	}})
	b := New(m, sandbox.Config{}, upstream.NewPool(nil, upstream.Options{}), Options{Clients: NewClients(Options{Mode: ManyUsers})})
	t.Cleanup(func() { _ = b.Close() })
	handle, err := newHandle()
	if err != nil {
		t.Fatal(err)
	}
	p := principal.Token("alice")
	s := b.newHandleSessionOf(p)
	s.sbx = m.NewSession(b.detachableConfig(handle, p), s.host)
	s.lease = newHandleLease(hr, handle)
	if err := b.handles.add(handle, p, s); err != nil {
		t.Fatal(err)
	}
	return b, s, handle
}

// TestHoldWaitsForAnotherReplicasCall: a call on a handle another
// replica's call holds waits for it (asking again, no error), and runs
// once it is free.
func TestHoldWaitsForAnotherReplicasCall(t *testing.T) {
	hr := newFakeHolder(true)
	b, s, handle := leaseBridge(t, hr)
	go func() {
		<-hr.refused // the call was refused once: it waits
		close(hr.free)
	}()
	got, err := b.openHandle(context.Background(), handle, s.principal)
	if err != nil || got != s {
		t.Fatalf("the call after the other replica's: %v, %v", got, err)
	}
	if asked, _, _ := hr.counts(); asked < 2 {
		t.Fatalf("asked %d times: it did not wait", asked)
	}
	b.endCall(s, textResult("done"))
	if _, released, _ := hr.counts(); released != 1 {
		t.Fatalf("released %d times as the call ended, want 1", released)
	}
}

// TestHoldWaitEndsWithClearError: a call whose time runs out while
// another replica's call holds its handle says so, and what to do.
func TestHoldWaitEndsWithClearError(t *testing.T) {
	hr := newFakeHolder(true)
	b, s, handle := leaseBridge(t, hr)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-hr.refused
		cancel()
	}()
	_, err := b.openHandle(ctx, handle, s.principal)
	if !errors.Is(err, errHandleBusy) || !strings.Contains(err.Error(), "another codebridge replica is running a cell of this session") || !strings.Contains(err.Error(), "try again") {
		t.Fatalf("the wait's end: %v", err)
	}
}

// TestHoldLostMidCallSaysSessionSurvives: a call whose hold is lost
// while it runs ends with an error that says another replica took the
// session over and that it survives; this replica forgets the session
// (its next call adopts it again) and removes nothing.
func TestHoldLostMidCallSaysSessionSurvives(t *testing.T) {
	hr := newFakeHolder(false)
	b, s, handle := leaseBridge(t, hr)
	if _, err := b.openHandle(context.Background(), handle, s.principal); err != nil {
		t.Fatal(err)
	}
	h := s.lease.lastHold().(*fakeHold)
	h.once.Do(func() { close(h.lost) }) // another replica took it
	res := b.endCall(s, textResult("the cell's answer"))
	text := resultText(res)
	if !res.IsError || !strings.Contains(text, "took this session over") || !strings.Contains(text, "The session survives") {
		t.Fatalf("the answer of a call that lost its hold: %q", text)
	}
	if _, err := b.handles.open(handle, s.principal); !errors.Is(err, errUnknownHandle) {
		t.Fatalf("the session is still this replica's: %v", err)
	}
	if _, _, dropped := hr.counts(); len(dropped) != 0 {
		t.Fatalf("the loser dropped the handle's hold: %v", dropped)
	}
}

// TestHoldMovedForgetsStaleChannel: when another replica held the handle
// since this one's last call, this replica drops its session (its
// channel is stale) and adopts the sandbox again; when that fails, the
// hold is released and nothing is removed.
func TestHoldMovedForgetsStaleChannel(t *testing.T) {
	hr := newFakeHolder(false)
	hr.moved = true
	b, s, handle := leaseBridge(t, hr)
	_, err := b.openHandle(context.Background(), handle, s.principal)
	if err == nil || !strings.Contains(err.Error(), "could not take this session over") {
		t.Fatalf("a moved handle with no engine to adopt from: %v", err)
	}
	if _, err := b.handles.open(handle, s.principal); !errors.Is(err, errUnknownHandle) {
		t.Fatalf("the stale session is still this replica's: %v", err)
	}
	if _, released, dropped := hr.counts(); released != 1 || len(dropped) != 0 {
		t.Fatalf("released %d, dropped %v: want the hold released and nothing dropped", released, dropped)
	}
}

// TestHoldDroppedWhenHandleEnds: a handle that ends loses its hold mark
// (its Lease) with its sandbox.
func TestHoldDroppedWhenHandleEnds(t *testing.T) {
	hr := newFakeHolder(false)
	b, s, handle := leaseBridge(t, hr)
	if !b.EndSession(handle, s.principal.UserID(), false) {
		t.Fatal("the handle did not end")
	}
	b.closing.Wait()
	if _, _, dropped := hr.counts(); len(dropped) != 1 || dropped[0] != labelDigest(handle) {
		t.Fatalf("dropped %v, want the handle's label digest", dropped)
	}
}

// TestHoldReleasedOnShutdown: a bridge that closes while a call holds a
// handle releases it, so that another replica takes it at once, and the
// call's end does not count it as lost.
func TestHoldReleasedOnShutdown(t *testing.T) {
	hr := newFakeHolder(false)
	b, s, handle := leaseBridge(t, hr)
	if _, err := b.openHandle(context.Background(), handle, s.principal); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if _, released, _ := hr.counts(); released != 1 {
		t.Fatalf("released %d on shutdown, want 1", released)
	}
	if res := b.endCall(s, textResult("x")); res.IsError {
		t.Fatalf("the call's end after shutdown: %q", resultText(res))
	}
	if _, released, _ := hr.counts(); released != 1 {
		t.Fatalf("released %d in all, want 1", released)
	}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
