package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// The team's tokens in these tests; a token file names who holds each.
var teamTokens = map[string]string{
	"alice": "alice-token-0123456789abcdef",
	"bob":   "bob-token-0123456789abcdef00",
	"carol": "carol-token-0123456789abcdef",
	"dave":  "dave-token-0123456789abcdef00",
}

// teamTokenFile writes teamTokens as a --token-file.
func teamTokenFile(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for name, tok := range teamTokens {
		fmt.Fprintf(&b, "%s %s\n", name, tok)
	}
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// withBearer adds a token to each request.
type withBearer struct{ token string }

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectAs opens an MCP session as the holder of a token; it fails the
// test if the session does not open within a minute (a guard: the
// assertion is that it opens).
func (b *httpBridge) connectAs(t *testing.T, who string) *mcp.ClientSession {
	t.Helper()
	cs, err := b.tryConnect(who, time.Minute)
	if err != nil {
		t.Fatalf("%s could not open a session: %v", who, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (b *httpBridge) tryConnect(who string, guard time.Duration) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: who, Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url,
		HTTPClient: &http.Client{Transport: withBearer{teamTokens[who]}}, DisableStandaloneSSE: true}, oldProtocol) // sessions: 2025-11-25
}

// initialize POSTs an initialize request with a token (none if empty) and
// returns the answer.
func (b *httpBridge) initialize(t *testing.T, token string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", b.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// TestHTTPStalledBodyBlocksNoOne: a team member's request that announces
// a body and never sends it whole does not stop another member's new
// session from opening and running a cell while it hangs; then the server
// ends the stalled request itself (--body-timeout).
func TestHTTPStalledBodyBlocksNoOne(t *testing.T) {
	needEnv(t)
	// The body timeout is given through the environment, so that a
	// codebridge without the setting starts too (and shows the defect). It
	// must outlast the opening of bob's session (milliseconds), which the
	// test checks rather than assumes.
	b := startHTTP(t, home(t, nil), []string{"CODEBRIDGE_BODY_TIMEOUT=10"}, "--token-file", teamTokenFile(t), "--warm", "0")
	u, err := url.Parse(b.url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A failure guard only: what is asserted is that the server answers
	// or closes the stalled request by itself.
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Minute))
	// Expect: 100-continue makes the server say when its handler starts
	// reading the body: from then on the stall is inside the server.
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: 4096\r\n\r\n", u.Host, teamTokens["alice"])
	rd := bufio.NewReader(conn)
	status, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(status, " 100 ") {
		t.Fatalf("the server did not start reading the body: %q %v", status, err)
	}
	if _, err = rd.ReadString('\n'); err != nil { // the blank line after 100 Continue
		t.Fatal(err)
	}
	if _, err = io.WriteString(conn, `{"jsonrpc":"2.0","id":1,"method":"initialize",`); err != nil {
		t.Fatal(err)
	}
	ended := make(chan string, 1)
	go func() {
		line, rerr := rd.ReadString('\n')
		if rerr != nil {
			line = rerr.Error()
		}
		ended <- line
	}()

	bob, err := b.tryConnect("bob", time.Minute)
	if err != nil {
		t.Fatalf("bob could not open a session while alice's request stalls: %v", err)
	}
	defer bob.Close()
	select {
	case got := <-ended:
		t.Fatalf("the stalled request ended (%q) before bob's session opened, so this run shows nothing: bob took longer than the body timeout", got)
	default:
	}
	if r, err := runPython(bob, "print(6 * 7)"); err != nil || r.isError || r.text != "42\n" {
		t.Fatalf("bob's cell while alice's request stalls: %v %q", err, r.text)
	}

	got := <-ended
	if strings.Contains(got, "i/o timeout") { // the test's guard, not the server
		t.Fatalf("the server never ended the stalled request: %s", got)
	}
	if got != "EOF" && !strings.HasPrefix(got, "HTTP/1.1 408") {
		t.Fatalf("the stalled request was ended with %q, want 408 Request Timeout (or the connection closed)", got)
	}
	if got == "EOF" {
		t.Log("the server closed the stalled request's connection")
	} else {
		rest, _ := io.ReadAll(rd)
		if !strings.Contains(string(rest), "--body-timeout") {
			t.Fatalf("the 408 does not name the setting:\n%s", rest)
		}
	}
}

// holdStream opens the standalone stream (a GET) of session cs as the
// holder of who's token and returns once the server answered its header:
// from then on the session has an open stream. It ends with the test.
func (b *httpBridge) holdStream(t *testing.T, who string, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", b.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Authorization", "Bearer "+teamTokens[who])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s's stream: %d", who, resp.StatusCode)
	}
}

// TestHTTPSessionCapPerUser: one user who has sessions up to the cap per
// user, each busy (an open stream), is refused the next one (503 naming
// --max-sessions-per-user), while another user still opens one and runs
// a cell; when the server is full, the 503 names --max-sessions, and the
// other user's idle session is not ended to make room.
func TestHTTPSessionCapPerUser(t *testing.T) {
	needEnv(t)
	// The cap is given through the environment, so that a codebridge
	// without it starts too (and shows the defect).
	b := startHTTP(t, home(t, nil), []string{"CODEBRIDGE_MAX_SESSIONS_PER_USER=2"},
		"--token-file", teamTokenFile(t), "--max-sessions", "3", "--warm", "0")
	b.holdStream(t, "alice", b.connectAs(t, "alice"))
	b.holdStream(t, "alice", b.connectAs(t, "alice"))
	code, header, body := b.initialize(t, teamTokens["alice"])
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-sessions-per-user") || !strings.Contains(body, `"id":7`) {
		t.Fatalf("alice's third session: %d %s", code, body)
	}
	if header.Get("Retry-After") == "" {
		t.Errorf("the 503 has no Retry-After")
	}
	if _, err := b.tryConnect("alice", time.Minute); err == nil {
		t.Fatal("alice's go-sdk client opened a third session")
	}
	bob := b.connectAs(t, "bob")
	if r, err := runPython(bob, "print('bob is served')"); err != nil || r.isError || r.text != "bob is served\n" {
		t.Fatalf("bob's cell: %v %q", err, r.text)
	}
	code, _, body = b.initialize(t, teamTokens["carol"])
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-sessions)") || strings.Contains(body, "per-user") {
		t.Fatalf("carol's session on a full server: %d %s", code, body)
	}
	if r, err := runPython(bob, "print('bob is still served')"); err != nil || r.isError || r.text != "bob is still served\n" {
		t.Fatalf("bob's session after carol was refused: %v %q", err, r.text)
	}
}

// TestHTTPSessionCapPerUserDefault: on a server of 4 sessions with no
// cap per user set, the attacker (one token holder) opening session
// after session keeps one place, not all four: each new one ends their
// previous, idle one, so three other users still get a place each (with
// a second place of the attacker's, the last would be refused); with
// the attacker's one session busy, the next is refused (503 naming
// --max-sessions-per-user), by a raw request and by the go-sdk's client.
func TestHTTPSessionCapPerUserDefault(t *testing.T) {
	needEnv(t)
	b := startHTTP(t, home(t, nil), nil, "--token-file", teamTokenFile(t), "--max-sessions", "4", "--warm", "0")
	b.connectAs(t, "alice")
	for i := range 3 {
		if code, _, body := b.initialize(t, teamTokens["alice"]); code != http.StatusOK {
			t.Fatalf("alice's session %d of a server of 4, in place of her idle one: %d %s", i+2, code, body)
		}
	}
	// Three other places are left: one each for bob, carol and dave.
	bob := b.connectAs(t, "bob")
	b.connectAs(t, "carol")
	b.connectAs(t, "dave")
	if r, err := runPython(bob, "print('bob is served')"); err != nil || r.isError || r.text != "bob is served\n" {
		t.Fatalf("bob's cell: %v %q", err, r.text)
	}
	b.holdStream(t, "alice", b.connectAs(t, "alice"))
	code, _, body := b.initialize(t, teamTokens["alice"])
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-sessions-per-user") || !strings.Contains(body, "at most 1 sessions") {
		t.Fatalf("alice's second session, her first busy: %d %s", code, body)
	}
	if _, err := b.tryConnect("alice", time.Minute); err == nil {
		t.Fatal("alice's go-sdk client opened a second session")
	}
}

// challengeRecorder is an MCP client's OAuth hook: it keeps the
// WWW-Authenticate challenge of the 401 it is asked to handle, and gives
// up, as a client without a way to sign in would.
type challengeRecorder struct{ challenge chan string }

func (c *challengeRecorder) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

func (c *challengeRecorder) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	c.challenge <- resp.Header.Get("WWW-Authenticate")
	return errors.New("no way to sign in here")
}

// TestHTTPUnauthorizedSaysHowToSendTheToken: a request without a token,
// or with a wrong one, gets 401 with a Bearer challenge (RFC 6750) and a
// body that says how to send the token; the go-sdk client's OAuth hook
// gets the challenge, and the TypeScript SDK's client shows the body.
func TestHTTPUnauthorizedSaysHowToSendTheToken(t *testing.T) {
	needEnv(t)
	b := startHTTP(t, home(t, nil), nil, "--token-file", teamTokenFile(t), "--warm", "0")
	for _, c := range []struct{ token, challenge string }{
		{"", `Bearer realm="codebridge"`},
		{"not-a-token-of-this-server", `error="invalid_token"`},
	} {
		code, header, body := b.initialize(t, c.token)
		if code != http.StatusUnauthorized || !strings.HasPrefix(header.Get("WWW-Authenticate"), "Bearer ") ||
			!strings.Contains(header.Get("WWW-Authenticate"), c.challenge) {
			t.Fatalf("token %q: %d, WWW-Authenticate %q", c.token, code, header.Get("WWW-Authenticate"))
		}
		if !strings.Contains(body, `"Authorization: Bearer TOKEN"`) || !strings.Contains(body, "--token-file") {
			t.Fatalf("token %q: the body does not say how to send one:\n%s", c.token, body)
		}
	}

	rec := &challengeRecorder{challenge: make(chan string, 4)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "oauth-capable", Version: "1"}, nil)
	if cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url, OAuthHandler: rec, DisableStandaloneSSE: true}, nil); err == nil {
		cs.Close()
		t.Fatal("a client without a token connected")
	}
	select {
	case ch := <-rec.challenge:
		if !strings.HasPrefix(ch, `Bearer realm="codebridge"`) {
			t.Fatalf("the go-sdk client's OAuth hook got the challenge %q", ch)
		}
	default:
		t.Fatal("the go-sdk client's OAuth hook was never asked: no 401 reached it")
	}

	script := filepath.Join(t.TempDir(), "client.cjs")
	sdk := filepath.Join(repoRoot, "testdata/npm/node_modules/@modelcontextprotocol/sdk/dist/cjs/client")
	if err := os.WriteFile(script, []byte(`
const { Client } = require(process.argv[2] + "/index.js");
const { StreamableHTTPClientTransport } = require(process.argv[2] + "/streamableHttp.js");
const seen = async (...a) => {
  const r = await fetch(...a);
  if (r.status === 401) console.log("challenge: " + r.headers.get("www-authenticate"));
  return r;
};
const client = new Client({ name: "ts", version: "1" });
client.connect(new StreamableHTTPClientTransport(new URL(process.argv[3]), { fetch: seen }))
  .then(() => { console.log("connected"); process.exit(0); })
  .catch((e) => { console.log("error: " + e.message); process.exit(0); });
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", script, sdk, b.url).CombinedOutput()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `challenge: Bearer realm="codebridge"`) || !strings.Contains(string(out), "Authorization: Bearer TOKEN") ||
		strings.Contains(string(out), "connected") {
		t.Fatalf("the TypeScript SDK's client does not show the challenge and how to send the token:\n%s", out)
	}
	t.Logf("the TypeScript SDK's client says:\n%s", out)
}
