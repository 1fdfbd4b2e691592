package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientLog is a slog.Handler that sends the bridge's own warnings and
// errors to the MCP client's log (notifications/message, logger
// "codebridge"), honouring each session's logging/setLevel. A record goes
// out as its message, the server it is about, and its errors formatted
// with Error(): what is for the host's eyes only (an upstream error's
// Detail, a server's stderr, commands and paths in other attributes)
// never leaves the host.
type ClientLog struct {
	picker *serverSessions
	attrs  []slog.Attr
}

// NewClientLog returns a handler that sends nothing until a bridge made
// with it in [Options.ClientLog] serves a client.
func NewClientLog() *ClientLog { return &ClientLog{picker: &serverSessions{}} }

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

// Handle sends r to every session of the bridge's MCP server.
func (h *ClientLog) Handle(ctx context.Context, r slog.Record) error {
	sessions := h.picker.listeners("")
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
		h.picker.log(ctx, ss, params)
	}
	return nil
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

// cellNotes collects the upstream warnings that arrive while a cell runs,
// for its stderr.
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
// (the client's log has it).
func (n *cellNotes) add(line string) {
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

// withUpstreamProgress makes the upstream tool calls made under ctx ask
// for progress, and shows each notification as the latest line of the
// run_python call's progress (when that call watches its output).
func withUpstreamProgress(ctx context.Context, server string) context.Context {
	watch, ok := ctx.Value(outputKey{}).(func(stream, text string))
	if !ok {
		return ctx
	}
	return upstream.WithProgress(ctx, func(p *mcp.ProgressNotificationParams) {
		watch("upstream", progressLine(server, p)+"\n")
	})
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
