package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/codebridge/codebridge/sandbox/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHandleOutlivesBridge: a handle's sandbox lives while its handle
// does, not while its bridge does (issue 33). Bridges A, B and C serve
// HTTP on one engine and share nothing else. Alice makes a handle on A
// and sets x = 41; A stops (SIGTERM: it detaches the sandbox instead of
// removing it); B gets alice's next call with the handle, adopts the
// sandbox, says so once, and finds x; alice sets y on B and B is killed
// (SIGKILL); C adopts the sandbox, says its last cell finished, and finds
// x and y. From the attacker's side: bob with alice's handle on B gets
// the answer a guessed handle gets, word for word, and adopts nothing.
// Ending the handle on C removes its container: none is left, and the
// handle then reads as ended on C.
func TestHandleOutlivesBridge(t *testing.T) {
	needEnv(t)
	localEngineOnly(t, "adoption on Kubernetes (Pods and a Lease) is another slice")
	a, aliceTok, _ := teamBridge(t, home(t, nil), nil)
	first := callHandle(t, a.statelessAs(t, "alice-a", aliceTok, nil), "x = 41\nprint('set')", "")
	h := first.handle
	if first.isError || h == "" {
		t.Fatalf("alice's first call on A:\n%s", first.text)
	}
	a.stop(syscall.SIGTERM)
	if n := handleSandboxes(t, a.cmd.Process.Pid); n != 1 {
		t.Fatalf("after A stopped, %d sandboxes of A run, want alice's handle's one (it lives while its handle does)", n)
	}

	b, _, bobTok := teamBridge(t, home(t, nil), nil)
	bob := b.statelessAs(t, "bob-b", bobTok, nil)
	stolen := callHandle(t, bob, "x = 'bob was here'\nprint(x)", h)
	guessed := callHandle(t, bob, "print(1)", "cbs_"+strings.Repeat("a", 26))
	if !stolen.isError || stolen.text != guessed.text || !strings.Contains(stolen.text, "knows no session with this handle") {
		t.Fatalf("bob with alice's handle on B:\n%s\n--- a guessed handle:\n%s", stolen.text, guessed.text)
	}
	onB := b.statelessAs(t, "alice-b", aliceTok, nil)
	got := callHandle(t, onB, "print(x + 1)", h)
	if got.isError || !strings.Contains(got.text, "42") || !strings.Contains(got.text, "taken over from the bridge that served it before") {
		t.Fatalf("alice's handle on B after A stopped:\n%s", got.text)
	}
	if again := callHandle(t, onB, "y = 'set on B'\nprint(x)", h); again.isError || !strings.Contains(again.text, "41") || strings.Contains(again.text, "taken over") {
		t.Fatalf("alice's second call on B (the note is said once):\n%s", again.text)
	}
	b.stop(syscall.SIGKILL)

	c, _, _ := teamBridge(t, home(t, nil), nil)
	onC := c.statelessAs(t, "alice-c", aliceTok, nil)
	got = callHandle(t, onC, "print(x, y)", h)
	if got.isError || !strings.Contains(got.text, "41 set on B") || !strings.Contains(got.text, "finished (ok)") {
		t.Fatalf("alice's handle on C after B was killed:\n%s", got.text)
	}
	old := c.clientAs(t, "alice-old-c", aliceTok) // 2025-11-25: its sandbox ends with its MCP session
	mustContain(t, old.ok("print(await runtime.end_session("+strconvQuote(h)+"))"), "{'ended': True}")
	if n := handleSandboxes(t, a.cmd.Process.Pid); n != 0 {
		t.Fatalf("%d sandboxes of alice's ended handle are left", n)
	}
	if ended := callHandle(t, onC, "print(x)", h); !ended.isError || !strings.Contains(ended.text, "was ended") {
		t.Fatalf("alice's ended handle on C:\n%s", ended.text)
	}
}

// handleSandboxes counts the running sandboxes with a handle label that
// the bridge with pid started.
func handleSandboxes(t *testing.T, pid int) int {
	t.Helper()
	n := 0
	for _, c := range containersOf(t, pid) {
		if c.Labels[sandbox.LabelHandle] != "" && c.State == "running" {
			n++
		}
	}
	return n
}

// TestHandleMovedToAnotherBridge: two live bridges on one engine, one
// handle, as two replicas behind a balancer with no affinity. Alice makes
// it on A; her calls then alternate B, A, B, A. Each bridge that gets the
// handle after the other took it adopts the sandbox (the newer channel
// wins), and the runtime tells the bridge it left (a moved frame), so
// from the losing side the next call takes the sandbox back at once:
// every call answers within a 5-second limit, keeps x, and the answer
// says the session was taken over; one sandbox of the handle runs
// throughout. Bob cannot end it by its tag on B; alice can, though A
// holds it (on the engine), and nothing of it is left. (Before the moved
// frame, the bridge that lost the channel sent its cell where no one read
// it and waited out the cell's time limit.)
func TestHandleMovedToAnotherBridge(t *testing.T) {
	needEnv(t)
	localEngineOnly(t, "adoption on Kubernetes (Pods and a Lease) is another slice")
	a, aliceTok, _ := teamBridge(t, home(t, nil), nil)
	onA := a.statelessAs(t, "alice-a", aliceTok, nil)
	h := callHandle(t, onA, "x = 41\nprint('set')", "").handle
	b, _, bobTok := teamBridge(t, home(t, nil), nil)
	onB := b.statelessAs(t, "alice-b", aliceTok, nil)
	for i, on := range []*mcp.ClientSession{onB, onA, onB, onA} {
		got := callHandleWithin(t, on, "x += 1\nprint(x)", h, 5)
		if want := fmt.Sprint(42 + i); got.isError || !strings.Contains(got.text, want) || !strings.Contains(got.text, "taken over") {
			t.Fatalf("call %d, on the bridge that did not hold the handle, want x = %s and a note that it was taken over:\n%s", i+1, want, got.text)
		}
		if n := handleSandboxes(t, a.cmd.Process.Pid); n != 1 {
			t.Fatalf("%d sandboxes of the handle run after call %d, want the one", n, i+1)
		}
	}
	// A holds it now; B ends it by tag, on the engine. Bob on B cannot.
	bob := b.clientAs(t, "bob-b", bobTok)
	denied, err := bob.run("await runtime.end_session(" + strconvQuote(tagOf(h)) + ")")
	if err != nil || !strings.Contains(denied.text, "no session of yours is") || handleSandboxes(t, a.cmd.Process.Pid) != 1 {
		t.Fatalf("bob ending alice's session by its tag on B: %v\n%s", err, denied.text)
	}
	old := b.clientAs(t, "alice-old-b", aliceTok)
	mustContain(t, old.ok("print(await runtime.end_session("+strconvQuote(tagOf(h))+"))"), "{'ended': True}")
	if n := handleSandboxes(t, a.cmd.Process.Pid); n != 0 {
		t.Fatalf("%d sandboxes of the ended handle are left", n)
	}
}

// callHandleWithin is callHandle with a time limit of seconds.
func callHandleWithin(t *testing.T, cs *mcp.ClientSession, code, handle string, seconds int) handleAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "session": handle, "timeout": seconds}})
	if err != nil {
		t.Fatalf("run_python: %v", err)
	}
	var a handleAnswer
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			a.text += tc.Text
		}
	}
	a.isError = res.IsError
	return a
}

// removeHandleSandboxes removes the sandboxes of handles that the bridge
// with pid started and the test left (a handle's sandbox outlives its
// bridge, until its idle deadline): through an exec, as an adopting
// bridge reaches one, whose Remove removes the container.
func removeHandleSandboxes(t *testing.T, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := sandbox.Connect(ctx, engineOptions())
	if err != nil {
		t.Error(err)
		return
	}
	defer eng.Close()
	ad, ok := eng.(engine.Adopter)
	if !ok {
		return // no engine here adopts, so none made a detachable sandbox
	}
	for _, c := range containersOf(t, pid) {
		if c.Labels[sandbox.LabelHandle] == "" {
			continue
		}
		ctr, err := ad.Exec(ctx, c.ID, []string{"true"})
		if err == nil {
			err = ctr.Remove(ctx)
		}
		if err != nil {
			t.Errorf("removing the sandbox %s of a handle the test left: %v", c.ID, err)
		}
	}
}

// TestHandleCellFinishesWhileNoBridgeListens: bridge B is killed
// (SIGKILL) while a cell of a handle runs on it; the client's call ends
// with an error; the cell goes on in the sandbox and finishes; bridge C,
// given the handle, answers with a note that the session was taken over
// and its last cell finished, finds what the cell set, and gives the
// ledger of that cell (its tool call) in the answer and from
// runtime.calls().
func TestHandleCellFinishesWhileNoBridgeListens(t *testing.T) {
	needEnv(t)
	cli := engineCLI(t)
	withStub := map[string]map[string]server{"s.json": {"stub": stub()}}
	b, aliceTok, _ := teamBridge(t, home(t, withStub), nil)
	onB := b.statelessAs(t, "alice-b", aliceTok, nil)
	h := callHandle(t, onB, "x = 41\nprint('set')", "").handle
	ctrs := containersOf(t, b.cmd.Process.Pid)
	if len(ctrs) != 1 {
		t.Fatalf("%d containers for one handle", len(ctrs))
	}
	id := ctrs[0].ID
	inFlight := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		code := "import os, time\nawait mcp_stub.add(a=1, b=2)\nopen('/tmp/started', 'w').close()\n" +
			"while not os.path.exists('/tmp/release'):\n    time.sleep(0.05)\ny = 'done'\nprint(y)"
		res, err := onB.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "session": h}})
		if err == nil && !res.IsError {
			err = errors.New("the call in flight on the killed bridge succeeded")
		}
		inFlight <- err
	}()
	waitInSandbox(t, cli, id, "/tmp/started") // the cell runs on B
	b.stop(syscall.SIGKILL)
	t.Logf("the call in flight on the killed bridge: %v", <-inFlight)
	if out, err := exec.Command(cli, "exec", id, "touch", "/tmp/release").CombinedOutput(); err != nil {
		t.Fatalf("releasing the cell: %v: %s", err, out)
	}

	c, _, _ := teamBridge(t, home(t, withStub), nil)
	got := callHandle(t, c.statelessAs(t, "alice-c", aliceTok, nil), "print(x, y)\n"+printCalls, h)
	if got.isError || !strings.Contains(got.text, "41 done") || !strings.Contains(got.text, "taken over") {
		t.Fatalf("alice's handle on C after B was killed mid-cell:\n%s", got.text)
	}
	if !strings.Contains(got.text, "finished (ok)") && !strings.Contains(got.text, "is still running") {
		t.Fatalf("C's answer does not say where the cell B ran was:\n%s", got.text)
	}
	// The ledger of B's cell, kept in the sandbox: in C's answer, and as
	// runtime.calls()'s previous cell.
	if !strings.Contains(got.text, "as the sandbox kept them: 1]\n  1 ok: stub.add") ||
		!strings.Contains(got.text, `"previous": {"total": 1, "calls": [{"seq": 1, "kind": "tool", "server": "stub", "tool": "add", "state": "ok"`) {
		t.Fatalf("C's answer does not give the ledger of B's cell:\n%s", got.text)
	}
	old := c.clientAs(t, "alice-old-c", aliceTok)
	mustContain(t, old.ok("print(await runtime.end_session("+strconvQuote(h)+"))"), "{'ended': True}")
}

// waitInSandbox polls the engine until path exists in container id (a
// cell made it): polling the engine, not synchronising on time.
func waitInSandbox(t *testing.T, cli, id, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for exec.Command(cli, "exec", id, "test", "-e", path).Run() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared in the sandbox", path)
		}
		time.Sleep(100 * time.Millisecond) // polling the engine, not synchronising
	}
}

// endsNothing checks that `codebridge sessions end` refuses each of bad,
// naming it as data (no raw escape reaches the terminal).
func endsNothing(t *testing.T, homeDir string, bad ...string) {
	t.Helper()
	for _, tag := range bad {
		_, errOut, code := cli(t, homeDir, "", nil, "sessions", "end", tag)
		if code == 0 || strings.Contains(errOut, "\x1b") || !strings.Contains(errOut, "codebridge sessions") {
			t.Fatalf("sessions end %q: exit %d\n%s", tag, code, errOut)
		}
	}
}

// TestSessionsCommand: `codebridge sessions` lists the sandboxes of
// session handles on the engine by tag and principal, whichever bridge
// holds them, and never shows a handle; `sessions end TAG` removes one,
// and the bridge that held it says at the next call that the state is
// gone (it starts the handle afresh).
// From the attacker's side: a tag that is not one (a path, terminal
// escapes, another's prefix) is refused, named as data, and ends nothing.
func TestSessionsCommand(t *testing.T) {
	needEnv(t)
	b, aliceTok, bobTok := teamBridge(t, home(t, nil), nil)
	alice := b.statelessAs(t, "alice", aliceTok, nil)
	bob := b.statelessAs(t, "bob", bobTok, nil)
	h := callHandle(t, alice, "x = 1", "").handle
	hb := callHandle(t, bob, "y = 2", "").handle
	h0 := home(t, nil)
	out, errOut, code := cli(t, h0, "", nil, "sessions", "--json")
	var list []map[string]string
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("sessions --json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	principals := map[string]string{}
	for _, s := range list {
		principals[s["tag"]] = s["principal"]
	}
	if principals[tagOf(h)] == "" || principals[tagOf(hb)] == "" || principals[tagOf(h)] == principals[tagOf(hb)] {
		t.Fatalf("the listing lacks alice's or bob's session, or gives them one principal:\n%s", out)
	}
	if strings.Contains(out, strings.TrimPrefix(h, "cbs_")) || strings.Contains(out, strings.TrimPrefix(hb, "cbs_")) {
		t.Fatalf("the listing shows a handle:\n%s", out)
	}
	endsNothing(t, h0, "s-../../../etc/pas", "s-\x1b[31m0123456789abc", tagOf(h)[:10], "s-"+strings.Repeat("0", 16))
	if ended, errOut, code := cli(t, h0, "", nil, "sessions", "end", tagOf(h)); code != 0 || !strings.Contains(ended, "ended session "+tagOf(h)) {
		t.Fatalf("sessions end: exit %d\n%s\n%s", code, ended, errOut)
	}
	out, _, _ = cli(t, h0, "", nil, "sessions")
	if strings.Contains(out, tagOf(h)) || !strings.Contains(out, tagOf(hb)) {
		t.Fatalf("after ending alice's session, the listing:\n%s", out)
	}
	if got := callHandle(t, bob, "print(y)", hb); got.isError || !strings.Contains(got.text, "2") {
		t.Fatalf("bob's session after alice's was ended:\n%s", got.text)
	}
	// The bridge that held it finds the sandbox gone, and says so.
	if got := callHandle(t, alice, "print(x)", h); !got.isError || !strings.Contains(got.text, "variables, imports and files from earlier calls are gone") {
		t.Fatalf("alice's call after her session was ended:\n%s", got.text)
	}
}
