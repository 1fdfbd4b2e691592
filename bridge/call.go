package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// call is one run_python call as its cell's requests see it: who made it
// and what watches it. It is made once, in [session.run], handed to the
// sandbox as the cell's [sandbox.Caller], and passed explicitly down the
// path of every request the cell makes (the methods of rpc.go, the gate,
// the upstream request, as its [upstream.Caller]): no context carries any
// of it.
type call struct {
	*sandboxHost                           // the session's host
	sbx          *sandbox.Session          // the sandbox the cell runs in: installs write into it
	notes        *cellNotes                // the session's: the upstream warnings for its cells' stderr
	client       *mcp.ServerSession        // the MCP session that made the call; nil: codebridge exec, tests
	run          *detachedRun              // the detached run it is, on the newer protocol (roundtrip.go); nil otherwise
	output       func(stream, text string) // sees the cell's output as it comes (progress); nil: nobody does
	shared       shares                    // the files the cell shared, for the call's result
	cell         *gate.Run                 // the gate's record of this call, which its requests name; nil without a gate
	handed       *protocol.CellCalls       // the ledger of the cell before, when it ran on the bridge whose session this one took over
	// request is the context of the client's run_python request, when
	// the call is not a detached run: the go-sdk sends a log message
	// within the request whose context it is given (on streamable HTTP,
	// on that request's stream). Nil: no request (codebridge exec, tests).
	request context.Context
}

var _ upstream.Caller = (*call)(nil)

// Answer handles one request of the cell's runtime (rpc.go). Its error
// carries its kind (errkind.go), mapped here, once, for every method.
func (c *call) Answer(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error) {
	start := time.Now()
	val, err := c.answer(ctx, rpc)
	if c.metrics != nil {
		c.metrics.Request(rpc.Method, err, time.Since(start))
	}
	return val, err
}

func (c *call) answer(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error) {
	m, ok := methods[rpc.Method]
	if !ok {
		return nil, withKind(unknownMethod(rpc.Method))
	}
	if c.run != nil && c.trips != nil {
		c.trips.touch(c.run) // an upstream's question during this request is this call's
	}
	val, err := m(ctx, c, rpc)
	return val, withKind(err)
}

// Output passes a piece of the cell's output to the call's watcher, when
// it has one (progress notifications).
func (c *call) Output(stream, text string) {
	if c.output != nil {
		c.output(stream, text)
	}
}

// Progress shows an upstream's progress notification for a tool call of
// c as the latest line of c's progress, when c's output is watched.
func (c *call) Progress(server string, p *mcp.ProgressNotificationParams) {
	c.Output("upstream", progressLine(server, p)+"\n")
}

// Log passes on an upstream's log message that came as part of a tool
// call of c: to c's client, within c, and a warning or worse to the
// stderr of its session's running cell. No other session hears of it.
func (c *call) Log(server string, p *mcp.LoggingMessageParams) {
	if c.client != nil {
		c.tell(named(server, p))
	}
	c.notes.keep(server, p)
}

// LogValue is how the host's log shows c: as nothing, since what a
// record about c says (the server and what failed) is the host's; the
// bridge's client log tells c's client (see [ClientLog]).
func (c *call) LogValue() slog.Value { return slog.GroupValue() }

// tell sends msg to c's client, within c (see [call.logContext]), through
// the redaction of c's gate session.
func (c *call) tell(msg *mcp.LoggingMessageParams) {
	sendLog(c.logContext(), c.client, c.gate, msg)
}

// logContext is the context c's log messages are sent in: a client on
// protocol 2026-07-28 or later hears them within the call of c's detached
// run that waits now, at the level that call asked for; an older one
// within c's request, at the level it set (logging/setLevel).
func (c *call) logContext() context.Context {
	switch {
	case c.run != nil:
		return c.run.logContext()
	case c.request != nil:
		return context.WithoutCancel(c.request)
	}
	return context.Background()
}
