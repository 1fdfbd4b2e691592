package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logBook collects what a client's log receives.
type logBook struct {
	mu    sync.Mutex
	msgs  []*mcp.LoggingMessageParams
	added chan struct{} // signalled on each message
}

func newLogBook() *logBook { return &logBook{added: make(chan struct{}, 1)} }

func (l *logBook) handler(_ context.Context, req *mcp.LoggingMessageRequest) {
	l.mu.Lock()
	l.msgs = append(l.msgs, req.Params)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
}

// text is everything the log received, one message a line.
func (l *logBook) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, p := range l.msgs {
		data, _ := json.Marshal(p.Data)
		fmt.Fprintf(&b, "%s %s %s\n", p.Level, p.Logger, data)
	}
	return b.String()
}

// waitFor waits until the log holds every one of wants, or fails when ctx
// (a failure guard) ends.
func (l *logBook) waitFor(t *testing.T, ctx context.Context, wants ...string) {
	t.Helper()
	for {
		got := l.text()
		missing := ""
		for _, w := range wants {
			if !strings.Contains(got, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		select {
		case <-l.added:
		case <-ctx.Done():
			t.Fatalf("the client's log never received %q; it holds:\n%s", missing, got)
		}
	}
}

// TestHTTPSharedServerLogStaysWithItsCaller: two users of one HTTP bridge
// share an upstream server. User a's call makes it log a warning that
// quotes the call's arguments while user b's cell waits in the same
// server: the line cannot be told to be a's, so it reaches neither b's
// running cell nor b's client log; the host's log has it. A warning of a
// call that is the server's only one in flight is that call's: it shows
// in a's cell.
func TestHTTPSharedServerLogStaysWithItsCaller(t *testing.T) {
	needEnv(t)
	shared := stub("--name=shared")
	shared.Env = map[string]string{"STUB_EVENTS": filepath.Join(t.TempDir(), "events")}
	b := startHTTP(t, home(t, map[string]map[string]server{"s.json": {"shared": shared}}), nil, "--warm", "0")
	a := b.connect(t, "a")
	bLog := newLogBook()
	victim := b.connectWith(t, "b", &mcp.ClientOptions{LoggingMessageHandler: bLog.handler}, oldProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a failure guard
	defer cancel()
	if err := victim.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, a.ok("await mcp_shared.warn(message='a-alone')"), "[shared warning] a-alone")

	bDone := make(chan runResult, 1)
	go func() {
		r, err := victim.run("print(await mcp_shared.sleep(seconds=120))")
		if err != nil {
			t.Error(err)
		}
		bDone <- r
	}()
	waitFile(t, shared.Env["STUB_EVENTS"], "sleep-started")
	const secret = "password=a-secret-4417"
	a.ok(fmt.Sprintf("await mcp_shared.warn(message=%q)\nprint(await mcp_shared.wake())", secret))
	rb := <-bDone
	if !strings.Contains(rb.text, "woken") {
		t.Fatalf("b's cell did not run through a's call:\n%s", rb.text)
	}
	if strings.Contains(rb.text, secret) {
		t.Fatalf("user a's log line reached user b's running cell:\n%s", rb.text)
	}
	// codebridge's own warning about a's call (the server crashed in it)
	// is a's too.
	a.ok("try:\n    await mcp_shared.crash()\nexcept MCPError as e:\n    print(e)")
	victim.ok("print('b again')") // anything sent to b's log before has arrived
	if got := bLog.text(); strings.Contains(got, secret) || strings.Contains(got, "a-alone") || strings.Contains(got, "crash") {
		t.Fatalf("user a's log line reached user b's client log:\n%s", got)
	}
	mustContain(t, b.stderr.String(), secret) // the host's log has it
}

// TestNewProtocolClientHearsLogs: a client on protocol 2026-07-28 (the
// go-sdk's default), which has no logging/setLevel and asks for log
// messages in each call's _meta, hears an upstream's log message and
// codebridge's own warnings within the run_python call that caused them,
// at that call's level; a call that asks for none hears none.
func TestNewProtocolClientHearsLogs(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"a.json": {"s": stub()}})
	book := newLogBook()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-newest-logs", Version: "1"}, &mcp.ClientOptions{LoggingMessageHandler: book.handler})
	b := startBridgeClient(t, h, client, nil)
	if v := b.cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("the client speaks protocol %s, not 2026-07-28 or later", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a failure guard
	defer cancel()
	call := func(code string, level mcp.LoggingLevel) string {
		t.Helper()
		params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}}
		if level != "" {
			params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: level}
		}
		res, err := b.cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			t.Fatalf("run_python: %v %+v\nstderr:\n%s", err, res, b.stderr)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	call("await mcp_s.warn(message='unasked')", "")
	out := call(`await mcp_s.warn(message='from-the-call')
try:
    await mcp_s.crash()
except MCPError as e:
    print('CRASHED', e)`, "info")
	mustContain(t, out, "CRASHED")
	book.waitFor(t, ctx, `warning s/stub "from-the-call"`, `codebridge {"err":"server \"s\" exited while calling tool \"crash\"`)
	if got := book.text(); strings.Contains(got, "unasked") {
		t.Fatalf("a call that asked for no log messages heard one:\n%s", got)
	}
}
