package bridge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mode is whom the MCP sessions of a bridge belong to, and so who may
// hear what is tied to no run_python call. It is set once, when the
// clients are made ([Options.Mode], read by [NewClients]): a bridge has
// the mode of its clients.
type Mode int

const (
	// OneUser: every session is the one local user's (stdio, exec). Every
	// call runs in the bridge's one sandbox, and what is tied to no call
	// (an upstream's log message, the bridge's own warning) reaches every
	// session.
	OneUser Mode = iota
	// ManyUsers: the sessions may be different users' (HTTP). Each
	// session's calls run in a sandbox of its own, and what is tied to no
	// call reaches none of them: the host's log has it.
	ManyUsers
)

// Clients are the MCP sessions a bridge serves, and which of them answers
// an upstream's request or hears a log message. They are made first
// ([NewClients]), with the bridge's mode and gate, before what is made
// from them: the log handler ([NewClientLog]), the upstream pool (its
// [Clients.Downstream]) and the bridge ([Options.Clients]). The bridge's
// MCP server is made with them (its sessions are the clients). As it
// makes them, the bridge registers with them the sandbox sessions the
// clients' calls run in (its single one, and with ManyUsers each
// session's own): a sandbox session's gate session redacts what its
// client reads of the upstreams, and its notes take the upstreams'
// warnings for its cells' stderr. What an upstream says about a
// run_python call goes to that call ([call.Log]), not through them.
type Clients struct {
	srv   *mcp.Server
	mode  Mode
	gate  *gate.Gate  // the bridge's; a client that has no sandbox session (yet) gets a gate session of its own of it
	roots []*mcp.Root // from --root, for clients without roots
	trips roundTrips  // run_python calls of clients on the newer protocol (roundtrip.go)
	busy  inflight    // with ManyUsers, which sessions have calls in flight to which server
	down  *router     // answers the shared servers' requests to the client

	mu       sync.Mutex
	single   *session                        // the bridge's single session (stdio, exec), once made
	sessions map[*mcp.ServerSession]*session // with ManyUsers, the sandbox session of each session that ran code
	// visiting are the handle sessions (handles.go) that calls of clients
	// on the stateless protocol run in now, by the request's session.
	visiting map[*mcp.ServerSession]*session
}

// NewClients returns the clients of a bridge to be made with opts (its
// Mode, Gate, Version and Roots), and the MCP server they connect to.
func NewClients(opts Options) *Clients {
	c := &Clients{mode: opts.Mode, gate: cmp.Or(opts.Gate, gate.New(gate.Config{})), roots: rootsFromDirs(opts.Roots),
		sessions: map[*mcp.ServerSession]*session{}, visiting: map[*mcp.ServerSession]*session{}}
	c.srv = mcp.NewServer(&mcp.Implementation{Name: "codebridge", Version: cmp.Or(opts.Version, "dev")}, &mcp.ServerOptions{
		Instructions: "codebridge runs Python with access to the user's MCP servers through one tool, run_python.",
	})
	c.down = &router{c: c}
	return c
}

// Downstream answers the upstreams' requests to their client, and hears
// their log messages tied to no call: the upstream pool's
// [upstream.Options.Downstream]. Until a client connects, requests are
// refused with [upstream.ErrNoClient].
func (c *Clients) Downstream() upstream.Downstream { return c.down }

// add registers s, the sandbox session the calls of ss run in; nil ss
// registers the bridge's single session.
func (c *Clients) add(ss *mcp.ServerSession, s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ss == nil {
		c.single = s
		return
	}
	c.sessions[ss] = s
}

// session is the sandbox session the calls of ss run in: the single one
// unless each session has its own; nil when ss has none (yet, or any
// more).
func (c *Clients) session(ss *mcp.ServerSession) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mode == OneUser {
		return c.single
	}
	if s := c.sessions[ss]; s != nil {
		return s
	}
	return c.visiting[ss]
}

// visit registers s as the session a call of ss (a request of a client
// on the stateless protocol) runs in, until the returned leave is called.
func (c *Clients) visit(ss *mcp.ServerSession, s *session) (leave func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.visiting[ss] = s
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.visiting[ss] == s {
			delete(c.visiting, ss)
		}
	}
}

// remove forgets the sandbox session of ss and returns it, or nil.
func (c *Clients) remove(ss *mcp.ServerSession) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[ss]
	delete(c.sessions, ss)
	return s
}

// removeAll forgets the sandbox sessions of every session and returns
// them.
func (c *Clients) removeAll() []*session {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []*session
	for ss, s := range c.sessions {
		all = append(all, s)
		delete(c.sessions, ss)
	}
	return all
}

// count is how many sessions have a sandbox session of their own.
func (c *Clients) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// inflight is where the sandbox sessions count their calls in flight to
// each server: with ManyUsers, a shared server's request goes to the one
// session calling it; nil (not counted) with OneUser.
func (c *Clients) inflight() *inflight {
	if c.mode == OneUser {
		return nil
	}
	return &c.busy
}

// gateOf is the gate session of ss's sandbox session: its redaction hides
// what the client's model reads of the upstreams (log messages, sampling,
// elicitation), and it puts real values back into what the client
// answers. A client that has no sandbox session gets a gate session of
// its own.
func (c *Clients) gateOf(ss *mcp.ServerSession) *gate.Session {
	if s := c.session(ss); s != nil {
		return s.host.gate
	}
	return c.gate.NewSession()
}

// all are every session of the bridge's MCP server that lasts beyond a
// request: over HTTP, the go-sdk's session of one request of a client on
// the stateless protocol (it has no id) is none, for it can neither own a
// server's roots nor hear what comes apart from a call.
func (c *Clients) all() []*mcp.ServerSession {
	var out []*mcp.ServerSession
	for ss := range c.srv.Sessions() {
		if c.mode == ManyUsers && ss.ID() == "" {
			continue
		}
		out = append(out, ss)
	}
	return out
}

// tell sends a log message tied to no call to ss (see [untiedContext]),
// through the redaction of ss's gate session.
func (c *Clients) tell(ss *mcp.ServerSession, msg *mcp.LoggingMessageParams) {
	sendLog(untiedContext(ss, &c.trips), ss, c.gateOf(ss), msg)
}

// sendLog sends a log message to ss within ctx (a call's, or none), its
// data passed through the redaction of g first (the model may read the
// client's log; nil g hides nothing).
func sendLog(ctx context.Context, ss *mcp.ServerSession, g *gate.Session, params *mcp.LoggingMessageParams) {
	msg := *params
	if g != nil {
		raw, err := json.Marshal(msg.Data)
		if err != nil {
			return
		}
		msg.Data = g.RedactJSON(raw)
	}
	_ = ss.Log(ctx, &msg)
}

// router says which MCP client answers a request an upstream makes of
// its client (sampling, elicitation, roots) and hears its log messages
// tied to no call; it is the upstream pool's [upstream.Downstream]. An
// upstream request carries no trace of the run_python call it serves, so
// the router decides: for the servers the sessions share, the only
// session, or the one session with calls in flight to the server; for
// the servers one session has of its own (per_session, [router.forSession]),
// that session alone.
type router struct {
	c    *Clients
	only *mcp.ServerSession // set: the router of one session's own servers
	// follow, set, makes the router that of a handle's own servers: their
	// client is the one whose call runs in the handle's session now.
	follow *callingClient
	notes  *cellNotes // where the warnings tied to no call go; nil: the single session's
}

// forSession is the router of the servers ss has its own clients of
// ("per_session"): their requests go to ss, their log messages to ss
// alone, and their warnings to notes, for the stderr of ss's cells. No
// other session hears of them.
func (d *router) forSession(ss *mcp.ServerSession, notes *cellNotes) *router {
	return &router{c: d.c, only: ss, notes: notes}
}

// listeners are the sessions that hear the log messages of the router's
// servers.
func (d *router) listeners() []*mcp.ServerSession {
	if d.follow != nil {
		if ss := d.follow.get(); ss != nil {
			return []*mcp.ServerSession{ss}
		}
		return nil
	}
	if d.only != nil {
		return []*mcp.ServerSession{d.only}
	}
	return d.c.all()
}

// client is the session that answers server's request. With several
// (HTTP), it is the one session that has calls in flight to server; when
// none or several have, the request cannot be told apart, so it goes to
// none rather than to another user.
func (d *router) client(server string) *mcp.ServerSession {
	if d.follow != nil {
		return d.follow.get()
	}
	if d.only != nil {
		return d.only
	}
	if ss := d.rootsOwner(); ss != nil {
		return ss
	}
	return d.c.busy.only(server)
}

// rootsOwner is the session whose roots the router's servers work in, or
// nil: roots stay with a server beyond the call that asked for them, so a
// shared server gets a session's roots only when that session is the only
// one.
func (d *router) rootsOwner() *mcp.ServerSession {
	if all := d.listeners(); len(all) == 1 {
		return all[0]
	}
	return nil
}

// capabilities are what the client ss declared, never nil.
func capabilities(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if p := ss.InitializeParams(); p != nil && p.Capabilities != nil {
		return p.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

// clientName is how errors name the client.
func clientName(ss *mcp.ServerSession) string {
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
		return fmt.Sprintf("the MCP client (%s)", p.ClientInfo.Name)
	}
	return "the MCP client"
}

// CreateMessage asks the client's model for server. The model reads the
// server's messages, system prompt and the rest redacted by the gate
// session of the client's sandbox session, the one that redacts the
// results of the calls it serves; the server gets the model's answer with
// real values put back for that session's tokens (unless it keeps tokens,
// as for its arguments).
func (d *router) CreateMessage(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return askFor(ctx, d, server, p, sampling)
}

// Elicit asks the user for server, its message and requested schema
// redacted as sampling's are (a client may show them to its model too);
// the URL of a URL elicitation is the user's to open and stays exact. The
// answer gets real values put back, as sampling's does.
func (d *router) Elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return askFor(ctx, d, server, p, elicitation)
}

// upstreamAsk is what sets apart the kinds of request an upstream makes of
// the client through [askFor]: P is its params, R its answer.
type upstreamAsk[P, R any] struct {
	has     func(*mcp.ClientCapabilities) bool // the client declared the capability
	lacking string                             // what the server cannot do without it, after "<client> does not" (a format for the server's name)
	exact   func(redacted, sent *P)            // puts back what the client must get as the server sent it; nil: nothing
	answer  func(mcp.InputResponse, error) (*R, error)
}

var (
	sampling = upstreamAsk[mcp.CreateMessageParams, mcp.CreateMessageResult]{
		has:     func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil },
		lacking: "support sampling, so server %q cannot use its model through codebridge",
		answer:  asCreateMessageResult,
	}
	elicitation = upstreamAsk[mcp.ElicitParams, mcp.ElicitResult]{
		has:     func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil },
		lacking: "support elicitation, so server %q cannot ask the user through codebridge",
		exact:   func(q, p *mcp.ElicitParams) { q.URL, q.ElicitationID = p.URL, p.ElicitationID },
		answer:  asElicitResult,
	}
)

// askFor asks the client that answers server's request (when it declared
// the capability) the question p, redacted by the gate session of that
// client's sandbox session, and returns its answer with real values put
// back for that session's tokens.
func askFor[P any, Q interface {
	*P
	mcp.InputRequest
}, R any](ctx context.Context, d *router, server string, p Q, kind upstreamAsk[P, R]) (*R, error) {
	ss, err := d.clientWith(server, kind.has, kind.lacking)
	if err != nil {
		return nil, err
	}
	g := d.c.gateOf(ss)
	q, err := redactRequest(g, (*P)(p))
	if err != nil {
		return nil, err
	}
	if kind.exact != nil && q != (*P)(p) {
		kind.exact(q, p)
	}
	res, err := kind.answer(ask(ctx, ss, d.c.trips.of(ss), Q(q)))
	if err != nil {
		return nil, err
	}
	return restoreAnswer(g, server, res)
}

// redactRequest is an upstream's request to the client, p, with every
// string of it redacted by g (nil: p as it is). p itself is not changed.
func redactRequest[P any](g *gate.Session, p *P) (*P, error) {
	if g == nil {
		return p, nil
	}
	return rewriteJSON(p, func(raw []byte) []byte { return g.RedactJSON(raw) }, "the server's request", "what the model must not see was hidden")
}

// restoreAnswer is the client's answer a with real values put back for
// the tokens of g, for server (unless it keeps tokens).
func restoreAnswer[A any](g *gate.Session, server string, a *A) (*A, error) {
	if g == nil {
		return a, nil
	}
	return rewriteJSON(a, func(raw []byte) []byte { return g.RestoreFor(server, raw) }, "the client's answer", "real values were put back")
}

// rewriteJSON is v passed through f as JSON: v itself when f changed
// nothing, else a new value decoded from f's output. what names v, and
// done says what f did, for the errors.
func rewriteJSON[T any](v *T, f func([]byte) []byte, what, done string) (*T, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("codebridge could not read %s to check what the model may see of it: %w; it was not passed on", what, err)
	}
	out := f(raw)
	if bytes.Equal(out, raw) {
		return v, nil
	}
	w := new(T)
	if err := json.Unmarshal(out, w); err != nil {
		return nil, fmt.Errorf("%s, once %s, no longer decodes (%w); it was not passed on", what, done, err)
	}
	return w, nil
}

// clientWith is the client that answers server's request, when it
// declared the capability has looks for; lacking says what it cannot do
// (a format for the server's name), after "<client> does not".
func (d *router) clientWith(server string, has func(*mcp.ClientCapabilities) bool, lacking string) (*mcp.ServerSession, error) {
	ss := d.client(server)
	if ss == nil {
		return nil, d.noClient(server)
	}
	if !has(capabilities(ss)) {
		return nil, fmt.Errorf("%s does not "+lacking, clientName(ss), server)
	}
	return ss, nil
}

// noClient says why no client answers server's request: none is
// connected, or several sessions are and the request is not one's alone.
func (d *router) noClient(server string) error {
	if len(d.listeners()) > 1 {
		return fmt.Errorf("server %q is shared by several MCP sessions, and this request of its client could not be told to be one session's (none, or more than one, had a call in flight to it); to give each session its own, set \"per_session\": true in its entry of the codebridge config", server)
	}
	return upstream.ErrNoClient
}

// clientGivesRoots reports whether ss can be asked for its roots: it
// declared them, and takes direct requests (a client on the newer
// protocol takes none, and that protocol deprecates roots).
func clientGivesRoots(ss *mcp.ServerSession) bool {
	return ss != nil && capabilities(ss).RootsV2 != nil && !multiRoundTrip(ss)
}

// AnswersRoots reports whether a roots/list of server would be answered:
// by --root directories, or by the one client it works for, when that
// client gives roots.
func (d *router) AnswersRoots(string) bool {
	return len(d.c.roots) > 0 || clientGivesRoots(d.rootsOwner())
}

// noRootsAdvice ends the answer to a roots/list that nothing can answer.
// It never asks for --root alone: roots replace the directories a server
// such as the filesystem server was given in its args.
const noRootsAdvice = "the server goes on without roots. If it needs a directory, name it in the server's own entry (the filesystem server takes its directories in \"args\"); --root DIR gives DIR as the roots of every server that asks, in place of the directories their args name"

// ListRoots gives the client's roots; when it has none (it does not
// support roots, or lists none), the --root directories; else why not.
func (d *router) ListRoots(ctx context.Context, server string) (*mcp.ListRootsResult, error) {
	ss := d.rootsOwner()
	var clientRoots *mcp.ListRootsResult
	if clientGivesRoots(ss) {
		r, err := ss.ListRoots(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("asking %s for its roots: %w", clientName(ss), err)
		}
		clientRoots = r
	}
	switch {
	case clientRoots != nil && len(clientRoots.Roots) > 0:
		return clientRoots, nil
	case len(d.c.roots) > 0:
		return &mcp.ListRootsResult{Roots: d.c.roots}, nil
	case clientRoots != nil:
		return clientRoots, nil
	case ss == nil && len(d.listeners()) > 1:
		return nil, fmt.Errorf("server %q is shared by several MCP sessions, so it gets no one session's roots (\"per_session\": true in its entry gives each session's client its own); %s", server, noRootsAdvice)
	case ss == nil:
		return nil, fmt.Errorf("%w, so server %q gets no roots; %s", upstream.ErrNoClient, server, noRootsAdvice)
	case multiRoundTrip(ss):
		return nil, fmt.Errorf("%s speaks MCP protocol %s, which gives servers no roots; %s", clientName(ss), ss.InitializeParams().ProtocolVersion, noRootsAdvice)
	}
	return nil, fmt.Errorf("%s does not support roots; %s", clientName(ss), noRootsAdvice)
}

// Log passes on an upstream's log message that is tied to no call. One of
// a server that sessions of several users share (ManyUsers) may be
// logging any user's request, so it reaches none of them (the host's log
// has it); otherwise it goes to the router's sessions (logging/setLevel,
// or the running call's level, applies), with the server's name as the
// logger, and a warning or worse to the running cell's stderr.
func (d *router) Log(_ context.Context, server string, p *mcp.LoggingMessageParams) {
	if d.only == nil && d.follow == nil && d.c.mode == ManyUsers {
		return
	}
	msg := named(server, p)
	for _, ss := range d.listeners() {
		d.c.tell(ss, msg)
	}
	notes := d.notes
	if s := d.c.session(nil); notes == nil && s != nil {
		notes = s.notes
	}
	notes.keep(server, p)
}

// named is p with the server's name as its logger.
func named(server string, p *mcp.LoggingMessageParams) *mcp.LoggingMessageParams {
	msg := *p
	msg.Logger = server
	if p.Logger != "" && p.Logger != server {
		msg.Logger = server + "/" + p.Logger
	}
	return &msg
}

// rootsFromDirs turns --root directories into file:// roots.
func rootsFromDirs(dirs []string) []*mcp.Root {
	var roots []*mcp.Root
	for _, dir := range dirs {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}
		roots = append(roots, &mcp.Root{URI: u.String(), Name: filepath.Base(dir)})
	}
	return roots
}
