package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/protocol"
)

// ledgerTimeout is the time limit of the cells that time out here: their
// calls before the one that hangs take milliseconds, and the one that
// hangs would run for ten minutes.
const ledgerTimeout = 15

// hangAt is a cell of n sequential calls of server-everything whose call
// number hang (from 1) runs for ten minutes: the cell times out in it.
func hangAt(n, hang int) string {
	return fmt.Sprintf("for i in range(1, %d):\n"+
		"    if i == %d:\n"+
		"        await mcp_everything.trigger_long_running_operation(duration=600, steps=1)\n"+
		"    else:\n"+
		"        await mcp_everything.echo(message=f'step {i}')\n", n+1, hang)
}

// ledgerOf reads the answer of runtime.calls() that a cell printed last
// (printCalls).
func ledgerOf(t *testing.T, text string) protocol.CallsAnswer {
	t.Helper()
	var ans protocol.CallsAnswer
	line := text[strings.LastIndex(strings.TrimSpace(text), "\n")+1:]
	if err := json.Unmarshal([]byte(line), &ans); err != nil {
		t.Fatalf("runtime.calls() printed %q: %v", text, err)
	}
	return ans
}

const printCalls = "import json\nprint(json.dumps(await runtime.calls()))"

// TestLedgerOnTimeout: a cell that times out in the middle of twenty
// calls of a real server (the eleventh hangs) ends with the list of what
// it did: ten calls finished, the eleventh cut off with its outcome
// unknown; runtime.calls() in the next cell returns the same list as
// data, beside the calls of that cell so far. A cell that ends by an
// error after its calls lists them too (a call the gate refused: not
// sent); a cell that ends ok adds nothing; a cell of a hundred calls
// lists the last twenty and counts the rest.
func TestLedgerOnTimeout(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"a.json": {"everything": npmServer("mcp-server-everything")}}))
	// An ok cell with calls adds nothing (and starts the server, so
	// that the cells below spend their time limit on their calls).
	if out := b.ok("await mcp_everything.echo(message='warm')"); strings.Contains(out, "tool calls") {
		t.Fatalf("a cell that ended ok lists its calls:\n%s", out)
	}

	r := b.run(hangAt(20, 11), "timeout", ledgerTimeout)
	note := "[tool calls this cell made, in order: 11]\n" +
		"  1-10 ok: everything.echo\n" +
		"  11 cancelled in flight, outcome unknown: everything.trigger-long-running-operation"
	if !r.isError || !strings.HasSuffix(r.text, "variables and imports were kept]\n"+note) {
		t.Fatalf("the timeout's answer does not end with the ledger:\n%s\nwant it to end with\n%s", r.text, note)
	}
	t.Logf("the ledger adds %d bytes to the answer of the timeout of a cell of twenty calls (the eleventh hung)", len(note)+1)

	ans := ledgerOf(t, b.ok("await mcp_everything.echo(message='after')\n"+printCalls))
	prev := ans.Previous
	if prev == nil || prev.Total != 11 || len(prev.Calls) != 11 || len(prev.Earlier) != 0 {
		t.Fatalf("the previous cell's ledger: %+v", prev)
	}
	for i, c := range prev.Calls {
		want := protocol.LedgerCall{Seq: i + 1, Kind: "tool", Server: "everything", Tool: "echo", State: "ok", DurationMS: c.DurationMS}
		if i == 10 {
			// The cell's end cancelled it; "running" until the
			// cancellation has come back from the upstream client.
			want.Tool, want.State = "trigger-long-running-operation", c.State
			if c.State != "cancelled" && c.State != "running" {
				t.Errorf("the call that hung: %+v", c)
			}
		}
		if c != want {
			t.Errorf("call %d: %+v, want %+v", i+1, c, want)
		}
	}
	if cur := ans.Current; cur.Total != 1 || cur.Calls[0].Tool != "echo" || cur.Calls[0].State != "ok" {
		t.Fatalf("the current cell's ledger: %+v", cur)
	}

	r = b.run("for i in range(3):\n    await mcp_everything.echo(message=str(i))\n"+
		"try:\n    await call_tool('everything', 'no-such-tool', {})\nexcept BridgeError as e:\n    print(e.kind)\n"+
		"raise RuntimeError('stop')", "timeout", ledgerTimeout)
	mustContain(t, r.text, "RuntimeError: stop", "[status: error]\n"+
		"[tool calls this cell made, in order: 4]\n"+
		"  1-3 ok: everything.echo\n"+
		"  4 not sent (unknown_tool): everything.no-such-tool")

	r = b.run(hangAt(100, 100), "timeout", ledgerTimeout)
	note = "[tool calls this cell made, in order: 100; the first 80 not shown: 80 ok]\n" +
		"  81-99 ok: everything.echo\n" +
		"  100 cancelled in flight, outcome unknown: everything.trigger-long-running-operation"
	if !strings.HasSuffix(r.text, "]\n"+note) {
		t.Fatalf("the answer of a cell of a hundred calls:\n%s\nwant it to end with\n%s", r.text, note)
	}
	t.Logf("the ledger adds %d bytes to the answer of the timeout of a cell of a hundred calls", len(note)+1)
}

// TestLedgerOnCrash: a cell whose sandbox had to be replaced (it ran out
// of memory) lists the calls it made before.
func TestLedgerOnCrash(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"a.json": {"everything": npmServer("mcp-server-everything")}}))
	needMemoryLimit(t, b)
	r := b.run("await mcp_everything.echo(message='before')\nx = b'x' * (1 << 30)", "timeout", 60)
	mustContain(t, r.text, "[status: crashed: ", "the sandbox was restarted",
		"]\n[tool calls this cell made, in order: 1]\n  1 ok: everything.echo")
	if prev := ledgerOf(t, b.ok(printCalls)).Previous; prev == nil || prev.Total != 1 {
		t.Fatalf("the ledger of the cell before the new sandbox: %+v", prev)
	}
}

// TestLedgerIsPerPrincipal: over HTTP, another token holder (the
// attacker) reads runtime.calls() in a session of its own and finds none
// of the calls Alice's cells made, nor her cells at all.
func TestLedgerIsPerPrincipal(t *testing.T) {
	needEnv(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	const aliceTok, bobTok = "alice-0123456789abcdef", "bob-0123456789abcdef0"
	if err := os.WriteFile(tokens, []byte("alice "+aliceTok+"\nbob "+bobTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startHTTP(t, home(t, map[string]map[string]server{"s.json": {"stub": stub()}}), nil, "--token-file", tokens)
	alice := b.clientAs(t, "alice", aliceTok)
	r, err := alice.run("await mcp_stub.add(a=1, b=2)\nraise ValueError('x')")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r.text, "[tool calls this cell made, in order: 1]\n  1 ok: stub.add")

	bob := b.clientAs(t, "bob", bobTok)
	for i := range 2 {
		ans := ledgerOf(t, bob.ok(printCalls))
		if ans.Current.Total != 0 || (i == 0) != (ans.Previous == nil) || (ans.Previous != nil && ans.Previous.Total != 0) {
			t.Fatalf("bob's cell %d sees calls he did not make: %+v", i+1, ans)
		}
	}
	if prev := ledgerOf(t, alice.ok(printCalls)).Previous; prev == nil || prev.Total != 1 || prev.Calls[0].Tool != "add" {
		t.Fatalf("alice's own previous cell: %+v", prev)
	}
}
