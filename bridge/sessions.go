package bridge

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is what one MCP session's calls run in (or every call, for
// stdio and exec): a sandbox, and the upstream servers as it sees them.
// It acts for one principal, known when it is made: the host state it
// reads and writes (skills, the audit's principal) is that principal's.
type session struct {
	b         *Bridge
	principal principal.Principal
	host      *sandboxHost
	upstreams *upstream.Pool
	own       bool // upstreams is this session's view, closed with it
	sbx       *sandbox.Session
	// notes are the upstream warnings for its cells' stderr: those of its
	// own (per_session) servers, and those tied to its calls.
	notes *cellNotes
	// cells counts the cells that run now ([session.run]): the HTTP
	// front ends no session whose cell runs ([Bridge.RunsCell]).
	cells atomic.Int32
	// history is its cells' ledgers, for what a rewind undid (rewind.go).
	history cellHistory
	// calling, for a handle's session (handles.go), is the client whose
	// call runs in it now; nil for the others.
	calling *callingClient
	// handoff, for a handle's session adopted from another bridge, is
	// what its next answer begins with (handoff.go).
	handoffMu sync.Mutex
	handoff   string
	// handed, for a handle's session adopted from another bridge, is the
	// ledger of the cell that ran there last, as the sandbox kept it:
	// runtime.calls() gives it as the previous cell's until this bridge
	// ran one (nil: none).
	handed *protocol.CellCalls
	// lease, for a handle's session on an engine with holds, is its part
	// in them (lease.go); nil for the others.
	lease *handleLease
}

// newSession makes a session of principal p over upstreams. No
// container starts until its first cell.
func (b *Bridge) newSession(upstreams *upstream.Pool, own bool, p principal.Principal) *session {
	s := b.sessionShell(upstreams, own, p)
	if b.warm != nil && b.opts.WorkspaceOf == nil {
		s.sbx = b.warm.NewSession(s.host)
	} else {
		s.sbx = b.sandboxes.NewSession(b.configOf(p), s.host)
	}
	return s
}

// sessionShell makes a session of principal p over upstreams, all but its
// sandbox.
func (b *Bridge) sessionShell(upstreams *upstream.Pool, own bool, p principal.Principal) *session {
	h := newSandboxHost(upstreams, b.log)
	h.packages = b.opts.Packages
	h.skills = b.skillsOf(p)
	h.gate = b.gate.NewSessionOf(p.String())
	h.trips = b.trips
	h.shapes = b.shapes.Book(p.Key())
	h.busy = b.reg.inflight() // with one session calling a server, its client is the one to ask
	h.metrics = b.opts.Metrics
	s := &session{b: b, principal: p, host: h, upstreams: upstreams, own: own, notes: &cellNotes{}}
	h.sessions = &sessionsView{handles: b.handles, p: p, self: s, elsewhere: b.endElsewhere}
	return s
}

// configOf is the sandbox configuration of p's sessions: p's workspace,
// when each principal has one.
func (b *Bridge) configOf(p principal.Principal) sandbox.Config {
	cfg := b.cfg
	if b.opts.WorkspaceOf != nil {
		cfg.Workspace = b.opts.WorkspaceOf(p)
	}
	return cfg
}

// close removes the session's sandbox and stops its own upstream clients.
func (s *session) close() {
	_ = s.sbx.Close()
	s.closeUpstreams()
}

// principalOf is who a request comes from: the owner of its verified
// bearer token, a static token's or an OAuth subject (the go-sdk keeps it the same for every request of an
// HTTP session), else the local user.
func principalOf(extra *mcp.RequestExtra) principal.Principal {
	if extra == nil || extra.TokenInfo == nil {
		return principal.Local()
	}
	return principal.FromUserID(extra.TokenInfo.UserID)
}

// sessionOf returns the session the calls of ss run in: the single one,
// or in mode [ManyUsers] one made for ss, acting for the principal
// of the request that made it, on its first call and removed when ss
// ends (the client said so, or it was idle too long).
func (b *Bridge) sessionOf(ss *mcp.ServerSession, extra *mcp.RequestExtra) (*session, error) {
	if b.reg.mode == OneUser || ss == nil {
		return b.single, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, sandbox.ErrClosed
	}
	if s := b.reg.session(ss); s != nil {
		return s, nil
	}
	notes := &cellNotes{}
	p := principalOf(extra)
	s := b.newSession(b.pool.ForSession(b.reg.down.forSession(ss, notes), p.Key()), true, p)
	s.notes = notes
	b.reg.add(ss, s)
	b.opts.Metrics.Sandboxes(1)
	b.log.Debug("session sandbox made", "session", ss.ID(), "principal", s.principal.String())
	go func() {
		_ = ss.Wait()
		b.endSession(ss)
	}()
	return s, nil
}

// newHandleSession makes a session of p for a client on the stateless
// protocol, and the handle that names it (handles.go). Its own upstream
// clients ask the client whose call runs in it.
func (b *Bridge) newHandleSession(ctx context.Context, p principal.Principal) (*session, string, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, "", sandbox.ErrClosed
	}
	handle, err := newHandle()
	if err != nil {
		return nil, "", err
	}
	s := b.newHandleSessionOf(p)
	cfg := b.configOf(p)
	if b.adoptable(ctx) {
		cfg = b.detachableConfig(handle, p)
		s.lease = newHandleLease(b.holderOf(ctx), handle)
	}
	s.sbx = b.sandboxes.NewSession(cfg, s.host)
	if err := b.handles.add(handle, p, s); err != nil {
		s.close()
		return nil, "", err
	}
	if s.lease != nil {
		h, err := s.lease.hr.Hold(ctx, s.lease.digest, nil) // a new handle: nobody else holds it
		if err != nil {
			if remove, ok := b.handles.endTag(handle, p, goneEnded); ok {
				go remove()
			}
			return nil, "", fmt.Errorf("codebridge could not mark the new session as held by this replica (its Lease: %w); try again", err)
		}
		s.startCall(h)
	}
	b.opts.Metrics.Sandboxes(1)
	b.log.Debug("session sandbox made", "session", HandleTag(handle), "principal", p.String())
	return s, handle, nil
}

// endingSession counts s as being removed, for Close to wait on, and
// returns what removes it. The handles call it under their lock, so that
// Close, which ends the handles first, waits for every one they ended.
func (b *Bridge) endingSession(s *session) (remove func()) {
	b.mu.Lock()
	b.closing.Add(1)
	b.ending++
	b.mu.Unlock()
	return func() {
		defer func() {
			b.mu.Lock()
			b.ending--
			b.mu.Unlock()
			b.closing.Done()
		}()
		s.close()
		b.dropHold(s)
		b.opts.Metrics.Sandboxes(-1)
	}
}

// endSession removes the sandbox of an MCP session that ended.
func (b *Bridge) endSession(ss *mcp.ServerSession) {
	b.mu.Lock()
	s := b.reg.remove(ss)
	ok := s != nil
	if ok {
		b.closing.Add(1) // Close waits for this close too
		b.ending++
	}
	b.mu.Unlock()
	b.trips.endSession(ss)
	if ok {
		defer func() {
			b.mu.Lock()
			b.ending--
			b.mu.Unlock()
			b.closing.Done()
		}()
		s.close()
		b.opts.Metrics.Sandboxes(-1)
		b.log.Debug("session sandbox removed", "session", ss.ID())
	}
}

// RunsCell reports whether a cell of ss's sandbox runs now: within a
// run_python call, or, for a client on the newer protocol, apart from
// its calls (waiting for the client's answers, say). A session that ran
// no code runs none.
func (b *Bridge) RunsCell(ss *mcp.ServerSession) bool {
	s := b.reg.session(ss)
	return s != nil && s.cells.Load() > 0
}

// NoteNextRun makes note the beginning of ss's next run_python answer:
// what opening ss did that its user should hear of (the HTTP front ended
// an idle session of the same user to make room). Notes of sessions that
// ended before their next call are dropped here.
func (b *Bridge) NoteNextRun(ss *mcp.ServerSession, note string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// The open sessions are read under the lock, so that a note added
	// since (of a session opened since) is never taken for one of a
	// session that ended.
	open := map[*mcp.ServerSession]bool{}
	for o := range b.srv.Sessions() {
		open[o] = true
	}
	for o := range b.runNotes {
		if !open[o] {
			delete(b.runNotes, o)
		}
	}
	b.runNotes[ss] += note
}

// takeRunNote returns, and forgets, the note ss's next run_python answer
// begins with, or "".
func (b *Bridge) takeRunNote(ss *mcp.ServerSession) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	note := b.runNotes[ss]
	delete(b.runNotes, ss)
	return note
}

// beginNotes starts collecting the upstream warnings for a cell's stderr:
// those of the session's own servers, and those of shared servers that
// came with its calls; end returns them.
func (s *session) beginNotes() (end func() string) { return s.notes.begin() }

// Sandboxes is how many MCP sessions and session handles have a sandbox
// now.
func (b *Bridge) Sandboxes() int {
	return b.reg.count() + b.handles.count()
}

// Close removes every session's sandbox at once (a cell still running
// ends), stops the sessions' own upstream clients, empties the warm
// pool and then closes the shapes store (writing what the calls
// observed). Calls that arrive later are refused. Close may be called more
// than once, and at once: every call returns when the sandboxes are gone,
// those of sessions that ended just before (their client said so) too.
func (b *Bridge) Close() error {
	b.closeOnce.Do(b.closeAll)
	return nil
}

func (b *Bridge) closeAll() {
	b.mu.Lock()
	b.closed = true
	if b.ending > 0 {
		b.log.Debug("waiting for the sandboxes of sessions that ended just before", "sessions", b.ending)
	}
	all := append([]*session{b.single}, b.reg.removeAll()...)
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(s.close)
	}
	for _, s := range b.handles.closeAll() {
		wg.Go(func() {
			s.detach() // a handle's sandbox lives while its handle does: another bridge adopts it
			b.releaseHeld(s)
		})
	}
	if b.warm != nil {
		wg.Go(b.warm.Close)
	}
	wg.Wait()
	b.closing.Wait() // sessions ended just before Close, still being removed
	b.shapes.Close() // after the last cell: what its calls observed is written
}
