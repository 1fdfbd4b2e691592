package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClientLogIsRedacted: an upstream's log message that carries a
// configured secret, or an email address with --redact email, reaches the
// client with the secret's name and a token instead.
func TestClientLogIsRedacted(t *testing.T) {
	red, err := gate.NewRedactor([]string{"email"}, nil, []gate.Secret{{Name: "up.env.TOKEN", Value: "s3cr3t-value"}})
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool(nil, upstream.Options{})
	b := New(sandbox.NewManager(sandbox.EngineOptions{}), sandbox.Config{}, pool, Options{Gate: gate.New(gate.Config{Redactor: red})})
	defer b.Close()

	got := make(chan *mcp.LoggingMessageParams, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { got <- req.Params },
	})
	ct, st := mcp.NewInMemoryTransports()
	srv := b.Server()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	b.reg.down.Log(context.Background(), "up", &mcp.LoggingMessageParams{Level: "info",
		Data: map[string]any{"message": "login with s3cr3t-value for ann@example.com"}})
	p := <-got
	raw, _ := json.Marshal(p.Data)
	var data struct{ Message string }
	_ = json.Unmarshal(raw, &data)
	text := data.Message
	if strings.Contains(text, "s3cr3t-value") || strings.Contains(text, "ann@example.com") {
		t.Fatalf("the client's log shows %s", text)
	}
	if !strings.Contains(text, "<secret:up.env.TOKEN>") || !strings.Contains(text, "<email_1>") {
		t.Fatalf("the client's log shows %s, want the secret's name and a token", text)
	}
	_ = ss
}
