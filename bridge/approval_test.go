package bridge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestApprovalSchemaAnswers: the approval's schema is one the go-sdk
// client takes (it checks elicitation schemas), and each answer a client
// gives becomes its scope: the enum's four values, an older client's
// boolean "session", nothing (once), a value codebridge does not know
// (declined), and a declined or dismissed request.
func TestApprovalSchemaAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var content map[string]any
	action := "accept"
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: action, Content: content}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ask := askClient(ss, nil)
	q := gate.Question{Calls: []gate.AskedCall{{Target: protocol.Target{Kind: "tool", Server: "s", Name: "rm"}, Arguments: `{}`, Rule: "r"}}}
	for _, c := range []struct {
		action  string
		content map[string]any
		want    gate.Answer
	}{
		{"accept", map[string]any{"allow": "once"}, gate.Answer{Allow: true, Scope: gate.Once}},
		{"accept", map[string]any{"allow": "cell"}, gate.Answer{Allow: true, Scope: gate.ForCell}},
		{"accept", map[string]any{"allow": "session"}, gate.Answer{Allow: true, Scope: gate.ForSession}},
		{"accept", map[string]any{"allow": "decline"}, gate.Answer{Reason: "declined"}},
		{"accept", map[string]any{"session": true}, gate.Answer{Allow: true, Scope: gate.ForSession}},
		{"accept", map[string]any{"session": false}, gate.Answer{Allow: true, Scope: gate.Once}},
		{"accept", nil, gate.Answer{Allow: true, Scope: gate.Once}},
		{"decline", nil, gate.Answer{Reason: "declined"}},
		{"cancel", nil, gate.Answer{Reason: "dismissed the request (cancel)"}},
	} {
		action, content = c.action, c.content
		got, err := ask(ctx, q)
		if err != nil || got != c.want {
			t.Errorf("%s %v: %+v, %v; want %+v", c.action, c.content, got, err, c.want)
		}
	}
	// A value the schema does not offer never allows (whether the SDK
	// refuses it or it reaches codebridge).
	got := approvalAnswer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": "always\x1b[2J"}})
	if got.Allow || !strings.Contains(got.Reason, `"always\u001b[2J"`) {
		t.Errorf("an unknown value: %+v", got)
	}
}

// TestQuestionText: one call reads as before, with the cell's code; a
// batch lists each call with its line, arguments and rule (once when all
// share it, else with each), and says which tools an answer for the cell
// or the session covers when they are several; a batch asked in parts
// says which question of how many this is, that an answer covers only
// what it lists, and, before the last, that declining declines the rest;
// names an upstream or the sandbox chose print escaped.
func TestQuestionText(t *testing.T) {
	call := func(name string, line int) gate.AskedCall {
		return gate.AskedCall{Target: protocol.Target{Kind: "tool", Server: "mem\x1b[31m", Name: name}, Arguments: `{"i":1}`, Rule: `rule tools.ask "*"`, Line: line}
	}
	one := question(gate.Question{Calls: []gate.AskedCall{call("rm", 2)}, Part: 1, Parts: 1, Total: 1, Code: "The cell's code, line 2 of 2:\n  1 | x = 1\n> 2 | await mcp_mem.rm(i=1)"})
	want := "codebridge: code in the sandbox wants to call the tool mem\\u001b[31m.rm with\n{\"i\":1}\n(rule tools.ask \"*\").\n" +
		"The cell's code, line 2 of 2:\n  1 | x = 1\n> 2 | await mcp_mem.rm(i=1)\nAllow it?"
	if one != want {
		t.Fatalf("one call:\n%s\nwant:\n%s", one, want)
	}
	batch := question(gate.Question{Calls: []gate.AskedCall{call("rm", 3), call("rm", 4)}, Part: 1, Parts: 1, Total: 2})
	want = "codebridge: code in the sandbox wants to make 2 calls at once:\n1. the tool mem\\u001b[31m.rm (line 3) with\n{\"i\":1}" +
		"\n2. the tool mem\\u001b[31m.rm (line 4) with\n{\"i\":1}\n(rule tools.ask \"*\" for each).\nAllow them all?"
	if batch != want {
		t.Fatalf("a batch:\n%s\nwant:\n%s", batch, want)
	}
	other := call("wipe\u202e", 0)
	other.Rule = "policy ask-destructive"
	mixed := question(gate.Question{Calls: []gate.AskedCall{call("rm", 3), other}, Part: 1, Parts: 1, Total: 2})
	if !strings.Contains(mixed, "(line 3) with\n{\"i\":1}\n(rule tools.ask \"*\")\n2. the tool mem\\u001b[31m.wipe\\u202e with\n{\"i\":1}\n(policy ask-destructive)\n"+
		"An answer for the rest of the cell or the session covers these tools only: the tool mem\\u001b[31m.rm, the tool mem\\u001b[31m.wipe\\u202e.\nAllow them all?") ||
		strings.Contains(mixed, "for each") {
		t.Fatalf("a batch of two rules:\n%s", mixed)
	}
	first := question(gate.Question{Calls: []gate.AskedCall{call("rm", 3), call("rm", 3)}, Part: 1, Parts: 2, Total: 3})
	want = "codebridge: code in the sandbox wants to make 3 calls at once, more than one question shows: they are asked in 2 questions, " +
		"and an answer covers only the calls its question lists. Question 1 of 2, 2 calls:\n1. the tool mem\\u001b[31m.rm (line 3) with\n{\"i\":1}" +
		"\n2. the tool mem\\u001b[31m.rm (line 3) with\n{\"i\":1}\n(rule tools.ask \"*\" for each).\n" +
		"Declining also declines the calls of the questions still to come.\nAllow these 2?"
	if first != want {
		t.Fatalf("the first part:\n%s\nwant:\n%s", first, want)
	}
	last := question(gate.Question{Calls: []gate.AskedCall{other}, Part: 2, Parts: 2, Total: 3})
	want = "codebridge: code in the sandbox wants to make 3 calls at once, more than one question shows: they are asked in 2 questions, " +
		"and an answer covers only the calls its question lists. Question 2 of 2, 1 call:\n1. the tool mem\\u001b[31m.wipe\\u202e with\n{\"i\":1}" +
		"\n(policy ask-destructive)\nAllow it?"
	if last != want {
		t.Fatalf("the last part:\n%s\nwant:\n%s", last, want)
	}
	if strings.ContainsAny(one+batch+mixed+first+last, "\x1b\u202e") {
		t.Fatal("a character that does not print came through")
	}
}
