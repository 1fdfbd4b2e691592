package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// procEngine runs the sandbox command as a local process: the real runtime
// and the real session, without a container engine.
type procEngine struct{}

func (procEngine) Name() string                                   { return "local process" }
func (procEngine) RemoveStale(context.Context) (int, error)       { return 0, nil }
func (procEngine) HasImage(context.Context, string) (bool, error) { return true, nil }
func (procEngine) List(context.Context) ([]ContainerInfo, error)  { return nil, nil }
func (procEngine) Close() error                                   { return nil }

func (e procEngine) Start(ctx context.Context, spec ContainerSpec) (Container, error) {
	cmd := exec.Command(spec.Cmd[0], spec.Cmd[1:]...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, stdout: stdout, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	done   chan struct{}
}

func (p *proc) ID() string            { return fmt.Sprint(p.cmd.Process.Pid) }
func (p *proc) Stdin() io.WriteCloser { return p.stdin }
func (p *proc) Stdout() io.Reader     { return p.stdout }
func (p *proc) Exited(_ context.Context, wait time.Duration) string {
	select {
	case <-p.done:
		return p.cmd.ProcessState.String()
	case <-time.After(wait):
		return "still running"
	}
}
func (p *proc) Remove(context.Context) error {
	_ = p.cmd.Process.Kill()
	<-p.done
	return nil
}

// localSession starts a session whose runtime is a local python3, with the
// spill files going to a temporary directory.
func localSession(t *testing.T, cfg Config) (*Session, string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	cfg.Engine = func(context.Context) (Engine, error) { return procEngine{}, nil }
	s := NewSession(cfg)
	t.Cleanup(func() { _ = s.Close() })
	dir := filepath.Join(t.TempDir(), "output")
	run(t, s, Request{Code: fmt.Sprintf("import mcp._output as o\no.SPILL_DIR = %q", dir)})
	return s, dir
}

func run(t *testing.T, s *Session, req Request) *Result {
	t.Helper()
	req.Timeout = time.Minute
	res, err := s.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusOK {
		t.Fatalf("status %s: %s%s", res.Status, res.Traceback, res.Stderr.Text)
	}
	return res
}

func TestSessionSpillsOutputOverTheBudget(t *testing.T) {
	s, dir := localSession(t, Config{OutputLimit: 100})
	var mu sync.Mutex
	var seen strings.Builder
	res := run(t, s, Request{
		Code: "import sys\nprint('x' * 500)\nprint('short', file=sys.stderr)",
		OnOutput: func(stream, text string) {
			mu.Lock()
			defer mu.Unlock()
			if stream == "stdout" {
				seen.WriteString(text)
			}
		},
	})
	full := strings.Repeat("x", 500) + "\n"
	path := filepath.Join(dir, "cell-2-stdout.txt")
	if res.Stdout.Path != path || res.Stdout.Omitted != 401 || res.Stdout.Total != 501 {
		t.Fatalf("stdout %+v", res.Stdout)
	}
	if !strings.Contains(res.Stdout.Text, "[... 401 characters omitted; the full output is in "+path+" ...]") {
		t.Fatalf("no marker naming the file:\n%s", res.Stdout.Text)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != full {
		t.Fatalf("the file holds %d bytes (%v), want the whole output", len(b), err)
	}
	if res.Stderr.Text != "short\n" || res.Stderr.Path != "" {
		t.Fatalf("stderr %+v", res.Stderr)
	}
	if seen.String() != full {
		t.Fatalf("OnOutput saw %d characters, want %d", len(seen.String()), len(full))
	}
}

func TestSessionSaysWhenSpillingFails(t *testing.T) {
	s, _ := localSession(t, Config{OutputLimit: 100})
	run(t, s, Request{Code: "o.SPILL_DIR = '/dev/null/output'"})
	res := run(t, s, Request{Code: "print('y' * 500)"})
	if res.Stdout.Path != "" || !strings.Contains(res.Stdout.Text,
		"[... 401 characters omitted; saving the full output failed: could not create a file for it in /dev/null/output: ") {
		t.Fatalf("stdout %+v", res.Stdout)
	}
}

func TestSessionJSONValue(t *testing.T) {
	s, _ := localSession(t, Config{})
	res := run(t, s, Request{Code: `[{"id": 1, "name": "a"}]`, JSON: true})
	var got any
	if err := json.Unmarshal(res.JSON, &got); err != nil || fmt.Sprint(got) != "[map[id:1 name:a]]" {
		t.Fatalf("JSON %s (%v)", res.JSON, err)
	}
	if res.Value != "[{'id': 1, 'name': 'a'}]" {
		t.Fatalf("value %q", res.Value)
	}
	if res := run(t, s, Request{Code: `[1, 2]`}); res.JSON != nil {
		t.Fatalf("JSON %s without asking", res.JSON)
	}
	if res := run(t, s, Request{Code: `(1, 2)`, JSON: true}); res.JSON != nil {
		t.Fatalf("a tuple came as JSON: %s", res.JSON)
	}
}

// toolLister answers list_tools with a list the test changes.
type toolLister struct {
	mu    sync.Mutex
	tools []string
}

func (h *toolLister) HandleRPC(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	if method != "list_tools" {
		return nil, fmt.Errorf("unexpected %s", method)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var tools []map[string]any
	for _, name := range h.tools {
		tools = append(tools, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
	}
	return json.Marshal(tools)
}

func TestSessionStaleToolLists(t *testing.T) {
	s, _ := localSession(t, Config{Servers: []ServerInfo{{Name: "up"}}})
	h := &toolLister{tools: []string{"a"}}
	list := "[t['name'] for t in runtime.list_tools_sync('up')]"
	if res := run(t, s, Request{Code: list, Handler: h}); res.Value != "['a']" {
		t.Fatalf("tools %s", res.Value)
	}
	h.mu.Lock()
	h.tools = append(h.tools, "b")
	h.mu.Unlock()
	if res := run(t, s, Request{Code: list, Handler: h, Stale: func() []string { return nil }}); res.Value != "['a']" {
		t.Fatalf("the cached list was not used: %s", res.Value)
	}
	res := run(t, s, Request{Code: list, Handler: h, Stale: func() []string { return []string{"up"} }})
	if res.Value != "['a', 'b']" {
		t.Fatalf("a stale list was kept: %s", res.Value)
	}
}
