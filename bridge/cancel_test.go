package bridge

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder is a transport that records what the server writes, before
// the client can read it.
type recorder struct {
	mcp.Transport
	mu    sync.Mutex
	wrote bytes.Buffer
}

func (r *recorder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	return recordingConn{c, r}, err
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wrote.String()
}

type recordingConn struct {
	mcp.Connection
	r *recorder
}

func (c recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	b, _ := jsonrpc.EncodeMessage(msg)
	c.r.mu.Lock()
	c.r.wrote.Write(append(b, '\n'))
	c.r.mu.Unlock()
	return c.Connection.Write(ctx, msg)
}

// TestCancelledRequestGetsNoResponse: after the client cancels a call, the
// server writes no response for it; other calls are still answered.
func TestCancelledRequestGetsNoResponse(t *testing.T) {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	started, returned := make(chan struct{}), make(chan struct{})
	server.AddTool(&mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			defer close(returned)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late answer"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "ok", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	wire := &recorder{Transport: st}
	ss, err := server.Connect(ctx, DropCancelledResponses(wire), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "wait"})
		done <- err
	}()
	<-started
	cancel() // the go-sdk client sends notifications/cancelled
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	<-returned
	// A later call's answer comes after whatever the server wrote for the
	// cancelled one.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ok"}); err != nil {
		t.Fatal(err)
	}
	if got := wire.String(); strings.Contains(got, "late answer") || !strings.Contains(got, "fine") {
		t.Fatalf("the server's wire:\n%s", got)
	}
}
