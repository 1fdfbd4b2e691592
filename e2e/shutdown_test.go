package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPDeleteThenSIGTERMLeavesNoContainer: a client ends its session
// (DELETE) and the bridge gets SIGTERM at once, while that session's
// sandbox is still being removed: the bridge waits for the removal, so no
// container with its labels is left on the engine.
func TestHTTPDeleteThenSIGTERMLeavesNoContainer(t *testing.T) {
	needEnv(t)
	b := startHTTP(t, home(t, nil), nil, "--warm", "0")
	pid := b.cmd.Process.Pid
	c := b.connect(t, "leaving")
	c.ok("print(1)")
	if n := len(containersOf(t, pid)); n != 1 {
		t.Fatalf("%d containers for one session", n)
	}
	if err := c.cs.Close(); err != nil { // DELETE: the bridge starts removing the sandbox
		t.Fatalf("ending the session: %v", err)
	}
	b.stop(syscall.SIGTERM)
	if left := containersOf(t, pid); len(left) != 0 {
		t.Fatalf("%d containers left after a DELETE and SIGTERM: %+v", len(left), left)
	}
}

// TestWorkspaceReadOfStoppedSandbox: resources/read of a workspace file
// while the sandbox's runtime does not answer (its container is frozen)
// ends with an error that says so, instead of waiting forever; once the
// sandbox runs again, the file is read.
func TestWorkspaceReadOfStoppedSandbox(t *testing.T) {
	needEnv(t)
	engine := engineCLI(t)
	b := startBridge(t, home(t, nil))
	b.ok("open('/workspace/kept.txt', 'w').write('still here')")
	ctrs := containersOf(t, b.pid)
	if len(ctrs) != 1 {
		t.Fatalf("%d containers for one session", len(ctrs))
	}
	id := ctrs[0].ID
	if out, err := exec.Command(engine, "pause", id).CombinedOutput(); err != nil {
		t.Fatalf("%s pause: %v: %s", engine, err, out)
	}
	t.Cleanup(func() { _ = exec.Command(engine, "unpause", id).Run() })
	// A failure guard only: the bridge's own deadline must end the read.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "codebridge://workspace/kept.txt"})
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Fatalf("resources/read of a frozen sandbox: %v (guard: %v)", err, ctx.Err())
	}
	if out, err := exec.Command(engine, "unpause", id).CombinedOutput(); err != nil {
		t.Fatalf("%s unpause: %v: %s", engine, err, out)
	}
	if got := readResource(t, b, "codebridge://workspace/kept.txt"); got.Text != "still here" {
		t.Fatalf("after the sandbox runs again: %+v", got)
	}
}

// engineCLI is the command line program of the engine the tests use.
func engineCLI(t *testing.T) string {
	t.Helper()
	engine := os.Getenv("CODEBRIDGE_ENGINE")
	if engine == "" || engine == "auto" {
		engine = "podman"
	}
	needTool(t, engine, engine)
	return engine
}
