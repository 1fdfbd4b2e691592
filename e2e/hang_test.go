package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopSelf is a cell that leaves large answers in flight and then stops
// the runtime (SIGSTOP), so that nothing reads the answers any more: they
// fill the container's stdin.
const stopSelf = `
import asyncio, os, signal
calls = [asyncio.ensure_future(mcp_stub.big(size=4_000_000)) for _ in range(16)]
await asyncio.sleep(0)  # each call sends its request
os.kill(os.getpid(), signal.SIGSTOP)
`

// TestStoppedRuntimeCannotHangTheBridge: a runtime that stops reading its
// channel while answers are in flight ends in a timeout and a fresh
// sandbox, and the next call works and has its own time limit.
func TestStoppedRuntimeCannotHangTheBridge(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": stub()}}))
	b.ok("x = 1")
	r := b.run(stopSelf, "timeout", 3)
	mustContain(t, r.text, "[status: timeout", "the sandbox was restarted")
	mustContain(t, b.ok("print('alive')"), "alive")
	r = b.run(stopSelf, "timeout", 3) // the fresh sandbox is bounded the same way
	mustContain(t, r.text, "[status: timeout", "the sandbox was restarted")
	mustContain(t, b.ok("print(1 + 1)"), "2")
}

// TestShutdownMidCell: stdin EOF or SIGTERM while a cell runs (one stuck
// in an upstream call, one whose runtime stopped) ends the bridge by
// itself, without the client's SIGKILL, and leaves no container.
func TestShutdownMidCell(t *testing.T) {
	needEnv(t)
	for _, tc := range []struct {
		name, code string
		end        func(b *bridge)
	}{
		{"EOF during an upstream call", "await mcp_stub.sleep(seconds=600)", func(b *bridge) { b.close() }},
		{"SIGTERM during an upstream call", "await mcp_stub.sleep(seconds=600)", func(b *bridge) { b.kill(syscall.SIGTERM) }},
		{"EOF with the runtime stopped", stopSelf, func(b *bridge) { b.close() }},
		{"SIGTERM with the runtime stopped", stopSelf, func(b *bridge) { b.kill(syscall.SIGTERM) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := filepath.Join(t.TempDir(), "events")
			s := stub()
			s.Env = map[string]string{"STUB_EVENTS": events}
			b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": s}}))
			b.ok("x = 1")
			go func() {
				_, _ = b.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python",
					Arguments: map[string]any{"code": "await mcp_stub.sleep(seconds=0)\n" + tc.code, "timeout": 120}})
			}()
			waitForLine(t, events, "sleep-started")
			tc.end(b)
			st := b.cmd.ProcessState
			if st == nil {
				t.Fatal("the bridge did not exit")
			}
			if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("the bridge did not end by itself: it was killed by %v\nstderr:\n%s", ws.Signal(), b.stderr)
			}
			if left := containersOf(t, b.pid); len(left) > 0 {
				t.Fatalf("containers left behind: %+v", left)
			}
		})
	}
}

// TestRequestsInFlightAreBounded: a cell that gathers far more calls than
// the bound never has more than sandbox.MaxInFlight (64) of them at the
// upstream at once; the rest wait, and the session survives.
func TestRequestsInFlightAreBounded(t *testing.T) {
	needEnv(t)
	events := filepath.Join(t.TempDir(), "events")
	s := stub()
	s.Env = map[string]string{"STUB_EVENTS": events}
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": s}}))
	b.ok("kept = 'yes'")
	r := b.run("import asyncio\nawait asyncio.gather(*(mcp_stub.sleep(seconds=600) for _ in range(300)))", "timeout", 5)
	mustContain(t, r.text, "[status: timeout")
	data, _ := os.ReadFile(events)
	started := strings.Count(string(data), "sleep-started")
	if started == 0 || started > 64 {
		t.Fatalf("%d calls reached the upstream at once; want between 1 and 64", started)
	}
	mustContain(t, b.ok("print(kept)"), "yes")
}
