package bridge

import (
	"context"
	"encoding/json"

	"github.com/codebridge/codebridge/protocol"
	"github.com/codebridge/codebridge/upstream"
)

// The runtime's requests for what an upstream offers besides tools
// (pyruntime/PROTOCOL.md): resources, resource templates and prompts. The
// lists go one page per request, without what the policy denies; reads
// and prompts pass through the gate.

func listResources(ctx context.Context, h *sandboxHost, p protocol.ListResourcesParams) (json.RawMessage, error) {
	return onServer(h, p.Server, func(s *upstream.Server) (json.RawMessage, error) {
		page, err := s.ListResources(ctx, p.Cursor)
		if err != nil {
			return nil, err
		}
		return h.visiblePage(page, p.Server, "resource", "resources", "uri")
	})
}

func listResourceTemplates(ctx context.Context, h *sandboxHost, p protocol.ListResourceTemplatesParams) (json.RawMessage, error) {
	return onServer(h, p.Server, func(s *upstream.Server) (json.RawMessage, error) {
		page, err := s.ListResourceTemplates(ctx, p.Cursor)
		if err != nil {
			return nil, err
		}
		return h.visiblePage(page, p.Server, "resource", "resourceTemplates", "uriTemplate")
	})
}

func listPrompts(ctx context.Context, h *sandboxHost, p protocol.ListPromptsParams) (json.RawMessage, error) {
	return onServer(h, p.Server, func(s *upstream.Server) (json.RawMessage, error) {
		page, err := s.ListPrompts(ctx, p.Cursor)
		if err != nil {
			return nil, err
		}
		return h.visiblePage(page, p.Server, "prompt", "prompts", "name")
	})
}

func readResource(ctx context.Context, h *sandboxHost, p protocol.ReadResourceParams) (json.RawMessage, error) {
	return onServer(h, p.Server, func(s *upstream.Server) (json.RawMessage, error) { return s.ReadResource(ctx, p.URI) })
}

func getPrompt(ctx context.Context, h *sandboxHost, p protocol.GetPromptParams) (json.RawMessage, error) {
	return onServer(h, p.Server, func(s *upstream.Server) (json.RawMessage, error) {
		return s.GetPrompt(ctx, p.Name, p.Arguments)
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
