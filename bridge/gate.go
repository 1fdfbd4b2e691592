package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/codebridge/codebridge/gate"
	"github.com/codebridge/codebridge/protocol"
	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// annotations are the tool's own annotations, from the server's cached
// list, when the policy needs them (not in open mode without rules).
func (h *sandboxHost) annotations(ctx context.Context, t protocol.Target) *mcp.ToolAnnotations {
	if t.Kind != "tool" || h.gate.Policy().Mode == gate.Open {
		return nil
	}
	s, err := h.pool.Get(t.Server)
	if err != nil {
		return nil
	}
	tools, err := s.Tools(ctx)
	if err != nil {
		return nil
	}
	for _, tl := range tools {
		if tl.Name == t.Name {
			return tl.Annotations
		}
	}
	return nil
}

// visibleTools leaves out the tools the policy denies whatever happens,
// so that list_tools, help() and search never show them.
func (h *sandboxHost) visibleTools(server string, tools []*mcp.Tool) []*mcp.Tool {
	if h.gate == nil {
		return tools
	}
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if !h.gate.Policy().Hidden(server, t) {
			out = append(out, t)
		}
	}
	return out
}

// visibleEntries is visibleTools for search entries.
func (h *sandboxHost) visibleEntries(entries []upstream.Entry) []upstream.Entry {
	if h.gate == nil {
		return entries
	}
	out := entries[:0:0]
	for _, e := range entries {
		if !h.gate.Policy().Hidden(e.Server, e.Tool) {
			out = append(out, e)
		}
	}
	return out
}

// askClient asks the user, through the MCP client of the run_python call
// ctx serves, with elicitation/create; nil when there is no client
// (codebridge exec).
func askClient(ctx context.Context) gate.Asker {
	ss := caller(ctx)
	if ss == nil {
		return nil
	}
	return func(ctx context.Context, q gate.Question) (gate.Answer, error) {
		if p := ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
			return gate.Answer{}, gate.ErrCannotAsk
		}
		res, err := asElicitResult(ask(ctx, ss, runOf(ctx), &mcp.ElicitParams{Message: question(q), RequestedSchema: approvalSchema}))
		if err != nil {
			return gate.Answer{}, err
		}
		switch res.Action {
		case "accept":
			forSession, _ := res.Content["session"].(bool)
			return gate.Answer{Allow: true, ForSession: forSession}, nil
		case "decline":
			return gate.Answer{Reason: "declined"}, nil
		}
		return gate.Answer{Reason: "dismissed the request (" + res.Action + ")"}, nil
	}
}

// approvalSchema asks one thing besides yes or no: whether to remember it.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"session":{"type":"boolean","title":"Allow this tool for the rest of the session","default":false}}}`)

func question(q gate.Question) string {
	return fmt.Sprintf("codebridge: code in the sandbox wants to call the %s %s.%s with\n%s\n(%s). Allow it?",
		q.Target.Kind, q.Target.Server, q.Target.Name, q.Arguments, q.Rule)
}

// redactText hides secrets and personal data in text for the model.
func (h *sandboxHost) redactText(s string) string {
	if h.gate == nil {
		return s
	}
	return h.gate.Redact(s)
}

// startRun begins the audit record and span of one run_python; finish
// redacts what the model will read and records the outcome.
func (h *sandboxHost) startRun(ctx context.Context, code string) (context.Context, func(*mcp.CallToolResult) *mcp.CallToolResult) {
	if h.gate == nil {
		return ctx, func(r *mcp.CallToolResult) *mcp.CallToolResult { return r }
	}
	ctx, run := h.gate.StartRun(ctx, code)
	return ctx, func(res *mcp.CallToolResult) *mcp.CallToolResult {
		size := 0
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				t.Text = h.gate.Redact(t.Text)
				size += len(t.Text)
			} else {
				h.redactContent(c)
			}
		}
		run.Finish(runOutcome(res), size)
		return res
	}
}

// runOutcome reads a run_python result's status.
func runOutcome(res *mcp.CallToolResult) string {
	if !res.IsError {
		return "ok"
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			for _, s := range []string{"timeout", "cancelled", "crashed"} {
				if strings.Contains(t.Text, "[status: "+s) {
					return s
				}
			}
		}
	}
	return "error"
}
