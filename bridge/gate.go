package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolRef is the target of one call_tool request as the host looked it
// up: its server (one Pool.Get) and, when the gate or the shapes need it,
// the tool as its server lists it (one lookup). The gate, the upstream
// call and the shapes share it; a name is looked up again only when it
// differs (the gate put private values back into the parameters).
type toolRef struct {
	serverName string
	server     *upstream.Server // nil: not looked up yet
	toolName   string
	tool       *mcp.Tool // nil: not looked up, or the server lists no such tool
	looked     bool      // tool is the lookup of toolName on server
}

// serverOf is the configured server called name.
func (r *toolRef) serverOf(c *call, name string) (*upstream.Server, error) {
	if r.server != nil && r.serverName == name {
		return r.server, nil
	}
	s, err := c.pool.Get(name)
	if err != nil {
		return nil, err
	}
	r.serverName, r.server, r.looked = name, s, false
	return s, nil
}

// listed is the tool a call names, looked up in its server's list by its
// exact name (nil when the server lists none). A call must name a listed
// tool exactly: an upstream that matched names loosely would otherwise
// run a denied tool spelled another way ("DELETE_ALL" for a denied
// "delete_all"), so a name the server does not list is refused.
func (r *toolRef) listed(ctx context.Context, c *call, server, name string) (*mcp.Tool, error) {
	s, err := r.serverOf(c, server)
	if err != nil {
		return nil, err
	}
	if r.looked && r.toolName == name {
		return r.tool, nil
	}
	tool, err := s.Tool(ctx, c, name)
	if err != nil {
		return nil, err
	}
	r.toolName, r.tool, r.looked = name, tool, true
	return tool, nil
}

// toolList is a list_tools answer: the tools the policy lets the code
// see, and, for each tool it denies whatever happens, only its name and
// the error a call to it gets, so that the runtime says why when code
// names one (the listings, help() and search leave them out).
func (h *sandboxHost) toolList(server string, tools []*mcp.Tool) []any {
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		if h.gate != nil {
			if err := h.gate.Policy().Denied(server, t); err != nil {
				out = append(out, protocol.DeniedTool{Name: t.Name, Denied: err.Error()})
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// visibleEntries leaves out of search the tools, resources, templates
// and prompts the policy denies whatever happens.
func (h *sandboxHost) visibleEntries(entries []upstream.Entry) []upstream.Entry {
	if h.gate == nil {
		return entries
	}
	p := h.gate.Policy()
	out := entries[:0:0]
	for _, e := range entries {
		var hidden bool
		switch e.Kind {
		case "":
			hidden = p.Hidden(e.Server, e.Tool)
		case upstream.KindResource, upstream.KindTemplate:
			hidden = p.HiddenName("resource", e.Server, e.URI)
		default:
			hidden = p.HiddenName(e.Kind, e.Server, e.Tool.Name)
		}
		if !hidden {
			out = append(out, e)
		}
	}
	return out
}

// visiblePage leaves out of one page of a server's resources, resource
// templates or prompts (the array under key) the entries the policy
// denies whatever happens, matched by their field name (a template by
// its URI template: "file:///*" allows "file:///{path}"). Pages of a
// server without rules pass as they came.
func (h *sandboxHost) visiblePage(page json.RawMessage, server, kind, key, name string) (json.RawMessage, error) {
	if h.gate == nil || !h.gate.Policy().HasRules(server) {
		return page, nil
	}
	var fields map[string]json.RawMessage
	var items []json.RawMessage
	if err := json.Unmarshal(page, &fields); err != nil {
		return nil, fmt.Errorf("server %q sent a list that is not an object: %v", server, err) //nolint:errorlint // the cause is a verdict on bytes a sandbox or an upstream sent: its text is kept, its kind never chosen by it
	}
	if err := json.Unmarshal(fields[key], &items); err != nil && fields[key] != nil {
		return nil, fmt.Errorf("server %q sent a list whose %q is not an array: %v", server, key, err) //nolint:errorlint // the cause is a verdict on bytes a sandbox or an upstream sent: its text is kept, its kind never chosen by it
	}
	kept := items[:0]
	for _, it := range items {
		var one map[string]json.RawMessage
		var n string
		if json.Unmarshal(it, &one) == nil && json.Unmarshal(one[name], &n) == nil && !h.gate.Policy().HiddenName(kind, server, n) {
			kept = append(kept, it)
		}
	}
	if fields[key] != nil {
		b, err := json.Marshal(kept)
		if err != nil {
			return nil, err
		}
		fields[key] = b
	}
	return json.Marshal(fields)
}

// askClient asks the user, through ss, the MCP client of the run_python
// call (r, when it is a detached run), with elicitation/create; nil when
// there is no client (codebridge exec).
func askClient(ss *mcp.ServerSession, r *detachedRun) gate.Asker {
	if ss == nil {
		return nil
	}
	return func(ctx context.Context, q gate.Question) (gate.Answer, error) {
		if p := ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
			return gate.Answer{}, gate.ErrCannotAsk
		}
		res, err := asElicitResult(ask(ctx, ss, r, &mcp.ElicitParams{Message: question(q), RequestedSchema: approvalSchema}))
		if err != nil {
			return gate.Answer{}, err
		}
		return approvalAnswer(res), nil
	}
}

// approvalSchema asks one thing besides yes or no: how far the approval
// reaches (or to decline after all). It has no default: a client fills
// one in, and an older client's "session": true would read as "once".
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"allow":{"type":"string","title":"Allow",` +
	`"oneOf":[{"const":"once","title":"Only these calls"},{"const":"cell","title":"This tool for the rest of this cell"},` +
	`{"const":"session","title":"This tool for the rest of the session"},{"const":"decline","title":"Decline"}]}}}`)

// approvalAnswer reads the client's answer to an approval: accepted, how
// far ("allow"; an older client's boolean "session": true is "session";
// nothing is "once"), or declined. A value codebridge does not know
// declines.
func approvalAnswer(res *mcp.ElicitResult) gate.Answer {
	switch res.Action {
	case "accept":
	case "decline":
		return gate.Answer{Reason: "declined"}
	default:
		return gate.Answer{Reason: "dismissed the request (" + res.Action + ")"}
	}
	allow, set := res.Content["allow"]
	if !set {
		if session, _ := res.Content["session"].(bool); session {
			return gate.Answer{Allow: true, Scope: gate.ForSession}
		}
		return gate.Answer{Allow: true, Scope: gate.Once}
	}
	switch allow {
	case "once":
		return gate.Answer{Allow: true, Scope: gate.Once}
	case "cell":
		return gate.Answer{Allow: true, Scope: gate.ForCell}
	case "session":
		return gate.Answer{Allow: true, Scope: gate.ForSession}
	case "decline":
		return gate.Answer{Reason: "declined"}
	}
	return gate.Answer{Reason: `answered "` + gate.Printable(fmt.Sprint(allow)) + `", which is none of once, cell, session or decline`}
}

// question is the text of an approval: each call with its arguments as
// the gate shows them (what the upstream receives) and its rule, names
// (which an upstream or the sandbox chose) with what does not print
// escaped, then the cell's code around the call (escaped by the gate).
// Every call the answer decides is listed: a batch asked in parts says
// which question of how many this is, that the answer covers only the
// calls listed, and, before the last, that declining declines the rest.
func question(q gate.Question) string {
	var b strings.Builder
	n := len(q.Calls)
	if n == 1 && q.Parts <= 1 {
		c := q.Calls[0]
		fmt.Fprintf(&b, "codebridge: code in the sandbox wants to call the %s %s.%s with\n%s\n(%s).",
			c.Target.Kind, gate.Printable(c.Target.Server), gate.Printable(c.Target.Name), c.Arguments, gate.Printable(c.Rule))
	} else {
		batchText(&b, q)
	}
	if q.Code != "" {
		b.WriteString("\n" + q.Code)
	}
	switch {
	case n == 1:
		b.WriteString("\nAllow it?")
	case q.Parts > 1:
		fmt.Fprintf(&b, "\nAllow these %d?", n)
	default:
		b.WriteString("\nAllow them all?")
	}
	return b.String()
}

// batchText writes the calls of a batch's question: each with its line
// and arguments, and its rule, or the rule once when every call listed
// (every call the answer decides) shares it; then, when they are of more
// than one tool, which tools an answer for the cell or the session
// covers.
func batchText(b *strings.Builder, q gate.Question) {
	if q.Parts > 1 {
		fmt.Fprintf(b, "codebridge: code in the sandbox wants to make %d calls at once, more than one question shows: "+
			"they are asked in %d questions, and an answer covers only the calls its question lists. "+
			"Question %d of %d, %s:", q.Total, q.Parts, q.Part, q.Parts, plural(len(q.Calls), "call"))
	} else {
		fmt.Fprintf(b, "codebridge: code in the sandbox wants to make %d calls at once:", len(q.Calls))
	}
	shared := len(q.Calls) > 1
	var tools []string
	for _, c := range q.Calls {
		shared = shared && c.Rule == q.Calls[0].Rule
		if t := c.Target.Kind + " " + gate.Printable(c.Target.Server) + "." + gate.Printable(c.Target.Name); !slices.Contains(tools, t) {
			tools = append(tools, t)
		}
	}
	for i, c := range q.Calls {
		fmt.Fprintf(b, "\n%d. the %s %s.%s", i+1, c.Target.Kind, gate.Printable(c.Target.Server), gate.Printable(c.Target.Name))
		if c.Line > 0 {
			fmt.Fprintf(b, " (line %d)", c.Line)
		}
		fmt.Fprintf(b, " with\n%s", c.Arguments)
		if !shared {
			fmt.Fprintf(b, "\n(%s)", gate.Printable(c.Rule))
		}
	}
	if shared {
		fmt.Fprintf(b, "\n(%s for each).", gate.Printable(q.Calls[0].Rule))
	}
	if len(tools) > 1 {
		fmt.Fprintf(b, "\nAn answer for the rest of the cell or the session covers these tools only: the %s.", strings.Join(tools, ", the "))
	}
	if q.Part < q.Parts {
		b.WriteString("\nDeclining also declines the calls of the questions still to come.")
	}
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// redactText hides secrets and personal data in text for the model.
func (h *sandboxHost) redactText(s string) string {
	if h.gate == nil {
		return s
	}
	return h.gate.Redact(s)
}

// startRun begins the audit record and span of one run_python, and
// returns the gate's run, which the cell's requests name; finish
// redacts what the model will read and records how the run ended: the
// cell's status as the sandbox reported it (a value, never read back
// from the text, which the code can print), or an error when the code
// never ran.
func (h *sandboxHost) startRun(ctx context.Context, code string) (context.Context, *gate.Run, func(*mcp.CallToolResult, sandbox.Status) *mcp.CallToolResult) {
	if h.gate == nil {
		return ctx, nil, func(r *mcp.CallToolResult, _ sandbox.Status) *mcp.CallToolResult { return r }
	}
	ctx, run := h.gate.StartRun(ctx, code)
	return ctx, run, func(res *mcp.CallToolResult, status sandbox.Status) *mcp.CallToolResult {
		size := 0
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				t.Text = h.gate.Redact(t.Text)
				size += len(t.Text)
			} else {
				h.redactContent(c)
			}
		}
		run.Finish(string(status), size)
		return res
	}
}
