package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/codebridge/codebridge/internal/protocol"
)

// countingEngine is procEngine that tells each start and removal.
type countingEngine struct {
	procEngine
	started chan *proc
	mu      sync.Mutex
	removed int
}

func (e *countingEngine) Start(ctx context.Context, spec ContainerSpec) (Container, error) {
	c, err := e.procEngine.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	p := c.(*proc)
	e.started <- p
	return &countedProc{p, e}, nil
}

type countedProc struct {
	*proc
	e *countingEngine
}

func (c *countedProc) Remove(ctx context.Context) error {
	c.e.mu.Lock()
	c.e.removed++
	c.e.mu.Unlock()
	return c.proc.Remove(ctx)
}

func warmPool(t *testing.T, n int) (*WarmPool, *countingEngine, chan *live) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	eng := &countingEngine{started: make(chan *proc, 16)}
	m := &Manager{log: slog.Default(), connect: func(context.Context) (Engine, error) { return eng, nil }}
	ready := make(chan *live, 16)
	return m.newWarmPool(Config{}, n, []protocol.ServerInfo{{Name: "up"}}, ready), eng, ready
}

// TestWarmPoolHandsOutAReadySandbox: a session made by the pool runs its
// first cell in the sandbox the pool started (greeted with the pool's
// servers, given the session's start files), the pool starts another,
// and Close removes what is left in it.
func TestWarmPoolHandsOutAReadySandbox(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "codebridge-pool-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p, eng, ready := warmPool(t, 1)
	first := <-eng.started
	<-ready
	s := p.NewSession(&testHost{files: []protocol.File{{Path: dir + "/f.txt", Data: []byte("mine")}}})
	res := run(t, s, Request{Code: fmt.Sprintf("import os\nos.getpid(), open(%q).read(), runtime.list_servers_sync()", dir+"/f.txt")})
	want := fmt.Sprintf("(%d, 'mine', ('up',))", first.cmd.Process.Pid)
	if res.Value != want {
		t.Fatalf("the first cell ran as %s, want %s (the pooled sandbox)", res.Value, want)
	}
	if hits, misses := p.Taken(); hits != 1 || misses != 0 {
		t.Fatalf("hits %d misses %d", hits, misses)
	}
	<-ready // the refill
	_ = s.Close()
	p.Close()
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if eng.removed != 2 {
		t.Fatalf("%d of 2 sandboxes were removed", eng.removed)
	}
}

// TestWarmPoolSkipsADeadSandbox: a pooled sandbox that died while it
// waited is thrown away, and the session starts its own.
func TestWarmPoolSkipsADeadSandbox(t *testing.T) {
	p, eng, ready := warmPool(t, 1)
	defer p.Close()
	first := <-eng.started
	c := <-ready
	_ = first.cmd.Process.Kill()
	for range c.frames { // until the runtime's stream ended
	}
	s := p.NewSession(nil)
	defer s.Close()
	res := run(t, s, Request{Code: "import os\nos.getpid()"})
	if res.Value == fmt.Sprint(first.cmd.Process.Pid) {
		t.Fatal("the cell ran in the dead sandbox")
	}
	if hits, _ := p.Taken(); hits != 0 {
		t.Fatalf("a dead sandbox counted as a hit")
	}
}
