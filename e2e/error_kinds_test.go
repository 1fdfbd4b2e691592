package e2e

import (
	"strings"
	"testing"
)

// Error kinds (issue 23), from the model's side: every failure of a
// request reached Python as one BridgeError, so code could only read
// messages. Now the host sends each failure's kind and code catches the
// kind it can handle (`except PermissionDenied`); each is still a
// BridgeError, and a tool's own error is still a ToolError.

// TestErrorKindsFromTheModelsSide: a tool the policy denies, one that
// needs an approval the client cannot give, an unknown server and tool, a
// call past its server's time limit, a server that crashes and one that
// cannot start each raise the class of their kind.
func TestErrorKindsFromTheModelsSide(t *testing.T) {
	needEnv(t)
	slow := entry(stub(), nil)
	slow["timeout"] = 10 // seconds; the call below asks for 600
	b, _ := policyBridge(t, map[string]any{
		"locked": entry(stub(), map[string]any{"tools": map[string][]string{"deny": {"echo"}, "ask": {"add"}}}),
		"slow":   slow,
		"crashy": entry(stub(), nil),
		"broken": map[string]any{"command": "/nonexistent/codebridge-no-such-server"},
	})
	r := b.run(`async def attempt(label, call, cls):
    try:
        print(label, "ran:", await call())
    except cls as e:
        print(label, "caught", type(e).__name__, getattr(e, "kind", "-"), isinstance(e, BridgeError), "|", e)
    except BaseException as e:
        print(label, "missed", type(e).__name__, "|", e)

await attempt("policy", lambda: call_tool("locked", "echo", {"message": "x"}), PermissionDenied)
await attempt("attribute", lambda: mcp_locked.echo(message="x"), PermissionDenied)
await attempt("approval", lambda: call_tool("locked", "add", {"a": 1, "b": 2}), PermissionDenied)
await attempt("server", lambda: call_tool("nosuch", "echo", {}), UnknownTool)
await attempt("tool", lambda: call_tool("locked", "no_such_tool", {}), UnknownTool)
await attempt("timeout", lambda: mcp_slow.sleep(seconds=600), ToolTimeout)
await attempt("crash", lambda: mcp_crashy.crash(), UpstreamError)
await attempt("start", lambda: call_tool("broken", "anything", {}), ServerUnavailable)
await attempt("toolerror", lambda: mcp_locked.fail(message="no"), ToolError)
from mcp import runtime as rt
print("exported", all(getattr(rt, n) is globals()[n] for n in ["PermissionDenied", "ToolTimeout", "UnknownTool", "UpstreamError", "ServerUnavailable"]))`, "timeout", 120)
	if r.isError {
		t.Fatalf("the cell failed:\n%s", r.text)
	}
	mustContain(t, r.text,
		`policy caught PermissionDenied denied True | tool locked.echo was denied: the policy does not allow it`,
		`attribute caught ToolDenied denied True | tool locked.echo was denied`,
		`approval caught PermissionDenied declined True | tool locked.add was denied: it needs the user's approval`,
		`server caught UnknownTool unknown_tool True | no MCP server "nosuch" is configured`,
		`tool caught UnknownTool unknown_tool True | tool locked.no_such_tool was denied`,
		`timeout caught ToolTimeout timeout True | server "slow": calling tool "sleep" timed out`,
		`crash caught ServerUnavailable unavailable True | server "crashy" exited while calling tool "crash"`,
		`start caught ServerUnavailable unavailable True | server "broken" could not start`,
		`toolerror caught ToolError - False | locked.fail: no`,
		"exported True")
	for _, leak := range []string{"missed", "ran:", "/nonexistent", "stub: crashing as asked"} {
		if strings.Contains(r.text, leak) {
			t.Errorf("the output has %q:\n%s", leak, r.text)
		}
	}
}
