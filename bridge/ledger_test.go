package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ledgerCall(seq int, server, name string, state gate.CallState, err error) gate.Call {
	return gate.Call{Seq: seq, Target: protocol.Target{Kind: "tool", Server: server, Name: name}, State: state, Err: err}
}

// TestLedgerNote: the list a cell's answer gets says each call's state
// and target in order, runs of calls alike on one line, the kind of a
// failure, that a denied call was not sent, and that a call in flight at
// the end (cancelled, or not yet recorded as such) has an unknown
// outcome; a cell that made no call gets nothing, nor does one that
// ended ok unless a call of it was cut off.
func TestLedgerNote(t *testing.T) {
	var calls gate.Calls
	for i := 1; i <= 10; i++ {
		calls.Last = append(calls.Last, ledgerCall(i, "everything", "echo", gate.CallOK, nil))
	}
	failed := fmt.Errorf("server %q: calling: %w", "everything", upstream.ErrFailed)
	declined := &gate.DeniedError{Cause: gate.ErrNotApproved}
	calls.Last = append(calls.Last,
		ledgerCall(11, "everything", "add", gate.CallFailed, failed),
		ledgerCall(12, "everything", "add", gate.CallToolError, nil),
		ledgerCall(13, "fs", "delete", gate.CallDenied, declined),
		ledgerCall(14, "fs", "write_file", gate.CallCancelled, context.Canceled),
		ledgerCall(15, "fs", "write_file", gate.CallRunning, nil),
		gate.Call{Seq: 16, Target: protocol.Target{Kind: "resource", Server: "fs", Name: "file:///a"}, State: gate.CallOK})
	calls.Total = len(calls.Last)
	want := "[tool calls this cell made, in order: 16]\n" +
		"  1-10 ok: everything.echo\n" +
		"  11 failed (upstream): everything.add\n" +
		"  12 tool error: everything.add\n" +
		"  13 not sent (declined): fs.delete\n" +
		"  14-15 cancelled in flight, outcome unknown: fs.write_file\n" +
		"  16 ok: resource fs.file:///a"
	for _, status := range []sandbox.Status{sandbox.StatusTimeout, sandbox.StatusError, sandbox.StatusCancelled, sandbox.StatusCrashed} {
		if got := ledgerNote(status, calls); got != want {
			t.Fatalf("%s:\n%s\nwant\n%s", status, got, want)
		}
	}
	if got := ledgerNote(sandbox.StatusOK, calls); got != want {
		t.Fatalf("a cell that ended ok with calls cut off:\n%s", got)
	}
	finished := gate.Calls{Total: 13, Last: calls.Last[:13]}
	if got := ledgerNote(sandbox.StatusOK, finished); got != "" {
		t.Fatalf("a cell that ended ok: %q", got)
	}
	earlier := gate.Calls{Total: 30, Last: calls.Last[:10], Earlier: map[gate.CallState]int{gate.CallCancelled: 1}}
	if got := ledgerNote(sandbox.StatusOK, earlier); !strings.Contains(got, "1 cancelled in flight") {
		t.Fatalf("a cell that ended ok with an earlier call cut off: %q", got)
	}
	if got := ledgerNote(sandbox.StatusTimeout, gate.Calls{}); got != "" {
		t.Fatalf("a cell without calls: %q", got)
	}
	res := render(&sandbox.Result{Status: sandbox.StatusTimeout, StateKept: true, Stdout: sandbox.Output{Text: "1\n"}}, time.Second, want)
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.HasSuffix(text, "variables and imports were kept]\n"+want) || !strings.HasPrefix(text, "1\n") {
		t.Fatalf("the answer:\n%s", text)
	}
}

// TestLedgerNoteBound: past the last MaxCellCalls, the list counts the
// earlier calls by state on its first line.
func TestLedgerNoteBound(t *testing.T) {
	calls := gate.Calls{Total: 100, Earlier: map[gate.CallState]int{gate.CallOK: 78, gate.CallFailed: 1, gate.CallRunning: 1}}
	for i := 81; i <= 100; i++ {
		calls.Last = append(calls.Last, ledgerCall(i, "everything", "echo", gate.CallOK, nil))
	}
	got := ledgerNote(sandbox.StatusTimeout, calls)
	want := "[tool calls this cell made, in order: 100; the first 80 not shown: 78 ok, 1 failed, 1 cancelled in flight]\n  81-100 ok: everything.echo"
	if got != want {
		t.Fatalf("%s\nwant\n%s", got, want)
	}
}

// TestLedgerNoteHostileName: a name the sandbox chose (a call to no
// listed tool is denied, and listed) reaches the answer cut and with
// what does not print escaped.
func TestLedgerNoteHostileName(t *testing.T) {
	name := "x\x1b]0;owned\x07\u202e" + strings.Repeat("y", 5000)
	calls := gate.Calls{Total: 1, Last: []gate.Call{ledgerCall(1, "fs", name, gate.CallDenied, &gate.DeniedError{Cause: gate.ErrUnlisted})}}
	got := ledgerNote(sandbox.StatusError, calls)
	if strings.ContainsAny(got, "\x1b\x07\u202e") || len(got) > 300 || !strings.Contains(got, `not sent (unknown_tool): fs.x\u001b]0;owned\u0007\u202eyyy`) {
		t.Fatalf("%q", got)
	}
}

// TestLedgerCallsMethod: the calls request answers the asking cell's
// ledger and the previous cell's, as the gate session of its own sandbox
// session recorded them; a cell of another session gets neither.
func TestLedgerCallsMethod(t *testing.T) {
	g := gate.New(gate.Config{})
	s := g.NewSessionOf("token:alice")
	_, first := s.StartRun(context.Background(), "read")
	c := &call{sandboxHost: &sandboxHost{gate: s}, cell: first}
	read := typed(func(_ context.Context, _ *call, _ countedParams) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	})
	if _, err := read(context.Background(), c, protocol.RPC{Params: json.RawMessage(`{"uri":"mem://a"}`)}); err != nil {
		t.Fatal(err)
	}
	fail := typed(func(_ context.Context, _ *call, _ countedParams) (json.RawMessage, error) {
		return nil, fmt.Errorf("reading: %w", upstream.ErrFailed)
	})
	_, _ = fail(context.Background(), c, protocol.RPC{Params: json.RawMessage(`{"uri":"mem://b"}`)})

	ask := func(c *call) protocol.CallsAnswer {
		t.Helper()
		raw, err := methods[protocol.MCalls](context.Background(), c, protocol.RPC{})
		var ans protocol.CallsAnswer
		if err != nil || json.Unmarshal(raw, &ans) != nil {
			t.Fatalf("calls: %v, %s", err, raw)
		}
		return ans
	}
	if a := ask(c); a.Current.Total != 2 || a.Previous != nil || a.Current.Calls[1].State != "error" || a.Current.Calls[1].ErrorKind != "upstream" {
		t.Fatalf("the first cell: %+v", a)
	}
	_, second := s.StartRun(context.Background(), "runtime.calls()")
	a := ask(&call{sandboxHost: &sandboxHost{gate: s}, cell: second})
	if a.Current.Total != 0 || a.Previous == nil || a.Previous.Total != 2 {
		t.Fatalf("the second cell: %+v", a)
	}
	if got := a.Previous.Calls[0]; got != (protocol.LedgerCall{Seq: 1, Kind: "resource", Server: "mem", Tool: "mem://a", State: "ok", DurationMS: got.DurationMS}) {
		t.Fatalf("the first call: %+v", got)
	}

	other := g.NewSessionOf("token:mallory")
	_, theirs := other.StartRun(context.Background(), "runtime.calls()")
	if a := ask(&call{sandboxHost: &sandboxHost{gate: other}, cell: theirs}); a.Current.Total != 0 || a.Previous != nil {
		t.Fatalf("another principal's cell sees: %+v", a)
	}
	if a := ask(&call{sandboxHost: &sandboxHost{}}); a.Current.Total != 0 || a.Previous != nil {
		t.Fatalf("no gate: %+v", a)
	}
}
