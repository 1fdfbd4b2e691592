package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/codebridge/codebridge/internal/protocol"
	"io"
	"log/slog"
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

func (procEngine) Name() string                                          { return "local process" }
func (procEngine) RemoveStale(context.Context) (int, error)              { return 0, nil }
func (procEngine) HasImage(context.Context, string) (bool, error)        { return true, nil }
func (procEngine) List(context.Context) ([]ContainerInfo, error)         { return nil, nil }
func (procEngine) Close() error                                          { return nil }
func (procEngine) Workspaces(context.Context) ([]WorkspaceVolume, error) { return nil, nil }
func (procEngine) RemoveWorkspace(context.Context, string) error         { return ErrNotWorkspace }

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
func localSession(t *testing.T, cfg Config, host Host) (*Session, string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	m := &Manager{log: slog.Default(), connect: func(context.Context) (Engine, error) { return procEngine{}, nil }}
	s := m.NewSession(cfg, host)
	t.Cleanup(func() { _ = s.Close() })
	dir := filepath.Join(t.TempDir(), "output")
	run(t, s, Request{Code: fmt.Sprintf("import mcp._output as o\no.SPILL_DIR = %q", dir)})
	return s, dir
}

func run(t *testing.T, s *Session, req Request) *Result {
	t.Helper()
	req.Timeout = time.Minute
	if h, ok := s.host.(*testHost); ok && req.Caller == nil {
		req.Caller = h // the test's host answers its cells too
	}
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
	var mu sync.Mutex
	var seen strings.Builder
	s, dir := localSession(t, Config{OutputLimit: 100}, &testHost{output: func(stream, text string) {
		mu.Lock()
		defer mu.Unlock()
		if stream == "stdout" {
			seen.WriteString(text)
		}
	}})
	mu.Lock()
	seen.Reset() // the set-up cell's output
	mu.Unlock()
	res := run(t, s, Request{Code: "import sys\nprint('x' * 500)\nprint('short', file=sys.stderr)"})
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
	s, _ := localSession(t, Config{OutputLimit: 100}, nil)
	run(t, s, Request{Code: "o.SPILL_DIR = '/dev/null/output'"})
	res := run(t, s, Request{Code: "print('y' * 500)"})
	if res.Stdout.Path != "" || !strings.Contains(res.Stdout.Text,
		"[... 401 characters omitted; saving the full output failed: could not create a file for it in /dev/null/output: ") {
		t.Fatalf("stdout %+v", res.Stdout)
	}
}

func TestSessionTOONValue(t *testing.T) {
	s, _ := localSession(t, Config{}, nil)
	res := run(t, s, Request{Code: `[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]`, TOON: true})
	if want := "[2]{id,name}:\n  1,a\n  2,b"; res.Value != want {
		t.Fatalf("value %q, want TOON %q", res.Value, want)
	}
	if res := run(t, s, Request{Code: `[1, 2]`}); res.Value != "[1, 2]" {
		t.Fatalf("value %q without asking for TOON, want the repr", res.Value)
	}
	if res := run(t, s, Request{Code: `(1, 2)`, TOON: true}); res.Value != "(1, 2)" {
		t.Fatalf("a tuple came as %q, want its repr", res.Value)
	}
}

// testHost is a Host, and the Caller of the cells run by run, whose parts
// a test fills in.
type testHost struct {
	servers []protocol.ServerInfo
	files   []protocol.File
	stale   func() []string
	answer  func(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error)
	output  func(stream, text string)
}

func (h *testHost) Servers() []protocol.ServerInfo { return h.servers }
func (h *testHost) StartFiles() []protocol.File    { return h.files }
func (h *testHost) Stale() []string {
	if h.stale == nil {
		return nil
	}
	return h.stale()
}
func (h *testHost) Output(stream, text string) {
	if h.output != nil {
		h.output(stream, text)
	}
}
func (h *testHost) Answer(ctx context.Context, rpc protocol.RPC) (json.RawMessage, error) {
	if h.answer == nil {
		return nil, fmt.Errorf("unexpected %s", rpc.Method)
	}
	return h.answer(ctx, rpc)
}

// toolLister answers list_tools with a list the test changes.
type toolLister struct {
	mu    sync.Mutex
	tools []string
}

func (h *toolLister) answer(_ context.Context, rpc protocol.RPC) (json.RawMessage, error) {
	if rpc.Method != protocol.MListTools {
		return nil, fmt.Errorf("unexpected %s", rpc.Method)
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
	h := &toolLister{tools: []string{"a"}}
	var stale []string
	host := &testHost{servers: []protocol.ServerInfo{{Name: "up"}}, answer: h.answer, stale: func() []string { return stale }}
	s, _ := localSession(t, Config{}, host)
	list := "[t['name'] for t in runtime.list_tools_sync('up')]"
	if res := run(t, s, Request{Code: list}); res.Value != "['a']" {
		t.Fatalf("tools %s", res.Value)
	}
	h.mu.Lock()
	h.tools = append(h.tools, "b")
	h.mu.Unlock()
	if res := run(t, s, Request{Code: list}); res.Value != "['a']" {
		t.Fatalf("the cached list was not used: %s", res.Value)
	}
	stale = []string{"up"}
	res := run(t, s, Request{Code: list})
	if res.Value != "['a', 'b']" {
		t.Fatalf("a stale list was kept: %s", res.Value)
	}
}

// TestSessionPutsFiles: files the host gives at start are there for the
// first cell, and Put writes more between cells and while one runs; a
// path outside the workspace and /tmp is refused with a reason.
func TestSessionPutsFiles(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "codebridge-put-") // under a root the runtime allows by default
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	running := make(chan struct{}, 1) // the cell below says it runs
	host := &testHost{files: []protocol.File{{Path: dir + "/start/a.txt", Data: []byte("from the start")}},
		output: func(_, text string) {
			if strings.Contains(text, "waiting for late.txt") {
				running <- struct{}{}
			}
		}}
	s, _ := localSession(t, Config{}, host)
	if res := run(t, s, Request{Code: fmt.Sprintf("open(%q).read()", dir+"/start/a.txt")}); res.Value != "'from the start'" {
		t.Fatalf("the start file reads %s", res.Value)
	}
	run(t, s, Request{Code: fmt.Sprintf("import mcp._files as f\nf.BASE = %q", dir)})
	ctx := context.Background()
	if err = s.Put(ctx, []protocol.File{{Path: "rel/b.bin", Data: []byte{0, 1, 2}, Mode: 0o600}}); err != nil {
		t.Fatal(err)
	}
	res := run(t, s, Request{Code: fmt.Sprintf("import os\nopen(%q, 'rb').read(), oct(os.stat(%q).st_mode & 0o777)", dir+"/rel/b.bin", dir+"/rel/b.bin")})
	if res.Value != `(b'\x00\x01\x02', '0o600')` {
		t.Fatalf("the put file reads back as %s", res.Value)
	}
	err = s.Put(ctx, []protocol.File{{Path: "/etc/passwd", Data: []byte("x")}, {Path: "../up.txt", Data: []byte("x")}})
	if err == nil || !strings.Contains(err.Error(), "outside") || !strings.Contains(err.Error(), "'..' is not allowed") {
		t.Fatalf("paths outside the roots: %v", err)
	}
	// While a cell runs (it says so first): the cell waits for the file
	// the host puts then.
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.Run(ctx, Request{Timeout: time.Minute, Caller: host, Code: fmt.Sprintf(
			"import os, sys, time\nprint('waiting for late.txt'); sys.stdout.flush()\nwhile not os.path.exists(%q): time.sleep(0.01)\nprint('seen')", dir+"/late.txt")})
		done <- outcome{res, err}
	}()
	<-running
	if err := s.Put(ctx, []protocol.File{{Path: "late.txt", Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil || o.res.Stdout.Text != "waiting for late.txt\nseen\n" {
		t.Fatalf("the running cell: %v %+v", o.err, o.res)
	}
}
