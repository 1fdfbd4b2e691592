package bridge

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostOnly is an error whose log value holds what only the host may see,
// as upstream.Error's does.
type hostOnly struct{}

func (hostOnly) Error() string        { return "server \"x\" could not start" }
func (hostOnly) LogValue() slog.Value { return slog.StringValue("token=SECRET in stderr") }

// connected returns a ClientLog whose bridge serves one in-memory client,
// and the channel of what that client's log receives.
func connected(t *testing.T) (*ClientLog, <-chan *mcp.LoggingMessageParams) {
	t.Helper()
	cl, _, heard := sessionsOf(t, 1)
	return cl, heard[0]
}

func TestClientLogSendsOnlySafeParts(t *testing.T) {
	cl, got := connected(t)
	log := slog.New(cl).With("server", "x", "stderr", "token=SECRET")
	log.Info("below the level: not sent")
	log.Warn("upstream could not start", "err", hostOnly{}, "command", "run --token SECRET")
	p := <-got
	data := p.Data.(map[string]any)
	if p.Logger != "codebridge" || p.Level != "warning" || data["message"] != "upstream could not start" ||
		data["server"] != "x" || data["err"] != `server "x" could not start` {
		t.Fatalf("sent %+v %v", p, data)
	}
	if len(data) != 3 {
		t.Fatalf("sent more than message, server and err: %v", data)
	}
}

func TestClientLogHonoursSetLevel(t *testing.T) {
	cl, got := connected(t)
	log := slog.New(cl)
	// The client asked for warning and up: a notice-level upstream message
	// is dropped by the session, a warning is sent.
	d := &router{c: cl.to, notes: &cellNotes{}}
	d.Log(context.Background(), "ev", &mcp.LoggingMessageParams{Level: "notice", Data: "quiet"})
	d.Log(context.Background(), "ev", &mcp.LoggingMessageParams{Level: "error", Data: "loud", Logger: "db"})
	log.Error("bridge error")
	p := <-got
	if p.Logger != "ev/db" || p.Data != "loud" {
		t.Fatalf("first message %+v; want the error from ev/db (the notice filtered)", p)
	}
	if p := <-got; p.Logger != "codebridge" {
		t.Fatalf("second message %+v", p)
	}
}

func TestCellNotes(t *testing.T) {
	n := &cellNotes{}
	d := &router{c: noClients(), notes: n}
	d.Log(context.Background(), "ev", &mcp.LoggingMessageParams{Level: "error", Data: "before any cell"})
	end := n.begin()
	d.Log(context.Background(), "ev", &mcp.LoggingMessageParams{Level: "info", Data: "too low"})
	d.Log(context.Background(), "ev", &mcp.LoggingMessageParams{Level: "warning", Data: map[string]any{"message": "disk low"}})
	for range maxNotes + 2 {
		d.Log(context.Background(), "ev", &mcp.LoggingMessageParams{Level: "critical", Data: []int{1}})
	}
	got := end()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if lines[0] != "[ev warning] disk low" || lines[1] != "[ev critical] [1]" || len(lines) != maxNotes+1 ||
		lines[maxNotes] != "[3 more upstream warnings; the client's log has them]" {
		t.Fatalf("notes:\n%s", got)
	}
	if strings.Contains(got, "before any cell") || strings.Contains(got, "too low") {
		t.Fatalf("notes hold a message from outside the cell or below warning:\n%s", got)
	}
	if again := n.begin()(); again != "" {
		t.Fatalf("a new cell starts with notes: %q", again)
	}
}

func TestDownstreamWithoutClient(t *testing.T) {
	d := &router{c: noClients(), notes: &cellNotes{}}
	ctx := context.Background()
	if _, err := d.CreateMessage(ctx, "ev", &mcp.CreateMessageParams{}); !errors.Is(err, upstream.ErrNoClient) {
		t.Fatalf("sampling without a client: %v", err)
	}
	if _, err := d.Elicit(ctx, "ev", &mcp.ElicitParams{}); !errors.Is(err, upstream.ErrNoClient) {
		t.Fatalf("elicitation without a client: %v", err)
	}
	if _, err := d.ListRoots(ctx, "fs"); err == nil || !strings.Contains(err.Error(), "--root DIR") {
		t.Fatalf("roots without a client or --root: %v", err)
	}
	d.c.roots = rootsFromDirs([]string{"/srv/project"})
	r, err := d.ListRoots(ctx, "fs")
	if err != nil || len(r.Roots) != 1 || r.Roots[0].URI != "file:///srv/project" {
		t.Fatalf("roots from --root: %+v, %v", r, err)
	}
}

func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		p    mcp.ProgressNotificationParams
		want string
	}{
		{mcp.ProgressNotificationParams{Progress: 2, Total: 5, Message: "step"}, "ev: 2/5 step"},
		{mcp.ProgressNotificationParams{Progress: 0.5}, "ev: 0.5"},
	} {
		if got := progressLine("ev", &c.p); got != c.want {
			t.Errorf("progressLine(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestSessionDownstreamIsPrivate: a per_session server's log message
// reaches its own session's client and cell notes, and not another
// session of the same bridge; a shared server's message reaches the
// session whose call it came with, and no other; one tied to no call
// reaches none.
func TestSessionDownstreamIsPrivate(t *testing.T) {
	cl, sessions, heard := sessionsOf(t, 2)
	cl.to.mode = ManyUsers
	ctx := context.Background()
	notes := []*cellNotes{{}, {}}
	callOf := func(i int) *call { // a run_python call of session i
		return &call{sandboxHost: &sandboxHost{}, client: sessions[i], notes: notes[i]}
	}
	shared := cl.to.down
	own := &cellNotes{}
	mine := shared.forSession(sessions[0], own)
	end0, end1, endOwn := notes[0].begin(), notes[1].begin(), own.begin()
	mine.Log(ctx, "own", &mcp.LoggingMessageParams{Level: "warning", Data: "only-for-0"})
	shared.Log(ctx, "shared", &mcp.LoggingMessageParams{Level: "warning", Data: "whose-call-unknown"})
	callOf(1).Log("shared", &mcp.LoggingMessageParams{Level: "warning", Data: "for-1"})
	if got := endOwn(); got != "[own warning] only-for-0\n" {
		t.Fatalf("the session's own notes: %q", got)
	}
	if got := end0(); got != "" {
		t.Fatalf("session 0's notes hold a shared server's warning: %q", got)
	}
	if got := end1(); got != "[shared warning] for-1\n" {
		t.Fatalf("session 1's notes: %q", got)
	}
	if p := <-heard[0]; p.Data != "only-for-0" || p.Logger != "own" {
		t.Fatalf("session 0 heard first %+v", p)
	}
	if p := <-heard[1]; p.Data != "for-1" {
		t.Fatalf("session 1 heard %+v, want its call's message", p)
	}
	slog.New(cl).Warn("tied to no call")
	slog.New(cl).Warn("for-0's call", upstream.CallerKey, callOf(0))
	if p := <-heard[0]; p.Data.(map[string]any)["message"] != "for-0's call" {
		t.Fatalf("session 0 heard %+v, want the warning of its call", p)
	}
	for i := range sessions {
		select {
		case p := <-heard[i]:
			t.Fatalf("session %d heard %+v", i, p)
		default:
		}
	}
}

// TestSharedServerWithSeveralSessions: a shared server's request goes to
// the session with a call in flight to it, and to none when that is not
// one session (the error says why and what to do); its roots are no one
// session's.
func TestSharedServerWithSeveralSessions(t *testing.T) {
	cl, sessions, _ := sessionsOf(t, 2)
	ctx := context.Background()
	d := cl.to.down
	sampling := func(c *mcp.ClientCapabilities) bool { return true }
	if _, err := d.clientWith("s", sampling, "%q"); err == nil || !strings.Contains(err.Error(), `set "per_session": true`) {
		t.Fatalf("no call in flight: %v", err)
	}
	end := cl.to.busy.begin("s", sessions[1])
	if ss, err := d.clientWith("s", sampling, "%q"); err != nil || ss != sessions[1] {
		t.Fatalf("one session calling: %v, %v", ss, err)
	}
	end()
	if _, err := d.ListRoots(ctx, "s"); err == nil || !strings.Contains(err.Error(), "shared by several MCP sessions") {
		t.Fatalf("roots: %v", err)
	}
	if r, err := d.forSession(sessions[0], &cellNotes{}).ListRoots(ctx, "own"); err != nil || r == nil {
		t.Fatalf("a per_session server's roots are its session's (none): %v, %v", r, err)
	}
}

// sessionsOf returns a ClientLog whose server has n in-memory clients,
// each at log level warning, their sessions, and what each one's log
// receives.
func sessionsOf(t *testing.T, n int) (*ClientLog, []*mcp.ServerSession, []chan *mcp.LoggingMessageParams) {
	t.Helper()
	cl := NewClientLog(noClients())
	srv := cl.to.srv
	ctx := context.Background()
	var sessions []*mcp.ServerSession
	var heard []chan *mcp.LoggingMessageParams
	for range n {
		got := make(chan *mcp.LoggingMessageParams, 10)
		client := mcp.NewClient(&mcp.Implementation{Name: "c"}, &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { got <- r.Params },
		})
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close(); ss.Close() })
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
			t.Fatal(err)
		}
		sessions, heard = append(sessions, ss), append(heard, got)
	}
	return cl, sessions, heard
}

// noClients are the clients of a bridge (not made) no client is
// connected to.
func noClients() *Clients { return NewClients(Options{}) }
