package upstream

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func stubSpec(name string, args ...string) discovery.Server {
	_, file, _, _ := runtime.Caller(0)
	stub := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(file))), "testdata/servers/stub_server.py")
	return discovery.Server{Name: name, Command: "python3", Args: append([]string{stub}, args...), Source: "test"}
}

func text(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	res := decodeResult(t, raw)
	if len(res.Content) != 1 {
		t.Fatalf("want one content block, got %d", len(res.Content))
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func decodeResult(t *testing.T, raw json.RawMessage) *mcp.CallToolResult {
	t.Helper()
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("the result %.200s is not a CallToolResult: %v", raw, err)
	}
	return &res
}

func newTestPool(t *testing.T, opts Options, specs ...discovery.Server) *Pool {
	t.Helper()
	p := NewPool(specs, opts)
	t.Cleanup(func() { p.Close() })
	return p
}

func TestCallAndCache(t *testing.T) {
	p := newTestPool(t, Options{}, stubSpec("stub"))
	s, err := p.Get("stub")
	if err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("running before first use")
	}
	ctx := context.Background()
	res, err := s.Call(ctx, nil, "echo", json.RawMessage(`{"message":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	tools, err := s.Tools(ctx)
	if err != nil || len(tools) == 0 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	again, _ := s.Tools(ctx)
	if again[0] != tools[0] {
		t.Fatal("the tool list was fetched again instead of cached")
	}
	res, err = s.Call(ctx, nil, "fail", json.RawMessage(`{"message":"nope"}`))
	if err != nil || !decodeResult(t, res).IsError || text(t, res) != "nope" {
		t.Fatalf("a tool error must be a result with isError: %+v %v", res, err)
	}
}

func TestInitializeOnlyServerConnects(t *testing.T) {
	p := newTestPool(t, Options{}, stubSpec("old", "--strict"))
	s, _ := p.Get("old")
	res, err := s.Call(context.Background(), nil, "add", json.RawMessage(`{"a":1,"b":2}`))
	if err != nil {
		t.Fatalf("a server that only knows initialize did not connect: %v", err)
	}
	if got := text(t, res); got != "3" {
		t.Fatalf("add = %q", got)
	}
}

func TestUnknownServer(t *testing.T) {
	p := newTestPool(t, Options{}, stubSpec("b"), stubSpec("a"))
	_, err := p.Get("c")
	if err == nil || !strings.Contains(err.Error(), "configured servers: a, b") {
		t.Fatalf("err = %v", err)
	}
	empty := newTestPool(t, Options{})
	if _, err := empty.Get("x"); err == nil || !strings.Contains(err.Error(), "~/MCPs") {
		t.Fatalf("err = %v", err)
	}
}

func TestCrashedServerRestartsAndQuotesStderr(t *testing.T) {
	p := newTestPool(t, Options{}, stubSpec("stub"))
	s, _ := p.Get("stub")
	ctx := context.Background()
	_, err := s.Call(ctx, nil, "crash", nil)
	if err == nil {
		t.Fatal("a call whose server died returned no error")
	}
	if !strings.Contains(HostDetail(err), "crashing as asked") {
		t.Fatalf("the host detail does not quote the server's stderr: %s", HostDetail(err))
	}
	if strings.Contains(err.Error(), "crashing as asked") || !strings.Contains(err.Error(), `server "stub" exited while calling tool "crash"`) {
		t.Fatalf("the error the sandbox sees should name the server and what failed, not quote its stderr: %v", err)
	}
	res, err := s.Call(ctx, nil, "echo", json.RawMessage(`{"message":"back"}`))
	if err != nil {
		t.Fatalf("the server was not restarted: %v", err)
	}
	if text(t, res) != "back" {
		t.Fatal("wrong answer after restart")
	}
}

func TestServerThatWillNotStart(t *testing.T) {
	spec := discovery.Server{Name: "broken", Command: "python3", Args: []string{"-c", "import sys; sys.stderr.write('missing API key\\n'); sys.exit(2)"}, Source: "x.json"}
	p := newTestPool(t, Options{}, spec)
	s, _ := p.Get("broken")
	err := s.Start(context.Background())
	if err == nil || strings.Contains(err.Error(), "missing API key") || !strings.Contains(err.Error(), `server "broken" could not start`) {
		t.Fatalf("err = %v", err)
	}
	if d := HostDetail(err); !strings.Contains(d, "missing API key") || !strings.Contains(d, "`python3 -c import sys") || !strings.Contains(d, "x.json") {
		t.Fatalf("host detail = %s", d)
	}
	// A second try within the backoff answers at once with the same cause.
	err = s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "next try in") {
		t.Fatalf("second err = %v", err)
	}
}

func TestCallTimeout(t *testing.T) {
	p := newTestPool(t, Options{CallTimeout: 200 * time.Millisecond}, stubSpec("stub"))
	s, _ := p.Get("stub")
	_, err := s.Call(context.Background(), nil, "sleep", json.RawMessage(`{"seconds":30}`))
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
}

func TestCallCancelled(t *testing.T) {
	p := newTestPool(t, Options{}, stubSpec("stub"))
	s, _ := p.Get("stub")
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, nil, "sleep", json.RawMessage(`{"seconds":30}`))
		errc <- err
	}()
	cancel()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "cancel") {
		t.Fatalf("err = %v", err)
	}
}

// The go-sdk's own command transport stops at 16 MiB a message; results
// past that must still arrive whole.
func TestLargeResult(t *testing.T) {
	p := newTestPool(t, Options{}, stubSpec("stub"))
	s, _ := p.Get("stub")
	const size = 20 << 20
	res, err := s.Call(context.Background(), nil, "big", json.RawMessage(`{"size":`+strconv.Itoa(size)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(text(t, res)); got != size {
		t.Fatalf("got %d bytes, want %d", got, size)
	}
}

func TestPerServerTimeout(t *testing.T) {
	slow := stubSpec("slow")
	slow.Timeout = 100 * time.Millisecond
	p := newTestPool(t, Options{CallTimeout: time.Hour}, slow)
	s, _ := p.Get("slow")
	_, err := s.Call(context.Background(), nil, "sleep", json.RawMessage(`{"seconds":30}`))
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("the server's own timeout did not apply: %v", err)
	}
}

func TestStartErrorNamesNoCommandOrPath(t *testing.T) {
	for _, command := range []string{"/secret/dir/no-such-server", "no-such-server-on-path"} {
		spec := discovery.Server{Name: "gone", Command: command, Args: []string{"--token=tok-123"}, Source: "/home/me/MCPs/x.json"}
		p := newTestPool(t, Options{}, spec)
		s, _ := p.Get("gone")
		err := s.Start(context.Background())
		if err == nil {
			t.Fatal("a missing command started")
		}
		for _, secret := range []string{command, "/secret", "tok-123", "x.json"} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error quotes %q: %v", secret, err)
			}
		}
		if !strings.Contains(err.Error(), "its command") || !strings.Contains(HostDetail(err), command) {
			t.Fatalf("err = %v\ndetail = %s", err, HostDetail(err))
		}
	}
}

// TestForSession: a session's view shares the ordinary servers with the
// pool and every other session, and has its own client of a per_session
// server; closing the view stops only its own.
func TestForSession(t *testing.T) {
	own := stubSpec("own")
	own.PerSession = true
	p := newTestPool(t, Options{}, stubSpec("shared"), own)
	a, b := p.ForSession(nil, ""), p.ForSession(nil, "")
	get := func(p *Pool, name string) *Server {
		s, err := p.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if get(a, "shared") != get(p, "shared") || get(b, "shared") != get(p, "shared") {
		t.Fatal("a session has its own client of a shared server")
	}
	if get(a, "own") == get(b, "own") || get(a, "own") == get(p, "own") {
		t.Fatal("two sessions share the client of a per_session server")
	}
	if names := []string{a.Servers()[0].Name(), a.Servers()[1].Name()}; names[0] != "shared" || names[1] != "own" {
		t.Fatalf("the view's order is %v", names)
	}
	ctx := context.Background()
	for _, s := range []*Server{get(a, "shared"), get(a, "own"), get(b, "own")} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	_ = a.Close()
	if !get(p, "shared").Running() || !get(b, "own").Running() {
		t.Fatal("closing one session's view stopped a server it does not own")
	}
	if get(a, "own").Running() {
		t.Fatal("closing the view left its own server running")
	}
}

// TestForSessionDownstream: the servers of a session's view that are its
// own ask, and log to, the Downstream the view was made with; the shared
// ones, and the own ones of a view made with none, the pool's.
func TestForSessionDownstream(t *testing.T) {
	own := stubSpec("own")
	own.PerSession = true
	pools, session := newLogSink(), newLogSink()
	p := newTestPool(t, Options{Downstream: pools}, stubSpec("shared"), own)
	for _, c := range []struct {
		view       *Pool
		name       string
		downstream Downstream
	}{
		{p, "own", pools},
		{p.ForSession(session, ""), "own", session},
		{p.ForSession(session, ""), "shared", pools},
		{p.ForSession(nil, ""), "own", pools},
	} {
		s, err := c.view.Get(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if s.downlink.down != c.downstream || s.watchers.down != c.downstream {
			t.Fatalf("server %q of a view asks the wrong Downstream", c.name)
		}
	}
}
