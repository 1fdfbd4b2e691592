package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
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
	seen := connectEcho(t, b, "<email_1>")

	sample := &mcp.CreateMessageParams{MaxTokens: 50, SystemPrompt: "You may use the key " + tellToken,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarise the account of " + tellEmail}}}}
	elicit := &mcp.ElicitParams{Message: "Is " + tellEmail + " yours?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string", "description": "such as " + tellEmail}}}}
	for server, want := range map[string]string{"tell": tellEmail, "keeper": "<email_1>"} {
		res, err := b.reg.down.CreateMessage(context.Background(), server, sample)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content.(*mcp.TextContent).Text; got != "You asked: Summarise the account of "+want {
			t.Fatalf("%s got the model's reply %q; want it with %s", server, got, want)
		}
		ans, err := b.reg.down.Elicit(context.Background(), server, elicit)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Content["who"] != want {
			t.Fatalf("%s got the user's answer %v; want %s", server, ans.Content, want)
		}
	}
	mustHide(t, "what the client was shown", []byte(seen.text()))
	if sample.Messages[0].Content.(*mcp.TextContent).Text != "Summarise the account of "+tellEmail {
		t.Fatal("the upstream's own request was changed in place")
	}
}

// TestSharedServerSamplingUsesCallersTokens: over HTTP, a shared server's
// sampling request for the one session with a call in flight to it is
// redacted with that session's tokens (the ones its results carry), and
// the answer's token is put back from them; the other session's client
// is asked nothing.
func TestSharedServerSamplingUsesCallersTokens(t *testing.T) {
	b := New(sandbox.NewManager(sandbox.EngineOptions{}), sandbox.Config{}, upstream.NewPool(nil, upstream.Options{}),
		Options{Gate: tellingGate(t, nil), Mode: ManyUsers})
	defer b.Close()
	seenA, seenB := connectEcho(t, b, "<email_2>"), connectEcho(t, b, "<email_2>")
	var sessions []*mcp.ServerSession
	for ss := range b.Server().Sessions() {
		sessions = append(sessions, ss)
	}
	if len(sessions) != 2 {
		t.Fatalf("%d sessions", len(sessions))
	}
	// Each session's sandbox session gave its own tokens: in the caller's,
	// the address is <email_2>; in the other's (and a fresh one's), <email_1>.
	for i, first := range []string{"zed.oak@example.com", tellEmail} {
		s, err := b.sessionOf(sessions[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		s.host.gate.Redact(first + " " + tellEmail)
	}
	caller := sessions[0]
	defer b.reg.busy.begin("shared", caller)()
	res, err := b.reg.down.CreateMessage(context.Background(), "shared", &mcp.CreateMessageParams{MaxTokens: 5,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "About " + tellEmail}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content.(*mcp.TextContent).Text; got != "You asked: About "+tellEmail {
		t.Fatalf("the upstream got %q", got)
	}
	shownA, shownB := seenA.text(), seenB.text()
	if shownA+shownB != "About <email_2>" {
		t.Fatalf("the two clients were shown %q and %q; want the caller's token, shown once", shownA, shownB)
	}
}

// shown keeps what a client's model and user were shown.
type shown struct {
	mu   sync.Mutex
	seen []string
}

func (s *shown) add(text ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, text...)
}

func (s *shown) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.seen, "\n")
}

// connectEcho connects to b's server an in-memory client (on the protocol
// that lets servers ask in the middle of a call) whose model echoes the
// prompt and whose user answers answer, and returns what it was shown.
func connectEcho(t *testing.T, b *Bridge, answer string) *shown {
	t.Helper()
	seen := &shown{}
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			seen.add(req.Params.SystemPrompt + text)
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "You asked: " + text}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			schema, _ := json.Marshal(req.Params.RequestedSchema)
			seen.add(req.Params.Message, string(schema))
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": answer}}, nil
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
	t.Cleanup(func() { _ = cs.Close() })
	return seen
}
