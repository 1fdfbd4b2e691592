package bridge

import (
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
)

func callsOf(names ...string) gate.Calls {
	c := gate.Calls{Total: len(names)}
	for i, n := range names {
		c.Last = append(c.Last, gate.Call{Seq: i + 1, Target: protocol.Target{Kind: "tool", Server: "fs", Name: n}, State: gate.CallOK})
	}
	return c
}

// TestRewindHistory: the answer of a rewind lists the undone cells' calls
// from the session's own record, oldest first, the asking cell last; the
// undone cells leave the record, a refused rewind leaves it as it was, a
// replaced sandbox empties it, and names the sandbox chose are shown as
// printable text.
func TestRewindHistory(t *testing.T) {
	var h cellHistory
	kept := &sandbox.Result{StateKept: true}
	h.after(kept, callsOf("read_file"))
	h.after(kept, callsOf("write_file", "move_file"))
	h.after(kept, gate.Calls{})
	refused := &sandbox.Result{StateKept: true, Rewound: &protocol.Rewound{Error: "gone\x1b[2J"}}
	if got := h.after(refused, gate.Calls{}); got != `[rewind not done: gone\u001b[2J; nothing changed]` {
		t.Fatalf("refused rewind: %q", got)
	}
	ok := &sandbox.Result{StateKept: true, Rewound: &protocol.Rewound{OK: true, Cells: 3, Names: []string{"a\u202eb"},
		Workspace: &protocol.RewoundFiles{Kept: true, Files: 2, Copied: 1}}}
	got := h.after(ok, callsOf("delete_file"))
	for _, want := range []string{
		"[rewound 3 cells and this one", `(names: a\u202eb)`, "/workspace: 2 files as they were (1 copied back, 0 removed)",
		// The refused rewind's cell ran: it is one of the three.
		"NOT undone]\n  3 cells back, 2 calls\n    1 ok: fs.write_file\n    2 ok: fs.move_file\n  this cell, 1 call\n    1 ok: fs.delete_file",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("the rewind's answer lacks %q:\n%s", want, got)
		}
	}
	if len(h.runs) != 1 { // the first cell is all that is left
		t.Fatalf("after the rewind the record holds %d cells, want 1", len(h.runs))
	}
	h.after(&sandbox.Result{}, callsOf("x"))
	if len(h.runs) != 0 {
		t.Fatal("a replaced sandbox kept the record")
	}
	if got := h.after(&sandbox.Result{StateKept: true, Rewound: &protocol.Rewound{OK: true, Cells: 2}}, gate.Calls{}); !strings.Contains(got, "2 earlier cells: calls unknown") {
		t.Fatalf("cells before the record: %s", got)
	}
}
