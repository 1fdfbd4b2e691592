package bridge

import (
	"context"
	"encoding/json"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The runtime's requests for what an upstream offers besides tools
// (pyruntime/PROTOCOL.md): resources, resource templates and prompts. The
// lists go one page per request, without what the policy denies, and
// are redacted (a file's name or URI can hold personal data) where every
// listing is (redact_listing.go); reads and prompts pass through the gate.

func listResources(ctx context.Context, h *call, p protocol.ListResourcesParams) (json.RawMessage, error) {
	return onServer(h.sandboxHost, p.Server, func(s *upstream.Server) (json.RawMessage, error) {
		page, err := s.ListResources(ctx, h, p.Cursor)
		if err != nil {
			return nil, err
		}
		return h.visiblePage(page, p.Server, "resource", "resources", "uri")
	})
}

func listResourceTemplates(ctx context.Context, h *call, p protocol.ListResourceTemplatesParams) (json.RawMessage, error) {
	return onServer(h.sandboxHost, p.Server, func(s *upstream.Server) (json.RawMessage, error) {
		page, err := s.ListResourceTemplates(ctx, h, p.Cursor)
		if err != nil {
			return nil, err
		}
		return h.visiblePage(page, p.Server, "resource", "resourceTemplates", "uriTemplate")
	})
}

func listPrompts(ctx context.Context, h *call, p protocol.ListPromptsParams) (json.RawMessage, error) {
	return onServer(h.sandboxHost, p.Server, func(s *upstream.Server) (json.RawMessage, error) {
		page, err := s.ListPrompts(ctx, h, p.Cursor)
		if err != nil {
			return nil, err
		}
		return h.visiblePage(page, p.Server, "prompt", "prompts", "name")
	})
}

// redactContent hides secrets and personal data in what a run_python
// result carries besides text: the bytes of images (exact values only,
// unless the picture is text, such as SVG) and the names and URIs of
// resource links.
func (h *sandboxHost) redactContent(c mcp.Content) {
	switch x := c.(type) {
	case *mcp.ImageContent:
		if red := h.gate.Redact(string(x.Data)); red != string(x.Data) {
			x.Data = []byte(red)
		}
	case *mcp.ResourceLink:
		x.URI, x.Name, x.Title = h.gate.Redact(x.URI), h.gate.Redact(x.Name), h.gate.Redact(x.Title)
	}
}

func readResource(ctx context.Context, h *call, p protocol.ReadResourceParams) (json.RawMessage, error) {
	return onServer(h.sandboxHost, p.Server, func(s *upstream.Server) (json.RawMessage, error) { return s.ReadResource(ctx, h, p.URI) })
}

func getPrompt(ctx context.Context, h *call, p protocol.GetPromptParams) (json.RawMessage, error) {
	return onServer(h.sandboxHost, p.Server, func(s *upstream.Server) (json.RawMessage, error) {
		return s.GetPrompt(ctx, h, p.Name, p.Arguments)
	})
}

// onServer runs do on the configured server called name.
func onServer(h *sandboxHost, name string, do func(*upstream.Server) (json.RawMessage, error)) (json.RawMessage, error) {
	s, err := h.pool.Get(name)
	if err != nil {
		return nil, err
	}
	return do(s)
}
