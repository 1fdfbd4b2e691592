package httpserve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// initialize POSTs an initialize request as the holder of tok.
func initialize(t *testing.T, url, tok string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// hold opens the standalone stream (a GET) of session id as the holder
// of tok, and returns once the server answered its header: from then on
// the server serves it. The stream ends with the test.
func hold(t *testing.T, url, tok, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(sessionIDHeader, id)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("the stream of session %s: %d", id, resp.StatusCode)
	}
}

// logBuffer is a log the server writes while a test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// TestSessionCapPerUser: a user at the cap whose every session is busy
// (an open stream each) is refused, naming the cap and why; another user
// is served; a full server names the total, and ends none of another
// user's sessions (bob's idle one stays) to make room for carol.
func TestSessionCapPerUser(t *testing.T) {
	alice, bob, carol := token, strings.Repeat("b", 20), strings.Repeat("c", 20)
	tokens, _ := ParseTokens("alice " + alice + "\nbob " + bob + "\ncarol " + carol)
	url := serve(t, Options{Tokens: tokens, MaxSessions: 3, MaxSessionsPerUser: 2})
	ctx := context.Background()
	for i := range 2 {
		cs, err := connect(ctx, url, alice, nil)
		if err != nil {
			t.Fatalf("alice's session %d: %v", i+1, err)
		}
		defer cs.Close()
		hold(t, url, alice, cs.ID())
	}
	if code, _, body := initialize(t, url, alice); code != 503 || !strings.Contains(body, "--max-sessions-per-user") || !strings.Contains(body, `alice\" has 2 open`) ||
		!strings.Contains(body, "open stream") {
		t.Fatalf("alice's third session: %d %s", code, body)
	}
	bs, err := connect(ctx, url, bob, nil)
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	defer bs.Close()
	if code, _, body := initialize(t, url, carol); code != 503 || !strings.Contains(body, "--max-sessions)") {
		t.Fatalf("carol on a full server: %d %s", code, body)
	}
	if _, err := bs.ListTools(ctx, nil); err != nil {
		t.Fatalf("bob's idle session was ended for carol: %v", err)
	}
}

// TestSessionCapEndsLeastRecentlyUsedIdle: a user at the cap (one-shot
// clients that never end their sessions) gets a new session: the
// least recently used of their idle sessions is ended for it, and the log
// says so, naming the user; their busy session (an open stream), though
// older, and their more recently used one stay. Another user's idle
// session is never ended for them.
func TestSessionCapEndsLeastRecentlyUsedIdle(t *testing.T) {
	alice, bob := token, strings.Repeat("b", 20)
	tokens, _ := ParseTokens("alice " + alice + "\nbob " + bob)
	var log logBuffer
	url := serve(t, Options{Tokens: tokens, MaxSessions: 5, MaxSessionsPerUser: 3, Log: log.logger()})
	ctx := context.Background()
	var cs [3]*mcp.ClientSession
	for i := range cs {
		c, err := connect(ctx, url, alice, nil)
		if err != nil {
			t.Fatalf("alice's session %d: %v", i+1, err)
		}
		defer c.Close()
		cs[i] = c
	}
	hold(t, url, alice, cs[0].ID())                      // the oldest, busy
	if _, err := cs[1].ListTools(ctx, nil); err != nil { // used after cs[2]: cs[2] is the least recently used idle one
		t.Fatal(err)
	}
	bs, err := connect(ctx, url, bob, nil)
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	defer bs.Close()
	if code, _, body := initialize(t, url, alice); code != 200 {
		t.Fatalf("alice's fourth session: %d %s", code, body)
	}
	if _, err = cs[2].ListTools(ctx, nil); err == nil {
		t.Fatal("alice's least recently used idle session still answers")
	}
	for _, c := range []*mcp.ClientSession{cs[0], cs[1], bs} {
		if _, err = c.ListTools(ctx, nil); err != nil {
			t.Fatalf("a session that was not the least recently used idle one of alice's was ended: %v", err)
		}
	}
	if got := log.String(); !strings.Contains(got, "level=INFO msg=\"ended a user's least recently used idle session") || !strings.Contains(got, "user=alice") {
		t.Fatalf("the log does not say it:\n%s", got)
	}
	// The total is full now (alice 3, bob 1, and one more of bob's): alice
	// makes room of her own idle one, never of bob's.
	b2, err := connect(ctx, url, bob, nil)
	if err != nil {
		t.Fatalf("bob's second: %v", err)
	}
	defer b2.Close()
	if code, _, body := initialize(t, url, alice); code != 200 {
		t.Fatalf("alice on a full server with an idle session of her own: %d %s", code, body)
	}
	for _, c := range []*mcp.ClientSession{bs, b2} {
		if _, err := c.ListTools(ctx, nil); err != nil {
			t.Fatalf("bob's session was ended for alice: %v", err)
		}
	}
}

// TestSessionCapPerUserDerived: with a small total and no cap per user
// set, the attacker (one token holder) gets one place of four, not all
// of them: each new session of theirs ends their previous, idle one, and
// with that one busy the next is refused; other users still open
// sessions. The default is a quarter of the total, at least one.
func TestSessionCapPerUserDerived(t *testing.T) {
	for total, want := range map[int]int{1: 1, 3: 1, 4: 1, 8: 2, 32: 8, 100: 25} {
		if got := DefaultMaxSessionsPerUser(total); got != want {
			t.Errorf("the default per user of %d sessions: %d, want %d", total, got, want)
		}
	}
	mallory, bob, carol, dave := token, strings.Repeat("b", 20), strings.Repeat("c", 20), strings.Repeat("d", 20)
	tokens, _ := ParseTokens("mallory " + mallory + "\nbob " + bob + "\ncarol " + carol + "\ndave " + dave)
	url := serve(t, Options{Tokens: tokens, MaxSessions: 4})
	for i := range 3 {
		if code, _, body := initialize(t, url, mallory); code != 200 {
			t.Fatalf("mallory's session %d of a server of 4: %d %s", i+1, code, body)
		}
	}
	ctx := context.Background()
	for _, tok := range []string{bob, carol, dave} {
		cs, err := connect(ctx, url, tok, nil)
		if err != nil {
			t.Fatalf("another user, after mallory opened 3 sessions: %v", err)
		}
		defer cs.Close()
	}
	ms, err := connect(ctx, url, mallory, nil)
	if err != nil {
		t.Fatalf("mallory, in place of her idle session: %v", err)
	}
	defer ms.Close()
	hold(t, url, mallory, ms.ID())
	if code, _, body := initialize(t, url, mallory); code != 503 || !strings.Contains(body, "--max-sessions") {
		t.Fatalf("mallory with her one session busy: %d %s", code, body)
	}
}

// TestSessionCapNeedsTokens: without tokens no user can be told from
// another, so only the total applies.
func TestSessionCapNeedsTokens(t *testing.T) {
	url := serve(t, Options{MaxSessions: 3, MaxSessionsPerUser: 1})
	for i := range 3 {
		cs, err := connect(context.Background(), url, "", nil)
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		defer cs.Close()
	}
}

// TestStalledBody: a request whose body stalls inside the server blocks
// no other session, and is answered 408 by the server.
func TestStalledBody(t *testing.T) {
	tokens, _ := ParseTokens(token)
	url := serve(t, Options{Tokens: tokens, BodyTimeout: 500 * time.Millisecond})
	host := strings.TrimPrefix(url, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a failure guard
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n", host, token)
	rd := bufio.NewReader(conn)
	if line, rerr := rd.ReadString('\n'); rerr != nil || !strings.Contains(line, " 100 ") {
		t.Fatalf("%q %v", line, rerr)
	}
	cs, err := connect(context.Background(), url, token, nil)
	if err != nil {
		t.Fatalf("a session while a body stalls: %v", err)
	}
	_ = cs.Close()
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the server did not answer the stalled request: %v", err)
		}
		if strings.HasPrefix(line, "HTTP/1.1 ") {
			if !strings.HasPrefix(line, "HTTP/1.1 408") {
				t.Fatalf("the stalled request got %q", line)
			}
			return
		}
	}
}

// TestStalledBodyWithoutToken: a request without a token whose body
// stalls is answered (401) and its connection closed once the body's
// deadline passes: the server reads what is left of an unread body before
// it answers, and without the deadline it would wait for ever.
func TestStalledBodyWithoutToken(t *testing.T) {
	tokens, _ := ParseTokens(token)
	url := serve(t, Options{Tokens: tokens, BodyTimeout: 200 * time.Millisecond})
	host := strings.TrimPrefix(url, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a failure guard
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", host)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !resp.Close {
		t.Fatalf("got %d, closing %v", resp.StatusCode, resp.Close)
	}
}

// TestUnauthorizedChallenge: a 401 carries a Bearer challenge (with
// error="invalid_token" for a wrong token) and says how to send a token.
func TestUnauthorizedChallenge(t *testing.T) {
	tokens, _ := ParseTokens(token)
	url := serve(t, Options{Tokens: tokens})
	for tok, want := range map[string]string{"": `Bearer realm="codebridge"`, "wrong-token-0123456789": `error="invalid_token"`} {
		code, h, body := initialize(t, url, tok)
		if code != 401 || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer ") || !strings.Contains(h.Get("WWW-Authenticate"), want) ||
			!strings.Contains(body, "Authorization: Bearer TOKEN") {
			t.Errorf("token %q: %d %q %s", tok, code, h.Get("WWW-Authenticate"), body)
		}
	}
}

// fakeSessions are the open sessions as a test sets them: whether a cell
// of each runs.
type fakeSessions map[string]bool

func (f fakeSessions) open() iter.Seq2[string, bool] { return maps.All(f) }

// opened reserves a place for principal and opens session id in it.
func opened(t *testing.T, l *sessionLimit, f fakeSessions, principal, id string) admission {
	t.Helper()
	a := l.reserve(principal)
	if a.place == nil {
		t.Fatalf("%s's session %s was refused (%v)", principal, id, a.hit)
	}
	if a.ended != nil {
		delete(f, a.ended.id)
	}
	f[id] = false
	a.place.open(id)
	return a
}

// TestLimitEndsTheLeastRecentlyUsedIdleSession: at a limit, the
// principal's least recently used session that runs no cell and serves
// no request is ended; a session whose cell runs, or with a request in
// flight, never is; with none idle, the limit refuses. A request of the
// principal for a session being ended is refused.
func TestLimitEndsTheLeastRecentlyUsedIdleSession(t *testing.T) {
	f := fakeSessions{}
	l := newSessionLimit(4, 2, f.open, nil)
	opened(t, l, f, "alice", "a1")
	opened(t, l, f, "alice", "a2")
	f["a1"] = true // a cell of a1 runs
	if a := opened(t, l, f, "alice", "a3"); a.ended == nil || a.ended.id != "a2" || a.hit != limitPrincipal {
		t.Fatalf("alice's third session ended %+v, want a2 (a1 runs a cell)", a.ended)
	}
	done, ok := l.use("alice", "a3") // a request in flight
	if !ok {
		t.Fatal("a request for a3 was refused")
	}
	if a := l.reserve("alice"); a.place != nil || a.hit != limitPrincipal || a.n != 2 {
		t.Fatalf("alice with every session busy: %+v", a)
	}
	done()
	f["a1"] = false
	// a1 and a3 idle now; a3 was used last.
	a := l.reserve("alice")
	if a.place == nil || a.ended == nil || a.ended.id != "a1" {
		t.Fatalf("alice's least recently used idle session is a1: %+v", a)
	}
	if _, ok := l.use("alice", "a1"); ok {
		t.Fatal("a request for a session being ended was served")
	}
	if _, ok := l.use("bob", "a1"); !ok {
		t.Fatal("another user's request for a session being ended was told so (the go-sdk refuses it as not theirs)")
	}
}

// TestLimitNeverEndsAnotherPrincipalsSession: on a full server, a
// principal with no idle session of their own is refused, however many
// idle sessions others have; one with an idle session ends that one.
func TestLimitNeverEndsAnotherPrincipalsSession(t *testing.T) {
	f := fakeSessions{}
	l := newSessionLimit(4, 2, f.open, nil)
	opened(t, l, f, "alice", "a1")
	f["a1"] = true // a cell of a1 runs
	opened(t, l, f, "bob", "b1")
	opened(t, l, f, "bob", "b2")
	opened(t, l, f, "carol", "c1")
	if a := l.reserve("dave"); a.place != nil || a.hit != limitTotal || a.n != 4 {
		t.Fatalf("dave, with no session of his own, on a full server: %+v", a)
	}
	if a := l.reserve("alice"); a.place != nil || a.hit != limitTotal {
		t.Fatalf("alice, whose one session runs a cell, on a full server: %+v", a)
	}
	if a := opened(t, l, f, "carol", "c2"); a.ended == nil || a.ended.id != "c1" || a.hit != limitTotal {
		t.Fatalf("carol on a full server ended %+v, want her own c1", a.ended)
	}
	for _, id := range []string{"a1", "b1", "b2"} {
		if l.owned[id] == nil || l.owned[id].ending {
			t.Fatalf("%s was ended for another user", id)
		}
	}
}
