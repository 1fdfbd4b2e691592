package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	// be tied to a call in flight (one that is goes to the call's
	// [Caller]); it is already in the host's log.
	Log(ctx context.Context, server string, p *mcp.LoggingMessageParams)
}

// ErrNoClient is the answer to an upstream's request when no client is
// there to ask (codebridge exec, or before a client connected).
var ErrNoClient = errors.New("no MCP client is connected to codebridge to answer this request")

// RootsChanged tells every running server that the client's roots
// changed (notifications/roots/list_changed); a server that cares asks
// for them again.
func (p *Pool) RootsChanged() {
	for _, s := range p.servers {
		if c := s.sup.live(); c != nil {
			// roots/list is answered by the middleware below, never from
			// the go-sdk client's own list, so adding to that list is only
			// the way to make the go-sdk send the notification.
			c.client.AddRoots(&mcp.Root{URI: "codebridge:roots-changed"})
		}
	}
}

// newClient is the MCP client a new session with the server is dialled
// with: its handlers pass the server's notifications to the tool
// catalogue, the offers cache and the call watchers, and its requests to
// the pool's Downstream, each naming the server.
func (s *Server) newClient() *mcp.Client {
	// Roots are declared only when something can give them (see
	// [Downstream.AnswersRoots]); an empty, non-nil set keeps the go-sdk
	// from declaring them by default.
	caps := &mcp.ClientCapabilities{}
	if s.downlink.answersRoots() {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "codebridge", Version: s.opts.Version}, &mcp.ClientOptions{
		// Sampling and elicitation are declared (by their handlers) to every
		// server, whatever the client: a refusal is a clear error the
		// server can report, where an undeclared capability would hide
		// the server's tools that need it.
		Capabilities: caps,
		// A changed list is listed again at once, in the background, so
		// that the saved listing follows it (see relister).
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.catalogue.changed()
			s.relist.changed()
			s.log.Debug("tool list changed")
		},
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { s.offersChanged() },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { s.offersChanged() },
		CreateMessageHandler:        s.downlink.createMessage,
		ElicitationHandler:          s.downlink.elicit,
		LoggingMessageHandler:       s.watchers.logMessage,
		ProgressNotificationHandler: s.watchers.progress,
	})
	client.AddReceivingMiddleware(errorCodes, s.downlink.rootsMiddleware)
	return client
}

// offersChanged forgets the server's resources, templates and prompts
// and lists them again: it said one of those lists changed.
func (s *Server) offersChanged() {
	s.offers.changed()
	s.relist.changed()
}

// downlink answers what a server asks of its client (sampling,
// elicitation, roots) by asking the pool's Downstream, within what the
// server's entry allows.
type downlink struct {
	server   string // the server's configured name
	sampling bool   // its entry allows sampling
	source   string // the config file of its entry, for the host's log
	log      *slog.Logger
	down     Downstream // the pool's (Options.Downstream); nil: none
}

// answersRoots reports whether the Downstream would answer the server's
// roots/list now (see [Downstream.AnswersRoots]).
func (l *downlink) answersRoots() bool {
	return l.down != nil && l.down.AnswersRoots(l.server)
}

// createMessage answers sampling/createMessage: refused unless the
// server's entry allows sampling, then asked of the client.
func (l *downlink) createMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if !l.sampling {
		// The config file's path is for the host's eyes: the message goes
		// back through the upstream to the sandbox.
		l.log.Warn("refused a sampling request: sampling is off for this server", "config", l.source)
		return nil, &jsonrpc.Error{Code: CodeRefused, Message: fmt.Sprintf("codebridge does not let server %q use the client's model: sampling is off for it (to allow it, set \"sampling\": true in its entry of the codebridge config)", l.server)}
	}
	if l.down == nil {
		return nil, ErrNoClient
	}
	return l.down.CreateMessage(ctx, l.server, req.Params)
}

// elicit answers elicitation/create by asking the client.
func (l *downlink) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if l.down == nil {
		return nil, ErrNoClient
	}
	return l.down.Elicit(ctx, l.server, req.Params)
}

// listRoots answers roots/list (see rootsMiddleware).
// A server asks only when roots were declared to it, or when it needs
// them whatever it was offered: either way a refusal is worth a warning.
func (l *downlink) listRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	var r *mcp.ListRootsResult
	err := ErrNoClient
	if l.down != nil {
		r, err = l.down.ListRoots(ctx, l.server)
	}
	if err != nil {
		l.log.Warn("the server asked for roots, and none could be given", "err", err)
	}
	return r, err
}

// rootsMiddleware answers the server's roots/list from the Downstream,
// fresh each time, instead of from the go-sdk client's fixed list.
func (l *downlink) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "roots/list" {
			return l.listRoots(ctx)
		}
		return next(ctx, method, req)
	}
}

// CodeRefused is the JSON-RPC error code of a request codebridge refuses
// to pass to its client (sampling that is off for a server): -1, the code
// the MCP specification's example gives a rejected sampling request.
const CodeRefused = -1

// errorCodes gives every error codebridge answers a server's request with
// a real JSON-RPC code: a plain Go error would reach the server as code 0
// ("MCP error 0"). An error that has a code keeps it; any other is an
// internal error, with its message kept.
func errorCodes(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var we *jsonrpc.Error
		if err == nil || errors.As(err, &we) || errors.Is(err, context.Canceled) {
			return res, err
		}
		return res, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
}
