package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitForLine polls a file an upstream appends events to until it holds
// want. The event happens in another process, so there is nothing to wait
// on but the file; the deadline only bounds a failing test.
func waitForLine(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never got %q; it has:\n%s", path, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Cancelling a run_python call interrupts the code and cancels the
// upstream calls it has in flight; the sandbox keeps its state.
func TestCancellation(t *testing.T) {
	needEnv(t)
	s, events := eventStub(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": s}}))
	b.ok("kept = 'yes'")

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
			"code": "await mcp_stub.sleep(seconds=600)", "timeout": 120,
		}})
		errc <- err
	}()
	waitForLine(t, events, "sleep-started")
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	// The upstream hears of it: the go-sdk sends notifications/cancelled.
	waitForLine(t, events, "sleep-cancelled")
	mustContain(t, b.ok("print(kept)"), "yes")
}
