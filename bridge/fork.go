package bridge

import (
	"context"
	"fmt"
	"strings"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
)

// forked makes the fork that res's cell made (fork() in the runtime) a
// session of its own: same principal, its own handle, upstream clients,
// gate session, ledger and approvals, its sandbox the fork's runtime in
// this session's container (sandbox.Manager.Fork). It returns what the
// answer says of it: the handle and how to use it, what the fork shares
// and what it does not; "" when the cell asked no fork.
func (sess *session) forked(ctx context.Context, res *sandbox.Result) string {
	f := res.Forked
	if f == nil {
		return ""
	}
	if !f.OK {
		return "[fork not made: " + gate.Printable(f.Error) + "; this session goes on as it was]"
	}
	b := sess.b
	s := b.newHandleSessionOf(sess.principal)
	sbx, err := b.sandboxes.Fork(ctx, sess.sbx, f, b.configOf(sess.principal), s.host)
	if err != nil {
		s.closeUpstreams()
		b.log.Warn("reaching a fork", "principal", sess.principal.String(), "err", err)
		return "[fork not made: " + gate.Printable(err.Error()) + "; this session goes on as it was]"
	}
	s.sbx = sbx
	handle, err := b.handles.mint(sess.principal, s)
	if err != nil {
		s.close()
		return "[fork not made: " + gate.Printable(err.Error()) + "; this session goes on as it was]"
	}
	b.opts.Metrics.Sandboxes(1)
	b.log.Debug("session forked", "session", HandleTag(handle), "principal", sess.principal.String())
	return forkedNote(handle, f)
}

// forkedNote is the answer's account of a fork: its handle and how to
// use it, then what it shares with this session and what it does not.
func forkedNote(handle string, f *protocol.Forked) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[forked: new session %s, a copy of this one as this cell ended; run code in it with \"session\": %q (this session goes on unchanged). ", handle, handle)
	b.WriteString("Its own: interpreter, handle, tool-call ledger, gate session and approvals, and its working directory " +
		gate.Printable(f.Dir) + ", which ")
	if f.Files != nil && f.Files.Copied {
		b.WriteString("holds a copy of this workspace's files (relative paths diverge). ")
	} else {
		reason := "unknown"
		if f.Files != nil {
			reason = gate.Printable(f.Files.Reason)
		}
		b.WriteString("starts empty (" + reason + "). ")
	}
	b.WriteString("Shared: the container with its CPU, memory and process limits, /tmp, and absolute /workspace paths. ")
	if len(f.Threads) > 0 {
		b.WriteString("Threads that run here do not run there: " + gate.Printable(strings.Join(f.Threads, ", ")) + "; ")
	}
	b.WriteString("files open at the fork share their positions, and sockets are shared, not copied.]")
	return b.String()
}
