package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
)

// method answers one RPC method of the runtime (pyruntime/PROTOCOL.md):
// the request's params, and where in the cell it was made.
type method func(ctx context.Context, c *call, rpc protocol.RPC) (json.RawMessage, error)

// methods are the RPC methods the bridge answers, each with its own
// parameter type (package protocol). The answers that list what upstreams
// offer are redacted for the sandbox here (redacted, redact_listing.go).
var methods = map[string]method{
	protocol.MListServers:  typed(listServers),
	protocol.MListTools:    redacted(toolListing, typed(listTools)),
	protocol.MCallTool:     callTool,
	protocol.MStartServers: typed(startServers),
	protocol.MSearchTools:  redacted(searchListing, typed(searchTools)),
	protocol.MInstall:      typed(install),
	protocol.MSaveSkill:    typed(saveSkill),
	protocol.MListSkills:   typed(listSkills),
	protocol.MDeleteSkill:  typed(deleteSkill),
	protocol.MShare:        typed(share),
	protocol.MCalls:        typed(ledgerCalls), // ledger.go
	// handles.go
	protocol.MSessions:   typed(listSessions),
	protocol.MEndSession: typed(endSession),
	// resources.go
	protocol.MListResources:         redacted(pageListing, typed(listResources)),
	protocol.MListResourceTemplates: redacted(pageListing, typed(listResourceTemplates)),
	protocol.MReadResource:          typed(readResource),
	protocol.MListPrompts:           redacted(pageListing, typed(listPrompts)),
	protocol.MGetPrompt:             typed(getPrompt),
}

// typed decodes a method's parameters into P, once, and sends a request
// that acts on something (P is [protocol.Targeted]) through the host's one
// gate ([gated]) before fn answers it.
func typed[P any](fn func(context.Context, *call, P) (json.RawMessage, error)) method {
	return func(ctx context.Context, c *call, rpc protocol.RPC) (json.RawMessage, error) {
		var p P
		if _, targeted := any(p).(protocol.Targeted); !targeted || c.gate == nil { // no gate: nothing to pass
			if err := decodeParams(rpc.Params, &p); err != nil {
				return nil, err
			}
			return fn(ctx, c, p)
		}
		_, res, err := gated(ctx, c, rpc, new(toolRef), fn)
		return res.JSON, err
	}
}

// gated sends a request that acts on something (P is
// [protocol.Targeted]) through the gate, and returns its parameters as
// the gate saw them and what it answered. The parameters are put in the
// gate's canonical form first ([gate.Canonical]), and P is decoded from
// that form: the gate, the audit and the upstream see the same text, and
// nothing parses it again unless the gate puts private values back. ref
// is where a tool call's tool is looked up, once (see [toolRef]).
func gated[P any](ctx context.Context, c *call, rpc protocol.RPC, ref *toolRef, fn func(context.Context, *call, P) (json.RawMessage, error)) (P, gate.Result, error) {
	var p P
	params, cerr := gate.Canonical(rpc.Params)
	canonical := cerr == nil
	if !canonical {
		params = rpc.Params // the gate refuses it, and says why; decoded for its target alone
	}
	batch := gate.Batch{ID: rpc.Batch, Size: rpc.Size}
	if err := decodeParams(params, &p); err != nil {
		c.cell.Unasked(batch) // its batch does not wait for it
		return p, gate.Result{}, err
	}
	req := gate.Request{Target: any(p).(protocol.Targeted).Target(), Params: params, Canonical: canonical,
		Line: rpc.Line, Batch: batch}
	if tc, isCall := any(p).(protocol.CallToolParams); isCall && canonical {
		req.Arguments = tc.Arguments // decoded from the canonical form: the gate need not look
	}
	seen := p
	res, err := c.through(ctx, req, ref, func(ctx context.Context, sent json.RawMessage) (json.RawMessage, error) {
		if !bytes.Equal(sent, params) { // the gate put private values back
			var q P
			if err := decodeParams(sent, &q); err != nil {
				return nil, err
			}
			p = q
		}
		return fn(ctx, c, p)
	})
	return seen, res, err
}

// decodeParams decodes a request's parameters into p; none leave p zero.
func decodeParams[P any](raw json.RawMessage, p *P) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return fmt.Errorf("the parameters of this request are not valid: %v", err) //nolint:errorlint // the cause is a verdict on bytes a sandbox or an upstream sent: its text is kept, its kind never chosen by it
	}
	return nil
}

func unknownMethod(name string) error {
	return fmt.Errorf("the bridge does not know the request %q (runtime and bridge versions differ?)", name)
}

// callTool answers call_tool. Its target is looked up once (ref): the
// gate, the upstream call and the shapes share the server and the tool's
// listing; and whether the result is a tool's error is decided once, by
// the gate for its audit ([gate.Result]). Without a gate (tests) the
// call is sent and its shape not observed.
func callTool(ctx context.Context, c *call, rpc protocol.RPC) (json.RawMessage, error) {
	var ref toolRef
	send := func(ctx context.Context, c *call, p protocol.CallToolParams) (json.RawMessage, error) {
		s, err := ref.serverOf(c, p.Server)
		if err != nil {
			return nil, err
		}
		if p.Tool == "" {
			return nil, fmt.Errorf("call_tool needs a tool name for server %q", p.Server)
		}
		defer c.busy.begin(p.Server, c.client)()
		return s.Call(ctx, c, p.Tool, p.Arguments)
	}
	if c.gate == nil {
		var p protocol.CallToolParams
		if err := decodeParams(rpc.Params, &p); err != nil {
			return nil, err
		}
		return send(ctx, c, p)
	}
	p, res, err := gated(ctx, c, rpc, &ref, send)
	if err == nil {
		c.observe(ctx, &ref, p, res.JSON, res.ToolError) // as the sandbox gets it: redacted
	}
	return res.JSON, err
}

func listTools(ctx context.Context, h *call, p protocol.ListToolsParams) (json.RawMessage, error) {
	s, err := h.pool.Get(p.Server)
	if err != nil {
		return nil, err
	}
	tools, err := s.Listed(ctx, h) // a server that does not run is not started for its saved listing
	if err != nil {
		return nil, err
	}
	return json.Marshal(h.withShapes(p.Server, h.toolList(p.Server, tools)))
}

func listServers(_ context.Context, h *call, _ protocol.ListServersParams) (json.RawMessage, error) {
	out := []protocol.ServerEntry{}
	for _, s := range h.pool.Servers() {
		out = append(out, protocol.ServerEntry{Name: s.Name(), Description: s.Description(), Running: s.Running()})
	}
	return json.Marshal(out)
}

func startServers(ctx context.Context, h *call, p protocol.StartServersParams) (json.RawMessage, error) {
	out := make([]protocol.StartEntry, len(p.Servers))
	for i, err := range h.pool.Start(ctx, p.Servers) {
		out[i] = protocol.StartEntry{Name: p.Servers[i], OK: err == nil}
		if err != nil {
			out[i].Error = err.Error()
		}
	}
	return json.Marshal(out)
}

// searchWait bounds how long a search waits for a server it has never
// listed to start (see upstream.Pool.Catalogue: a server listed before is
// searched from the state directory without starting it).
const searchWait = 20 * time.Second

func searchTools(ctx context.Context, h *call, p protocol.SearchToolsParams) (json.RawMessage, error) {
	if p.Limit <= 0 {
		p.Limit = 5
	}
	res := h.search(ctx, p.Query, p.Limit, p.Detail == "full")
	out := []any{}
	if res.Cut != "" {
		out = append(out, protocol.SearchNote{Note: res.Cut})
	}
	for _, hit := range res.Hits {
		out = append(out, hit)
	}
	for _, d := range res.Down {
		out = append(out, protocol.SearchDown{Server: d.Server, Unavailable: d.Err.Error()})
	}
	return json.Marshal(out)
}

// SearchResult is one search as the sandbox and `codebridge search` get
// it: the hits, best first; the servers that could not be searched; those
// searched from a listing saved before their entry changed; and, when the
// query was cut to its budget, what was cut.
type SearchResult struct {
	Hits  []protocol.SearchHit
	Down  []upstream.Unavailable
	Stale []upstream.Stale
	Cut   string
}

// search ranks, for query, what the session may see: every server's
// tools, resources and prompts the policy does not hide, and the
// principal's skills. It is the one search: the sandbox's search_tools
// and `codebridge search` ([Bridge.Search]) both answer with it.
func (h *sandboxHost) search(ctx context.Context, query string, limit int, full bool) SearchResult {
	entries, down, stale := h.pool.Catalogue(ctx, searchWait)
	entries = h.visibleEntries(entries)
	entries, skills := h.withSkills(entries)
	hits, cut := upstream.Search(query, entries, limit)
	res := SearchResult{Down: down, Stale: stale, Cut: cut}
	for _, hit := range hits {
		r := SearchHit(hit, full)
		r.Skill = skills[hit.Tool]
		if !r.Skill {
			r.Returns = h.returnsLine(hit)
			r.Stale = staleNote(stale, hit.Server)
		}
		res.Hits = append(res.Hits, r)
	}
	return res
}

// Search is the search the local user's sandbox has (see
// [sandboxHost.search]), for `codebridge search`.
func (b *Bridge) Search(ctx context.Context, query string, limit int) SearchResult {
	return b.single.host.search(ctx, query, limit, false)
}

// staleNote says why a hit of server may be out of date, when the search
// read it from a listing made under an earlier form of the server's
// entry; "" when it did not.
func staleNote(stale []upstream.Stale, server string) string {
	for _, s := range stale {
		if s.Server == server {
			return fmt.Sprintf("listed %s, before the server's entry in the configuration changed; it is being listed again: search again in a few seconds for what it offers now",
				s.Saved.UTC().Format(time.RFC3339))
		}
	}
	return ""
}

// SearchHit is a ranked tool as the runtime and the command line show it;
// full adds its schemas.
func SearchHit(hit upstream.Hit, full bool) protocol.SearchHit {
	r := protocol.SearchHit{Server: hit.Server, Tool: hit.Tool.Name, Description: hit.Tool.Description, Score: hit.Score}
	r.Kind, r.URI = hit.Kind, hit.URI
	if full {
		r.InputSchema, r.OutputSchema = hit.Tool.InputSchema, hit.Tool.OutputSchema
	}
	return r
}
