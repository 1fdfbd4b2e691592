package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientLog is a slog.Handler that sends the bridge's own warnings and
// errors to the MCP client's log (notifications/message, logger
// "codebridge"). A record about a run_python call (one that names the
// call under [upstream.CallerKey], as an upstream's failure of the call's
// request does) goes to that call's client, in that call; any other goes
// to the only client of a bridge that serves one user (stdio), and to
// none of a bridge that serves many (HTTP), whose sessions must not hear
// of each other's calls: the host's log has it. A record goes out as its
// message, the server it is about, and its errors formatted with Error():
// what is for the host's eyes only (an upstream error's Detail, a
// server's stderr, commands and paths in other attributes) never leaves
// the host.
type ClientLog struct {
	to    *Clients // the clients it sends to
	attrs []slog.Attr
}

// NewClientLog returns a handler that sends to c: nothing until the
// bridge made with c ([Options.Clients]) serves a client. It is made
// before the bridge, since everything the bridge is made of logs through
// it.
func NewClientLog(c *Clients) *ClientLog { return &ClientLog{to: c} }

// Enabled is true from warnings up.
func (h *ClientLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

// WithAttrs keeps the attributes the handler may send, and the call they
// may name.
func (h *ClientLog) WithAttrs(as []slog.Attr) slog.Handler {
	h2 := *h
	h2.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &h2
}

// WithGroup is ignored: the few attributes sent are not grouped.
func (h *ClientLog) WithGroup(string) slog.Handler { return h }

// Handle sends r to the client of the call it names, or when it names
// none, to the bridge's only user's.
func (h *ClientLog) Handle(_ context.Context, r slog.Record) error {
	var about *call // the call r names, if any
	data := map[string]any{"message": r.Message}
	keep := func(a slog.Attr) bool {
		switch v := a.Value.Any(); {
		case a.Key == upstream.CallerKey:
			about, _ = v.(*call)
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
	switch {
	case about != nil && about.client != nil:
		about.tell(params)
	case h.to.mode == OneUser:
		for _, ss := range h.to.all() {
			h.to.tell(ss, params)
		}
	}
	return nil
}

// untiedContext is the context a log message tied to no call is sent to
// ss in. A client on protocol 2026-07-28 or later hears log messages
// within a call, at the level that call asked for in its _meta: with no
// call of its own, the one of ss's run whose cell runs now (trips), if a
// call of it waits. Otherwise the message goes apart from any call, at
// the level ss set (logging/setLevel), if it set one.
func untiedContext(ss *mcp.ServerSession, trips *roundTrips) context.Context {
	if multiRoundTrip(ss) {
		if r := trips.of(ss); r != nil {
			return r.logContext()
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

// keep keeps server's log message p for the running cell's stderr, when
// it is a warning or worse.
func (n *cellNotes) keep(server string, p *mcp.LoggingMessageParams) {
	if atLeastWarning(p.Level) {
		n.add(fmt.Sprintf("[%s %s] %s", server, p.Level, logText(p.Data)))
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
