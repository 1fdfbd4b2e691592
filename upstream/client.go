package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Downstream is whoever answers, for the bridge, what an upstream server
// asks of its client: the MCP client codebridge serves (stdio has exactly
// one; a bridge with many sessions picks the one the request belongs to).
// server is the upstream's configured name. Its methods are called on the
// upstream session's goroutines and may block until the client answers;
// ctx ends when the upstream cancels its request or goes away.
type Downstream interface {
	// CreateMessage asks the client's model (sampling/createMessage). The
	// per-server policy was checked before.
	CreateMessage(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// Elicit asks the user (elicitation/create).
	Elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// ListRoots answers roots/list: the directories the upstream may work in.
	ListRoots(ctx context.Context, server string) (*mcp.ListRootsResult, error)
	// AnswersRoots reports whether a roots/list of server would be
	// answered now (a client that gives roots, or --root directories).
	// Only then is the roots capability declared to the server: a server
	// not offered roots does not ask for them, and keeps the directories
	// its own configuration gives it (as the filesystem server does).
	AnswersRoots(server string) bool
	// Log passes on a notifications/message of the upstream that could not
	// be tied to a call in flight (see [Server.Call]); it is already in
	// the host's log.
	Log(ctx context.Context, server string, p *mcp.LoggingMessageParams)
	// LogCall passes on a notifications/message the upstream sent as part
	// of a tool call: call is the context that call was made with.
	LogCall(call context.Context, server string, p *mcp.LoggingMessageParams)
}

// ErrNoClient is the answer to an upstream's request when no client is
// there to ask (codebridge exec, or before a client connected).
var ErrNoClient = errors.New("no MCP client is connected to codebridge to answer this request")

// downRef holds a pool's Downstream, set once the bridge exists.
type downRef struct{ p atomic.Pointer[Downstream] }

func (r *downRef) get() Downstream {
	if d := r.p.Load(); d != nil {
		return *d
	}
	return nil
}

// SetDownstream sets who answers the servers' requests to their client
// (sampling, elicitation, roots) and hears their log messages. Until it is
// set, such requests are refused with [ErrNoClient].
func (p *Pool) SetDownstream(d Downstream) { p.down.p.Store(&d) }

// RootsChanged tells every running server that the client's roots
// changed (notifications/roots/list_changed); a server that cares asks
// for them again.
func (p *Pool) RootsChanged() {
	for _, s := range p.servers {
		s.mu.Lock()
		c := s.conn
		s.mu.Unlock()
		if c != nil && c.alive() {
			// roots/list is answered by the middleware below, never from
			// the go-sdk client's own list, so adding to that list is only
			// the way to make the go-sdk send the notification.
			c.client.AddRoots(&mcp.Root{URI: "codebridge:roots-changed"})
		}
	}
}

// clientOptions are the options of the MCP client the server is dialled
// with: handlers that pass its requests and notifications on to the
// pool's Downstream, each naming the server.
func (s *Server) clientOptions() *mcp.ClientOptions {
	// Roots are declared only when something can give them (see
	// [Downstream.AnswersRoots]); an empty, non-nil set keeps the go-sdk
	// from declaring them by default.
	caps := &mcp.ClientCapabilities{}
	if d := s.down.get(); d != nil && d.AnswersRoots(s.spec.Name) {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	return &mcp.ClientOptions{
		// Sampling and elicitation are declared (by their handlers) to every
		// server, whatever the client: a refusal is a clear error the
		// server can report, where an undeclared capability would hide
		// the server's tools that need it.
		Capabilities:                caps,
		ToolListChangedHandler:      s.toolListChanged,
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { s.dropOffers() },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { s.dropOffers() },
		CreateMessageHandler:        s.createMessage,
		ElicitationHandler:          s.elicit,
		LoggingMessageHandler:       s.logMessage,
		ProgressNotificationHandler: s.progress,
	}
}

func (s *Server) toolListChanged(context.Context, *mcp.ToolListChangedRequest) {
	s.mu.Lock()
	s.tools = nil
	s.mu.Unlock()
	s.gen.Add(1)
	s.log.Debug("tool list changed")
}

// createMessage answers sampling/createMessage: refused unless the
// server's entry allows sampling, then asked of the client.
func (s *Server) createMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if !s.spec.Sampling {
		// The config file's path is for the host's eyes: the message goes
		// back through the upstream to the sandbox.
		s.log.Warn("refused a sampling request: sampling is off for this server", "config", s.spec.Source)
		return nil, fmt.Errorf("codebridge does not let server %q use the client's model: sampling is off for it (to allow it, set \"sampling\": true in its entry of the codebridge config)", s.spec.Name)
	}
	d := s.down.get()
	if d == nil {
		return nil, ErrNoClient
	}
	return d.CreateMessage(ctx, s.spec.Name, req.Params)
}

// elicit answers elicitation/create by asking the client.
func (s *Server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	d := s.down.get()
	if d == nil {
		return nil, ErrNoClient
	}
	return d.Elicit(ctx, s.spec.Name, req.Params)
}

// listRoots answers roots/list (see rootsMiddleware).
// A server asks only when roots were declared to it, or when it needs
// them whatever it was offered: either way a refusal is worth a warning.
func (s *Server) listRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	var r *mcp.ListRootsResult
	err := ErrNoClient
	if d := s.down.get(); d != nil {
		r, err = d.ListRoots(ctx, s.spec.Name)
	}
	if err != nil {
		s.log.Warn("the server asked for roots, and none could be given", "err", err)
	}
	return r, err
}

// rootsMiddleware answers the server's roots/list from the Downstream,
// fresh each time, instead of from the go-sdk client's fixed list.
func (s *Server) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "roots/list" {
			return s.listRoots(ctx)
		}
		return next(ctx, method, req)
	}
}

// logMessage takes a notifications/message of the server: the host's log
// gets it, and the Downstream the call it belongs to. A message belongs to
// a tool call when it carries that call's progress token: on stdio, the
// connection puts it there when the call was the only one in flight as the
// message came (lineconn.go); a server may also put it in the message's
// own progressToken. Any other message belongs to no call: a server shared
// by several users may be logging another user's request.
func (s *Server) logMessage(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	if p == nil {
		return
	}
	level := slog.LevelDebug
	if atLeastWarning(p.Level) {
		level = slog.LevelInfo // never Warn: the bridge's own warnings reach clients, this must not
	}
	s.log.Log(context.Background(), level, "upstream log message", "level", p.Level, "logger", p.Logger, "data", dataText(p.Data))
	token, held := p.Meta[callKey], true
	if token == nil {
		token, held = p.GetProgressToken(), false
	}
	w := s.callOf(token)
	if held && w != nil {
		defer s.unhold(w)
	}
	d := s.down.get()
	if d == nil {
		return
	}
	msg := *p
	if len(p.Meta) > 0 {
		msg.Meta = maps.Clone(p.Meta)
		delete(msg.Meta, callKey) // codebridge's own token, nothing for the client
		delete(msg.Meta, "progressToken")
	}
	if w != nil {
		d.LogCall(w.ctx, s.spec.Name, &msg)
		return
	}
	d.Log(ctx, s.spec.Name, &msg)
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

// progress passes a progress notification to the call that asked for it.
func (s *Server) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if w := s.callOf(req.Params.ProgressToken); w != nil && w.progress != nil {
		w.progress(req.Params)
	}
}

// progressTokens numbers the progress tokens of all calls.
var progressTokens atomic.Int64

// callWatch is a tool call in flight, under its progress token: what its
// log messages and progress notifications go to. It is forgotten once the
// call ended and the log messages tied to it were handled: the go-sdk may
// hand a message to its handler after the answer that followed it.
type callWatch struct {
	token    string
	ctx      context.Context                       // the call's: the bridge finds the caller in it
	progress func(*mcp.ProgressNotificationParams) // nil: nobody watches progress

	mu    sync.Mutex
	held  int  // log messages tied to the call, not handled yet
	ended bool // the call returned
}

// hold keeps w for one more log message tied to it.
func (w *callWatch) hold() {
	w.mu.Lock()
	w.held++
	w.mu.Unlock()
}

// unhold lets w go for one log message handled; end, for the call's end.
// The last of them forgets w.
func (s *Server) unhold(w *callWatch) { s.letGo(w, func() { w.held = max(w.held-1, 0) }) }

func (s *Server) endCall(w *callWatch) { s.letGo(w, func() { w.ended = true }) }

func (s *Server) letGo(w *callWatch, change func()) {
	w.mu.Lock()
	change()
	last := w.ended && w.held == 0
	w.mu.Unlock()
	if last {
		s.watchers.Delete(w.token)
	}
}

// watchCall gives params a progress token of its own and registers the
// call under it, so that the server's notifications that carry the token
// find the call; end forgets it. Every call has a token: it is how a log
// message is tied to its call.
func (s *Server) watchCall(ctx context.Context, params *mcp.CallToolParams, progress func(*mcp.ProgressNotificationParams)) (w *callWatch, end func()) {
	w = &callWatch{token: fmt.Sprintf("codebridge-%d", progressTokens.Add(1)), ctx: ctx, progress: progress}
	params.SetProgressToken(w.token)
	s.watchers.Store(w.token, w)
	return w, func() { s.endCall(w) }
}

// callOf is the call in flight with progress token token, or nil.
func (s *Server) callOf(token any) *callWatch {
	if token == nil {
		return nil
	}
	if w, ok := s.watchers.Load(progressKey(token)); ok {
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
