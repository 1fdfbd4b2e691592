package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestEnvelopeFindsTheMembers(t *testing.T) {
	cases := []struct{ line, id, method, result string }{
		{`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`, `3`, ``, `{"content":[]}`},
		{`{"result": [1, {"a": "}\"]"}], "id" : "x\"}" , "jsonrpc":"2.0"}`, `"x\"}"`, ``, `[1, {"a": "}\"]"}]`},
		{`{"jsonrpc":"2.0","method":"ping","id":-1.5e3}`, `-1.5e3`, `"ping"`, ``},
		{` { "id" : 7 , "result" : null } `, `7`, ``, `null`},
		{`{"id":1,"result":true}`, `1`, ``, `true`},
		{`[1,2]`, ``, ``, ``},
	}
	for _, c := range cases {
		f := envelope([]byte(c.line))
		if string(f.id) != c.id || string(f.method) != c.method || string(f.result) != c.result {
			t.Errorf("envelope(%s) = id %q method %q result %q", c.line, f.id, f.method, f.result)
		}
	}
}

// FuzzEnvelope holds envelope to encoding/json: on any valid JSON object
// it finds the same id, method and result.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a\"b}"}]}}`,
		`{"id":"x","method":"tools/call","params":{}}`,
		`{"id":1,"result":[],"id":2}`,
		`{"id":1e5,"error":{"code":-1,"message":"]"}}`,
		`{ "result" : "\\" , "id" : null }`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var want map[string]json.RawMessage
		if !json.Valid([]byte(line)) || json.Unmarshal([]byte(line), &want) != nil || want == nil {
			return
		}
		got := envelope([]byte(line))
		for key, span := range map[string][]byte{"id": got.id, "method": got.method, "result": got.result} {
			w, ok := want[key]
			if !ok {
				if span != nil {
					t.Fatalf("%s: found %s %q, which is not there", line, key, span)
				}
				continue
			}
			if !jsonEqual(t, w, span) {
				t.Fatalf("%s: %s = %q, encoding/json says %q", line, key, span, w)
			}
		}
	})
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

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
