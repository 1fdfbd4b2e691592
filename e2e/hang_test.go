package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
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
// itself and leaves no container. The cell may run for an hour and
// nothing else ends the bridge, so a bridge that waits for the cell hangs
// the test (its time limit fails it) instead of passing. The client is
// raw JSON-RPC over pipes: the go-sdk client would not close stdin while
// its call is in flight.
func TestShutdownMidCell(t *testing.T) {
	needEnv(t)
	for _, tc := range []struct {
		name, code string
		end        func(cmd *exec.Cmd, stdin io.Closer)
	}{
		{"EOF during an upstream call", "await mcp_stub.sleep(seconds=600)", closeStdin},
		{"SIGTERM during an upstream call", "await mcp_stub.sleep(seconds=600)", sigterm},
		{"EOF with the runtime stopped", stopSelf, closeStdin},
		{"SIGTERM with the runtime stopped", stopSelf, sigterm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, events := eventStub(t)
			cmd := exec.Command(binary, "serve")
			cmd.Env = append(testEnv(home(t, map[string]map[string]server{"s.json": {"stub": s}})),
				"CODEBRIDGE_LOG_LEVEL=debug", "CODEBRIDGE_MAX_TIMEOUT=3600")
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = io.Discard
			if err = cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for _, msg := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_python","arguments":{"code":%q,"timeout":3600}}}`,
					"await mcp_stub.sleep(seconds=0)\n"+tc.code),
			} {
				if _, err = io.WriteString(stdin, msg+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			waitForLine(t, events, "sleep-started")
			tc.end(cmd, stdin)
			err = cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("the bridge was killed by %v: %v\nstderr:\n%s", ws.Signal(), err, stderr)
			}
			if left := containersOf(t, cmd.Process.Pid); len(left) > 0 {
				t.Fatalf("containers left behind: %+v\nstderr:\n%s", left, stderr)
			}
		})
	}
}

func closeStdin(_ *exec.Cmd, stdin io.Closer) { _ = stdin.Close() }

func sigterm(cmd *exec.Cmd, _ io.Closer) { _ = cmd.Process.Signal(syscall.SIGTERM) }

// TestRequestsInFlightAreBounded: a cell that gathers far more calls than
// the bound never has more than sandbox.MaxInFlight (64) of them at the
// upstream at once; the rest wait, and the session survives.
func TestRequestsInFlightAreBounded(t *testing.T) {
	needEnv(t)
	s, events := eventStub(t)
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
