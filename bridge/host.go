package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/protocol"
	"github.com/codebridge/codebridge/skills"
	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sandboxHost is what one sandbox session reaches out to: the configured
// servers, the runtime's requests, and the output of its cells. It is the
// bridge's side of [sandbox.Host].
type sandboxHost struct {
	pool *upstream.Pool
	log  *slog.Logger

	packages *Packages // on-demand installs; nil when off

	mu       sync.Mutex
	toolGens map[string]uint64 // each upstream's tool-list generation, as the sandbox last heard

	skills *skills.Set   // the principal's skills and the team's; nil keeps none
	files  *sharedFiles  // the workspace files the code shared
	gate   *gate.Session // policy, approval, audit, redaction (bridge/gate.go); nil: none
	busy   *inflight     // the calls in flight, for requests the upstreams make of the client; nil: not counted
	trips  *roundTrips   // the bridge's detached run_python calls (roundtrip.go); nil: none
}

func newSandboxHost(pool *upstream.Pool, log *slog.Logger) *sandboxHost {
	return &sandboxHost{pool: pool, log: log, toolGens: map[string]uint64{}, files: newSharedFiles()}
}

// Servers are the configured upstreams, in config order.
func (h *sandboxHost) Servers() []protocol.ServerInfo {
	var out []protocol.ServerInfo
	for _, s := range h.pool.Servers() {
		out = append(out, protocol.ServerInfo{Name: s.Name(), Description: s.Description(), Cwd: s.Cwd()})
	}
	return out
}

// StartFiles are the files every new sandbox gets: the saved skills and
// the configured packages.
func (h *sandboxHost) StartFiles() []protocol.File {
	return append(h.skillFiles(), h.packages.startFiles(h.log)...)
}

// Stale names the upstreams whose tool lists changed since the sandbox
// last heard (they said so, or restarted), so that the runtime drops its
// cached lists.
func (h *sandboxHost) Stale() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var stale []string
	for _, s := range h.pool.Servers() {
		if g := s.ToolsGeneration(); g != h.toolGens[s.Name()] {
			h.toolGens[s.Name()] = g
			stale = append(stale, s.Name())
		}
	}
	return stale
}

// Answer handles one request of the runtime (rpc.go). Its error carries
// its kind (errkind.go), mapped here, once, for every method.
func (h *sandboxHost) Answer(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error) {
	m, ok := methods[rpc.Method]
	if !ok {
		return nil, withKind(unknownMethod(rpc.Method))
	}
	if r := runOf(ctx); r != nil && h.trips != nil {
		h.trips.touch(r) // an upstream's question during this request is this call's
	}
	val, err := m(ctx, h, rpc.Params)
	return val, withKind(err)
}

// through is the one path every request that acts on something (a tool
// call, a resource read, a prompt, an install) takes on the host: the
// gate stands here, once, for all of them, in its fixed order (policy,
// approval, private values put back, do, audit, redaction of the answer).
// params are the request's raw parameters; do answers the request from
// the parameters the gate passes it (with real values for tokens).
func (h *sandboxHost) through(ctx context.Context, t protocol.Target, params json.RawMessage, do func(context.Context, json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	if h.gate == nil {
		return do(ctx, params)
	}
	tool, unlisted, err := h.listed(ctx, t)
	if err != nil {
		return nil, err
	}
	req := gate.Request{Target: t, Params: params, Unlisted: unlisted, Ask: askClient(ctx)}
	if tool != nil {
		req.Annotations = tool.Annotations
	}
	return h.gate.Through(ctx, req, do)
}

// Output passes a cell's output to the run_python call that ran it, when
// that call watches its output (progress notifications).
func (h *sandboxHost) Output(ctx context.Context, stream, text string) {
	if f, ok := ctx.Value(outputKey{}).(func(stream, text string)); ok {
		f(stream, text)
	}
}

// outputKey carries a run_python call's output watcher in its context.
type outputKey struct{}

func withOutput(ctx context.Context, f func(stream, text string)) context.Context {
	return context.WithValue(ctx, outputKey{}, f)
}

// callerKey carries the MCP session of the run_python call a cell serves,
// so that what the cell asks of the host can ask the client in turn
// (approval, sampling, elicitation, roots).
type callerKey struct{}

func withCaller(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	return context.WithValue(ctx, callerKey{}, ss)
}

// caller is the MCP session of the run_python call that ctx serves, or nil
// (codebridge exec, tests).
func caller(ctx context.Context) *mcp.ServerSession {
	ss, _ := ctx.Value(callerKey{}).(*mcp.ServerSession)
	return ss
}
