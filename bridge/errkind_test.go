package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/packages"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// through takes one tool call through a real gate with policy p, asking
// with ask, whose upstream fails with upErr; it returns the error the
// runtime would be answered with.
func through(t *testing.T, p gate.Policy, name string, ask gate.Asker, upErr error) error {
	t.Helper()
	s := gate.New(gate.Config{Policy: p}).NewSession()
	target := protocol.Target{Kind: "tool", Server: "mem", Name: name}
	_, err := s.Through(context.Background(), gate.Request{Target: target, Params: json.RawMessage(`{"arguments":{}}`), Ask: ask},
		func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, upErr })
	if err == nil {
		t.Fatalf("%s: the call went through", name)
	}
	return err
}

// TestErrorKinds: each kind comes from the typed error its producer
// returns (through the gate where the real path goes through it, which
// redacts the message but keeps the cause), never from a message.
func TestErrorKinds(t *testing.T) {
	rules := gate.Policy{Mode: gate.Open, Servers: map[string]gate.Rules{
		"mem": {Tools: gate.Lists{Deny: []string{"drop"}, Ask: []string{"save"}}},
	}}
	declined := func(context.Context, gate.Question) (gate.Answer, error) { return gate.Answer{Reason: "declined"}, nil }
	cannotAsk := func(context.Context, gate.Question) (gate.Answer, error) { return gate.Answer{}, gate.ErrCannotAsk }
	_, unknownServer := upstream.NewPool(nil, upstream.Options{}).Get("nope")
	crashed := &upstream.Error{Server: "mem", What: "exited while calling tool \"x\"", Err: errors.New("EOF")}
	for _, c := range []struct {
		name string
		err  error
		want protocol.ErrorKind
	}{
		{"policy deny", through(t, rules, "drop", nil, nil), protocol.KindDenied},
		{"approval declined", through(t, rules, "save", declined, nil), protocol.KindDeclined},
		{"client cannot ask", through(t, rules, "save", cannotAsk, nil), protocol.KindDeclined},
		{"no asker", through(t, rules, "save", nil, nil), protocol.KindDeclined},
		{"unknown server", unknownServer, protocol.KindUnknownTool},
		{"unlisted tool", &gate.DeniedError{Rule: "listing", Why: "x", Cause: gate.ErrUnlisted}, protocol.KindUnknownTool},
		{"ambiguous parameters", &gate.DeniedError{Rule: "parameters", Why: "x", Cause: gate.ErrBadParams}, protocol.KindInvalidArguments},
		{"call time limit", through(t, rules, "echo", nil, fmt.Errorf("server %q: calling tool: %w", "mem", upstream.ErrTimedOut)), protocol.KindTimeout},
		{"deadline", fmt.Errorf("waiting: %w", context.DeadlineExceeded), protocol.KindTimeout},
		{"server crashed", through(t, rules, "echo", nil, crashed), protocol.KindUnavailable},
		{"invalid params", through(t, rules, "echo", nil, fmt.Errorf("calling: %w", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"})), protocol.KindInvalidArguments},
		{"upstream JSON-RPC error", fmt.Errorf("calling: %w", &jsonrpc.Error{Code: -32000, Message: "boom"}), protocol.KindUpstream},
		{"upstream failed", fmt.Errorf("x: %w", upstream.ErrFailed), protocol.KindUpstream},
		{"install refused", through(t, rules, "echo", nil, &packages.Error{Kind: packages.Refused, Msg: "no"}), protocol.KindPackage},
		{"unknown error", errors.New("something else broke"), protocol.KindInternal},
		{"cancelled", context.Canceled, protocol.KindInternal},
	} {
		if got := errorKind(c.err); got != c.want {
			t.Errorf("%s (%v): kind %q, want %q", c.name, c.err, got, c.want)
		}
		sent := protocol.ErrorOf(withKind(c.err))
		if sent.Kind != c.want || sent.Message != c.err.Error() || sent.Type != "BridgeError" {
			t.Errorf("%s: sent %+v, want kind %q and the message %q", c.name, sent, c.want, c.err.Error())
		}
	}
	if withKind(nil) != nil {
		t.Error("withKind(nil) is not nil")
	}
}

// TestErrorKindsHideHostDetail: the kind is all the mapping adds; the
// message sent for an upstream that failed is its sandbox-safe one, never
// its host-only detail (its stderr tail, command, config path), and an
// error of no known kind is internal with its own message only.
func TestErrorKindsHideHostDetail(t *testing.T) {
	pool := upstream.NewPool([]discovery.Server{{Name: "gone", Command: "/nonexistent/secret-dir/server", Source: "/home/u/MCPs/secret.json"}}, upstream.Options{})
	defer pool.Close()
	s, err := pool.Get("gone")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(context.Background())
	if err == nil {
		t.Fatal("a missing command started")
	}
	sent := protocol.ErrorOf(withKind(err))
	if sent.Kind != protocol.KindUnavailable {
		t.Errorf("kind %q, want unavailable", sent.Kind)
	}
	for _, secret := range []string{"secret-dir", "secret.json"} {
		if strings.Contains(sent.Message, secret) {
			t.Errorf("the message sent names %q: %s", secret, sent.Message)
		}
	}
	if !strings.Contains(upstream.HostDetail(err), "secret-dir") {
		t.Errorf("the host detail lost the command (the test checks nothing): %s", upstream.HostDetail(err))
	}
	if got := protocol.ErrorOf(errors.New("plain")); got.Kind != protocol.KindInternal || got.Message != "plain" {
		t.Errorf("an error with no kind: %+v", got)
	}
}
