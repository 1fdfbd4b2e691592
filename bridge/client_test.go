package bridge

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
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
	if err = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
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

// TestBridgeHasTheModeOfItsClients: the mode is set once, when the
// clients are made: a bridge made with clients for many users gives each
// session a sandbox session of its own, and its warnings tied to no call
// reach none of them, whatever its own Options say.
func TestBridgeHasTheModeOfItsClients(t *testing.T) {
	c := NewClients(Options{Mode: ManyUsers})
	b := New(sandbox.NewManager(sandbox.EngineOptions{}), sandbox.Config{}, upstream.NewPool(nil, upstream.Options{}),
		Options{Mode: OneUser, Clients: c})
	defer b.Close()
	heard := make(chan *mcp.LoggingMessageParams, 10)
	ctx := context.Background()
	var sessions []*mcp.ServerSession
	for range 2 {
		client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { heard <- r.Params },
		})
		st, ct := mcp.NewInMemoryTransports()
		ss, err := b.Server().Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, ss)
	}
	a, err := b.sessionOf(sessions[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.sessionOf(sessions[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if a == other || a == b.single {
		t.Fatal("the sessions share a sandbox session: the bridge serves one user")
	}
	slog.New(NewClientLog(c)).Warn("tied to no call")
	for _, ss := range sessions { // each hears a marker after what it heard before
		if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "marker"}); err != nil {
			t.Fatal(err)
		}
	}
	for range sessions {
		if p := <-heard; p.Data != "marker" {
			t.Fatalf("a session heard %+v, a warning tied to no call", p)
		}
	}
}
