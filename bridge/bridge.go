package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of [Options], stated once.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxTimeout = 120 * time.Second
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
	// Version is reported to MCP clients.
	Version string
	// Log receives diagnostics. Nil means slog.Default().
	Log *slog.Logger
	// Packages are on-demand installs (packages.go); nil turns them off.
	Packages *Packages
	// Skills is where saved skills are kept; nil keeps none.
	Skills *skillStore
	// ClientLog, when set, sends the warnings logged through it to this
	// bridge's MCP client (client.go).
	ClientLog *ClientLog
	// Roots are the directories upstreams get as roots when the client
	// has none (--root).
	Roots []string
	// Gate is the policy, approval, audit and redaction every request of
	// the sandbox passes. Nil means one that lets everything through.
	Gate *gate.Gate
}

// Bridge serves run_python over MCP. It owns its sandbox session (stdio
// has exactly one) and answers that session's requests; it does not own
// the pool or the manager: the caller closes them after [Bridge.Close].
type Bridge struct {
	pool *upstream.Pool
	opts Options
	log  *slog.Logger
	host *sandboxHost
	sess *sandbox.Session
	down *downstream // answers the upstreams' requests to the client (client.go)
}

// New returns a bridge whose code runs in a session made by sandboxes
// with cfg, and whose calls go to pool.
func New(sandboxes *sandbox.Manager, cfg sandbox.Config, pool *upstream.Pool, opts Options) *Bridge {
	if opts.DefaultTimeout == 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxTimeout == 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	if opts.DefaultTimeout > opts.MaxTimeout {
		opts.DefaultTimeout = opts.MaxTimeout
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	b := &Bridge{pool: pool, opts: opts, log: opts.Log}
	b.host = newSandboxHost(pool, opts.Log)
	b.host.packages = opts.Packages
	b.host.skills = opts.Skills
	b.down = newDownstream(pool, opts)
	b.host.gate = cmp.Or(opts.Gate, gate.New(gate.Config{})).NewSession()
	b.sess = sandboxes.NewSession(cfg, b.host)
	return b
}

// Session is the bridge's sandbox session.
func (b *Bridge) Session() *sandbox.Session { return b.sess }

// Close removes the bridge's sandbox; a cell still running ends.
func (b *Bridge) Close() error { return b.sess.Close() }

// Server returns an MCP server that shows run_python.
func (b *Bridge) Server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "codebridge", Version: b.opts.Version}, &mcp.ServerOptions{
		Instructions:            "codebridge runs Python with access to the user's MCP servers through one tool, run_python.",
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { b.pool.RootsChanged() },
	})
	b.down.attach(s)
	s.AddTool(tool(), b.runPython)
	s.AddResource(manualResource(), b.readManual)
	b.addWorkspace(s)
	return s
}

// runPython is the run_python handler.
func (b *Bridge) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a args
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return errorResult("the arguments are not valid: %v; pass {\"code\": \"print(1)\"}", err), nil
		}
	}
	timeout := time.Duration(0)
	if a.Timeout != nil {
		t := *a.Timeout
		if math.IsNaN(t) || t <= 0 {
			return errorResult("`timeout` must be a positive number of seconds (at most %d)", int(b.opts.MaxTimeout.Seconds())), nil
		}
		timeout = time.Duration(math.Min(t, b.opts.MaxTimeout.Seconds()) * float64(time.Second))
	}
	onOutput, stop := startProgress(ctx, req, b.host.redactText)
	defer stop()
	return b.run(withCaller(ctx, req.Session), a.Code, timeout, a.Servers, onOutput), nil
}

// RunPython runs code as run_python does and returns what the model would
// read. A zero timeout means the default; servers are started first.
func (b *Bridge) RunPython(ctx context.Context, code string, timeout time.Duration, servers []string) *mcp.CallToolResult {
	return b.run(ctx, code, timeout, servers, nil)
}

// run is RunPython with a hook that sees the output as it arrives.
func (b *Bridge) run(ctx context.Context, code string, timeout time.Duration, servers []string, onOutput func(stream, text string)) (out *mcp.CallToolResult) {
	ctx, finish := b.host.startRun(ctx, code) // audit, span, and redaction of what the model reads
	defer func() { out = finish(out) }()
	if code == "" {
		return errorResult("`code` is empty: pass the Python to run, for example {\"code\": \"print(1)\"}")
	}
	if timeout <= 0 {
		timeout = b.opts.DefaultTimeout
	}
	timeout = min(timeout, b.opts.MaxTimeout)
	if len(servers) > 0 {
		if res := b.startServers(ctx, servers); res != nil {
			return res
		}
	}
	if onOutput != nil {
		ctx = withOutput(ctx, onOutput)
	}
	ctx, shared := withShares(ctx)
	notes := b.down.notes.begin()
	res, err := b.sess.Run(ctx, sandbox.Request{Code: code, Timeout: timeout, TOON: b.opts.Output == "toon"})
	if err != nil {
		notes()
		return errorResult("%v", err)
	}
	res.Stderr.Text += notes()
	b.log.Debug("run_python", "status", res.Status, "took", res.Duration)
	out = render(res, timeout)
	out.Content = append(out.Content, shared.links()...)
	return out
}

// startServers starts the named servers in parallel. It returns an error
// result when a name is unknown or a server does not start.
func (b *Bridge) startServers(ctx context.Context, names []string) *mcp.CallToolResult {
	if err := errors.Join(b.pool.Start(ctx, names)...); err != nil {
		return errorResult("starting the servers the call named: %v", err)
	}
	return nil
}
