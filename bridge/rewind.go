package bridge

import (
	"fmt"
	"strings"
	"sync"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
)

// maxRewindHistory is how many cells' ledgers a session keeps for the
// answer of a rewind: more than the runtime keeps checkpoints of
// (MAX_CHECKPOINTS in pyruntime/mcp/_rewind.py), so every cell a rewind
// can undo is there.
const maxRewindHistory = 32

// cellHistory is the ledger of each cell that still stands in the
// session's history, oldest first: what a rewind lists as already done
// outside. The zero value is empty.
type cellHistory struct {
	mu   sync.Mutex
	runs []gate.Calls
}

// after records a cell that ran (its result res, its calls) and returns
// what the answer says of the rewind it asked for ("" when none). A
// rewind removes the cells it undid (and the asking one) from the
// history; a sandbox that was replaced starts it afresh.
func (h *cellHistory) after(res *sandbox.Result, calls gate.Calls) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !res.StateKept {
		h.runs = nil
		return ""
	}
	r := res.Rewound
	if r == nil || !r.OK {
		h.runs = append(h.runs, calls)
		if len(h.runs) > maxRewindHistory {
			h.runs = h.runs[len(h.runs)-maxRewindHistory:]
		}
		if r != nil {
			return "[rewind not done: " + gate.Printable(r.Error) + "; nothing changed]"
		}
		return ""
	}
	n := min(r.Cells, len(h.runs))
	undone := append(append([]gate.Calls(nil), h.runs[len(h.runs)-n:]...), calls)
	h.runs = h.runs[:len(h.runs)-n]
	return rewoundNote(r, undone, r.Cells-n)
}

// rewoundNote is the answer's account of a rewind: what was restored,
// what was not, and the calls of the undone cells (oldest first, the
// asking cell last), which acted outside and were not undone. unknown
// counts undone cells whose calls the session no longer knows.
func rewoundNote(r *protocol.Rewound, undone []gate.Calls, unknown int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[rewound %s and this one: variables, imports and functions are as they were before them", plural(r.Cells, "cell"))
	if len(r.Names)+len(r.Modules) > 0 {
		b.WriteString(" (" + strings.Join(nonEmpty(names("names", r.Names), names("modules", r.Modules)), "; "))
		if r.More > 0 {
			fmt.Fprintf(&b, "; %d more", r.More)
		}
		b.WriteString(")")
	}
	b.WriteString("; " + filesLine(r.Workspace))
	if len(r.Threads) > 0 {
		b.WriteString("; threads that ran then are not running now: " + gate.Printable(strings.Join(r.Threads, ", ")))
	}
	b.WriteString("; open files keep the positions the undone cells left]")
	b.WriteString(undoneCalls(undone, unknown))
	return b.String()
}

// names lists one kind of restored name, for rewoundNote.
func names(kind string, list []string) string {
	if len(list) == 0 {
		return ""
	}
	return kind + ": " + gate.Printable(strings.Join(list, ", "))
}

// filesLine says what a rewind did to /workspace.
func filesLine(w *protocol.RewoundFiles) string {
	switch {
	case w == nil:
		return "/workspace: unknown"
	case !w.Kept:
		return "/workspace files were not kept (" + gate.Printable(w.Reason) + "): they are as the undone cells left them"
	case w.Error != "":
		return "/workspace could not be put back in full (" + gate.Printable(w.Error) + ")"
	}
	return fmt.Sprintf("/workspace: %s as they were (%d copied back, %d removed)", plural(w.Files, "file"), w.Copied, w.Removed)
}

// undoneCalls lists, call by call, what the undone cells did outside the
// sandbox; "" when they made no call.
func undoneCalls(undone []gate.Calls, unknown int) string {
	var b strings.Builder
	for i, calls := range undone {
		if calls.Total == 0 {
			continue
		}
		label := "this cell"
		if back := len(undone) - 1 - i; back > 0 {
			label = plural(back, "cell") + " back"
		}
		fmt.Fprintf(&b, "\n  %s, %s", label, plural(calls.Total, "call"))
		listed := cellCalls(calls)
		if n := listed.Total - len(listed.Calls); n > 0 {
			fmt.Fprintf(&b, " (the first %d not shown: %s)", n, earlierCounts(listed.Earlier))
		}
		for _, c := range listed.Calls {
			fmt.Fprintf(&b, "\n    %d %s", c.Seq, ledgerLine(c))
		}
	}
	if unknown > 0 {
		fmt.Fprintf(&b, "\n  %s: calls unknown (before this bridge session's record)", plural(unknown, "earlier cell"))
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n[tool calls of the undone cells: they acted outside the sandbox and were NOT undone]" + b.String()
}

// joinNotes joins the notes that are not empty, one per line.
func joinNotes(notes ...string) string {
	return strings.Join(nonEmpty(notes...), "\n")
}

// nonEmpty is the strings of list that are not "".
func nonEmpty(list ...string) []string {
	var kept []string
	for _, s := range list {
		if s != "" {
			kept = append(kept, s)
		}
	}
	return kept
}
