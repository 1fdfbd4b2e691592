package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/metrics"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/shapes"
	"github.com/codebridge/codebridge/internal/skills"
	"github.com/codebridge/codebridge/internal/upstream"
)

// sandboxHost is what one sandbox session reaches out to: the configured
// servers, skills, files and gate of one session. It is the bridge's side
// of [sandbox.Host]; each run_python call's side is a [call] over it.
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
	// shapes keeps the observed shapes of tool results (shapes.go) in
	// the place of the session's principal, for every server: a key of a
	// result can be data (an object keyed by names or addresses), so no
	// principal is shown the shapes of another's calls. Nil: not observed.
	shapes *shapes.Book

	metrics *metrics.Metrics // counts each request of the sandbox; nil: none
	// sessions are the session's principal's handle sessions, as its
	// sandbox may list and end them (handles.go); nil: none.
	sessions *sessionsView
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

// through is the one path every request that acts on something (a tool
// call, a resource read, a prompt, an install) takes on the host: the
// gate stands here, once, for all of them, in its fixed order (policy,
// approval, private values put back, do, audit, redaction of the answer).
// c has a gate. req has the request's target and parameters (in the
// gate's canonical form when it says so); through adds what the host
// knows (the tool's listing, looked up in ref, who can be asked). do
// answers the request from the parameters the gate passes it (with real
// values for tokens).
func (c *call) through(ctx context.Context, req gate.Request, ref *toolRef, do func(context.Context, json.RawMessage) (json.RawMessage, error)) (gate.Result, error) {
	if t := req.Target; t.Kind == "tool" && t.Name != "" {
		tool, err := ref.listed(ctx, c, t.Server, t.Name)
		if err != nil {
			c.cell.Unasked(req.Batch) // its batch does not wait for it
			return gate.Result{}, err
		}
		req.Unlisted = tool == nil
		if tool != nil {
			req.Annotations = tool.Annotations
		}
	}
	req.Ask, req.Run = askClient(c.client, c.run), c.cell
	return c.gate.Through(ctx, req, do)
}
