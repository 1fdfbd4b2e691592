package e2e

import (
	"strings"
	"testing"
)

// TestPolicyDeniedByAttributeIsAudited: a call of a denied tool by
// attribute (async, its blocking twin, the _sync name, the imported
// function) reaches the host's gate, which denies it and audits it, as
// it does a call_tool of the same tool; the upstream never sees one.
// Before, the runtime raised at the attribute and the audit held the
// call_tool alone.
func TestPolicyDeniedByAttributeIsAudited(t *testing.T) {
	needEnv(t)
	h, audit := gateHome(t, map[string]any{
		"loose": entry(looseServer(), map[string]any{"tools": map[string][]string{"deny": {"delete_*"}}}),
	}, nil)
	b := startBridge(t, h, "CODEBRIDGE_AUDIT="+audit)
	got := b.ok(`async def attempt(how, call):
    try:
        print(how, "ran:", await call() if how != "sync" else call())
    except Exception as e:
        print(how, "refused:", type(e).__name__, "-", e)
await attempt("attribute", lambda: mcp_loose.delete_all(where="attribute"))
await attempt("sync", lambda: mcp_loose.delete_all.sync(where="sync"))
await attempt("sync name", lambda: mcp_loose.delete_all_sync(where="sync name"))
async def imported():
    from mcp.servers.loose import delete_all
    return await delete_all(where="imported")
await attempt("imported", imported)
await attempt("call_tool", lambda: call_tool("loose", "delete_all", {"where": "call_tool"}))
print("echo:", await mcp_loose.echo(message="still here"))`)
	if strings.Contains(got, "ran:") || strings.Contains(got, "deleted") {
		t.Fatalf("a denied tool ran:\n%s", got)
	}
	for _, how := range []string{"attribute", "sync", "imported"} {
		mustContain(t, got, how+` refused: ToolDenied - tool loose.delete_all was denied: the policy does not allow it`)
	}
	mustContain(t, got, `sync name refused: ToolDenied`, `call_tool refused: PermissionDenied - tool loose.delete_all was denied`,
		`rule tools.deny "delete_*" of server "loose"`, "echo: still here")
	var denied []string
	for _, r := range auditLines(t, audit) {
		if r["outcome"] == "denied" {
			denied = append(denied, r["name"].(string)+" "+r["rule"].(string))
		}
	}
	if len(denied) != 5 {
		t.Fatalf("the audit holds %d denied calls, want the 5 attempts (4 by attribute, 1 call_tool): %q", len(denied), denied)
	}
	for _, d := range denied {
		if !strings.HasPrefix(d, `delete_all rule tools.deny "delete_*"`) {
			t.Fatalf("a denied call in the audit: %q", d)
		}
	}
}

// TestPolicyListingsFollowReads: under "tools": {"allow": ["echo"]} every
// way code lists what a server offers (the runtime's functions and their
// blocking twins, the server's own helpers, search) shows no resource,
// template or prompt, as reading them is refused; the same server without
// rules lists them, so a leak would show.
func TestPolicyListingsFollowReads(t *testing.T) {
	needEnv(t)
	ev := npmServer("mcp-server-everything")
	b, _ := policyBridge(t, map[string]any{
		"only": entry(ev, map[string]any{"tools": map[string][]string{"allow": {"echo"}}}),
		"open": entry(ev, nil),
	})
	got := b.ok(`for name, s in [("open", mcp_open), ("only", mcp_only)]:
    print(name, "runtime:", len(await runtime.list_resources(name)), len(await runtime.list_resource_templates(name)), len(await runtime.list_prompts(name)))
    print(name, "sync:", len(runtime.list_resources_sync(name)), len(runtime.list_resource_templates_sync(name)), len(runtime.list_prompts_sync(name)))
    print(name, "helpers:", len(await s.list_resources()), len(await s.list_resource_templates()), len(await s.list_prompts(limit=2)))
    found = await runtime.search_tool_docs("simple prompt static document architecture resource template", limit=50)
    print(name, "search:", len([h for h in found if h.get("server") == name and h.get("kind")]))
    try:
        await s.get_prompt("simple-prompt")
        print(name, "prompt served")
    except Exception as e:
        print(name, "prompt refused:", type(e).__name__)`)
	mustContain(t, got, "only runtime: 0 0 0", "only sync: 0 0 0", "only helpers: 0 0 0", "only search: 0",
		"only prompt refused: PermissionDenied", "open prompt served")
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "open ") && (strings.Contains(line, ": 0") || strings.Contains(line, " 0 ")) {
			t.Fatalf("the server without rules lists nothing of a kind, so the test cannot see a leak:\n%s", got)
		}
	}
}
