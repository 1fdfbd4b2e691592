package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientLog is a slog.Handler that sends the bridge's own warnings and
// errors to the MCP client's log (notifications/message, logger
// "codebridge"). A record logged with the context of a run_python call's
// request (the cell's, an upstream call's) goes to that call's client, in
// that call; any other goes to the only client of a bridge that serves one
// user (stdio), and to none of a bridge that serves many (HTTP), whose
// sessions must not hear of each other's calls: the host's log has it. A
// record goes out as its message, the server it is about, and its errors
// formatted with Error(): what is for the host's eyes only (an upstream
// error's Detail, a server's stderr, commands and paths in other
// attributes) never leaves the host.
type ClientLog struct {
	to    *clients // the clients it sends to
	attrs []slog.Attr
}

// NewClientLog returns a handler that sends to c: nothing until the
// bridge made with c ([Options.Clients]) serves a client. It is made
// before the bridge, since everything the bridge is made of logs through
// it.
func NewClientLog(c *Clients) *ClientLog { return &ClientLog{to: c.all} }

// Enabled is true from warnings up.
func (h *ClientLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

// WithAttrs keeps the attributes the handler may send.
func (h *ClientLog) WithAttrs(as []slog.Attr) slog.Handler {
	h2 := *h
	h2.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &h2
}

// WithGroup is ignored: the few attributes sent are not grouped.
func (h *ClientLog) WithGroup(string) slog.Handler { return h }

// Handle sends r to the client of the call ctx serves, or with no call,
// to the bridge's only user's.
func (h *ClientLog) Handle(ctx context.Context, r slog.Record) error {
	c := h.to
	ss := caller(ctx)
	var sessions []*mcp.ServerSession
	switch {
	case ss != nil:
		sessions = []*mcp.ServerSession{ss}
	case c.shared:
		return nil // tied to no call of a bridge many users share
	default:
		sessions = c.listeners("")
		ctx = nil
	}
	if len(sessions) == 0 {
		return nil
	}
	data := map[string]any{"message": r.Message}
	keep := func(a slog.Attr) bool {
		switch v := a.Value.Any(); {
		case a.Key == "server" && a.Value.Kind() == slog.KindString:
			data["server"] = a.Value.String()
		case isError(v):
			data[a.Key] = v.(error).Error()
		}
		return true
	}
	for _, a := range h.attrs {
		keep(a)
	}
	r.Attrs(keep)
	params := &mcp.LoggingMessageParams{Logger: "codebridge", Level: mcpLevel(r.Level), Data: data}
	for _, ss := range sessions {
		c.log(sendContext(ctx, ss, c.current), ss, params)
	}
	return nil
}

// sendContext is the context a log message for ss is sent in. call is the
// context of the request of the run_python call it belongs to (a cell's
// request, an upstream call made for it), or nil when it belongs to no
// call. A client on protocol 2026-07-28 or later hears log messages within
// a call, at the level that call asked for in its _meta: the call waiting
// now of the run the message belongs to, or with no call, the one of ss's
// run whose cell runs now. An older client hears them at the level it set
// (logging/setLevel), within the call (streamable HTTP sends them on its
// stream). With no call to send it in, a message goes apart from any, at
// the level ss set, if it set one.
func sendContext(call context.Context, ss *mcp.ServerSession, current func(*mcp.ServerSession) *detachedRun) context.Context {
	var r *detachedRun
	if call != nil {
		r = runOf(call)
	}
	switch {
	case call != nil && r == nil:
		return context.WithoutCancel(call)
	case r == nil && multiRoundTrip(ss) && current != nil:
		r = current(ss)
	}
	if r != nil {
		if ctx := r.waitingCall(); ctx != nil {
			return ctx
		}
	}
	return context.Background()
}

func isError(v any) bool {
	_, ok := v.(error)
	return ok
}

// mcpLevel is the MCP name of a slog level.
func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}

// atLeastWarning reports whether an MCP log level is warning or worse.
func atLeastWarning(l mcp.LoggingLevel) bool {
	switch l {
	case "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}

// logText is a log message's data as one line: a string as it is, a
// message field of an object, or else the JSON.
func logText(data any) string {
	switch v := data.(type) {
	case string:
		return clipChars(strings.TrimSpace(v), maxNoteChars)
	case map[string]any:
		for _, k := range []string{"message", "msg"} {
			if s, ok := v[k].(string); ok {
				return clipChars(s, maxNoteChars)
			}
		}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Sprint(data)
	}
	return clipChars(string(b), maxNoteChars)
}

// Upstream warnings a cell's stderr shows: at most maxNotes lines of
// maxNoteChars characters, then a count of the rest.
const (
	maxNotes     = 20
	maxNoteChars = 500
)

// cellNotes collects the upstream warnings that arrive while a session's
// cell runs, for its stderr: those of its own servers, and those of shared
// servers tied to its calls.
type cellNotes struct {
	mu      sync.Mutex
	running int
	lines   []string
	dropped int
}

// begin marks a cell as running; end returns the lines for its stderr.
func (n *cellNotes) begin() (end func() string) {
	n.mu.Lock()
	n.running++
	n.mu.Unlock()
	return func() string {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.running--
		lines, dropped := n.lines, n.dropped
		if n.running == 0 {
			n.lines, n.dropped = nil, 0
		}
		if dropped > 0 {
			lines = append(lines, fmt.Sprintf("[%d more upstream warnings; the client's log has them]", dropped))
		}
		if len(lines) == 0 {
			return ""
		}
		return strings.Join(lines, "\n") + "\n"
	}
}

// add keeps line for the running cell; with none running it is dropped
// (the client's log has it). A nil cellNotes drops every line.
func (n *cellNotes) add(line string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.running == 0:
	case len(n.lines) < maxNotes:
		n.lines = append(n.lines, line)
	default:
		n.dropped++
	}
}

// upstreamProgress is the progress watcher of an upstream tool call made
// for c: it shows each notification as the latest line of c's progress,
// when c watches its output (nil otherwise).
func upstreamProgress(c *call, server string) func(*mcp.ProgressNotificationParams) {
	if c.output == nil {
		return nil
	}
	return func(p *mcp.ProgressNotificationParams) {
		c.output("upstream", progressLine(server, p)+"\n")
	}
}

// progressLine says what an upstream's progress notification says:
// "server: 3/5 message".
func progressLine(server string, p *mcp.ProgressNotificationParams) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %g", server, p.Progress)
	if p.Total > 0 {
		fmt.Fprintf(&b, "/%g", p.Total)
	}
	if p.Message != "" {
		b.WriteString(" " + p.Message)
	}
	return b.String()
}
