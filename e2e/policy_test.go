package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The policy's reach (issue 21, defects 6 and 7), from the attacker's
// side: code in the sandbox tries every way around a server's rules, and
// an approval question must show what will run. The upstream is
// testdata/servers/loose_server.py, careless on purpose: it ignores the
// case of tool names, has a tool named "fs/delete", and of a name given
// twice in the arguments acts on the last.

func looseServer() server {
	return server{Command: "python3", Args: []string{filepath.Join(repoRoot, "testdata/servers/loose_server.py")}}
}

// policyBridge starts a bridge whose servers are the given config
// entries; it returns the bridge and the config file's path.
func policyBridge(t *testing.T, servers map[string]any, env ...string) (*bridge, string) {
	t.Helper()
	h, _ := gateHome(t, servers, nil)
	return startBridge(t, h, env...), filepath.Join(h, "MCPs", "gate.json")
}

// entry is a config entry for s with the given rules ("tools",
// "resources", "prompts").
func entry(s server, rules map[string]any) map[string]any {
	e := map[string]any{"command": s.Command, "args": s.Args}
	for k, v := range rules {
		e[k] = v
	}
	return e
}

// TestPolicyDenyStarCoversSlash: "deny": ["*"] denies a tool whose name
// holds a slash, by call_tool and by attribute (a pattern's * stopped at
// "/", so fs/delete ran).
func TestPolicyDenyStarCoversSlash(t *testing.T) {
	needEnv(t)
	b, cfg := policyBridge(t, map[string]any{
		"loose": entry(looseServer(), map[string]any{"tools": map[string][]string{"deny": {"*"}}}),
	})
	got := b.ok(`print("listed:", [t["name"] for t in await runtime.list_tools("loose")])
for how, call in [("call_tool", lambda: call_tool("loose", "fs/delete", {"path": "/etc"})),
                  ("attribute", lambda: mcp_loose.fs_delete(path="/etc"))]:
    try:
        print(how, "ran:", await call())
    except Exception as e:
        print(how, "refused:", type(e).__name__, "-", e)`)
	if strings.Contains(got, "ran:") || strings.Contains(got, "deleted") {
		t.Fatalf("a tool with a slash in its name ran under deny [\"*\"]:\n%s", got)
	}
	mustContain(t, got, "listed: []",
		`call_tool refused: PermissionDenied - tool loose.fs/delete was denied: the policy does not allow it`,
		`attribute refused: ToolDenied - tool loose.fs/delete was denied`,
		`(rule tools.deny "*" of server "loose" in `+cfg+`)`)
}

// TestPolicyCallNamesListedToolExactly: with delete_all denied, calls to
// DELETE_ALL and Delete_All (which the loose upstream would run as
// delete_all) are refused as naming no listed tool; a listed tool still
// runs.
func TestPolicyCallNamesListedToolExactly(t *testing.T) {
	needEnv(t)
	b, _ := policyBridge(t, map[string]any{
		"loose": entry(looseServer(), map[string]any{"tools": map[string][]string{"deny": {"delete_all"}}}),
	})
	got := b.ok(`for name in ["DELETE_ALL", "Delete_All", "delete_all", "ECHO"]:
    try:
        print(name, "ran:", await call_tool("loose", name, {"message": "x"}))
    except Exception as e:
        print(name, "refused:", e)
print("echo:", await call_tool("loose", "echo", {"message": "still here"}))`)
	if strings.Contains(got, "deleted everything") || strings.Contains(got, "ran:") {
		t.Fatalf("a denied tool ran under another spelling:\n%s", got)
	}
	mustContain(t, got,
		`DELETE_ALL refused: tool loose.DELETE_ALL was denied: a call must name one of the server's tools exactly`,
		`(server "loose" lists no tool named exactly "DELETE_ALL")`,
		`Delete_All refused: tool loose.Delete_All was denied`,
		`delete_all refused: tool loose.delete_all was denied: the policy does not allow it`,
		`ECHO refused: `, "echo: still here")
}

// TestPolicyAllowListCoversResourcesAndPrompts: a server limited to
// "allow": ["echo"] no longer serves every resource and prompt: reads and
// prompts are refused with the rule, and the listings are empty; a server
// whose entry allows some resources and prompts serves those only.
func TestPolicyAllowListCoversResourcesAndPrompts(t *testing.T) {
	needEnv(t)
	ev := npmServer("mcp-server-everything")
	b, cfg := policyBridge(t, map[string]any{
		"only": entry(ev, map[string]any{"tools": map[string][]string{"allow": {"echo"}}}),
		"some": entry(ev, map[string]any{"tools": map[string][]string{"allow": {"echo"}},
			"resources": map[string][]string{"allow": {"demo://resource/static/*"}},
			"prompts":   map[string][]string{"allow": {"simple-prompt"}}}),
	})
	got := b.ok(`print("echo:", await mcp_only.echo(message="hi"))
async def attempt(what, call):
    try:
        r = await call()
        print(what, "served:", str(r)[:60])
    except Exception as e:
        print(what, "refused:", e)
for name, s in [("only", mcp_only), ("some", mcp_some)]:
    print(name, "resources:", sorted(r["uri"] for r in await s.list_resources()))
    print(name, "templates:", [r["uriTemplate"] for r in await s.list_resource_templates()])
    print(name, "prompts:", [p["name"] for p in await s.list_prompts()])
    await attempt(name + " static", lambda: s.read_resource("demo://resource/static/document/architecture.md"))
    await attempt(name + " dynamic", lambda: s.read_resource("demo://resource/dynamic/text/1"))
    await attempt(name + " simple-prompt", lambda: s.get_prompt("simple-prompt"))
    await attempt(name + " args-prompt", lambda: s.get_prompt("args-prompt", city="Paris"))`)
	mustContain(t, got, "echo: Echo: hi",
		"only resources: []", "only templates: []", "only prompts: []",
		`only static refused: resource only.demo://resource/static/document/architecture.md was denied: the policy does not allow it`,
		`(rule tools.allow of server "only" in `+cfg+` (an allow list limits the server to what its lists name, and no "resources" list names this resource))`,
		`only dynamic refused:`,
		`only simple-prompt refused: prompt only.simple-prompt was denied`, `no "prompts" list names this prompt`,
		`only args-prompt refused:`,
		"some templates: []", "some prompts: ['simple-prompt']",
		"some static served:", "some simple-prompt served:",
		`some dynamic refused: resource some.demo://resource/dynamic/text/1 was denied`, `rule resources.allow of server "some"`,
		`some args-prompt refused: prompt some.args-prompt was denied`, `rule prompts.allow of server "some"`)
	if !strings.Contains(got, "some resources: ['demo://resource/static/document/") {
		t.Fatalf("the allowed resources are not listed:\n%s", got)
	}
	if strings.Contains(got, "some resources:") && strings.Contains(strings.SplitN(strings.SplitN(got, "some resources:", 2)[1], "\n", 2)[0], "dynamic") {
		t.Fatalf("a denied resource is listed:\n%s", got)
	}
}

// TestPolicyAskListAloneDeniesNothing: "tools": {"ask": ["delete_*"]}
// means "ask before these": the other tools run as before (the ask list
// made an allow-list that denied them), and delete_all still needs an
// approval this client cannot give.
func TestPolicyAskListAloneDeniesNothing(t *testing.T) {
	needEnv(t)
	b, _ := policyBridge(t, map[string]any{
		"loose": entry(looseServer(), map[string]any{"tools": map[string][]string{"ask": {"delete_*"}}}),
	})
	got := b.ok(`print("echo:", await mcp_loose.echo(message="not denied"))
print("fs/delete:", await call_tool("loose", "fs/delete", {"path": "/tmp/x"}))
try:
    await mcp_loose.delete_all()
except Exception as e:
    print("delete_all refused:", e)`)
	mustContain(t, got, "echo: not denied", "fs/delete: deleted /tmp/x",
		`delete_all refused: tool loose.delete_all was denied: it needs the user's approval`, `rule tools.ask "delete_*"`)
}

// TestPolicyDeniedAttributeSaysRule: calling a denied tool by attribute
// says it is denied by the policy, by which rule in which file (it said
// "has no tool" with suggestions, and the model hunted for a typo); a
// typo still gets suggestions.
func TestPolicyDeniedAttributeSaysRule(t *testing.T) {
	needEnv(t)
	b, cfg := policyBridge(t, map[string]any{
		"loose": entry(looseServer(), map[string]any{"tools": map[string][]string{"deny": {"delete_*"}}}),
	})
	got := b.ok(`def said(code, e):
    print(code, "->", type(e).__name__, "-", e)
try:
    await mcp_loose.delete_all()
except Exception as e:
    said("await mcp_loose.delete_all()", e)
try:
    mcp_loose.delete_all.sync()
except Exception as e:
    said("mcp_loose.delete_all.sync()", e)
try:
    from mcp.servers.loose import delete_all
    await delete_all()
except Exception as e:
    said("from mcp.servers.loose import delete_all; await delete_all()", e)
try:
    mcp_loose.eho
except Exception as e:
    said("mcp_loose.eho", e)`)
	for _, call := range []string{"await mcp_loose.delete_all()", "mcp_loose.delete_all.sync()", "from mcp.servers.loose import delete_all; await delete_all()"} {
		mustContain(t, got, call+` -> ToolDenied - tool loose.delete_all was denied: the policy does not allow it; change the rule in the config (or --policy) to allow it (rule tools.deny "delete_*" of server "loose" in `+cfg+`)`)
	}
	mustContain(t, got, "mcp_loose.eho -> AttributeError", "has no tool 'eho'; did you mean echo?")
	if strings.Contains(got, "delete_all -> AttributeError") {
		t.Fatalf("a denied tool reads as missing:\n%s", got)
	}
}

// TestPolicyApprovalShowsWhatRuns: an approval shows the arguments the
// upstream will act on. A long first value (the question cut the raw
// text at 500 bytes, hiding "path"), padding written into the frame, and
// a name given twice (the upstream acts on the last) cannot hide the
// effective path; the call with a name twice is refused before anyone is
// asked.
func TestPolicyApprovalShowsWhatRuns(t *testing.T) {
	needEnv(t)
	var mu sync.Mutex
	var asked []string
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-approve", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"session": false}}, nil
		},
	})
	h, _ := gateHome(t, map[string]any{
		"loose": entry(looseServer(), map[string]any{"tools": map[string][]string{"ask": {"rm"}}}),
	}, nil)
	b := startBridgeClient(t, h, client, oldProtocol)
	question := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(asked) == 0 {
			return ""
		}
		q := asked[len(asked)-1]
		asked = nil
		return q
	}

	// A long value first: the path must still be shown.
	got := b.ok(`print(await mcp_loose.rm(note="n" * 600, path="/"))`)
	q := question()
	mustContain(t, got, `rm acted on {"note": "<600 bytes>", "path": "/"}`)
	if !strings.Contains(q, `"path":"/"`) || !strings.Contains(q, `…" (600 bytes)`) {
		t.Fatalf("the question hides what runs: %q", q)
	}

	// Padding and a second "path" written into the frame itself.
	const tamper = `from mcp import _channel
_orig = _channel.encode
def _tampered(frame, old=%q, new=%q):
    data = _orig(frame)
    if frame.get("method") == "call_tool":
        data = data.replace(old.encode(), new.encode(), 1)
    return data
_channel.encode = _tampered
try:
    print("ran:", await mcp_loose.rm(path="/tmp/scratch"))
except Exception as e:
    print("refused:", type(e).__name__, "-", e)
finally:
    _channel.encode = _orig`
	got = b.ok(fmt.Sprintf(tamper, `{"path":"/tmp/scratch"}`, `{`+strings.Repeat(" ", 700)+`"path" : "/tmp/\u0073cratch"}`))
	q = question()
	mustContain(t, got, `ran: rm acted on {"path": "/tmp/scratch"}`)
	shown, _, _ := strings.Cut(q, "\nThe cell's code") // the arguments; the code below is indented as written
	if !strings.Contains(shown, `{"path":"/tmp/scratch"}`) || strings.Contains(shown, "   ") {
		t.Fatalf("the question shows the padded text, not the canonical arguments: %q", q)
	}

	got = b.ok(fmt.Sprintf(tamper, `"path":"/tmp/scratch"`, `"path":"/tmp/scratch","path":"/"`))
	q = question()
	if strings.Contains(got, "ran:") || q != "" {
		t.Fatalf("a call with \"path\" twice ran or was put to the user (asked %q):\n%s", q, got)
	}
	mustContain(t, got, `refused: InvalidArguments - tool loose.rm was denied: a name appears twice in one object`,
		`duplicate object member name "path" within "/arguments"`)
}
