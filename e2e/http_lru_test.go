package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inspectorHTTP runs the MCP Inspector CLI once against an HTTP bridge,
// as the holder of who's token: a one-shot client, which never ends its
// session. It returns the CLI's output and whether it succeeded.
func (b *httpBridge) inspectorHTTP(t *testing.T, who string, args ...string) (string, bool) {
	t.Helper()
	bin := filepath.Join(repoRoot, "testdata/npm/node_modules/.bin/mcp-inspector")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli", b.url, "--transport", "http",
		"--header", "Authorization: Bearer " + teamTokens[who]}, args...)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the Inspector CLI did not end within its guard: %s", out)
	}
	return string(out), err == nil
}

// inspectorRun calls run_python with code through the Inspector CLI as
// who, and returns the text of its answer; it fails the test if the call
// fails.
func (b *httpBridge) inspectorRun(t *testing.T, who, code string) string {
	t.Helper()
	out, ok := b.inspectorHTTP(t, who, "--method", "tools/call", "--tool-name", "run_python", "--tool-arg", "code="+code)
	if !ok {
		t.Fatalf("%s's one-shot call %q failed:\n%s\nstderr:\n%s", who, code, out, b.stderr)
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.IsError {
		t.Fatalf("%s's one-shot call %q: %v\n%s", who, code, err, out)
	}
	var text strings.Builder
	for _, c := range res.Content {
		text.WriteString(c.Text)
	}
	return text.String()
}

// TestHTTPOneShotClientsAtTheCap: the Inspector CLI never ends its HTTP
// session, so each call leaves a session and its sandbox until the idle
// timeout. With one token, cap+1 such calls all succeed: the last ends
// the user's least recently used idle session (and its sandbox) to make
// room, says so in its answer (the ended session's age and idle time, not
// its data), and the log says so at info, naming the user. Before, the
// call beyond the cap was refused with 503.
func TestHTTPOneShotClientsAtTheCap(t *testing.T) {
	needEnv(t)
	// A server of 8: a quarter, 2 sessions, per user.
	b := startHTTP(t, home(t, nil), nil, "--token-file", teamTokenFile(t), "--max-sessions", "8", "--warm", "0")
	for i, word := range []string{"first", "second"} {
		got := b.inspectorRun(t, "alice", "x = '"+word+"'\nprint(x)")
		if got != word+"\n" {
			t.Fatalf("alice's call %d, below the cap: %q", i+1, got)
		}
	}
	got := b.inspectorRun(t, "alice", "print('third')")
	mustContain(t, got, "third\n", "codebridge ended an older session of yours to make room for this one",
		"you had the 2 sessions one user may have open at once (--max-sessions-per-user)", "had been idle for", "no cell running")
	if strings.Contains(got, "first") || strings.Contains(got, "second") {
		t.Fatalf("the note shows an ended session's data: %q", got)
	}
	mustContain(t, b.stderr.String(), `level=INFO msg="ended a user's least recently used idle session to make room for a new one" user=alice`)
	// The ended session's sandbox goes as an idle one's does; the two
	// sessions left keep theirs.
	waitContainers(t, b.cmd.Process.Pid, 2)
}

// bearerOver adds a token to each request sent over base.
type bearerOver struct {
	token string
	base  http.RoundTripper
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connectDroppable opens an MCP session as the holder of who's token
// over connections the test can cut.
func (b *httpBridge) connectDroppable(t *testing.T, who string) *httpClient {
	t.Helper()
	d := &droppable{}
	hc := &http.Client{Transport: bearerOver{teamTokens[who], &http.Transport{DialContext: d.dial}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: who, Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: hc, DisableStandaloneSSE: true}, oldProtocol) // sessions: 2025-11-25
	if err != nil {
		t.Fatalf("%s could not open a session: %v", who, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &httpClient{t: t, cs: cs, net: d, name: who}
}

// waitCount waits until the file holds s n times, or fails after a
// minute.
func waitCount(t *testing.T, path, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		data, _ := os.ReadFile(path)
		if strings.Count(string(data), s) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never said %q %d times", path, s, n)
		}
		time.Sleep(50 * time.Millisecond) // polling a file another process writes
	}
}

// TestHTTPBusySessionsAreNotEnded: when every session a user has at the
// cap runs a cell, the user's next one-shot call (the Inspector CLI) is
// refused with 503, saying why and what to do, and no session is ended:
// not the one whose call is in flight, nor the one whose client vanished
// while its cell runs on (no request of it is served any more; the bridge
// says its cell runs). Another user is served meanwhile.
func TestHTTPBusySessionsAreNotEnded(t *testing.T) {
	needEnv(t)
	st, events := eventStub(t)
	b := startHTTP(t, home(t, map[string]map[string]server{"s.json": {"stub": st}}), nil,
		"--token-file", teamTokenFile(t), "--max-sessions", "8", "--warm", "0")
	const sleep = "await mcp_stub.sleep(seconds=100)\nprint('slept')"
	gone := b.connectDroppable(t, "alice")
	go func() { _, _ = gone.run(sleep, "timeout", 110) }()
	waitCount(t, events, "sleep-started", 1)
	gone.net.drop()
	busy := b.connectDroppable(t, "alice")
	go func() { _, _ = busy.run(sleep, "timeout", 110) }()
	waitCount(t, events, "sleep-started", 2)
	// Run before the clients' own cleanups, which would wait for the cells.
	t.Cleanup(func() { b.stop(syscall.SIGTERM) })

	out, ok := b.inspectorHTTP(t, "alice", "--method", "tools/call", "--tool-name", "run_python", "--tool-arg", "code=print(1)")
	if ok {
		t.Fatalf("alice's one-shot call was served while both her sessions run a cell:\n%s", out)
	}
	mustContain(t, out, "at most 2 sessions at once per user (--max-sessions-per-user)", "running a cell",
		"wait for a cell to finish", "end a session you no longer use")
	if strings.Contains(b.stderr.String(), "ended a user's least recently used idle session") {
		t.Fatalf("a busy session was ended:\n%s", b.stderr)
	}
	mustContain(t, b.stderr.String(), `level=WARN msg="refused a new session: its user has the most sessions one user may, each busy" user=alice`)
	mustContain(t, b.inspectorRun(t, "bob", "print('bob is served')"), "bob is served\n")
}

// TestHTTPAnotherUsersSessionsAreNeverEnded: on a server whose every
// place is taken by bob's idle sessions, alice's one-shot call is refused
// (503 naming --max-sessions): one user never ends another's sessions.
// Bob's sessions still run cells, and bob's own next call makes room of
// his least recently used idle one.
func TestHTTPAnotherUsersSessionsAreNeverEnded(t *testing.T) {
	needEnv(t)
	b := startHTTP(t, home(t, nil), []string{"CODEBRIDGE_MAX_SESSIONS_PER_USER=2"}, "--token-file", teamTokenFile(t), "--max-sessions", "2", "--warm", "0")
	bob := []*mcp.ClientSession{b.connectAs(t, "bob"), b.connectAs(t, "bob")}
	out, ok := b.inspectorHTTP(t, "alice", "--method", "tools/list")
	if ok {
		t.Fatalf("alice was served on a server full of bob's sessions:\n%s", out)
	}
	mustContain(t, out, "at most 2 sessions at once (--max-sessions)", "by other users")
	for i, cs := range bob {
		if r, err := runPython(cs, "print('bob', 6 * 7)"); err != nil || r.isError || r.text != "bob 42\n" {
			t.Fatalf("bob's session %d after alice's call: %v %q", i+1, err, r.text)
		}
	}
	mustContain(t, b.inspectorRun(t, "bob", "print('bob again')"), "bob again\n", "ended an older session of yours", "you had the 2 sessions one user may have open at once")
}
