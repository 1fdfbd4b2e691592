package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/codebridge/codebridge/upstream"
)

// rpcHandler answers the sandbox runtime's requests (pyruntime/PROTOCOL.md).
type rpcHandler struct{ b *Bridge }

type serverParams struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Servers   []string        `json:"servers"`
	Query     string          `json:"query"`
	Limit     int             `json:"limit"`
	Detail    string          `json:"detail"`
}

func (h rpcHandler) HandleRPC(ctx context.Context, method string, raw json.RawMessage) (json.RawMessage, error) {
	var p serverParams
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("the parameters of %s are not valid: %v", method, err)
		}
	}
	switch method {
	case "call_tool":
		return h.callTool(ctx, p)
	case "list_tools":
		return h.listTools(ctx, p)
	case "list_servers":
		return h.listServers()
	case "start_servers":
		return h.startServers(ctx, p)
	case "search_tools":
		return h.searchTools(ctx, p)
	}
	return nil, fmt.Errorf("the bridge does not know the request %q (runtime and bridge versions differ?)", method)
}

func (h rpcHandler) callTool(ctx context.Context, p serverParams) (json.RawMessage, error) {
	s, err := h.b.pool.Get(p.Server)
	if err != nil {
		return nil, err
	}
	if p.Tool == "" {
		return nil, fmt.Errorf("call_tool needs a tool name for server %q", p.Server)
	}
	return s.Call(ctx, p.Tool, p.Arguments)
}

func (h rpcHandler) listTools(ctx context.Context, p serverParams) (json.RawMessage, error) {
	s, err := h.b.pool.Get(p.Server)
	if err != nil {
		return nil, err
	}
	tools, err := s.Tools(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(tools)
}

type serverEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Running     bool   `json:"running"`
}

func (h rpcHandler) listServers() (json.RawMessage, error) {
	out := []serverEntry{}
	for _, s := range h.b.pool.Servers() {
		out = append(out, serverEntry{Name: s.Name(), Description: s.Description(), Running: s.Running()})
	}
	return json.Marshal(out)
}

type startEntry struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

func (h rpcHandler) startServers(ctx context.Context, p serverParams) (json.RawMessage, error) {
	out := make([]startEntry, len(p.Servers))
	for i, err := range h.b.pool.Start(ctx, p.Servers) {
		out[i] = startEntry{Name: p.Servers[i], OK: err == nil}
		if err != nil {
			out[i].Error = err.Error()
		}
	}
	return json.Marshal(out)
}

// searchWait bounds how long a search waits for a server to start.
const searchWait = 20 * time.Second

type searchHit struct {
	Server       string  `json:"server"`
	Tool         string  `json:"tool"`
	Description  string  `json:"description"`
	Score        float64 `json:"score"`
	InputSchema  any     `json:"inputSchema,omitempty"`
	OutputSchema any     `json:"outputSchema,omitempty"`
}

type searchDown struct {
	Server      string `json:"server"`
	Unavailable string `json:"unavailable"`
}

func (h rpcHandler) searchTools(ctx context.Context, p serverParams) (json.RawMessage, error) {
	if p.Limit <= 0 {
		p.Limit = 5
	}
	entries, down := h.b.pool.Catalogue(ctx, searchWait)
	out := []any{}
	for _, hit := range upstream.Rank(p.Query, entries, p.Limit) {
		r := searchHit{Server: hit.Server, Tool: hit.Tool.Name, Description: hit.Tool.Description, Score: hit.Score}
		if p.Detail == "full" {
			r.InputSchema, r.OutputSchema = hit.Tool.InputSchema, hit.Tool.OutputSchema
		}
		out = append(out, r)
	}
	for _, d := range down {
		out = append(out, searchDown{Server: d.Server, Unavailable: d.Err.Error()})
	}
	return json.Marshal(out)
}
