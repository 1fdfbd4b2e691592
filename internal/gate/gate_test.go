package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func tool(name string) protocol.Target {
	return protocol.Target{Kind: "tool", Server: "mem", Name: name}
}

var (
	yes, no   = true, false
	readOnlyA = &mcp.ToolAnnotations{ReadOnlyHint: true}
	additive  = &mcp.ToolAnnotations{DestructiveHint: &no}
	destroy   = &mcp.ToolAnnotations{DestructiveHint: &yes}
)

// TestPolicyModes: the modes read the annotations the way the MCP spec
// means them (no annotations: may destroy).
func TestPolicyModes(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		a    *mcp.ToolAnnotations
		want Verdict
	}{
		{Open, destroy, Allow}, {Open, nil, Allow},
		{AskDestructive, readOnlyA, Allow}, {AskDestructive, additive, Allow}, {AskDestructive, destroy, Ask}, {AskDestructive, nil, Ask},
		{ReadOnly, readOnlyA, Allow}, {ReadOnly, additive, Deny}, {ReadOnly, nil, Deny},
	} {
		p := Policy{Mode: c.mode}
		if got := p.Decide(tool("x"), c.a); got.Verdict != c.want || !strings.Contains(got.Rule, string(c.mode)) {
			t.Errorf("%s %+v: %+v, want %s", c.mode, c.a, got, c.want)
		}
	}
}

// TestPolicyRules: deny beats ask beats allow, an allow list denies the
// rest, rules beat the mode, and the rule is named with its file.
func TestPolicyRules(t *testing.T) {
	p := Policy{Mode: ReadOnly, Servers: map[string]Rules{
		"mem":  {Tools: Lists{Allow: []string{"read_*", "delete_all"}, Deny: []string{"delete_*"}, Ask: []string{"create_*"}}, Source: "/cfg/a.json"},
		"open": {Tools: Lists{Deny: []string{"drop"}}},
	}}
	for name, want := range map[string]string{
		"read_graph":   `allow allow "read_*"`,
		"delete_all":   `deny deny "delete_*"`,
		"create_thing": `ask ask "create_*"`,
		"other":        `deny allow of server "mem" in /cfg/a.json (the tool is in none`,
	} {
		d := p.Decide(tool(name), destroy)
		got := string(d.Verdict) + " " + d.Rule
		v, rest, _ := strings.Cut(want, " ")
		if string(d.Verdict) != v || !strings.Contains(got, rest) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if d := p.Decide(protocol.Target{Kind: "tool", Server: "open", Name: "drop"}, readOnlyA); d.Verdict != Deny {
		t.Errorf("deny-only rule: %+v", d)
	}
	if d := p.Decide(protocol.Target{Kind: "tool", Server: "open", Name: "look"}, readOnlyA); d.Verdict != Allow || d.Rule != "policy read-only" {
		t.Errorf("unmatched falls to the mode: %+v", d)
	}
	if !p.Hidden("mem", &mcp.Tool{Name: "delete_x"}) || p.Hidden("mem", &mcp.Tool{Name: "create_x"}) {
		t.Error("Hidden: only denied tools are hidden")
	}
	if (Rules{Prompts: Lists{Deny: []string{"[a"}}}).CheckPatterns() == nil {
		t.Error("a bad pattern passed")
	}
}

type fakeUpstream struct {
	got    json.RawMessage
	called int
	res    string
	err    error
}

func (f *fakeUpstream) do(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
	f.called++
	f.got = p
	return json.RawMessage(f.res), f.err
}

func newGate(t *testing.T, p Policy) (*Session, string) {
	t.Helper()
	r, err := NewRedactor([]string{"email"}, nil, []Secret{{Name: "mem.env.KEY", Value: "key-123456"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := OpenAudit(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return New(Config{Policy: p, Redactor: r, Audit: a, ApprovalTimeout: time.Minute}).NewSession(), path
}

func readRecords(t *testing.T, path string) []Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, bad, err := ReadAudit(bytes.NewReader(b), time.Time{})
	if err != nil || bad > 0 {
		t.Fatalf("reading the audit: %v, %d bad lines", err, bad)
	}
	return recs
}

// TestThroughOrder: a denied call never reaches the upstream and names
// its rule; an allowed one reaches it with real values put back, its
// result comes back redacted, and the audit has the call line (with the
// arguments' hash, not the arguments) and the done line.
func TestThroughOrder(t *testing.T) {
	s, path := newGate(t, Policy{Servers: map[string]Rules{"mem": {Tools: Lists{Deny: []string{"drop_*"}}}}})
	up := &fakeUpstream{res: `{"content":[{"type":"text","text":"saved carol@example.com with key-123456"}]}`}
	_, err := s.Through(context.Background(), Request{Target: tool("drop_all"), Params: json.RawMessage(`{"arguments":{}}`)}, up.do)
	var de *DeniedError
	if !errors.As(err, &de) || up.called != 0 || !strings.Contains(err.Error(), `rule tools.deny "drop_*"`) {
		t.Fatalf("denied call: %v (upstream called %d times)", err, up.called)
	}

	tok := s.Redact("carol@example.com")
	res, err := s.Through(context.Background(), Request{Target: tool("save"), Params: json.RawMessage(`{"server":"mem","tool":"save","arguments":{"who":"` + tok + `"}}`)}, up.do)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(up.got, []byte(`"who":"carol@example.com"`)) {
		t.Fatalf("the upstream got %s", up.got)
	}
	if string(res.JSON) != `{"content":[{"text":"saved <email_1> with <secret:mem.env.KEY>","type":"text"}]}` {
		t.Fatalf("result: %s", res.JSON)
	}
	recs := readRecords(t, path)
	if len(recs) != 3 || recs[0].Outcome != "denied" || recs[1].Event != "call" || recs[1].Decision != "allow" || recs[2].Event != "done" || recs[2].ID != recs[1].ID {
		t.Fatalf("records: %+v", recs)
	}
	line, _ := os.ReadFile(path)
	if bytes.Contains(line, []byte("carol")) || bytes.Contains(line, []byte("key-123456")) || recs[1].ArgSHA == "" {
		t.Fatalf("the audit holds private data or no hash:\n%s", line)
	}
}

// TestThroughErrorsAreRedacted: an upstream error that quotes a secret
// reaches neither the sandbox nor the audit log with it.
func TestThroughErrorsAreRedacted(t *testing.T) {
	s, path := newGate(t, Policy{})
	up := &fakeUpstream{err: errors.New("login with key-123456 refused")}
	_, err := s.Through(context.Background(), Request{Target: tool("login"), Params: json.RawMessage(`{}`)}, up.do)
	if err == nil || strings.Contains(err.Error(), "key-123456") {
		t.Fatalf("error: %v", err)
	}
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("key-123456")) {
		t.Fatalf("audit: %s", b)
	}
}

// TestApproval: accept, accept for the session (not asked again), decline
// with its reason, no way to ask, and no answer in time.
func TestApproval(t *testing.T) {
	ask := Policy{Servers: map[string]Rules{"mem": {Tools: Lists{Ask: []string{"*"}}}}}
	call := func(s *Session, name string, a Asker) error {
		_, err := s.Through(context.Background(), Request{Target: tool(name), Params: json.RawMessage(`{}`), Ask: a}, (&fakeUpstream{res: `{}`}).do)
		return err
	}
	s, path := newGate(t, ask)
	asked := 0
	answer := func(a Answer) Asker {
		return func(context.Context, Question) (Answer, error) { asked++; return a, nil }
	}
	if err := call(s, "once", answer(Answer{Allow: true})); err != nil || asked != 1 {
		t.Fatalf("accept: %v", err)
	}
	if err := call(s, "once", answer(Answer{Allow: false, Reason: "declined"})); err == nil || !strings.Contains(err.Error(), "the user declined") {
		t.Fatalf("decline: %v", err)
	}
	_ = call(s, "always", answer(Answer{Allow: true, Scope: ForSession}))
	asked = 0
	if err := call(s, "always", answer(Answer{})); err != nil || asked != 0 {
		t.Fatalf("for the session: %v, asked %d times", err, asked)
	}
	// An explicit ask rule wins over an allow list and the mode: the advice
	// names the rule, not either of those.
	if err := call(s, "x", nil); err == nil || !strings.Contains(err.Error(), "remove it from that ask rule") ||
		strings.Contains(err.Error(), "--policy open") || strings.Contains(err.Error(), `"allow"`) {
		t.Fatalf("no client, ask rule: %v", err)
	}
	byMode, _ := newGate(t, Policy{Mode: AskDestructive})
	if err := call(byMode, "x", nil); err == nil || !strings.Contains(err.Error(), "--policy open") {
		t.Fatalf("no client, ask by the mode: %v", err)
	}
	if err := unanswered(t, s.g.cfg.ApprovalTimeout, func(a Asker) error { return call(s, "slow", a) }); err == nil || !strings.Contains(err.Error(), "in time") {
		t.Fatalf("no answer: %v", err)
	}
	var by []string
	for _, r := range readRecords(t, path) {
		if r.Event == "call" {
			by = append(by, r.By)
		}
	}
	if strings.Join(by, ",") != "user,user,user,session,no-client,timeout" {
		t.Fatalf("decided by: %v", by)
	}
}

// unanswered is the error of a call (made by call, with the asker it is
// given) whose question nobody answers, under a fake clock
// (testing/synctest): it fails the test unless the question waited
// exactly timeout, the approval timeout, before it was given up.
func unanswered(t *testing.T, timeout time.Duration, call func(Asker) error) error {
	t.Helper()
	var err error
	synctest.Test(t, func(t *testing.T) {
		var waited time.Duration
		wait := func(ctx context.Context, _ Question) (Answer, error) {
			start := time.Now()
			<-ctx.Done()
			waited = time.Since(start)
			return Answer{}, ctx.Err()
		}
		err = call(wait)
		if waited != timeout {
			t.Errorf("the question waited %v for its answer; want the approval timeout, %v", waited, timeout)
		}
	})
	return err
}

// TestApprovalAnsweredJustInTime: under a fake clock, an answer that
// comes a moment before the approval timeout decides the call; the
// default timeout is DefaultApprovalTimeout.
func TestApprovalAnsweredJustInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{Policy: Policy{Servers: map[string]Rules{"mem": {Tools: Lists{Ask: []string{"*"}}}}}}).NewSession()
		late := func(ctx context.Context, _ Question) (Answer, error) {
			select {
			case <-time.After(DefaultApprovalTimeout - time.Nanosecond):
				return Answer{Allow: true}, nil
			case <-ctx.Done():
				return Answer{}, ctx.Err()
			}
		}
		_, err := s.Through(context.Background(), Request{Target: tool("slow"), Params: json.RawMessage(`{}`), Ask: late}, (&fakeUpstream{res: `{}`}).do)
		if err != nil {
			t.Fatalf("an answer in time was not taken: %v", err)
		}
	})
}

// TestEntriesMergeDone: the audit command's view joins call and done, and
// marks a call without a done line unfinished.
func TestEntriesMergeDone(t *testing.T) {
	recs := []Record{{Event: "call", ID: "1", Session: "s"}, {Event: "done", ID: "1", Session: "s", Outcome: "ok", DurationMS: 2}, {Event: "call", ID: "2", Session: "s"}, {Event: "run", ID: "run-3", Session: "s", Outcome: "ok"}}
	e := Entries(recs)
	if len(e) != 3 || e[0].Outcome != "ok" || e[0].DurationMS != 2 || e[1].Outcome != "unfinished" || e[2].Event != "run" {
		t.Fatalf("%+v", e)
	}
}
