package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPDeleteThenSIGTERMLeavesNoContainer: a client ends its session
// (DELETE) and the bridge gets SIGTERM while that session's sandbox is
// still being removed: the bridge waits for the removal, so no container
// with its labels is left on the engine. The bridge reaches the engine
// through a proxy that holds the removal of that container until the
// bridge says it waits for it, or exits without waiting.
func TestHTTPDeleteThenSIGTERMLeavesNoContainer(t *testing.T) {
	needEnv(t)
	engine := engineCLI(t)
	p := newEngineProxy(t)
	b := startHTTP(t, home(t, nil), []string{"DOCKER_HOST=unix://" + p.path, "CODEBRIDGE_ENGINE=auto"}, "--warm", "0")
	pid := b.cmd.Process.Pid
	c := b.connect(t, "leaving")
	c.ok("print(1)")
	ctrs := containersOf(t, pid)
	if len(ctrs) != 1 {
		t.Fatalf("%d containers for one session", len(ctrs))
	}
	id := ctrs[0].ID
	t.Cleanup(func() { _ = exec.Command(engine, "rm", "-f", id).Run() }) // when the test fails
	held := p.hold(id)
	if err := c.cs.Close(); err != nil { // DELETE: the bridge starts removing the sandbox
		t.Fatalf("ending the session: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure guard
	defer cancel()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the bridge never removed the ended session's container")
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	for waiting := false; !waiting; {
		select {
		case <-b.exited:
			left := containersOf(t, pid)
			t.Fatalf("the bridge exited while the ended session's container was still being removed: %d containers left", len(left))
		case <-ctx.Done():
			t.Fatal("the bridge neither exited nor waited for the removal")
		case <-time.After(20 * time.Millisecond): // polling the log another process writes
			waiting = strings.Contains(b.stderr.String(), "waiting for the sandboxes of sessions that ended just before")
		}
	}
	p.release()
	b.stop(syscall.SIGTERM)
	if left := containersOf(t, pid); len(left) != 0 {
		t.Fatalf("%d containers left after a DELETE and SIGTERM: %+v", len(left), left)
	}
}

// engineProxy passes the bridge's connections to the engine's socket, and
// can hold the removal of one container.
type engineProxy struct {
	path string
	mu   sync.Mutex
	id   string        // the container whose removal is held
	held chan struct{} // closed when that removal arrived
	free chan struct{} // closed to let it through
}

func newEngineProxy(t *testing.T) *engineProxy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng, err := sandbox.Connect(ctx, engineOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Kept open for the test: where no engine service runs (rootless
	// Podman), the connection started a private one, which the proxy
	// forwards to and which ends with the connection.
	t.Cleanup(func() { eng.Close() })
	name := eng.Name()
	_, target, ok := strings.Cut(name, " at unix://")
	if !ok {
		why := fmt.Sprintf("the engine %s is not reached over a local socket, which the proxy needs", name)
		if os.Getenv("CODEBRIDGE_E2E") == "1" {
			t.Fatal(why + ", and CODEBRIDGE_E2E=1 requires this test")
		}
		t.Skip(why)
	}
	dir, err := os.MkdirTemp("", "cbproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &engineProxy{path: filepath.Join(dir, "engine.sock"), free: make(chan struct{})}
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, target)
		}
	}()
	return p
}

// hold makes the proxy hold the removal of container id; the channel is
// closed when it arrives.
func (p *engineProxy) hold(id string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.id, p.held = id, make(chan struct{})
	return p.held
}

func (p *engineProxy) release() { close(p.free) }

func (p *engineProxy) serve(c net.Conn, target string) {
	defer c.Close()
	e, err := net.Dial("unix", target)
	if err != nil {
		return
	}
	defer e.Close()
	go func() { _, _ = io.Copy(c, e); c.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 && !p.pass(buf[:n]) {
			return // the bridge went away while its removal was held
		}
		if n > 0 {
			if _, werr := e.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pass waits, for the held removal, until it is let through; false: the
// connection is to be dropped instead.
func (p *engineProxy) pass(chunk []byte) bool {
	p.mu.Lock()
	id, held := p.id, p.held
	p.mu.Unlock()
	if id == "" || !bytes.HasPrefix(chunk, []byte("DELETE ")) || !bytes.Contains(chunk, []byte("/containers/"+id)) {
		return true
	}
	select {
	case <-held:
	default:
		close(held)
	}
	<-p.free
	return true
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
		if os.Geteuid() != 0 {
			unprivilegedSkip(t, fmt.Sprintf("%s pause: %v: %s", engine, err, out)) // rootless engines on cgroup v1 cannot freeze
		}
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
	localEngineOnly(t, "drives the engine's own command-line tool (podman, docker) or its local socket")
	engine := os.Getenv("CODEBRIDGE_ENGINE")
	if engine == "" || engine == "auto" {
		engine = "podman"
	}
	needTool(t, engine, engine)
	return engine
}
