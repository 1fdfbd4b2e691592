package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestCanonicalParams: parameters are parsed and encoded again (sorted,
// compact, shortest escapes, numbers as written); a name given twice at
// any depth is refused, naming where.
func TestCanonicalParams(t *testing.T) {
	got, err := Canonical(json.RawMessage(`{"tool": "t",  "arguments": {"b": [1,  2.50], "a": "\u0041\n", "n": 12345678901234567890}}`))
	if err != nil || string(got) != `{"arguments":{"a":"A\n","b":[1,2.50],"n":12345678901234567890},"tool":"t"}` {
		t.Fatalf("canonical: %s, %v", got, err)
	}
	for _, dup := range []string{`{"a":1,"a":2}`, `{"arguments":{"x":{"path":"/tmp/x","path":"/"}}}`, `{"arguments":[{"k":1,"k":1}]}`} {
		if _, err := Canonical(json.RawMessage(dup)); err == nil {
			t.Errorf("%s passed", dup)
		}
	}
	if _, err := Canonical(json.RawMessage(`{"arguments":{"x":{"path":"/tmp/x","path":"/"}}}`)); err == nil || !strings.Contains(err.Error(), `"path" within "/arguments/x"`) {
		t.Errorf("the error does not say where: %v", err)
	}
}

// TestShowArguments: a question shows each long string cut with its full
// size, escapes what does not print (a bidi override could reorder the
// text a person reads), and counts what it does not show.
func TestShowArguments(t *testing.T) {
	long := strings.Repeat("a", 12345)
	got := showArguments([]byte(`{"note":"` + long + `","path":"/"}`))
	if !strings.HasPrefix(got, `{"note":"aaaa`) || !strings.Contains(got, `…" (12,345 bytes),"path":"/"}`) || len(got) > maxShownString+60 {
		t.Fatalf("a long value: %q", got)
	}
	if got = showArguments([]byte(`{"a":"x\u202egnp.exe","b":"\"q\"\\","c":"é€😀"}`)); got != `{"a":"x\u202egnp.exe","b":"\"q\"\\","c":"é€😀"}` {
		t.Fatalf("escapes: %s", got)
	}
	if got = showArguments([]byte("{\"a\":\"x\u202egnp\u200b\U000e0041\"}")); got != `{"a":"x\u202egnp\u200b\udb40\udc41"}` {
		t.Fatalf("raw characters that do not print: %s", got)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = `"` + strings.Repeat("v", 300) + `"`
	}
	got = showArguments([]byte(`[` + strings.Join(many, ",") + `]`))
	if len(got) > maxShownArgs+maxShownString+100 || !strings.Contains(got, "more bytes of arguments not shown") {
		t.Fatalf("many values: %d bytes, ends %q", len(got), got[len(got)-80:])
	}
}

// TestQuestionShowsWhatRuns: padding and a second name cannot make an
// approval show something other than what the upstream receives: the
// question shows the canonical arguments, each long value cut with its
// size, and the upstream gets exactly that canonical text; a name given
// twice is refused before anyone is asked.
func TestQuestionShowsWhatRuns(t *testing.T) {
	s, _ := newGate(t, Policy{Servers: map[string]Rules{"mem": {Tools: Lists{Ask: []string{"*"}}}}})
	var q Question
	asker := func(_ context.Context, got Question) (Answer, error) { q = got; return Answer{Allow: true}, nil }
	up := &fakeUpstream{res: `{}`}
	pad := strings.Repeat(" ", 600)
	raw := `{"server":"mem","tool":"rm","arguments":{"note":"` + strings.Repeat("z", 1000) + `",` + pad + `"path":"/tmp/\u0078"}}`
	if _, err := s.Through(context.Background(), Request{Target: tool("rm"), Params: json.RawMessage(raw), Ask: asker}, up.do); err != nil {
		t.Fatal(err)
	}
	if len(q.Calls) != 1 {
		t.Fatalf("the question lists %d calls", len(q.Calls))
	}
	if shown := q.Calls[0].Arguments; !strings.Contains(shown, `"path":"/tmp/x"`) || !strings.Contains(shown, `(1,000 bytes)`) || strings.Contains(shown, "  ") {
		t.Fatalf("the question shows %q", shown)
	}
	if want := `{"arguments":{"note":"` + strings.Repeat("z", 1000) + `","path":"/tmp/x"},"server":"mem","tool":"rm"}`; string(up.got) != want {
		t.Fatalf("the upstream got %s", up.got)
	}

	q, up.called = Question{}, 0
	dup := `{"server":"mem","tool":"rm","arguments":{"path":"/tmp/x","path":"/"}}`
	_, err := s.Through(context.Background(), Request{Target: tool("rm"), Params: json.RawMessage(dup), Ask: asker}, up.do)
	var de *DeniedError
	if !errors.As(err, &de) || up.called != 0 || q.Calls != nil || !strings.Contains(err.Error(), `duplicate object member name "path" within "/arguments"`) ||
		!strings.Contains(err.Error(), "send each name once") {
		t.Fatalf("a name given twice: %v (upstream called %d times, asked %+v)", err, up.called, q)
	}
}

// TestUnlistedIsRefused: a request for a tool the server does not list
// under exactly its name is denied whatever the rules, and says so.
func TestUnlistedIsRefused(t *testing.T) {
	s, path := newGate(t, Policy{})
	up := &fakeUpstream{res: `{}`}
	_, err := s.Through(context.Background(), Request{Target: tool("DELETE_ALL"), Params: json.RawMessage(`{}`), Unlisted: true}, up.do)
	if err == nil || up.called != 0 || !strings.Contains(err.Error(), `server "mem" lists no tool named exactly "DELETE_ALL"`) {
		t.Fatalf("unlisted: %v (upstream called %d times)", err, up.called)
	}
	if r := readRecords(t, path); len(r) != 1 || r[0].By != "listing" || r[0].Outcome != "denied" {
		t.Fatalf("audit: %+v", r)
	}
}
