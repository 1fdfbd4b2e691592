package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/sandbox/engine"
)

// A handle's sandbox outlives the bridge that started it (issue 33): it
// is detachable ([sandbox.Detachable]), so that when the bridge stops it
// is detached, not removed, and any bridge of the same engine that gets a
// call with the handle adopts it ([sandbox.Manager.Adopt]). It lives while
// its handle does: until ended, or idle past the handle's limit (the
// runtime's own deadline is that limit too, for when no bridge holds it).

// labelDigestHex is how many hex digits of the handle's label digest the
// container's label carries (192 bits; a label value holds at most 63).
const labelDigestHex = 48

// localPrincipalLabel is the principal label of the local user's
// sandboxes (the local user has no key); no token principal's key can be
// it (theirs begin "t-" or "h-").
const localPrincipalLabel = "local"

// handleDerived is a secret of handle for one purpose: the SHA-256 (hex)
// of the purpose and the handle, so that the resume key and the label's
// digest (the registry's, which tags show in part) tell nothing of each
// other.
func handleDerived(purpose, handle string) string {
	sum := sha256.Sum256([]byte("codebridge session handle\x00" + purpose + "\x00" + handle))
	return hex.EncodeToString(sum[:])
}

// labelDigest is the digest of handle that its sandbox's label, and its
// hold (its Lease), carry: a prefix of the registry's digest, so that its
// tag is the one listings give.
func labelDigest(handle string) string { return handleDigest(handle)[:labelDigestHex] }

// principalKey is p's key as a handle's sandbox carries it: the local
// user's is [localPrincipalLabel].
func principalKey(p principal.Principal) string {
	if k := p.Key(); k != "" {
		return k
	}
	return localPrincipalLabel
}

// detachableConfig is the sandbox configuration of handle's session, a
// session of p: detachable, its labels and resume key derived from the
// handle (never the handle itself), its idle deadline the handle's.
func (b *Bridge) detachableConfig(handle string, p principal.Principal) sandbox.Config {
	cfg := b.configOf(p)
	who := principalKey(p)
	cfg.Detachable = &sandbox.Detachable{
		Digest:    labelDigest(handle), // its tag's prefix: `codebridge sessions` lists tags
		Key:       handleDerived("resume", handle),
		Principal: who,
		Idle:      b.handles.idle,
	}
	return cfg
}

// endElsewhere ends p's session tagged tag that this bridge does not
// hold: another bridge of the same engine does, or none; its sandbox is
// ended on the engine (sandbox.EndHandleSandboxOf: another principal's
// is not found, in the same words). The bridge that held it finds its
// sandbox gone at the next call there.
func (b *Bridge) endElsewhere(ctx context.Context, tag string, p principal.Principal) error {
	if !b.adoptable(ctx) {
		return sandbox.ErrNoTag
	}
	eng, err := b.sandboxes.Engine(ctx)
	if err != nil {
		return err
	}
	return sandbox.EndHandleSandboxOf(ctx, eng, tag, principalKey(p))
}

// adoptable reports whether the sandbox engine can take over a sandbox
// another bridge started (Docker, Podman, Kubernetes: [engine.Adopter]).
// Where it cannot, a handle's sandbox ends with its bridge, as before, and
// a handle this bridge does not hold is unknown.
func (b *Bridge) adoptable(ctx context.Context) bool {
	eng, err := b.sandboxes.Engine(ctx)
	if err != nil {
		return false
	}
	_, ok := eng.(engine.Adopter)
	return ok
}

// newHandleSessionOf makes a handle's session of p, all but its sandbox:
// its own upstream clients ask the client whose call runs in it.
func (b *Bridge) newHandleSessionOf(p principal.Principal) *session {
	notes, calling := &cellNotes{}, &callingClient{}
	s := b.sessionShell(b.pool.ForSession(&router{c: b.reg, follow: calling, notes: notes}, p.Key()), true, p)
	s.notes, s.calling = notes, calling
	return s
}

// openHandle is the session of handle for p: the one this bridge holds,
// or else the sandbox another bridge of the same engine left (it stopped,
// or another bridge holds the handle now), adopted and registered here.
// A handle this bridge saw end is never adopted; one no sandbox has, or
// another principal's, is unknown, word for word. Where the engine has
// holds (lease.go), the session comes held for the call.
func (b *Bridge) openHandle(ctx context.Context, handle string, p principal.Principal) (*session, error) {
	s, err := b.handles.open(handle, p)
	if err == nil && s.sbx.LetGo() { // another bridge took it over as a cell ran: adopt it anew
		b.letGoOf(s)
		s, err = nil, errUnknownHandle
	}
	if err == nil {
		if s.lease == nil {
			return s, nil
		}
		return b.holdLocal(ctx, handle, p, s)
	}
	if !errors.Is(err, errUnknownHandle) || !strings.HasPrefix(handle, handlePrefix) || b.handles.goneFor(handle, p) || !b.adoptable(ctx) {
		return s, err
	}
	l := newHandleLease(b.holderOf(ctx), handle)
	if l == nil {
		return b.adoptHandle(ctx, handle, p, nil)
	}
	// Nothing is written for a handle no sandbox of p carries (another
	// principal's, a guessed one): it is unknown before any wait.
	if err = b.sandboxes.FindDetached(ctx, b.detachableConfig(handle, p)); err != nil {
		return nil, b.adoptError(handle, err)
	}
	h, err := waitHold(ctx, l)
	if err != nil {
		return nil, err
	}
	return b.adoptHeld(ctx, handle, p, l, h)
}

// holdLocal takes the hold of s, this bridge's session of handle, for a
// call. When another replica held the handle since this one's last call,
// s's channel is stale: where the runtime said so on it (a moved frame),
// the cell takes it back on that channel ([sandbox.Session.Run]); else s
// is let go here (its sandbox is never removed) and the sandbox adopted
// again.
func (b *Bridge) holdLocal(ctx context.Context, handle string, p principal.Principal, s *session) (*session, error) {
	h, err := waitHold(ctx, s.lease)
	if err != nil {
		return nil, err
	}
	if !h.Moved() || b.movedFrame(ctx, s) {
		s.startCall(h)
		return s, nil
	}
	b.letGoOf(s)
	b.log.Info("another replica held this session since this one's last call: taking its sandbox over again", "session", HandleTag(handle))
	l := newHandleLease(s.lease.hr, handle)
	return b.adoptHeld(ctx, handle, p, l, h)
}

// movedFrameWait bounds the wait for the moved frame of a channel that
// another replica took over: the frame was written before that replica's
// call was answered, so it is on its way; one that never comes (a write
// the runtime could not make without blocking) costs this wait and an
// adoption.
const movedFrameWait = 2 * time.Second

// movedFrame reports whether the runtime said on s's channel that
// another replica took it over, waiting for the frame a little.
func (b *Bridge) movedFrame(ctx context.Context, s *session) bool {
	ctx, cancel := context.WithTimeout(ctx, movedFrameWait)
	defer cancel()
	return s.sbx.AwaitMoved(ctx)
}

// adoptHeld is adoptHandle for a handle whose hold h this call took: the
// hold is the session's, or released when there is no session.
func (b *Bridge) adoptHeld(ctx context.Context, handle string, p principal.Principal, l *handleLease, h engine.Hold) (*session, error) {
	s, err := b.adoptHandle(ctx, handle, p, l)
	if err != nil {
		b.release(h)
		return nil, err
	}
	s.startCall(h)
	return s, nil
}

// adoptHandle adopts the sandbox of handle, a handle of p this bridge
// does not hold, and registers its session here (with l, its part in
// the engine's holds, or nil).
func (b *Bridge) adoptHandle(ctx context.Context, handle string, p principal.Principal, l *handleLease) (*session, error) {
	b.handles.adopting.Lock() // one adoption at a time: two calls with one handle adopt it once
	defer b.handles.adopting.Unlock()
	if held, again := b.handles.open(handle, p); !errors.Is(again, errUnknownHandle) {
		return held, again // adopted by a call just before
	}
	s := b.newHandleSessionOf(p)
	s.lease = l
	sbx, r, err := b.sandboxes.Adopt(ctx, b.detachableConfig(handle, p), s.host)
	if err != nil {
		s.closeUpstreams()
		return nil, b.adoptError(handle, err)
	}
	s.sbx, s.handoff, s.handed = sbx, resumedNote(r), handedCalls(r)
	if err := b.handles.add(handle, p, s); err != nil {
		s.detach()
		return nil, err
	}
	b.opts.Metrics.Sandboxes(1)
	b.log.Info("took over a session's sandbox from another bridge", "session", HandleTag(handle), "principal", p.String())
	return s, nil
}

// adoptError is what a call gets when the sandbox of handle could not be
// adopted: an unknown handle when no sandbox of its principal carries
// it, word for word.
func (b *Bridge) adoptError(handle string, err error) error {
	if errors.Is(err, sandbox.ErrNoSandbox) {
		return errUnknownHandle
	}
	b.log.Warn("taking over a session from another bridge", "session", HandleTag(handle), "err", err)
	return fmt.Errorf("codebridge could not take this session over from the bridge that served it: %w; try again, or omit `session` to start a new one", err)
}

// resumedNote is what the first answer of an adopted session begins with:
// that the session survived its bridge, and where its last cell was.
func resumedNote(r *sandbox.Resumed) string {
	var b strings.Builder
	b.WriteString("[this session was taken over from the bridge that served it before (it stopped, or a call went there): its variables and files are kept")
	switch {
	case r == nil || r.Cell == 0:
	case r.Running:
		fmt.Fprintf(&b, "; its last cell (%d) is still running, and this code runs once it ends", r.Cell)
	case r.Done != nil:
		fmt.Fprintf(&b, "; its last cell (%d) finished (%s)", r.Cell, r.Done.Status)
	default:
		fmt.Fprintf(&b, "; its last cell (%d) did not finish", r.Cell)
	}
	if r != nil && r.Lost > 0 {
		fmt.Fprintf(&b, "; %d of its calls to tools got no answer (whether they ran is unknown)", r.Lost)
	}
	b.WriteString("]\n")
	if calls := handedCalls(r); calls != nil && calls.Total > 0 {
		b.WriteString(ledgerList(fmt.Sprintf("tool calls cell %d made, in order, as the sandbox kept them", r.Cell), *calls) + "\n")
	}
	return b.String()
}

// takeHanded returns, and forgets, the ledger of the cell that ran last
// on the bridge s was adopted from (nil: none): the first cell here
// reads it as its previous one's.
func (s *session) takeHanded() *protocol.CellCalls {
	s.handoffMu.Lock()
	defer s.handoffMu.Unlock()
	h := s.handed
	s.handed = nil
	return h
}

// takeHandoff returns, and forgets, the note of s's adoption, or "".
func (s *session) takeHandoff() string {
	s.handoffMu.Lock()
	defer s.handoffMu.Unlock()
	note := s.handoff
	s.handoff = ""
	return note
}

// detach lets go of s's sandbox without removing it (a handle's, as its
// bridge stops; any other is removed) and stops its own upstream clients.
func (s *session) detach() {
	if err := s.sbx.Detach(); errors.Is(err, sandbox.ErrNotDetachable) {
		_ = s.sbx.Close()
	}
	s.closeUpstreams()
}

// releaseIfLetGo forgets s's handle here, without removing its sandbox,
// once the sandbox layer let go of it (its runtime stopped answering: most
// likely another bridge adopted it, and the newer channel wins). The
// handle's next call on this bridge adopts the sandbox again; nothing is
// removed by the bridge that lost it.
func (b *Bridge) releaseIfLetGo(s *session) {
	if s.sbx.LetGo() {
		b.letGoOf(s)
	}
}

// letGoOf forgets s's handle here and detaches its sandbox, which another
// bridge holds now; it is never removed by this one.
// It reports whether this bridge still had the handle (it did not end
// meanwhile).
func (b *Bridge) letGoOf(s *session) bool {
	_ = s.sbx.Detach()
	if !b.handles.release(s) {
		return false
	}
	s.closeUpstreams()
	b.opts.Metrics.Sandboxes(-1)
	b.log.Info("let go of a session's sandbox that another bridge took over (or whose runtime stopped answering); the next call with its handle takes it back", "principal", s.principal.String())
	return true
}

// closeUpstreams stops s's own upstream clients.
func (s *session) closeUpstreams() {
	if s.own {
		_ = s.upstreams.Close()
	}
}
