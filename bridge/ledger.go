package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/sandbox/engine"
)

// The ledger of a cell's calls (gate.Run.Calls), as the model reads it:
// in the answer of a cell that did not simply succeed, so that it knows
// which side effects happened before it tries again, and from
// runtime.calls(). Arguments are never shown: they may be large or
// private, and the model's own code has them.

// maxLedgerName bounds a name in the answer's list: the sandbox chooses
// the names of the calls it makes (one that names no listed tool is
// denied, and listed all the same).
const maxLedgerName = 80

// ledgerNote lists the calls of a cell that ended by a timeout, an
// error, a cancellation or a lost sandbox, in order, a run of calls
// alike on one line:
//
//	[tool calls this cell made, in order: 12]
//	  1-10 ok: everything.echo
//	  11 failed (upstream): everything.add
//	  12 cancelled in flight, outcome unknown: fs.write_file
//
// A cell that made no call gets nothing, and so does one that ended ok,
// unless a call of it was cut off (a task the code left running: its
// end cancelled it).
func ledgerNote(status sandbox.Status, calls gate.Calls) string {
	if calls.Total == 0 || status == sandbox.StatusOK && !cutOff(calls) {
		return ""
	}
	return ledgerList("tool calls this cell made, in order", cellCalls(calls))
}

// ledgerList is a ledger as the model reads it, under head: a run of
// calls alike on one line. The ledger may come from the sandbox (a
// resumed frame's): every name in it is data, cut and made printable.
func ledgerList(head string, calls protocol.CellCalls) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s: %d", head, calls.Total)
	if n := calls.Total - len(calls.Calls); n > 0 {
		fmt.Fprintf(&b, "; the first %d not shown: %s", n, earlierCounts(calls.Earlier))
	}
	b.WriteString("]")
	lines := make([]string, len(calls.Calls))
	for i, c := range calls.Calls {
		lines[i] = ledgerLine(c)
	}
	for i := 0; i < len(lines); {
		line := lines[i]
		j := i + 1
		for j < len(lines) && lines[j] == line {
			j++
		}
		seqs := strconv.Itoa(calls.Calls[i].Seq)
		if j-1 > i {
			seqs += "-" + strconv.Itoa(calls.Calls[j-1].Seq)
		}
		b.WriteString("\n  " + seqs + " " + line)
		i = j
	}
	return b.String()
}

// ledgerLine is what the list says of one call: its state, then its
// target. A call running when the answer is made was cancelled by the
// cell's end (which cancels every request of the cell) and has not
// recorded it yet.
func ledgerLine(c protocol.LedgerCall) string {
	var state string
	switch gate.CallState(c.State) {
	case gate.CallOK:
		state = "ok"
	case gate.CallToolError:
		state = "tool error"
	case gate.CallFailed:
		state = "failed (" + gate.Printable(engine.ClipText(c.ErrorKind, 40)) + ")"
	case gate.CallDenied:
		state = "not sent (" + gate.Printable(engine.ClipText(c.ErrorKind, 40)) + ")"
	default:
		state = "cancelled in flight, outcome unknown"
	}
	return state + ": " + ledgerTarget(protocol.Target{Kind: c.Kind, Server: c.Server, Name: c.Tool})
}

// ledgerTarget names a call's target: server.tool for a tool, the kind
// first for the others ("resource fs.file:///a", "package pandas").
func ledgerTarget(t protocol.Target) string {
	name := t.Name
	if t.Server != "" {
		name = t.Server + "." + name
	}
	if r := []rune(name); len(r) > maxLedgerName {
		name = string(r[:maxLedgerName]) + "..."
	}
	name = gate.Printable(name)
	if t.Kind != "tool" {
		name = t.Kind + " " + name
	}
	return name
}

// cutOff reports whether a call of the cell was in flight when it ended.
func cutOff(calls gate.Calls) bool {
	for _, c := range calls.Last {
		if c.State == gate.CallRunning || c.State == gate.CallCancelled {
			return true
		}
	}
	return calls.Earlier[gate.CallRunning]+calls.Earlier[gate.CallCancelled] > 0
}

// earlierCounts says the states of the calls left out of the list
// ("80 ok, 2 failed"), in a fixed order.
func earlierCounts(n map[string]int) string {
	var parts []string
	for _, s := range []struct {
		state gate.CallState
		words string
	}{{gate.CallOK, "ok"}, {gate.CallToolError, "tool error"}, {gate.CallFailed, "failed"}, {gate.CallDenied, "not sent"}} {
		if n[string(s.state)] > 0 {
			parts = append(parts, strconv.Itoa(n[string(s.state)])+" "+s.words)
		}
	}
	if k := n[string(gate.CallCancelled)] + n[string(gate.CallRunning)]; k > 0 {
		parts = append(parts, strconv.Itoa(k)+" cancelled in flight")
	}
	return strings.Join(parts, ", ")
}

// ledgerCalls answers the runtime's calls (runtime.calls()): the ledger
// of the asking cell's run and of the run before it, from the gate
// session of this sandbox session alone.
func ledgerCalls(_ context.Context, h *call, _ protocol.CallsParams) (json.RawMessage, error) {
	ans := protocol.CallsAnswer{Current: cellCalls(h.cell.Calls()), Previous: h.handed}
	if prev, ok := h.cell.Previous(); ok && h.handed == nil {
		p := cellCalls(prev)
		ans.Previous = &p
	}
	return json.Marshal(ans)
}

// TookBack learns, before the cell's requests, that its Run took the
// session back from another bridge: the cell before ran there, and its
// ledger is the one the sandbox kept ([sandbox.TakeBackSeer]).
func (c *call) TookBack(r *sandbox.Resumed) { c.handed = handedCalls(r) }

// handedCalls is the ledger a resumed runtime kept of its last cell, as
// the bridge passes it on: the sandbox wrote it, so at most the last
// [gate.MaxCellCalls] calls are listed, as in a ledger of this bridge
// (nil: none).
func handedCalls(r *sandbox.Resumed) *protocol.CellCalls {
	if r == nil || r.Calls == nil {
		return nil
	}
	c := *r.Calls
	if n := len(c.Calls); n > gate.MaxCellCalls {
		c.Calls = c.Calls[n-gate.MaxCellCalls:]
	}
	return &c
}

// cellCalls is a cell's ledger as the runtime gets it.
func cellCalls(c gate.Calls) protocol.CellCalls {
	out := protocol.CellCalls{Total: c.Total, Calls: make([]protocol.LedgerCall, len(c.Last)), Earlier: map[string]int{}}
	for i, x := range c.Last {
		out.Calls[i] = protocol.LedgerCall{Seq: x.Seq, Kind: x.Target.Kind, Server: x.Target.Server, Tool: x.Target.Name,
			State: string(x.State), DurationMS: float64(x.Duration.Microseconds()) / 1000}
		if x.Err != nil && (x.State == gate.CallFailed || x.State == gate.CallDenied) {
			out.Calls[i].ErrorKind = string(errorKind(x.Err))
		}
	}
	for s, n := range c.Earlier {
		out.Earlier[string(s)] = n
	}
	return out
}
