package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSamplingAndElicitationRedacted: an upstream's sampling request and
// elicitation, holding an email address and the upstream's env value,
// reach the client with a token and the secret's name; the upstream gets
// the client's answer with the real address for the token, unless it
// keeps tokens.
func TestSamplingAndElicitationRedacted(t *testing.T) {
	b := New(sandbox.NewManager(sandbox.EngineOptions{}), sandbox.Config{}, upstream.NewPool(nil, upstream.Options{}),
		Options{Gate: tellingGate(t, map[string]bool{"keeper": true})})
	defer b.Close()
	var seen []string // what the client's model and user were shown
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			seen = append(seen, req.Params.SystemPrompt, text)
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "You asked: " + text}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			schema, _ := json.Marshal(req.Params.RequestedSchema)
			seen = append(seen, req.Params.Message, string(schema))
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "<email_1>"}}, nil
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := b.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	sample := &mcp.CreateMessageParams{MaxTokens: 50, SystemPrompt: "You may use the key " + tellToken,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarise the account of " + tellEmail}}}}
	elicit := &mcp.ElicitParams{Message: "Is " + tellEmail + " yours?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string", "description": "such as " + tellEmail}}}}
	for server, want := range map[string]string{"tell": tellEmail, "keeper": "<email_1>"} {
		res, err := b.down.CreateMessage(ctx, server, sample)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content.(*mcp.TextContent).Text; got != "You asked: Summarise the account of "+want {
			t.Fatalf("%s got the model's reply %q; want it with %s", server, got, want)
		}
		ans, err := b.down.Elicit(ctx, server, elicit)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Content["who"] != want {
			t.Fatalf("%s got the user's answer %v; want %s", server, ans.Content, want)
		}
	}
	mustHide(t, "what the client was shown", []byte(strings.Join(seen, "\n")))
	if sample.Messages[0].Content.(*mcp.TextContent).Text != "Summarise the account of "+tellEmail {
		t.Fatal("the upstream's own request was changed in place")
	}
}
