package bridge

import (
	"context"
	"encoding/json"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// observe records the shape of a tool's result on its way back to the
// sandbox (after the gate's redaction: a key that held a hidden value
// keeps only its kind, gate.Masked), with its tool as ref looked it up
// (once per call) and whether it is a tool's error (decided once, by the
// caller). The shapes are merged and written off the call's path.
func (c *call) observe(ctx context.Context, ref *toolRef, p protocol.CallToolParams, result json.RawMessage, isError bool) {
	if c.shapes == nil {
		return
	}
	tool, err := ref.listed(ctx, c, p.Server, p.Tool)
	if err != nil || tool == nil {
		return
	}
	c.shapes.Observe(p.Server, tool, result, isError, gate.Masked)
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
	book := h.shapes
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
	if h.shapes == nil || hit.Kind != "" || hit.Server == "" {
		return ""
	}
	seen, _ := h.shapes.Shape(hit.Server, hit.Tool)
	return seen.Line
}
