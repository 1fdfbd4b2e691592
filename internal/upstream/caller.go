package upstream

import (
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller is who a request to a server is made for: the bridge's
// run_python call. It is passed to each request explicitly, never in a
// context, and the watch of a tool call keeps it while the call is in
// flight ([callWatchers]), so that what the server says about the call
// finds it. Nil is no one (a request of the bridge's own, a test): what
// the server says about such a call reaches no client.
type Caller interface {
	// Progress gets the server's progress notifications for a tool call
	// made for the caller.
	Progress(server string, p *mcp.ProgressNotificationParams)
	// Log gets a notifications/message the server sent as part of a tool
	// call made for the caller; the host's log has it already.
	Log(server string, p *mcp.LoggingMessageParams)
	// LogValue is how the host's log shows the caller (a slog.LogValuer).
	// A host log record about one of the caller's requests (the server
	// failed it) carries the caller under [CallerKey], so that a log
	// handler that knows the caller (the bridge's client log) tells the
	// caller's client, and no other.
	LogValue() slog.Value
}

// CallerKey is the attribute under which a host log record names the
// [Caller] it is about.
const CallerKey = "caller"

// callerAttrs are the attributes that name c in a log record: none for
// no caller.
func callerAttrs(c Caller) []any {
	if c == nil {
		return nil
	}
	return []any{CallerKey, c}
}
