package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/metrics"
	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/shapes"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of [Options], stated once.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxTimeout = 120 * time.Second
	// DefaultWarm is how many started sandboxes serving HTTP keeps for
	// new sessions.
	DefaultWarm = 2
)

// Options configure a [Bridge].
type Options struct {
	// DefaultTimeout applies when a call gives none. Zero means
	// [DefaultTimeout].
	DefaultTimeout time.Duration
	// MaxTimeout caps every call's timeout. Zero means [DefaultMaxTimeout].
	MaxTimeout time.Duration
	// Output is "text" (the default) or "toon": final values that are
	// JSON data are then shown as TOON.
	Output string
	// Version is reported to MCP clients (by the server of
	// [NewClients]). Empty means "dev".
	Version string
	// Mode is whom the MCP sessions belong to: [OneUser] (stdio, exec:
	// one sandbox runs every call) or [ManyUsers] (HTTP: each session
	// has a sandbox of its own). Read by [NewClients]: a bridge has the
	// mode of its Clients.
	Mode Mode
	// Log receives diagnostics. Nil means slog.Default().
	Log *slog.Logger
	// Packages are on-demand installs (packages.go); nil turns them off.
	Packages *Packages
	// Skills is where the local user's saved skills are kept; each other
	// principal's are in their own store beside it (skills.Store.Of).
	// Nil keeps none.
	Skills *skillStore
	// Clients are the MCP sessions the bridge serves, made with
	// [NewClients] of these options before the log handler and the
	// upstream pool made from them; the bridge has their mode and gate.
	// Nil: New makes them, and nothing else hears of its clients.
	Clients *Clients
	// Roots are the directories upstreams get as roots when the client
	// has none (--root). Read by [NewClients].
	Roots []string
	// Gate is the policy, approval, audit and redaction every request of
	// the sandbox passes, and what the client reads of the upstreams.
	// Nil means one that lets everything through. Read by [NewClients].
	Gate *gate.Gate
	// Warm keeps this many sandboxes started for new sessions (with
	// ManyUsers).
	Warm int
	// Metrics records what the bridge does; nil records nothing.
	Metrics *metrics.Metrics
	// Shapes keeps the observed shapes of tool results (package shapes);
	// nil keeps them in memory, for the bridge's life. The bridge closes
	// it at its Close, after its last call.
	Shapes *shapes.Store
	// WorkspaceOf, when set, is the persistent workspace of each
	// session's principal (in place of the configuration's): a session
	// mounts its principal's, and no other. Its sandboxes start when the
	// principal is known, so there is no warm pool.
	WorkspaceOf func(principal.Principal) *sandbox.Mount
	// SessionIdle ends a session handle that had no call for this long,
	// and removes its sandbox (handles.go). Zero means
	// [DefaultSessionIdle].
	SessionIdle time.Duration
}

// Bridge serves run_python over MCP. Each MCP session gets its own
// sandbox and its own view of the upstream pool in mode [ManyUsers];
// otherwise one sandbox serves every call (stdio, exec). It does
// not own the pool or the manager: the caller closes them after
// [Bridge.Close].
type Bridge struct {
	sandboxes *sandbox.Manager
	cfg       sandbox.Config
	pool      *upstream.Pool
	opts      Options
	timeouts  runTimeouts // every run's time limit is decided here (timeout.go)
	log       *slog.Logger
	warm      *sandbox.WarmPool // nil without Options.Warm
	single    *session          // the one session of stdio and exec
	gate      *gate.Gate        // each session has a gate.Session of it (reg's)
	srv       *mcp.Server       // the MCP server the bridge serves (that of reg)
	reg       *Clients          // its sessions, each one's sandbox session, and its mode (client.go)
	trips     *roundTrips       // run_python calls of clients on the newer protocol (reg's; roundtrip.go)
	shapes    *shapes.Store     // the observed shapes of tool results (shapes.go)
	handles   *handles          // the session handles of clients on the stateless protocol (handles.go)

	mu        sync.Mutex
	closed    bool
	closeOnce sync.Once
	closing   sync.WaitGroup // sessions that ended and are being removed (endSession)
	ending    int            // how many of them
	// runNotes begin the next run_python answer of a session
	// (NoteNextRun).
	runNotes map[*mcp.ServerSession]string
}

// New returns a bridge whose code runs in sessions made by sandboxes
// with cfg, and whose calls go to pool (made with opts.Clients'
// Downstream). It serves the MCP server of opts.Clients and registers
// its sandbox sessions there.
func New(sandboxes *sandbox.Manager, cfg sandbox.Config, pool *upstream.Pool, opts Options) *Bridge {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Clients == nil {
		opts.Clients = NewClients(opts)
	}
	reg := opts.Clients
	b := &Bridge{sandboxes: sandboxes, cfg: cfg, pool: pool, opts: opts, log: opts.Log,
		gate: reg.gate, srv: reg.srv, reg: reg, trips: &reg.trips,
		timeouts: newRunTimeouts(opts.DefaultTimeout, opts.MaxTimeout), runNotes: map[*mcp.ServerSession]string{}}
	b.shapes = cmp.Or(opts.Shapes, shapes.Open("", opts.Log))
	b.handles = newHandles(cmp.Or(opts.SessionIdle, DefaultSessionIdle), b.endingSession) // before any session
	b.srv.AddReceivingMiddleware(b.passRootsChanged)
	if reg.mode == ManyUsers && opts.Warm > 0 && opts.WorkspaceOf == nil {
		b.warm = sandboxes.NewWarmPool(cfg, opts.Warm, newSandboxHost(pool, opts.Log).Servers())
		opts.Metrics.Gauge("codebridge_warm_sandboxes", "Sandboxes started and waiting for a new session.", func() float64 { return float64(b.warm.Ready()) })
	}
	b.single = b.newSession(pool, false, principal.Local())
	reg.add(nil, b.single)
	b.srv.AddTool(tool(), b.runPython)
	b.srv.AddResource(manualResource(), b.readManual)
	b.srv.AddResource(pythonBridgeManualResource(), b.readManual)
	b.addWorkspace(b.srv)
	return b
}

// passRootsChanged tells the pool's running servers when the client's
// roots changed (notifications/roots/list_changed), after the MCP server
// handled it.
func (b *Bridge) passRootsChanged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "notifications/roots/list_changed" {
			b.pool.RootsChanged()
		}
		return res, err
	}
}

// Session is the sandbox of the bridge's single session (stdio, exec).
func (b *Bridge) Session() *sandbox.Session { return b.single.sbx }

// Server is the MCP server that shows run_python (made with the bridge).
func (b *Bridge) Server() *mcp.Server { return b.srv }

// runPython is the run_python handler.
func (b *Bridge) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return b.resumeDetached(ctx, req)
	}
	var a args
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return errorResult("the arguments are not valid: %v; pass {\"code\": \"print(1)\"}", err), nil
		}
	}
	timeout, err := b.timeouts.ofSeconds(a.Timeout)
	if err != nil {
		return errorResult("%v", err), nil
	}
	sess, handle, err := b.pickSession(ctx, req, a.Session)
	if err != nil {
		return errorResult("%v", err), nil
	}
	note := sess.takeHandoff() + b.takeRunNote(req.Session)
	if req.Session != nil && multiRoundTrip(req.Session) {
		return b.runDetached(ctx, req, sess, note, func(ctx context.Context, r *detachedRun) *mcp.CallToolResult {
			defer b.enter(sess, req.Session)()
			return withHandle(b.endCall(sess, sess.run(ctx, &call{client: req.Session, run: r, output: r.output}, a.Code, timeout, a.Servers)), handle)
		})
	}
	defer b.enter(sess, req.Session)()
	onOutput, stop := startProgress(ctx, req, sess.host.redactText)
	defer stop()
	return withNote(withHandle(b.endCall(sess, sess.run(ctx, &call{client: req.Session, output: onOutput, request: ctx}, a.Code, timeout, a.Servers)), handle), note), nil
}

// RunPython runs code as run_python does, in the bridge's single session,
// and returns what the model would read. A zero timeout means the
// default; servers are started first.
func (b *Bridge) RunPython(ctx context.Context, code string, timeout time.Duration, servers []string) *mcp.CallToolResult {
	return b.single.run(ctx, &call{}, code, b.timeouts.of(timeout), servers)
}

// run is RunPython for call c, which names who made it and what watches
// it (run fills in the rest); its timeout is already decided
// (runTimeouts).
func (sess *session) run(ctx context.Context, c *call, code string, timeout time.Duration, servers []string) (out *mcp.CallToolResult) {
	b := sess.b
	sess.cells.Add(1)
	defer sess.cells.Add(-1)
	c.sandboxHost, c.sbx, c.notes, c.handed = sess.host, sess.sbx, sess.notes, sess.takeHanded()
	ctx, run, finish := sess.host.startRun(ctx, code) // audit, span, and redaction of what the model reads
	c.cell = run
	// The audited outcome: the cell's status once it ended; a run whose
	// code never ran failed.
	status := sandbox.StatusError
	defer func() { out = finish(out, status) }()
	if code == "" {
		return errorResult("`code` is empty: pass the Python to run, for example {\"code\": \"print(1)\"}")
	}
	if len(servers) > 0 {
		if res := startNamed(ctx, sess.upstreams, servers); res != nil {
			return res
		}
	}
	notes := sess.beginNotes()
	res, err := sess.sbx.Run(ctx, sandbox.Request{Code: code, Timeout: timeout, TOON: b.opts.Output == "toon", Caller: c})
	if err != nil {
		notes()
		return errorResult("%v", err)
	}
	res.Stderr.Text += notes()
	if res.TakenBack != nil { // from a bridge that took it over since this one's last call
		defer func() { out = withNote(out, resumedNote(res.TakenBack)) }()
	}
	status = res.Status
	b.opts.Metrics.Run(string(res.Status), res.Duration, !res.StateKept)
	b.log.Debug("run_python", "status", res.Status, "took", res.Duration)
	out = render(res, timeout, joinNotes(ledgerNote(res.Status, run.Calls()), sess.history.after(res, run.Calls()), sess.forked(ctx, res)))
	out.Content = append(out.Content, c.shared.links()...)
	return out
}

// startNamed starts the named servers in parallel. It returns an error
// result when a name is unknown or a server does not start.
func startNamed(ctx context.Context, pool *upstream.Pool, names []string) *mcp.CallToolResult {
	if err := errors.Join(pool.Start(ctx, names)...); err != nil {
		return errorResult("starting the servers the call named: %v", err)
	}
	return nil
}
