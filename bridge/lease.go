package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codebridge/codebridge/sandbox/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// On an engine whose replicas take turns on a handle ([engine.Holder]:
// Kubernetes, with a Lease per handle), a replica holds a handle only
// while a call on it runs, so that any replica may serve its next call
// (no sticky routing). A call on a handle another replica's call holds
// waits for it; a replica that finds another held the handle since its
// own last call drops its channel, which is stale, and adopts the
// sandbox again; a call whose hold is lost ends with an error that says
// the session survives. On the engines of one machine nothing of this
// runs: there the newer channel wins (handoff.go).

// holdPoll is how often a call whose handle another replica's call
// holds asks again.
const holdPoll = 250 * time.Millisecond

// holdWrite bounds a release or a drop of a handle's hold, which runs
// after its call's context may have ended.
const holdWrite = 10 * time.Second

// errHandleBusy is the end of a wait for a handle that another
// replica's call held all along.
var errHandleBusy = errors.New("another codebridge replica is running a cell of this session now (a session runs one cell at a time), and this call's time ran out waiting for it: try again once that cell has ended")

// errHoldLost replaces the answer of a call whose hold of its handle was
// lost while it ran.
const errHoldLost = "another codebridge replica took this session over while this call ran (or this replica could not renew its hold on it in time): this replica stopped using it and did not remove it. The session survives with its variables and files: call again with the same `session`; that answer says whether this cell finished"

// handleLease is a handle's session's part in the engine's holds: which
// handle, its latest hold, and the call that holds it now.
type handleLease struct {
	hr     engine.Holder
	digest string

	mu   sync.Mutex
	last engine.Hold // this replica's latest hold of the handle
	call *callHold   // the hold of the call running now, or nil
}

// callHold is one call's hold of its handle.
type callHold struct {
	hold engine.Hold
	stop chan struct{} // closed as the call ends: the watch stops

	mu   sync.Mutex
	over bool // the call ended, or the bridge closes: a loss from now on is no loss
	lost bool // the hold was lost while the call ran
}

// holderOf is the engine as an [engine.Holder], or nil where it is not
// one (or not reachable: then nothing is held, and the call's own use of
// the engine reports why).
func (b *Bridge) holderOf(ctx context.Context) engine.Holder {
	eng, err := b.sandboxes.Engine(ctx)
	if err != nil {
		return nil
	}
	hr, _ := eng.(engine.Holder)
	return hr
}

// newHandleLease is the holds part of handle's session, or nil when the
// engine has no holds.
func newHandleLease(hr engine.Holder, handle string) *handleLease {
	if hr == nil {
		return nil
	}
	return &handleLease{hr: hr, digest: labelDigest(handle)}
}

// lastHold is l's latest hold.
func (l *handleLease) lastHold() engine.Hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// waitHold takes l's handle for a call, asking again every [holdPoll]
// while another replica's call holds it, until ctx ends.
func waitHold(ctx context.Context, l *handleLease) (engine.Hold, error) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, errHandleBusy
		case <-t.C:
		}
		h, err := l.hr.Hold(ctx, l.digest, l.lastHold())
		switch {
		case err == nil:
			return h, nil
		case ctx.Err() != nil:
			return nil, errHandleBusy
		case !errors.Is(err, engine.ErrHeld):
			return nil, fmt.Errorf("codebridge could not take this session's hold for the call (its Lease: %w); try again", err)
		}
		t.Reset(holdPoll)
	}
}

// startCall makes h the hold of the call that runs in s now, and watches
// it: a hold lost while the call runs detaches s's sandbox (never
// removing it), and the call's answer says so ([Bridge.endCall]).
func (s *session) startCall(h engine.Hold) {
	c := &callHold{hold: h, stop: make(chan struct{})}
	s.lease.mu.Lock()
	s.lease.last, s.lease.call = h, c
	s.lease.mu.Unlock()
	go func() {
		select {
		case <-c.stop:
		case <-h.Lost():
			c.mu.Lock()
			lost := !c.over
			c.lost = lost
			c.mu.Unlock()
			if lost {
				_ = s.sbx.Detach() // the cell goes on in the sandbox, for the next holder
			}
		}
	}()
}

// takeCall ends the watch of the call that holds s's handle, and returns
// its hold, whether the hold was lost while the call ran, and whether
// the call still owned it (the bridge did not close meanwhile).
func (l *handleLease) takeCall() (c *callHold, lost, owned bool) {
	l.mu.Lock()
	c, l.call = l.call, nil
	l.mu.Unlock()
	if c == nil {
		return nil, false, false
	}
	c.mu.Lock()
	owned, lost = !c.over, c.lost
	if owned && !lost {
		select {
		case <-c.hold.Lost(): // lost as the call ended, before the watch saw it
			lost = true
		default:
		}
	}
	c.over = true
	c.mu.Unlock()
	close(c.stop)
	return c, lost, owned
}

// endCall lets go of the hold of s's call as it ends, with its answer
// res: it releases the handle for any replica's next call, or, when the
// hold was lost while the call ran, forgets the session here and answers
// that it survives.
func (b *Bridge) endCall(s *session, res *mcp.CallToolResult) *mcp.CallToolResult {
	if s.lease == nil {
		return res
	}
	c, lost, owned := s.lease.takeCall()
	switch {
	case !owned:
		return res
	case lost:
		if b.letGoOf(s) { // not when the handle ended meanwhile
			b.log.Warn("lost a session's hold while its call ran: another replica has it now", "principal", s.principal.String())
			res = errorResult(errHoldLost)
		}
	}
	b.release(c.hold) // after a loss, only stops its renewals
	return res
}

// release lets go of hold, logging a failure (the hold then expires).
func (b *Bridge) release(hold engine.Hold) {
	ctx, cancel := context.WithTimeout(context.Background(), holdWrite)
	defer cancel()
	if err := hold.Release(ctx); err != nil {
		b.log.Warn("releasing a session's hold", "err", err)
	}
}

// releaseHeld releases the hold of s's running call as the bridge closes:
// the call ends here (its sandbox is detached), and another replica may
// take the handle at once.
func (b *Bridge) releaseHeld(s *session) {
	if s.lease == nil {
		return
	}
	if c, _, owned := s.lease.takeCall(); owned {
		b.release(c.hold)
	}
}

// dropHold removes the mark of s's handle as held (its Lease), as the
// handle ends.
func (b *Bridge) dropHold(s *session) {
	if s.lease == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), holdWrite)
	defer cancel()
	if err := s.lease.hr.Drop(ctx, s.lease.digest); err != nil {
		b.log.Warn("removing an ended session's hold", "err", err)
	}
}
