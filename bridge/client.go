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

	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Clients are the MCP sessions a bridge serves, and which of them answers
// an upstream's request or hears a log message. They are made first
// ([NewClients]), before what is made from them: the log handler
// ([NewClientLog]), the upstream pool (its [Clients.Downstream]) and the
// bridge ([Options.Clients]). The bridge's MCP server is made with them
// (its sessions are the clients). As it makes them, the bridge registers
// with them the sandbox sessions the clients' calls run in (its single
// one, and with PerSession each session's own): a sandbox session's gate
// session redacts what its client reads of the upstreams, and its notes
// take the upstreams' warnings for its cells' stderr.
type Clients struct {
	srv   *mcp.Server
	trips roundTrips  // run_python calls of clients on the newer protocol (roundtrip.go)
	all   *clients    // the view of every session
	down  *downstream // answers the upstreams' requests to the client
	// shared is Options.PerSession: each session has a sandbox session
	// of its own.
	shared bool

	mu       sync.Mutex
	single   *session                        // the bridge's single session (stdio, exec), once made
	sessions map[*mcp.ServerSession]*session // with shared, the sandbox session of each session that ran code
}

// NewClients returns the clients of a bridge to be made with opts (its
// Version, PerSession and Roots), and the MCP server they connect to.
func NewClients(opts Options) *Clients {
	c := &Clients{shared: opts.PerSession, sessions: map[*mcp.ServerSession]*session{}}
	c.srv = mcp.NewServer(&mcp.Implementation{Name: "codebridge", Version: cmp.Or(opts.Version, "dev")}, &mcp.ServerOptions{
		Instructions: "codebridge runs Python with access to the user's MCP servers through one tool, run_python.",
	})
	c.all = &clients{srv: c.srv, shared: opts.PerSession, gateOf: c.gateOf, current: c.trips.of, busy: &inflight{}}
	c.down = &downstream{clients: c.all, roots: rootsFromDirs(opts.Roots), shared: opts.PerSession, notesOf: c.notesOf}
	return c
}

// Downstream answers the upstreams' requests to their client, and hears
// their log messages: the upstream pool's [upstream.Options.Downstream].
// Until a client connects, requests are refused with [upstream.ErrNoClient].
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
	if !c.shared {
		return c.single
	}
	return c.sessions[ss]
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

// gateOf is the gate session of ss's sandbox session, without making one:
// a client that has run no code yet gets a gate session of its own, of
// the bridge's gate. Nil before the bridge is made.
func (c *Clients) gateOf(ss *mcp.ServerSession) *gate.Session {
	if s := c.session(ss); s != nil {
		return s.host.gate
	}
	c.mu.Lock()
	single := c.single
	c.mu.Unlock()
	if single == nil {
		return nil
	}
	return single.b.gate.NewSession()
}

// notesOf are the upstream warnings for the cells of ss's sandbox
// session; nil when ss has none.
func (c *Clients) notesOf(ss *mcp.ServerSession) *cellNotes {
	if s := c.session(ss); s != nil {
		return s.notes
	}
	return nil
}

// clients says which MCP client answers a request an upstream makes of
// its client (sampling, elicitation, roots) and hears its log messages.
// An upstream request carries no trace of the run_python call it serves,
// so clients decides: the sessions of the MCP server the bridge serves
// (stdio has exactly one), or, for the servers one session has of its own
// (per_session), that session alone. [NewClients] makes it.
type clients struct {
	srv  *mcp.Server        // the bridge's MCP server: its sessions are the clients
	only *mcp.ServerSession // set: the view of one session's own servers
	// shared is set when the sessions are many users' (HTTP): a message
	// tied to no call reaches no client.
	shared bool
	// gateOf is the gate session of a client's sandbox session: its
	// redaction hides what the client's model reads of the upstreams (log
	// messages, sampling, elicitation), and it puts real values back into
	// what the client answers. Nil: nothing is hidden.
	gateOf func(*mcp.ServerSession) *gate.Session
	// current is the detached run_python call of a client on the newer
	// protocol whose cell runs now (roundtrip.go).
	current func(*mcp.ServerSession) *detachedRun
	busy    *inflight // which sessions have calls in flight to which server
}

// forSession is the view of c for the servers ss has its own clients of.
func (c *clients) forSession(ss *mcp.ServerSession) *clients {
	own := *c
	own.only = ss
	return &own
}

// client is the run_python caller when ctx has one, else the server's
// only session. With several (HTTP), it is the one session that has calls
// in flight to server; when none or several have, the request cannot be
// told apart, so it goes to none rather than to another user.
func (c *clients) client(ctx context.Context, server string) *mcp.ServerSession {
	if c.only != nil {
		return c.only
	}
	if ss := caller(ctx); ss != nil {
		return ss
	}
	if ss := c.rootsOwner(server); ss != nil {
		return ss
	}
	return c.busy.only(server)
}

// rootsOwner is the session whose roots server works in, or nil: roots
// stay with a server beyond the call that asked for them, so a shared
// server gets a session's roots only when that session is the only one.
func (c *clients) rootsOwner(server string) *mcp.ServerSession {
	if all := c.listeners(server); len(all) == 1 {
		return all[0]
	}
	return nil
}

// listeners are the sessions that hear server's log messages.
func (c *clients) listeners(string) []*mcp.ServerSession {
	if c.only != nil {
		return []*mcp.ServerSession{c.only}
	}
	var out []*mcp.ServerSession
	for ss := range c.srv.Sessions() {
		out = append(out, ss)
	}
	return out
}

// gate is the gate session of ss's sandbox session, or nil.
func (c *clients) gate(ss *mcp.ServerSession) *gate.Session {
	if c.gateOf == nil {
		return nil
	}
	return c.gateOf(ss)
}

// log sends a log message to ss, its data passed through the redaction
// of ss's gate session first (the model may read the client's log).
func (c *clients) log(ctx context.Context, ss *mcp.ServerSession, params *mcp.LoggingMessageParams) {
	msg := *params
	if g := c.gate(ss); g != nil {
		raw, err := json.Marshal(msg.Data)
		if err != nil {
			return
		}
		msg.Data = g.RedactJSON(raw)
	}
	_ = ss.Log(context.WithoutCancel(ctx), &msg)
}

// downstream answers the upstreams' requests to their client for the pool
// (it is the pool's [upstream.Downstream]): it asks the client its clients
// name, when that client declared the capability, and says clearly why
// not otherwise.
type downstream struct {
	clients *clients
	roots   []*mcp.Root // from --root, for clients without roots
	// shared is set when the servers serve the sessions of several users
	// (HTTP): a log message tied to no call then reaches no session.
	shared bool
	// notesOf are the upstream warnings for the stderr of a session's
	// cells (nil: the session is gone).
	notesOf func(*mcp.ServerSession) *cellNotes
}

// forSession is the downstream of the servers ss has its own clients of
// ("per_session"): their requests go to ss, their log messages to ss
// alone, and their warnings to notes, for the stderr of ss's cells. No
// other session hears of them.
func (d *downstream) forSession(ss *mcp.ServerSession, notes *cellNotes) *downstream {
	return &downstream{clients: d.clients.forSession(ss), roots: d.roots,
		notesOf: func(*mcp.ServerSession) *cellNotes { return notes }}
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
func (d *downstream) CreateMessage(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ss, err := d.clientWith(ctx, server, func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil },
		"support sampling, so server %q cannot use its model through codebridge")
	if err != nil {
		return nil, err
	}
	g := d.clients.gate(ss)
	q, err := redactRequest(g, p)
	if err != nil {
		return nil, err
	}
	res, err := asCreateMessageResult(ask(ctx, ss, d.current(ss), q))
	if err != nil {
		return nil, err
	}
	return restoreAnswer(g, server, res)
}

// Elicit asks the user for server, its message and requested schema
// redacted as sampling's are (a client may show them to its model too);
// the URL of a URL elicitation is the user's to open and stays exact. The
// answer gets real values put back, as sampling's does.
func (d *downstream) Elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ss, err := d.clientWith(ctx, server, func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil },
		"support elicitation, so server %q cannot ask the user through codebridge")
	if err != nil {
		return nil, err
	}
	g := d.clients.gate(ss)
	q, err := redactRequest(g, p)
	if err != nil {
		return nil, err
	}
	q.URL, q.ElicitationID = p.URL, p.ElicitationID
	res, err := asElicitResult(ask(ctx, ss, d.current(ss), q))
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
		return nil, fmt.Errorf("codebridge could not read %s to check what the model may see of it: %v; it was not passed on", what, err)
	}
	out := f(raw)
	if bytes.Equal(out, raw) {
		return v, nil
	}
	w := new(T)
	if err := json.Unmarshal(out, w); err != nil {
		return nil, fmt.Errorf("%s, once %s, no longer decodes (%v); it was not passed on", what, done, err)
	}
	return w, nil
}

// clientWith is the client that answers server's request, when it
// declared the capability has looks for; lacking says what it cannot do
// (a format for the server's name), after "<client> does not".
func (d *downstream) clientWith(ctx context.Context, server string, has func(*mcp.ClientCapabilities) bool, lacking string) (*mcp.ServerSession, error) {
	ss := d.clients.client(ctx, server)
	if ss == nil {
		return nil, d.noClient(server)
	}
	if !has(capabilities(ss)) {
		return nil, fmt.Errorf("%s does not "+lacking, clientName(ss), server)
	}
	return ss, nil
}

// current is the run_python call of ss whose cell runs now, when ss is on
// the newer protocol (roundtrip.go), or nil.
func (d *downstream) current(ss *mcp.ServerSession) *detachedRun {
	if d.clients.current == nil {
		return nil
	}
	return d.clients.current(ss)
}

// noClient says why no client answers server's request: none is
// connected, or several sessions are and the request is not one's alone.
func (d *downstream) noClient(server string) error {
	if len(d.clients.listeners(server)) > 1 {
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
func (d *downstream) AnswersRoots(server string) bool {
	return len(d.roots) > 0 || clientGivesRoots(d.clients.rootsOwner(server))
}

// noRootsAdvice ends the answer to a roots/list that nothing can answer.
// It never asks for --root alone: roots replace the directories a server
// such as the filesystem server was given in its args.
const noRootsAdvice = "the server goes on without roots. If it needs a directory, name it in the server's own entry (the filesystem server takes its directories in \"args\"); --root DIR gives DIR as the roots of every server that asks, in place of the directories their args name"

// ListRoots gives the client's roots; when it has none (it does not
// support roots, or lists none), the --root directories; else why not.
func (d *downstream) ListRoots(ctx context.Context, server string) (*mcp.ListRootsResult, error) {
	ss := d.clients.rootsOwner(server)
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
	case len(d.roots) > 0:
		return &mcp.ListRootsResult{Roots: d.roots}, nil
	case clientRoots != nil:
		return clientRoots, nil
	case ss == nil && len(d.clients.listeners(server)) > 1:
		return nil, fmt.Errorf("server %q is shared by several MCP sessions, so it gets no one session's roots (\"per_session\": true in its entry gives each session's client its own); %s", server, noRootsAdvice)
	case ss == nil:
		return nil, fmt.Errorf("%w, so server %q gets no roots; %s", upstream.ErrNoClient, server, noRootsAdvice)
	case multiRoundTrip(ss):
		return nil, fmt.Errorf("%s speaks MCP protocol %s, which gives servers no roots; %s", clientName(ss), ss.InitializeParams().ProtocolVersion, noRootsAdvice)
	}
	return nil, fmt.Errorf("%s does not support roots; %s", clientName(ss), noRootsAdvice)
}

// Log passes on an upstream's log message that is tied to no call: a
// server shared by several users' sessions may be logging any user's
// request, so it reaches none of them (the host's log has it); otherwise
// it goes to the client (logging/setLevel, or the running call's level,
// applies), with the server's name as the logger, and a warning or worse
// to the running cell's stderr.
func (d *downstream) Log(_ context.Context, server string, p *mcp.LoggingMessageParams) {
	if d.shared {
		return
	}
	msg := named(server, p)
	for _, ss := range d.clients.listeners(server) {
		d.send(nil, ss, msg)
	}
	d.note(nil, server, p)
}

// LogCall passes on an upstream's log message that came as part of a tool
// call made with context call: to the client of the run_python call that
// made it, within that call, and a warning or worse to that session's
// running cell's stderr. No other session hears of it.
func (d *downstream) LogCall(call context.Context, server string, p *mcp.LoggingMessageParams) {
	ss := caller(call)
	if ss != nil {
		d.send(call, ss, named(server, p))
	}
	d.note(ss, server, p)
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

// send sends msg to ss, within call (see [sendContext]).
func (d *downstream) send(call context.Context, ss *mcp.ServerSession, msg *mcp.LoggingMessageParams) {
	d.clients.log(sendContext(call, ss, d.clients.current), ss, msg)
}

// note keeps a warning or worse for the stderr of ss's running cell.
func (d *downstream) note(ss *mcp.ServerSession, server string, p *mcp.LoggingMessageParams) {
	if atLeastWarning(p.Level) && d.notesOf != nil {
		d.notesOf(ss).add(fmt.Sprintf("[%s %s] %s", server, p.Level, logText(p.Data)))
	}
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
