package upstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callWatchers ties a server's notifications to the tool calls in
// flight: each call is registered under a progress token of its own, and
// the server's progress notifications and log messages that carry the
// token go to that call's [Caller]. The transports find a call by the
// token its request carries, and put the token on the log messages that
// belong to it (lineconn.go, logtie.go).
type callWatchers struct {
	server string
	log    *slog.Logger
	down   Downstream // nil: none
	calls  sync.Map   // progress token -> *callWatch, for each tool call in flight
}

// newProgressToken is a progress token for one call: random, so that an
// upstream learns nothing from it of the calls made to other servers (a
// counter would tell it how many there were between two of its own).
func newProgressToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "codebridge-" + hex.EncodeToString(b[:])
}

// callWatch is a tool call in flight, under its progress token: what its
// log messages and progress notifications go to. It is forgotten once the
// call ended and the log messages tied to it were handled: the go-sdk may
// hand a message to its handler after the answer that followed it.
type callWatch struct {
	token  string
	caller Caller   // who the call is made for; nil: no one
	slot   *rawSlot // where a stdio server's raw result goes (lineconn.go)

	mu    sync.Mutex
	held  int           // log messages tied to the call, not handled yet
	quiet chan struct{} // closed when held drops back to 0; nil while it is 0
	ended bool          // the call returned
}

// hold keeps w for one more log message tied to it.
func (w *callWatch) hold() {
	w.mu.Lock()
	if w.held == 0 {
		w.quiet = make(chan struct{})
	}
	w.held++
	w.mu.Unlock()
}

// handled waits until the log messages tied to the call so far have been
// handled (a warning is then in the cell's notes, a message on its way to
// the caller), or ctx ends, or logWait passes (a message the go-sdk
// dropped). The go-sdk hands notifications to their handler on a
// goroutine of its own, while the bridge's own tools/call takes its answer
// straight from the reading goroutine ([lineConn.request]): without this
// wait a call could return, and its cell end, before the log messages that
// came before its answer were handled.
func (w *callWatch) handled(ctx context.Context) {
	w.mu.Lock()
	quiet := w.quiet
	w.mu.Unlock()
	if quiet == nil {
		return
	}
	t := time.NewTimer(logWait)
	defer t.Stop()
	select {
	case <-quiet:
	case <-ctx.Done():
	case <-t.C:
	}
}

// logWait bounds how long a call waits for its log messages to be handled.
const logWait = 2 * time.Second

// watch registers the call made for caller under a progress token of
// its own (w.token, which the caller puts on its request), so that the
// server's notifications that carry the token, and the transport that
// sends the request, find the call; end forgets it. Every call has a
// token: it is how a log message is tied to its call.
func (ws *callWatchers) watch(caller Caller) (w *callWatch, end func()) {
	w = &callWatch{token: newProgressToken(), caller: caller}
	w.slot = &rawSlot{call: w, release: func() {}}
	ws.calls.Store(w.token, w)
	return w, func() { ws.letGo(w, func() { w.ended = true }) }
}

// unhold lets w go for one log message handled.
func (ws *callWatchers) unhold(w *callWatch) {
	ws.letGo(w, func() {
		w.held = max(w.held-1, 0)
		if w.held == 0 && w.quiet != nil {
			close(w.quiet)
			w.quiet = nil
		}
	})
}

// letGo applies change to w; once w's call ended and its last log message
// was handled, w is forgotten.
func (ws *callWatchers) letGo(w *callWatch, change func()) {
	w.mu.Lock()
	change()
	last := w.ended && w.held == 0
	w.mu.Unlock()
	if last {
		ws.calls.Delete(w.token)
	}
}

// callOf is the call in flight with progress token token, or nil (ws
// nil: a connection made without watchers, in tests).
func (ws *callWatchers) callOf(token any) *callWatch {
	if ws == nil || token == nil {
		return nil
	}
	if w, ok := ws.calls.Load(progressKey(token)); ok {
		return w.(*callWatch)
	}
	return nil
}

// progressKey is the map key of a progress token as it comes back in a
// notification (a string, or a JSON number as float64).
func progressKey(token any) any {
	if f, ok := token.(float64); ok {
		return fmt.Sprint(f)
	}
	return token
}

// progress passes a progress notification to the call that asked for it.
func (ws *callWatchers) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if w := ws.callOf(req.Params.ProgressToken); w != nil && w.caller != nil {
		w.caller.Progress(ws.server, req.Params)
	}
}

// logMessage takes a notifications/message of the server: the host's log
// gets it, and the Downstream the call it belongs to. A message belongs to
// a tool call when it carries that call's progress token: on stdio, the
// connection puts it there when the call was the only one in flight as the
// message came (lineconn.go); a server may also put it in the message's
// own progressToken. A message that belongs to a call goes to that call's
// Caller, and to no one when it has none. Any other message belongs to no
// call, and goes to the Downstream: a server shared by several users may
// be logging another user's request.
func (ws *callWatchers) logMessage(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	if p == nil {
		return
	}
	level := slog.LevelDebug
	if atLeastWarning(p.Level) {
		level = slog.LevelInfo // never Warn: the bridge's own warnings reach clients, this must not
	}
	ws.log.Log(context.Background(), level, "upstream log message", "level", p.Level, "logger", p.Logger, "data", dataText(p.Data))
	token, held := p.Meta[callKey], true
	if token == nil {
		token, held = p.GetProgressToken(), false
	}
	w := ws.callOf(token)
	if held && w != nil {
		defer ws.unhold(w)
	}
	msg := *p
	if len(p.Meta) > 0 {
		msg.Meta = maps.Clone(p.Meta)
		delete(msg.Meta, callKey) // codebridge's own token, nothing for the client
		delete(msg.Meta, "progressToken")
	}
	switch {
	case w != nil && w.caller != nil:
		w.caller.Log(ws.server, &msg)
	case w == nil && ws.down != nil:
		ws.down.Log(ctx, ws.server, &msg)
	}
}

// atLeastWarning reports whether an MCP log level is warning or worse.
func atLeastWarning(l mcp.LoggingLevel) bool {
	switch l {
	case "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}

// maxLogData is how much of a log message's data the host's log keeps.
const maxLogData = 2000

// dataText is a log message's data for the host's log: a string as it
// is, anything else as JSON, cut at maxLogData bytes.
func dataText(data any) string {
	text, ok := data.(string)
	if !ok {
		b, err := json.Marshal(data)
		if err != nil {
			return fmt.Sprint(data)
		}
		text = string(b)
	}
	if len(text) > maxLogData {
		text = strings.ToValidUTF8(text[:maxLogData], "") + "..."
	}
	return text
}
