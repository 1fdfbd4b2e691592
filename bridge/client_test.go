package bridge

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClientsMadeBeforeTheBridge: the log handler and the pool's
// Downstream are made from the clients before the bridge exists, send
// nothing and answer with ErrNoClient while no client is connected, and
// reach the client of the bridge made with those clients once it
// connects, through the redaction of the bridge's session.
func TestClientsMadeBeforeTheBridge(t *testing.T) {
	opts := Options{Gate: tellingGate(t, nil), Log: slog.New(slog.DiscardHandler)}
	c := NewClients(opts)
	log := slog.New(NewClientLog(c))
	down := c.Downstream()
	ctx := context.Background()
	ask := &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}

	log.Warn("before the bridge") // no client: nothing to send, nothing breaks
	if _, err := down.CreateMessage(ctx, "up", ask); !errors.Is(err, upstream.ErrNoClient) {
		t.Fatalf("sampling before the bridge: %v; want ErrNoClient", err)
	}
	opts.Clients = c
	b := New(sandbox.NewManager(sandbox.EngineOptions{}), sandbox.Config{}, upstream.NewPool(nil, upstream.Options{Downstream: down}), opts)
	defer b.Close()
	if _, err := down.CreateMessage(ctx, "up", ask); !errors.Is(err, upstream.ErrNoClient) {
		t.Fatalf("sampling with no client connected: %v; want ErrNoClient", err)
	}

	heard := make(chan *mcp.LoggingMessageParams, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "answered"}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { heard <- r.Params },
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := b.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}

	log.Warn("after the bridge", "err", errors.New("no mail for "+tellEmail))
	p := <-heard
	data := p.Data.(map[string]any)
	if p.Logger != "codebridge" || data["message"] != "after the bridge" || !strings.Contains(data["err"].(string), "no mail for <email_") {
		t.Fatalf("the client heard %+v", p)
	}
	res, err := down.CreateMessage(ctx, "up", ask)
	if err != nil || res.Content.(*mcp.TextContent).Text != "answered" {
		t.Fatalf("sampling once the client connected: %+v, %v", res, err)
	}
}

// TestNewRefusesClientsOfOtherOptions: clients made for a bridge with one
// sandbox must not serve a bridge with one per session (whose log
// messages tied to no call must reach no one).
func TestNewRefusesClientsOfOtherOptions(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New took clients made for a single session in a bridge of one per session")
		}
	}()
	New(sandbox.NewManager(sandbox.EngineOptions{}), sandbox.Config{}, upstream.NewPool(nil, upstream.Options{}),
		Options{PerSession: true, Clients: NewClients(Options{})})
}
