package gate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/protocol"
)

func newTestSession(t *testing.T, kinds []string, custom map[string]string, secrets []Secret) *Session {
	t.Helper()
	r, err := NewRedactor(kinds, custom, secrets)
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Redactor: r}).NewSession()
}

// TestRedactRealisticText: each kind is found in ordinary prose, and the
// near-misses beside them (a card number failing Luhn, an order number, a
// date, a version, an IBAN with a wrong check, an SSN that cannot be
// issued, a time, a MAC address) are left alone.
func TestRedactRealisticText(t *testing.T) {
	s := newTestSession(t, []string{"all"}, nil, nil)
	text := `Hi team, Alice Martin (alice.martin@example.co.uk, cc bob+invoices@corp.example) called from +44 20 7946 0958
about order 4111-1111-1111-1112 (not a card) and paid with 4111 1111 1111 1111 on 2024-03-15 at 12:30:45.
Her SSN is 123-45-6789; the form also showed 000-12-3456 and 666-01-2345, which cannot be issued.
Refund to IBAN GB82 WEST 1234 5698 7654 32, not GB00 WEST 1234 5698 7654 32.
Logged in from 127.0.0.42 and 0:0:0:0:0:0:0:1 using app 127.0.1 (build 127.0.0.999), device 00:00:00:00:00:00.
US office: (415) 555-0132. Ticket #20240315, quantity 1234567.`
	got := s.Redact(text)
	for _, want := range []string{"<email_1>", "<email_2>", "<phone_1>", "<card_1>", "<ssn_1>", "<iban_1>", "<ip_1>", "<ip_2>", "<phone_2>"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in:\n%s", want, got)
		}
	}
	for _, gone := range []string{"alice.martin@", "bob+invoices", "7946 0958", "4111 1111 1111 1111", "123-45-6789", "GB82", "127.0.0.42", "0:0:0:0:0:0:0:1", "555-0132"} {
		if strings.Contains(got, gone) {
			t.Errorf("%q still shows:\n%s", gone, got)
		}
	}
	for _, kept := range []string{"4111-1111-1111-1112", "2024-03-15", "12:30:45", "000-12-3456", "666-01-2345", "GB00 WEST 1234 5698 7654 32", "127.0.1 ", "127.0.0.999", "00:00:00:00:00:00", "#20240315", "1234567."} {
		if !strings.Contains(got, kept) {
			t.Errorf("near-miss %q was redacted:\n%s", kept, got)
		}
	}
}

// TestTokensAreStablePerSession: the same value always gets the same
// token within a session; another session numbers afresh.
func TestTokensAreStablePerSession(t *testing.T) {
	s := newTestSession(t, []string{"email"}, nil, nil)
	a := s.Redact("x@example.com y@example.com")
	b := s.Redact("again y@example.com then x@example.com")
	if a != "<email_1> <email_2>" || b != "again <email_2> then <email_1>" {
		t.Fatalf("got %q and %q", a, b)
	}
	other := s.g.NewSession()
	if got := other.Redact("y@example.com"); got != "<email_1>" {
		t.Fatalf("another session: %q", got)
	}
}

// TestRestorePutsRealValuesBack: tokens this session handed out become
// the values again, in any string of the arguments; unknown tokens,
// secrets and numbers stay exactly as they were.
func TestRestorePutsRealValuesBack(t *testing.T) {
	s := newTestSession(t, []string{"email"}, nil, []Secret{{Name: "gh.env.TOKEN", Value: "ghp_supersecret"}})
	s.Redact("write to ann@example.org")
	in := json.RawMessage(`{"server":"m","arguments":{"to":"Dear <email_1>,","n":12345678901234567890,"x":["<email_9>","<secret:gh.env.TOKEN>"]}}`)
	out, changed := s.Restore(in)
	if !changed {
		t.Fatal("nothing restored")
	}
	var v struct {
		Arguments struct {
			To string
			N  json.Number
			X  []string
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Arguments.To != "Dear ann@example.org," || v.Arguments.N != "12345678901234567890" || v.Arguments.X[0] != "<email_9>" || v.Arguments.X[1] != "<secret:gh.env.TOKEN>" {
		t.Fatalf("restored: %s", out)
	}
	if _, changed := s.Restore(json.RawMessage(`{"a":"no tokens"}`)); changed {
		t.Fatal("changed a request without tokens")
	}
}

// TestSecretsAlwaysHidden: env and header values are hidden with no kind
// asked for, also when JSON escapes them, while short values stay.
func TestSecretsAlwaysHidden(t *testing.T) {
	s := newTestSession(t, nil, nil, []Secret{{Name: "api.headers.Authorization", Value: `Bearer "tok"\x`}, {Name: "api.env.DEBUG", Value: "1"}})
	if got := s.Redact(`auth: Bearer "tok"\x, debug 1`); got != "auth: <secret:api.headers.Authorization>, debug 1" {
		t.Fatalf("got %q", got)
	}
	raw, _ := json.Marshal(map[string]string{"text": `echo Bearer "tok"\x`})
	if got := string(s.RedactJSON(raw)); strings.Contains(got, "tok") {
		t.Fatalf("escaped secret kept: %s", got)
	}
}

// TestCustomPatterns: a config pattern gets tokens of its own name; bad
// patterns are refused with what to do.
func TestCustomPatterns(t *testing.T) {
	s := newTestSession(t, nil, map[string]string{"employee_id": `\bEMP-[0-9]{6}\b`}, nil)
	if got := s.Redact("EMP-123456 and EMP-12345"); got != "<employee_id_1> and EMP-12345" {
		t.Fatalf("got %q", got)
	}
	for _, bad := range []map[string]string{{"x": "("}, {"email": "x"}, {"a b": "x"}, {"e": "a*"}} {
		if _, err := NewRedactor(nil, bad, nil); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := NewRedactor([]string{"passport"}, nil, nil); err == nil || !strings.Contains(err.Error(), "email") {
		t.Fatalf("unknown kind: %v", err)
	}
}

func BenchmarkRedactSmallResult(b *testing.B) {
	r, _ := NewRedactor([]string{"all"}, nil, []Secret{{Name: "a.env.T", Value: "sekrit-value"}})
	s := New(Config{Redactor: r}).NewSession()
	raw := json.RawMessage(`{"content":[{"type":"text","text":"The sum of 2 and 3 is 5."}]}`)
	for b.Loop() {
		s.RedactJSON(raw)
	}
}

// TestCardNeedsCardShape: a list of numbers long enough to pass for a
// card (timings, ids) is not one, even when its digits pass Luhn; the
// same digits written as a card are.
func TestCardNeedsCardShape(t *testing.T) {
	s := newTestSession(t, []string{"card"}, nil, nil)
	list := "821462 7899020 03" // 15 digits that pass Luhn, as a list
	if !luhnValid("821462789902003") {
		t.Fatal("the test's digits must pass Luhn")
	}
	if got := s.Redact(list); got != list {
		t.Fatalf("a list of numbers was taken for a card: %q", got)
	}
	for _, card := range []string{"4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "3782 822463 10005"} {
		if got := s.Redact(card); !strings.HasPrefix(got, "<card_") {
			t.Errorf("%q not redacted: %q", card, got)
		}
	}
}

// TestKeepTokensServer: a server configured with "redact": {"restore":
// false} receives the token the sandbox sent, another server the value.
func TestKeepTokensServer(t *testing.T) {
	r, _ := NewRedactor([]string{"email"}, nil, nil)
	s := New(Config{Redactor: r, KeepTokens: map[string]bool{"outside": true}}).NewSession()
	s.Redact("ann@example.org")
	for server, want := range map[string]string{"outside": "<email_1>", "inside": "ann@example.org"} {
		var got string
		_, err := s.Through(context.Background(), Request{Target: protocol.Target{Kind: "tool", Server: server, Name: "send"}, Params: json.RawMessage(`{"arguments":{"to":"<email_1>"}}`)},
			func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
				got = string(p)
				return json.RawMessage(`{}`), nil
			})
		if err != nil || !strings.Contains(got, want) {
			t.Errorf("%s received %s (%v), want %s", server, got, err, want)
		}
	}
}
