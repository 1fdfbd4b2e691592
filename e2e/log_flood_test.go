package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// logBudget is the host's budget for a container's runtime log frames
// (sandbox's containerLogBudget, the same as its stderr's).
const logBudget = 64 << 10

// logFlood is code that sends 20,000 of the runtime's own log frames, as
// code in the sandbox can, by the route named: "channel" through the
// runtime's channel (the direct socket, or the attach stream's stdout with
// --channel attach), "stdout" straight to the attach stream's stdout that
// the runtime keeps open, unused, on the direct channel (code finds it in
// /proc/self/fd; the runtime's channel knows it). The messages hold lines,
// quotes and characters the log escapes to several bytes each.
const logFlood = `import json, os
from mcp import _channel
ch = _channel.get()
msg = ("flood\x01\"\u202e" * 40) + "\n" + ("y" * 200) + "\n\n"
route = %q
if route == "stdout":
    fd = ch._held_fd
    assert fd >= 0, "the frames do not travel over the direct channel"
    assert os.readlink("/proc/self/fd/%%d" %% fd).startswith(("pipe:", "socket:")), os.readlink("/proc/self/fd/%%d" %% fd)
    data = (json.dumps({"t": "log", "level": "error", "msg": msg}) + "\n").encode() * 100
    for _ in range(200):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
else:
    for _ in range(20000):
        ch.send({"t": "log", "level": "error", "msg": msg})
print("flooded")`

// TestLogFloodFromTheSandbox: code that sends 20,000 log frames (each
// some 500 bytes of three lines) by each route the sandbox has grows the
// bridge's log by at most the budget, with a line that says how much was
// dropped, and the session goes on. Before the fix each frame was logged:
// megabytes of the bridge's log from one cell.
func TestLogFloodFromTheSandbox(t *testing.T) {
	needEnv(t)
	cases := []struct {
		name, route string
		env         []string
		says        string // the line that accounts for the flood
	}{
		{"direct socket", "channel", nil, "bytes dropped"},
		{"attach stream", "channel", []string{"CODEBRIDGE_CHANNEL=attach"}, "bytes dropped"},
		{"stdout beside the direct socket", "stdout", nil, "the sandbox wrote to its stdout, which the direct channel does not use; ignored"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env == nil {
				localEngineOnly(t, "the direct channel is a Unix socket mounted from the bridge's machine")
			}
			b := startBridge(t, home(t, nil), c.env...)
			mustContain(t, b.ok("print('warm')"), "warm")
			before := len(b.stderr.String())
			mustContain(t, b.ok(fmt.Sprintf(logFlood, c.route)), "flooded")
			mustContain(t, b.ok("print('goes on')"), "goes on")
			b.close() // the container ends: the count of what was dropped is logged
			log := b.stderr.String()
			// The bridge's own lines of two cells and its exit, at debug,
			// come on top of the budget.
			grown := len(log) - before
			t.Logf("the bridge's log grew by %d bytes", grown)
			if grown > logBudget+16<<10 {
				t.Fatalf("the bridge's log grew by %d bytes from one cell's log frames (the budget is %d):\n%s",
					grown, logBudget, log[max(0, len(log)-2000):])
			}
			mustContain(t, log[before:], c.says)
			if c.route == "stdout" && strings.Contains(log[before:], "flood") {
				t.Fatalf("a frame written to the unused stdout was logged:\n%s", log[before:])
			}
		})
	}
}
