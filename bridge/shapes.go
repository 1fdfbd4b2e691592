package bridge

import (
	"context"
	"encoding/json"

	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/protocol"
	"github.com/codebridge/codebridge/shapes"
	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultShapes is where a session keeps the observed shapes of tool
// results (package shapes): in the place of the session's principal, for
// every server. A shared server is the same tool for every principal,
// but a key of its results can be data (an object keyed by names or
// addresses), so no principal is shown the shapes of another's calls.
// The local user's place is the state directory's own.
type resultShapes struct {
	own *shapes.Book
}

// shapesOf is the place of principal key's shapes.
func (b *Bridge) shapesOf(key string) resultShapes {
	return resultShapes{own: b.shapes.Book(key)}
}

// observe records the shape of a tool's result on its way back to the
// sandbox (after the gate's redaction: a key that held a hidden value
// keeps only its kind, gate.Masked).
func (h *sandboxHost) observe(ctx context.Context, p protocol.CallToolParams, result json.RawMessage) {
	if h.shapes.own == nil {
		return
	}
	s, err := h.pool.Get(p.Server)
	if err != nil {
		return
	}
	tool, err := s.Tool(ctx, p.Tool)
	if err != nil || tool == nil {
		return
	}
	h.shapes.own.Observe(p.Server, tool, result, gate.Masked)
}

// observedTool is a tool of a list_tools answer with its observed shape.
type observedTool struct {
	*mcp.Tool
	Observed *protocol.Observed `json:"observed,omitempty"`
}

// withShapes gives each tool of a list_tools answer the shape observed
// of its results, when there is one (a declared outputSchema wins: such
// a tool has none).
func (h *sandboxHost) withShapes(server string, list []any) []any {
	book := h.shapes.own
	if book == nil {
		return list
	}
	for i, e := range list {
		if t, ok := e.(*mcp.Tool); ok {
			if seen, ok := book.Shape(server, t); ok {
				list[i] = observedTool{Tool: t, Observed: &protocol.Observed{Calls: seen.Calls, Errors: seen.Errors, Shape: seen.Text, Line: seen.Line}}
			}
		}
	}
	return list
}

// returnsLine is the one-line observed shape of a search hit's tool, or
// "" (no shape, or not an upstream tool).
func (h *sandboxHost) returnsLine(hit upstream.Hit) string {
	if h.shapes.own == nil || hit.Kind != "" || hit.Server == "" {
		return ""
	}
	seen, _ := h.shapes.own.Shape(hit.Server, hit.Tool)
	return seen.Line
}
