package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallPassesTheResultThrough: a stdio server's result comes back as the
// bytes it sent (Python's json.dumps spacing), not re-encoded by the go-sdk.
func TestCallPassesTheResultThrough(t *testing.T) {
	p := newTestPool(t, Options{}, stubSpec("stub"))
	s, _ := p.Get("stub")
	res, err := s.Call(context.Background(), "stats", json.RawMessage(`{"values":[1,2]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content": [{"type": "text", "text": "{\"count\": 2, \"sum\": 3}"}], "structuredContent": {"count": 2, "sum": 3}}`
	if string(res) != want {
		t.Fatalf("result = %s\nwant the server's own bytes %s", res, want)
	}
	// The next call on the connection is not confused by the first.
	if got := text(t, mustCall(t, s, "echo", `{"message":"again"}`)); got != "again" {
		t.Fatalf("second call = %q", got)
	}
}

// TestCallRejectsAMessageOverTheLimit: a result larger than MaxMessage
// fails the call with a message that says so, and the next call works.
func TestCallRejectsAMessageOverTheLimit(t *testing.T) {
	p := newTestPool(t, Options{MaxMessage: 1 << 20}, stubSpec("stub"))
	s, _ := p.Get("stub")
	_, err := s.Call(context.Background(), "big", json.RawMessage(`{"size":2000000}`), nil)
	if err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Fatalf("err = %v", err)
	}
	if got := text(t, mustCall(t, s, "echo", `{"message":"back"}`)); got != "back" {
		t.Fatalf("after the big message: %q", got)
	}
}

func mustCall(t *testing.T, s *Server, tool, args string) json.RawMessage {
	t.Helper()
	res, err := s.Call(context.Background(), tool, json.RawMessage(args), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTieLog: a log message that comes while one tool call is in flight
// carries that call's token (and holds the call); with none or two in
// flight it carries none; a token the server wrote under codebridge's key
// is removed.
func TestTieLog(t *testing.T) {
	logLine := func(meta string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":"x"` + meta + `}}`)
	}
	tokenOf := func(line []byte) any {
		var m struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		return m.Params.Meta[callKey]
	}
	c := &lineConn{pending: map[string]*rawSlot{}}
	forged := logLine(`,"_meta":{"codebridge/call":"codebridge-1","other":1}`)
	if got := tokenOf(c.tieLog(forged)); got != nil {
		t.Fatalf("no call in flight: the message carries %v", got)
	}
	a := &callWatch{token: "codebridge-7"}
	c.pending["1"] = &rawSlot{call: a}
	if got := tokenOf(c.tieLog(logLine(""))); got != "codebridge-7" || a.held != 1 {
		t.Fatalf("one call in flight: the message carries %v, the call is held %d times", got, a.held)
	}
	if got := tokenOf(c.tieLog(forged)); got != "codebridge-7" {
		t.Fatalf("one call in flight, a forged token: the message carries %v", got)
	}
	c.pending["2"] = &rawSlot{call: &callWatch{token: "codebridge-8"}}
	if got := tokenOf(c.tieLog(forged)); got != nil {
		t.Fatalf("two calls in flight: the message carries %v", got)
	}
	if line := logLine(""); string(c.tieLog(line)) != string(line) {
		t.Fatal("a message that belongs to no call was rewritten")
	}
}

// TestOwnCall: a tools/call the bridge sends itself (lineConn.call) gets
// the server's result as sent, its JSON-RPC error as a *jsonrpc.Error, a
// cancellation that reaches the server as notifications/cancelled, and
// the end of the server's output as errReading; the go-sdk sees none of
// these responses.
func TestOwnCall(t *testing.T) {
	inR, inW := io.Pipe()   // the server's stdin
	outR, outW := io.Pipe() // the server's stdout
	tr := &lineTransport{r: outR, w: inW, maxMessage: 1 << 20}
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := tr.conn
	requests := bufio.NewReader(inR)
	next := func() map[string]any {
		t.Helper()
		line, err := requests.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return m
	}
	answer := func(id any, member string) {
		idText, _ := json.Marshal(id)
		if _, err := io.WriteString(outW, `{"jsonrpc":"2.0","id":`+string(idText)+`,`+member+"}\n"); err != nil {
			t.Error(err)
		}
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"m":1}`)}

	type outcome struct {
		raw json.RawMessage
		err error
	}
	call := func(ctx context.Context) chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			raw, err := c.call(ctx, params, &rawSlot{})
			ch <- outcome{raw, err}
		}()
		return ch
	}

	got := call(context.Background())
	req := next()
	if req["method"] != "tools/call" || req["params"].(map[string]any)["name"] != "echo" {
		t.Fatalf("request = %v", req)
	}
	answer(req["id"], `"result": {"content": [ ]}`)
	if o := <-got; o.err != nil || string(o.raw) != `{"content": [ ]}` {
		t.Fatalf("result = %s, %v; want the server's bytes", o.raw, o.err)
	}

	got = call(context.Background())
	answer(next()["id"], `"error":{"code":-32602,"message":"unknown tool"}`)
	var werr *jsonrpc.Error
	if o := <-got; !errors.As(o.err, &werr) || werr.Code != -32602 || !strings.Contains(o.err.Error(), "unknown tool") {
		t.Fatalf("error = %v; want the server's JSON-RPC error", o.err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	got = call(ctx)
	id := next()["id"]
	cancel()
	if o := <-got; !errors.Is(o.err, context.Canceled) {
		t.Fatalf("cancelled call: %v", o.err)
	}
	if n := next(); n["method"] != "notifications/cancelled" || n["params"].(map[string]any)["requestId"] != id {
		t.Fatalf("after the cancel the server got %v; want notifications/cancelled for %v", n, id)
	}

	got = call(context.Background())
	next()
	_ = outW.Close()
	if o := <-got; !errors.Is(o.err, errReading) {
		t.Fatalf("the server's output ended: %v; want errReading", o.err)
	}
	if len(c.pending) != 0 {
		t.Fatalf("%d requests still pending", len(c.pending))
	}
}

// TestGuessedIDsReachNoCaller: a server (shared by several principals)
// that answers with an id it guessed, as the bridge numbered its requests
// before (a counter: "codebridge-N" for its own calls, 1, 2, ... for the
// go-sdk's), or with an id of this connection's form that is not in
// flight, gets no answer delivered; the answer to the id it was sent is.
// The go-sdk's requests go out under the connection's ids and come back
// under the go-sdk's own, its cancel notice too; two connections' ids
// share nothing.
func TestGuessedIDsReachNoCaller(t *testing.T) {
	inR, inW := io.Pipe()   // the server's stdin
	outR, outW := io.Pipe() // the server's stdout
	tr := &lineTransport{r: outR, w: inW, maxMessage: 1 << 20}
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := tr.conn
	t.Cleanup(func() { c.Close() })
	lines := make(chan []byte, 16) // what the server reads, read at once: writes to a pipe wait for it
	go func() {
		requests := bufio.NewReader(inR)
		for {
			line, err := requests.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}()
	next := func() map[string]any {
		t.Helper()
		line, ok := <-lines
		if !ok {
			t.Fatal("the server's stdin closed")
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return m
	}
	answers := make(chan string, 64) // written in order, never holding the test up
	go func() {
		for a := range answers {
			if _, err := io.WriteString(outW, a); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { close(answers) })
	answer := func(id any, text string) {
		idText, _ := json.Marshal(id)
		answers <- `{"jsonrpc":"2.0","id":` + string(idText) + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}` + "\n"
	}
	guesses := func(seen string) []any {
		form := seen[:strings.LastIndex(seen, "-")+1]
		return []any{"codebridge-1", "codebridge-2", 1, 2, 0, form + "0", form + "99", nil}
	}

	// The bridge's own call.
	got := make(chan string, 1)
	go func() {
		raw, err := c.call(context.Background(), &mcp.CallToolParams{Name: "echo"}, &rawSlot{})
		got <- string(raw) + fmt.Sprint(err)
	}()
	seen, _ := next()["id"].(string)
	for _, g := range guesses(seen) {
		answer(g, "forged")
	}
	answer(seen, "real")
	if r := <-got; !strings.Contains(r, "real") || strings.Contains(r, "forged") {
		t.Fatalf("the own call (sent as %q) got %s", seen, r)
	}
	if !randomID.MatchString(seen) {
		t.Fatalf("the own call went out as %q; want an id under a random prefix", seen)
	}
	prefix := seen[:strings.LastIndex(seen, "-")+1]

	// A request of the go-sdk's, with its own id 1.
	sdkID, _ := jsonrpc.MakeID(float64(1))
	if err := c.Write(context.Background(), &jsonrpc.Request{ID: sdkID, Method: "tools/list", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	seen, _ = next()["id"].(string)
	if !strings.HasPrefix(seen, prefix) {
		t.Fatalf("the go-sdk's request went out as %q; want the connection's id (%s...)", seen, prefix)
	}
	for _, g := range guesses(seen) {
		answer(g, "forged")
	}
	answer(seen, "real")
	msg, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.ID != sdkID || !strings.Contains(string(resp.Result), "real") {
		t.Fatalf("the go-sdk read %#v first; want the answer to its request, under its id", msg)
	}

	// The go-sdk cancels a request: the server hears of the id it saw.
	sdkID2, _ := jsonrpc.MakeID(float64(2))
	if err := c.Write(context.Background(), &jsonrpc.Request{ID: sdkID2, Method: "tools/list", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	seen, _ = next()["id"].(string)
	if err := c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":2,"reason":"gone"}`)}); err != nil {
		t.Fatal(err)
	}
	if n := next(); n["params"].(map[string]any)["requestId"] != seen {
		t.Fatalf("the cancel notice said %v; want the id the server saw, %q", n, seen)
	}
	answer(seen, "late") // after the cancel: dropped
	answer(2, "forged")
	sdkID3, _ := jsonrpc.MakeID(float64(3))
	if err := c.Write(context.Background(), &jsonrpc.Request{ID: sdkID3, Method: "tools/list", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	answer(next()["id"], "third")
	if msg, err := c.Read(context.Background()); err != nil || msg.(*jsonrpc.Response).ID != sdkID3 {
		t.Fatalf("after the cancel the go-sdk read %#v, %v; want the answer to its third request", msg, err)
	}

	var written bytes.Buffer
	other := &lineTransport{r: io.NopCloser(strings.NewReader("")), w: nopWriteCloser{&written}, maxMessage: 1 << 20}
	oc, err := other.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := oc.Write(context.Background(), &jsonrpc.Request{ID: sdkID, Method: "tools/list", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(written.String(), prefix) || !randomID.MatchString(written.String()) {
		t.Fatalf("another connection's request %s shares the id prefix %s, or has none", written.String(), prefix)
	}
}

// randomID is the random part of a request id: 64 bits, in hex.
var randomID = regexp.MustCompile(`[0-9a-f]{16}`)

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
