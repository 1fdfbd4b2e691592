package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a server offers besides tools: resources, resource templates and
// prompts. Each list method returns one page as the server sent it (JSON
// with nextCursor when there are more), so that a caller pages through a
// large list a page at a time.

// ListResources returns one page of the server's resources, starting it
// when needed; cursor is "" for the first page. Each request here is made
// for caller (nil: no one), who hears of a failure.
func (s *Server) ListResources(ctx context.Context, caller Caller, cursor string) (json.RawMessage, error) {
	return s.request(ctx, caller, "listing resources", func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		return cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
	})
}

// ListResourceTemplates returns one page of the server's resource
// templates.
func (s *Server) ListResourceTemplates(ctx context.Context, caller Caller, cursor string) (json.RawMessage, error) {
	return s.request(ctx, caller, "listing resource templates", func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		return cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
	})
}

// ListPrompts returns one page of the server's prompts.
func (s *Server) ListPrompts(ctx context.Context, caller Caller, cursor string) (json.RawMessage, error) {
	return s.request(ctx, caller, "listing prompts", func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		return cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
	})
}

// GetPrompt returns the prompt called name with arguments filled in.
func (s *Server) GetPrompt(ctx context.Context, caller Caller, name string, arguments map[string]string) (json.RawMessage, error) {
	if name == "" {
		return nil, fmt.Errorf("server %q: get_prompt needs a prompt name", s.spec.Name)
	}
	return s.request(ctx, caller, fmt.Sprintf("getting prompt %q", name), func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: arguments})
	})
}

// ReadResource reads the resource at uri. Like a tool result, a stdio
// server's answer is passed through as it sent it, neither decoded nor
// encoded again, so a large resource costs its bytes once.
func (s *Server) ReadResource(ctx context.Context, caller Caller, uri string) (json.RawMessage, error) {
	if uri == "" {
		return nil, fmt.Errorf("server %q: read_resource needs a resource URI", s.spec.Name)
	}
	params := &mcp.ReadResourceParams{URI: uri}
	var raw json.RawMessage
	err := s.sup.run(ctx, caller, fmt.Sprintf("reading resource %q", uri), func(ctx context.Context, c *conn) (err error) {
		if c.line != nil { // stdio, legacy protocol: the bridge sends it itself
			var p []byte
			if p, err = json.Marshal(params); err != nil {
				return err
			}
			raw, err = c.line.request(ctx, "resources/read", p, &rawSlot{})
			return err
		}
		res, err := c.cs.ReadResource(ctx, params)
		if err == nil {
			raw, err = json.Marshal(res)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// request runs one request of the server's session for caller under the
// call time limit and returns its result as JSON; what names it in
// errors.
func (s *Server) request(ctx context.Context, caller Caller, what string, do func(context.Context, *mcp.ClientSession) (any, error)) (json.RawMessage, error) {
	var res any
	err := s.sup.run(ctx, caller, what, func(ctx context.Context, c *conn) (err error) {
		res, err = do(ctx, c.cs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
