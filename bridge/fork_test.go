package bridge

import (
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/protocol"
)

// TestForkedNote: a fork's answer gives the handle and how to use it,
// says what the fork shares and what it does not, names the threads that
// do not run in it, and says why its folder starts empty when it does;
// text from the runtime is made printable.
func TestForkedNote(t *testing.T) {
	h := "cbs_abcdefghijklmnopqrstuvwxyz"
	note := forkedNote(h, &protocol.Forked{OK: true, Dir: "/workspace/.forks/ab", Files: &protocol.ForkedFiles{Copied: true}, Threads: []string{"worker\x1b[2J"}})
	for _, want := range []string{
		`[forked: new session ` + h, `"session": "` + h + `"`,
		"Its own: interpreter, handle, tool-call ledger, gate session and approvals",
		"/workspace/.forks/ab, which holds a copy of this workspace's files (relative paths diverge)",
		"Shared: the container with its CPU, memory and process limits, /tmp, and absolute /workspace paths",
		"Threads that run here do not run there: worker",
	} {
		if !strings.Contains(note, want) {
			t.Fatalf("the note lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "\x1b") {
		t.Fatalf("raw terminal bytes from the runtime in the note: %q", note)
	}
	empty := forkedNote(h, &protocol.Forked{OK: true, Dir: "/workspace/.forks/ab", Files: &protocol.ForkedFiles{Reason: "the workspace held more than the 16 MiB a fork copies"}})
	if !strings.Contains(empty, "starts empty (the workspace held more than the 16 MiB a fork copies)") {
		t.Fatalf("an empty fork's note:\n%s", empty)
	}
}
