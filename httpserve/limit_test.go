package httpserve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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

// TestSessionCapPerUser: a user at the cap is refused, naming the cap;
// another user is served; a full server names the total; back-to-back
// sessions of one client (each with the go-sdk's discovery probe first)
// are counted once each.
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
	}
	if code, _, body := initialize(t, url, alice); code != 503 || !strings.Contains(body, "--max-sessions-per-user") || !strings.Contains(body, `alice\" has 2 open`) {
		t.Fatalf("alice's third session: %d %s", code, body)
	}
	cs, err := connect(ctx, url, bob, nil)
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	defer cs.Close()
	if code, _, body := initialize(t, url, carol); code != 503 || !strings.Contains(body, "--max-sessions)") {
		t.Fatalf("carol on a full server: %d %s", code, body)
	}
}

// TestSessionCapPerUserDerived: with a small total and no cap per user
// set, the attacker (one token holder) gets one place of four, not all
// of them; another user still opens a session. The default is a quarter
// of the total, at least one.
func TestSessionCapPerUserDerived(t *testing.T) {
	for total, want := range map[int]int{1: 1, 3: 1, 4: 1, 8: 2, 32: 8, 100: 25} {
		if got := DefaultMaxSessionsPerUser(total); got != want {
			t.Errorf("the default per user of %d sessions: %d, want %d", total, got, want)
		}
	}
	mallory, bob := token, strings.Repeat("b", 20)
	tokens, _ := ParseTokens("mallory " + mallory + "\nbob " + bob)
	url := serve(t, Options{Tokens: tokens, MaxSessions: 4})
	cs, err := connect(context.Background(), url, mallory, nil)
	if err != nil {
		t.Fatalf("mallory's first session: %v", err)
	}
	defer cs.Close()
	for i := range 3 {
		if code, _, body := initialize(t, url, mallory); code != 503 || !strings.Contains(body, "--max-sessions-per-user") {
			t.Fatalf("mallory's session %d of a server of 4: %d %s", i+2, code, body)
		}
	}
	cs, err = connect(context.Background(), url, bob, nil)
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	defer cs.Close()
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
	if line, err := rd.ReadString('\n'); err != nil || !strings.Contains(line, " 100 ") {
		t.Fatalf("%q %v", line, err)
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
