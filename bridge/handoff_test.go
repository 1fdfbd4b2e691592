package bridge

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
)

// TestHandleSandboxLabelsNeverCarryTheHandle: what a handle's sandbox
// carries in labels (readable by whoever lists the engine's containers)
// is a digest apart from the resume key, and neither is the handle; the
// digest is the registry's, cut, so the sandbox's tag is the session's
// (`codebridge sessions` lists sandboxes by tag); the principal label names the principal (the
// local user too); the runtime's idle deadline is the handle's.
func TestHandleSandboxLabelsNeverCarryTheHandle(t *testing.T) {
	b := &Bridge{handles: newHandles(7*time.Minute, nil)}
	handle, err := newHandle()
	if err != nil {
		t.Fatal(err)
	}
	d := b.detachableConfig(handle, principal.Token("alice")).Detachable
	body := strings.TrimPrefix(handle, handlePrefix)
	for _, v := range []string{d.Digest, d.Key} {
		if strings.Contains(v, body) || strings.Contains(v, handle) {
			t.Fatalf("%q carries the handle", v)
		}
	}
	if strings.Contains(d.Key, d.Digest) || strings.Contains(d.Digest, d.Key) || len(d.Digest) > 63 {
		t.Fatalf("the label digest %q is part of the resume key, or too long", d.Digest)
	}
	if sandbox.TagOf(d.Digest) != HandleTag(handle) {
		t.Fatalf("the sandbox's tag %q is not the session's %q", sandbox.TagOf(d.Digest), HandleTag(handle))
	}
	if d.Principal != principal.Token("alice").Key() || d.Idle != 7*time.Minute {
		t.Fatalf("principal %q, idle %v", d.Principal, d.Idle)
	}
	local := b.detachableConfig(handle, principal.Local())
	if local.Detachable.Principal != localPrincipalLabel || local.Detachable.Digest != d.Digest {
		t.Fatalf("the local user's: %+v", local.Detachable)
	}
	if !regexp.MustCompile(`^[0-9a-f]{48}$`).MatchString(d.Digest) || len(d.Key) < 32 {
		t.Fatalf("digest %q or key of %d bytes is no valid label or key", d.Digest, len(d.Key))
	}
	other, _ := newHandle()
	if b.detachableConfig(other, principal.Local()).Detachable.Digest == d.Digest {
		t.Fatal("two handles have one label digest")
	}
}

// manyCalls is n ledger entries, alternately ok and a tool error, so that
// none run together in a list.
func manyCalls(n int) []protocol.LedgerCall {
	out := make([]protocol.LedgerCall, n)
	for i := range out {
		out[i] = protocol.LedgerCall{Seq: i + 1, Kind: "tool", Server: "s", Tool: "t", State: []string{"ok", "tool_error"}[i%2]}
	}
	return out
}

// TestResumedNoteSaysWhereTheCellWas: the first answer after a bridge
// took a session over says the session survived and whether its last
// cell finished, is still running, or lost requests.
func TestResumedNoteSaysWhereTheCellWas(t *testing.T) {
	for _, c := range []struct {
		r    *sandbox.Resumed
		want string
	}{
		{&sandbox.Resumed{}, "variables and files are kept]"},
		{&sandbox.Resumed{Cell: 3, Done: &protocol.Done{ID: 3, Status: "ok"}}, "last cell (3) finished (ok)"},
		{&sandbox.Resumed{Cell: 4, Running: true}, "last cell (4) is still running"},
		{&sandbox.Resumed{Cell: 5, Done: &protocol.Done{ID: 5, Status: "error"}, Lost: 2}, "2 of its calls to tools got no answer"},
		// The ledger the sandbox kept is data: names cut and made printable.
		{&sandbox.Resumed{Cell: 6, Running: true, Lost: 1, Calls: &protocol.CellCalls{Total: 3, Calls: []protocol.LedgerCall{
			{Seq: 1, Kind: "tool", Server: "fs", Tool: "write_file", State: "ok"},
			{Seq: 2, Kind: "tool", Server: "fs", Tool: "write_file", State: "ok"},
			{Seq: 3, Kind: "tool", Server: "mem\x1b[31m", Tool: "rm", State: "cancelled"},
		}}}, "[tool calls cell 6 made, in order, as the sandbox kept them: 3]\n  1-2 ok: fs.write_file\n  3 cancelled in flight, outcome unknown: mem\\u001b[31m.rm"},
		// ... and bounded: a sandbox that claims a thousand calls gets the last twenty listed.
		{&sandbox.Resumed{Cell: 7, Calls: &protocol.CellCalls{Total: 1000, Calls: manyCalls(1000)}},
			"as the sandbox kept them: 1000; the first 980 not shown: ]\n  981 ok: s.t\n  982 tool error: s.t"},
	} {
		got := resumedNote(c.r)
		if !strings.Contains(got, "taken over from the bridge that served it before") || !strings.Contains(got, c.want) || strings.Count(got, "\n") > 22 {
			t.Errorf("%+v: %q, want %q in it", c.r, got, c.want)
		}
	}
}
