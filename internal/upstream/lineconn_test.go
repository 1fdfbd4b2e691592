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
	res, err := s.Call(context.Background(), nil, "stats", json.RawMessage(`{"values":[1,2]}`))
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
	_, err := s.Call(context.Background(), nil, "big", json.RawMessage(`{"size":2000000}`))
	if err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Fatalf("err = %v", err)
	}
	if got := text(t, mustCall(t, s, "echo", `{"message":"back"}`)); got != "back" {
		t.Fatalf("after the big message: %q", got)
	}
}

func mustCall(t *testing.T, s *Server, tool, args string) json.RawMessage {
	t.Helper()
	res, err := s.Call(context.Background(), nil, tool, json.RawMessage(args))
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

// TestOwnCall: a tools/call the bridge sends itself (lineConn.request) gets
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
	params := toolCallParams("t-1", "echo", json.RawMessage(`{"m":1}`))

	type outcome struct {
		raw json.RawMessage
		err error
	}
	call := func(ctx context.Context) chan outcome {
		ch := make(chan outcome, 1)
		go func() {
			raw, err := c.request(ctx, "tools/call", params, &rawSlot{})
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

// lineServer is the server's end of a lineTransport's connection, for
// tests: next reads the request the connection wrote, answer writes a
// response with a text result (in order, never holding the test up).
type lineServer struct {
	t     *testing.T
	c     *lineConn
	lines chan []byte
	out   chan string
}

func newLineServer(t *testing.T) *lineServer {
	inR, inW := io.Pipe()   // the server's stdin
	outR, outW := io.Pipe() // the server's stdout
	tr := &lineTransport{r: outR, w: inW, maxMessage: 1 << 20}
	if _, err := tr.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := &lineServer{t: t, c: tr.conn, lines: make(chan []byte, 16), out: make(chan string, 64)}
	go func() { // what the server reads, read at once: writes to a pipe wait for it
		requests := bufio.NewReader(inR)
		for {
			line, err := requests.ReadBytes('\n')
			if err != nil {
				close(s.lines)
				return
			}
			s.lines <- line
		}
	}()
	go func() {
		for a := range s.out {
			if _, err := io.WriteString(outW, a); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(s.out)
		s.c.Close()
	})
	return s
}

func (s *lineServer) next() map[string]any {
	s.t.Helper()
	line, ok := <-s.lines
	if !ok {
		s.t.Fatal("the server's stdin closed")
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		s.t.Fatalf("%s: %v", line, err)
	}
	return m
}

func (s *lineServer) answer(id any, text string) {
	idText, _ := json.Marshal(id)
	s.out <- `{"jsonrpc":"2.0","id":` + string(idText) + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}` + "\n"
}

// guess answers with the ids a server could guess from seen, the id it
// was sent: the counters the bridge numbered its requests with before
// ("codebridge-N" for its own calls, 1, 2, ... for the go-sdk's), seen's
// form with a number not in flight, and null.
func (s *lineServer) guess(seen string) {
	form := seen[:strings.LastIndex(seen, "-")+1]
	for _, g := range []any{"codebridge-1", "codebridge-2", 1, 2, 0, form + "0", form + "99", nil} {
		s.answer(g, "forged")
	}
}

// sdkRequest writes a request of the go-sdk's, with its id n.
func sdkRequest(t *testing.T, c mcp.Connection, n float64) jsonrpc.ID {
	t.Helper()
	id, _ := jsonrpc.MakeID(n)
	if err := c.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "tools/list", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return id
}

// resultOf is the result a message carries, if it is a response.
func resultOf(msg jsonrpc.Message) json.RawMessage {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		return resp.Result
	}
	return nil
}

// randomID is the random part of a request id: 64 bits, in hex.
var randomID = regexp.MustCompile(`[0-9a-f]{16}`)

// TestGuessedIDsReachNoOwnCall: a server (shared by several principals)
// that answers the bridge's own call with an id it guessed gets no answer
// delivered; the answer to the id it was sent is (before: the guessed
// "codebridge-1" answered the call).
func TestGuessedIDsReachNoOwnCall(t *testing.T) {
	s := newLineServer(t)
	got := make(chan string, 1)
	go func() {
		raw, err := s.c.request(context.Background(), "tools/call", []byte(`{"name":"echo"}`), &rawSlot{})
		got <- string(raw) + fmt.Sprint(err)
	}()
	seen, _ := s.next()["id"].(string)
	s.guess(seen)
	s.answer(seen, "real")
	if r := <-got; !strings.Contains(r, "real") || strings.Contains(r, "forged") {
		t.Fatalf("the own call (sent as %q) got %s", seen, r)
	}
	if !randomID.MatchString(seen) {
		t.Fatalf("the own call went out as %q; want an id under a random prefix", seen)
	}
}

// TestGuessedIDsReachNoSDKRequest: the go-sdk's requests go out under the
// connection's ids, and an answer under a guessed id never reaches it
// (before: its id 1 went out as it was, and a guessed 1 answered it); the
// answer to the id the server saw comes back under the go-sdk's own; its
// cancel notice names the id the server saw, and a late answer after it
// is dropped.
func TestGuessedIDsReachNoSDKRequest(t *testing.T) {
	s := newLineServer(t)
	first := sdkRequest(t, s.c, 1)
	seen, _ := s.next()["id"].(string)
	s.guess(seen)
	s.answer(seen, "real")
	msg, err := s.c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if resp, ok := msg.(*jsonrpc.Response); !ok || resp.ID != first || !strings.Contains(string(resp.Result), "real") {
		t.Fatalf("the go-sdk read %T %s first (its request went out as %q); want the answer to its request, under its id", msg, resultOf(msg), seen)
	}
	if !randomID.MatchString(seen) {
		t.Fatalf("the go-sdk's request went out as %q; want an id under a random prefix", seen)
	}

	sdkRequest(t, s.c, 2)
	seen, _ = s.next()["id"].(string)
	if err := s.c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":2,"reason":"gone"}`)}); err != nil {
		t.Fatal(err)
	}
	if n := s.next(); n["params"].(map[string]any)["requestId"] != seen {
		t.Fatalf("the cancel notice said %v; want the id the server saw, %q", n, seen)
	}
	s.answer(seen, "late")
	s.answer(2, "forged")
	third := sdkRequest(t, s.c, 3)
	s.answer(s.next()["id"], "third")
	if msg, err := s.c.Read(context.Background()); err != nil || msg.(*jsonrpc.Response).ID != third {
		t.Fatalf("after the cancel the go-sdk read %#v, %v; want the answer to its third request", msg, err)
	}
}

// TestConnectionsShareNoIDs: two connections' request ids have different
// random prefixes, so no server learns from the ids how many requests the
// bridge sent to others.
func TestConnectionsShareNoIDs(t *testing.T) {
	var ids []string
	for range 2 {
		var written bytes.Buffer
		tr := &lineTransport{r: io.NopCloser(strings.NewReader("")), w: nopWriteCloser{&written}, maxMessage: 1 << 20}
		c, err := tr.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sdkRequest(t, c, 1)
		var m struct{ ID string }
		if err := json.Unmarshal(written.Bytes(), &m); err != nil || !randomID.MatchString(m.ID) {
			t.Fatalf("request %s: %v; want an id under a random prefix", written.String(), err)
		}
		ids = append(ids, m.ID[:strings.LastIndex(m.ID, "-")])
	}
	if ids[0] == ids[1] {
		t.Fatalf("two connections share the id prefix %s", ids[0])
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// TestSDKToolCallFindsItsCall: a tools/call the go-sdk sends (a session
// on a newer protocol) is found by the progress token of its own _meta,
// never by one in its arguments: its raw result goes to its call's slot
// (the go-sdk reads the placeholder) and a log message that comes while
// it is in flight is tied to it. A tools/call whose token names no call
// in flight is the go-sdk's to read.
func TestSDKToolCallFindsItsCall(t *testing.T) {
	s := newLineServer(t)
	ws := &callWatchers{}
	s.c.calls = ws
	w, end := ws.watch(nil)
	defer end()
	other, endOther := ws.watch(nil)
	defer endOther()
	write := func(n float64, params string) jsonrpc.ID {
		t.Helper()
		id, _ := jsonrpc.MakeID(n)
		if err := s.c.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(params)}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	write(1, `{"name":"echo","arguments":{"_meta":{"progressToken":"`+other.token+`"}},"_meta":{"progressToken":"`+w.token+`"}}`)
	seen := s.next()["id"]
	s.out <- `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":"mine"}}` + "\n"
	s.answer(seen, "raw")
	if msg, err := s.c.Read(context.Background()); err != nil || !strings.Contains(string(msg.(*jsonrpc.Request).Params), w.token) {
		t.Fatalf("the log message read %#v, %v; want it tied to the call %s", msg, err, w.token)
	}
	msg, err := s.c.Read(context.Background())
	if err != nil || string(resultOf(msg)) != string(placeholderResult) || !strings.Contains(string(w.slot.raw), `"raw"`) {
		t.Fatalf("the go-sdk read %#v, %v, the slot holds %s; want the placeholder, and the result in the slot", msg, err, w.slot.raw)
	}
	if other.slot.raw != nil {
		t.Fatalf("the call named in the arguments got the result %s", other.slot.raw)
	}
	write(2, `{"_meta":{"progressToken":"codebridge-0"},"name":"echo"}`)
	s.answer(s.next()["id"], "plain")
	if msg, err := s.c.Read(context.Background()); err != nil || !strings.Contains(string(resultOf(msg)), "plain") {
		t.Fatalf("the go-sdk read %#v, %v; want its own result", msg, err)
	}
}

// TestHostileArgumentsStayOneRequest: the sandbox's arguments go to a
// stdio server as they came, not encoded again. Arguments whose JSON has
// line breaks between its tokens, around a request of their own for a
// tool the gate would deny, reach the server as one line, one request of
// the tool called; text that is not one JSON value (closing the params
// object to add a second "name") is refused before anything is sent.
func TestHostileArgumentsStayOneRequest(t *testing.T) {
	s := newLineServer(t)
	smuggled := "{\"message\":\"hi\",\n\"x\":\r\n{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"tools/call\",\"params\":{\"name\":\"delete_all\",\"arguments\":{}}}\n}"
	args, err := oneLine(json.RawMessage(smuggled))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := s.c.request(context.Background(), "tools/call", toolCallParams("t-1", "echo", args), &rawSlot{})
		got <- err
	}()
	req := s.next() // fails the test when the line is not one JSON message
	params := req["params"].(map[string]any)
	if params["name"] != "echo" || params["arguments"].(map[string]any)["message"] != "hi" {
		t.Fatalf("the server read %v", req)
	}
	s.answer(req["id"].(string), "ok")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	go func() { // the next line the server reads is the next request's
		_, err := s.c.request(context.Background(), "tools/call", toolCallParams("t-2", "probe", json.RawMessage(`{}`)), &rawSlot{})
		got <- err
	}()
	probe := s.next()
	if probe["params"].(map[string]any)["name"] != "probe" {
		t.Fatalf("the arguments made a line of their own: %v", probe)
	}
	s.answer(probe["id"].(string), "ok")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{}},"name":"delete_all","arguments":{}`, `{"a":1} {"b":2}`, `{"a":`} {
		if _, err := oneLine(json.RawMessage(bad)); err == nil {
			t.Errorf("%s was sent on as arguments", bad)
		}
	}
	if a, err := oneLine(nil); err != nil || string(a) != "{}" {
		t.Errorf("no arguments: %s, %v", a, err)
	}
}

// TestProgressTokensRandom: a call's progress token carries 96 random
// bits, so an upstream cannot count the calls made to other servers from
// two of its own (before: "codebridge-N" from one counter for all).
func TestProgressTokensRandom(t *testing.T) {
	var ws callWatchers
	form := regexp.MustCompile(`^codebridge-[0-9a-f]{24}$`)
	seen := map[string]bool{}
	for range 4 {
		w, end := ws.watch(nil)
		if !form.MatchString(w.token) || seen[w.token] {
			t.Fatalf("progress token %q: want codebridge- and 24 random hex digits, each new", w.token)
		}
		seen[w.token] = true
		end()
	}
}
