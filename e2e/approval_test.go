package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approver is an MCP client's user: it keeps the approval questions it is
// asked and gives the answer set for them.
type approver struct {
	mu     sync.Mutex
	asked  []string
	answer *mcp.ElicitResult
}

func (a *approver) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Params.Message)
	return a.answer, nil
}

// next sets the answer to the questions to come and returns those asked
// since the last call.
func (a *approver) next(answer *mcp.ElicitResult) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	asked := a.asked
	a.asked, a.answer = nil, answer
	return asked
}

func allow(scope string) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": scope}}
}

// TestApprovalBatch: a cell that gathers five calls of a tool that asks
// (the memory server's delete_entities, in ask-destructive mode) asks the
// user once, one question listing the five calls with the code of the
// line that made them, and the answer covers them all; "for this cell"
// also lets the cell's later calls of the tool through, and not the next
// cell's; a decline declines all five. Both ways of asking: elicitation
// in the call (protocol 2025-11-25) and input requests (2026-07-28).
func TestApprovalBatch(t *testing.T) {
	needEnv(t)
	for _, style := range []struct {
		name string
		opts *mcp.ClientSessionOptions
	}{{"elicitation", oldProtocol}, {"input-requests", nil}} {
		t.Run(style.name, func(t *testing.T) { approvalBatch(t, style.opts) })
	}
}

// gatherFive is a cell that deletes five entities at once, on its third
// line, after creating them (create_entities does not ask).
const gatherFive = `import asyncio
await mcp_memory.create_entities(entities=[{"name": f"e{i}", "entityType": "t", "observations": []} for i in range(5)])
r = await asyncio.gather(*(mcp_memory.delete_entities(entityNames=[f"e{i}"]) for i in range(5)), return_exceptions=True)
print("RESULTS", [type(x).__name__ for x in r])
`

func approvalBatch(t *testing.T, opts *mcp.ClientSessionOptions) {
	mem := npmServer("mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	h, _ := gateHome(t, map[string]any{"memory": map[string]any{"command": mem.Command, "args": mem.Args, "env": mem.Env}}, nil)
	user := &approver{}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-batch", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: user.elicit})
	b := startBridgeClient(t, h, client, opts, "CODEBRIDGE_POLICY=ask-destructive")
	if v := b.cs.InitializeResult().ProtocolVersion; (opts == nil) != (v >= "2026-07-28") {
		t.Fatalf("the client speaks protocol %s", v)
	}

	// Allowed once: one question for the five, listing each, with the line.
	user.next(allow("once"))
	out := b.ok(gatherFive)
	asked := user.next(allow("cell"))
	mustContain(t, out, "RESULTS ['dict', 'dict', 'dict', 'dict', 'dict']")
	if len(asked) != 1 {
		t.Fatalf("five gathered calls asked %d questions: %q", len(asked), asked)
	}
	q := asked[0]
	mustContain(t, q, "wants to make 5 calls at once", "> 3 | r = await asyncio.gather(*(mcp_memory.delete_entities(", `["e0"]`, `["e4"]`)
	if n := strings.Count(q, "the tool memory.delete_entities (line 3) with"); n != 5 {
		t.Fatalf("the question lists %d of the calls:\n%s", n, q)
	}

	// For this cell: the five and the cell's later calls, one question.
	out = b.ok(gatherFive + `await mcp_memory.create_entities(entities=[{"name": "late", "entityType": "t", "observations": []}])
await mcp_memory.delete_entities(entityNames=["late"])
print("LATER", await mcp_memory.delete_entities(entityNames=["late"]))`)
	asked = user.next(allow("once"))
	mustContain(t, out, "RESULTS ['dict', 'dict', 'dict', 'dict', 'dict']", "LATER")
	if len(asked) != 1 {
		t.Fatalf("for this cell: asked %d questions: %q", len(asked), asked)
	}
	// ... and not the next cell's.
	mustContain(t, b.ok(`print("NEXT", await mcp_memory.delete_entities(entityNames=["none"]))`), "NEXT")
	asked = user.next(&mcp.ElicitResult{Action: "decline"})
	if len(asked) != 1 || !strings.Contains(asked[0], "wants to call the tool memory.delete_entities with") ||
		!strings.Contains(asked[0], "> 1 | print(\"NEXT\"") {
		t.Fatalf("the next cell: asked %q", asked)
	}

	// Declined: all five are.
	out = b.ok(gatherFive + `print("WHY", r[0])`)
	asked = user.next(nil)
	mustContain(t, out, "RESULTS ['PermissionDenied', 'PermissionDenied', 'PermissionDenied', 'PermissionDenied', 'PermissionDenied']",
		"WHY tool memory.delete_entities was denied: the user did not approve it", "the user declined")
	if len(asked) != 1 {
		t.Fatalf("decline: asked %d questions: %q", len(asked), asked)
	}
}

// TestApprovalBatchLie: a sandbox that lies on its rpc frames (a batch of
// 1,000 it never sends, a line its cell does not have) delays only its
// own call: the call is asked about when the approval timeout ends the
// wait for the rest, the question says the line is not known, and the
// next cell's gathered calls ask once as before.
func TestApprovalBatchLie(t *testing.T) {
	needEnv(t)
	mem := npmServer("mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	h, _ := gateHome(t, map[string]any{"memory": map[string]any{"command": mem.Command, "args": mem.Args, "env": mem.Env}}, nil)
	user := &approver{}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-batch-lie", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: user.elicit})
	b := startBridgeClient(t, h, client, oldProtocol, "CODEBRIDGE_POLICY=ask-destructive", "CODEBRIDGE_APPROVAL_TIMEOUT=2")
	user.next(allow("once"))
	out := b.ok(`from mcp import _channel
_orig = _channel.encode
def _lying(frame):
    if frame.get("method") == "call_tool":
        frame = dict(frame, batch=77, size=1000, line=10**9)
    return _orig(frame)
_channel.encode = _lying
try:
    print("LIED", await mcp_memory.delete_entities(entityNames=["x"]))
finally:
    _channel.encode = _orig`)
	asked := user.next(allow("once"))
	mustContain(t, out, "LIED")
	if len(asked) != 1 || !strings.Contains(asked[0], "the line of the call is not known") || !strings.Contains(asked[0], "  1 | from mcp import _channel") {
		t.Fatalf("the lying cell asked %q", asked)
	}
	mustContain(t, b.ok(gatherFive), "RESULTS ['dict', 'dict', 'dict', 'dict', 'dict']")
	if asked = user.next(nil); len(asked) != 1 || !strings.Contains(asked[0], "5 calls at once") {
		t.Fatalf("the next cell asked %q", asked)
	}
}
