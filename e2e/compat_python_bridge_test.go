//go:build linux

package e2e

import (
	"strings"
	"testing"
)

// Code written for the Python code-execution bridge
// (github.com/elusznik/mcp-server-code-execution-mode) keeps working: its
// README's snippets run unchanged, and the helpers, dictionary keys and
// globals its README, GUIDE and ARCHITECTURE document exist with the
// meaning they give them.

// inspectServersSnippet is the README's "Inspect Available Servers"
// snippet, byte for byte (two-space indents included).
const inspectServersSnippet = `from mcp import runtime

print("Discovered:", runtime.discovered_servers())
print("Cached servers:", runtime.list_servers_sync())
print("Loaded metadata:", runtime.list_loaded_server_metadata())
print("Selectable via RPC:", await runtime.list_servers())

# Peek at tool docs for a server that's already loaded in this run
loaded = runtime.list_loaded_server_metadata()
if loaded:
  first = runtime.describe_server(loaded[0]["name"])
  for tool in first["tools"]:
    print(tool["alias"], "→", tool.get("description", ""))

# Ask for summaries or full schemas only when needed
if loaded:
  summaries = await runtime.query_tool_docs(loaded[0]["name"])
  detailed = await runtime.query_tool_docs(
    loaded[0]["name"],
    tool=summaries[0]["toolAlias"],
    detail="full",
  )
  print("Summaries:", summaries)
  print("Cached tools:", runtime.list_tools_sync(loaded[0]["name"]))
  print("Detailed doc:", detailed)

# Fuzzy search across loaded servers without rehydrating every schema
results = await runtime.search_tool_docs("calendar events", limit=3)
for result in results:
  print(result["server"], result["tool"], result.get("description", ""))

# Synchronous helpers for quick answers without extra awaits
print("Capability summary:", runtime.capability_summary())
print("Docs from cache:", runtime.query_tool_docs_sync(loaded[0]["name"]) if loaded else [])
print("Search from cache:", runtime.search_tool_docs_sync("calendar"))
`

func TestCompatInspectServersSnippet(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"servers.json": {"stub": stub()}}))
	// The peer loads the servers a call names in "servers"; so does this call.
	got := b.ok(inspectServersSnippet, "servers", []string{"stub"})
	mustContain(t, got,
		"Discovered: ('stub',)",
		"Cached servers: ('stub',)",
		"Loaded metadata: ({'name': 'stub', 'alias': 'stub'",
		"'tools': [{'name': 'echo', 'alias': 'echo'",
		"'input_schema': {",
		"Selectable via RPC: ('stub',)",
		"echo → Echo a message back.",
		"'toolAlias': 'echo'", "'serverAlias': 'stub'",
		"Detailed doc: {'server': 'stub', 'serverAlias': 'stub', 'tool': 'echo'",
		"'inputSchema': {",
		"Capability summary: codebridge sandbox",
		"Docs from cache: [{'server': 'stub'",
		"Search from cache: [")
}

// TestCompatDocumentedNames uses each name the peer documents outside the
// snippet: mcp_servers[...], mcp.runtime without an import, the servers
// modules, a proxy's list_tools, describe_server's cwd key, detailed
// discovered_servers, and MCPError.
func TestCompatDocumentedNames(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"servers.json": {"stub": stub()}}))
	cases := []struct{ name, code, want string }{
		{"mcp_servers by name", `server = mcp_servers['stub']
print(await server.echo(message='via mcp_servers'))`, "via mcp_servers"},
		{"mcp.runtime without import", `print(len(await mcp.runtime.query_tool_docs('stub')) > 0, await mcp.runtime.search_tool_docs('echo'))`, "True ["},
		{"module import star", `from mcp.servers.stub import *
print(await echo(message='star'))`, "star"},
		{"proxy list_tools", `print([t['name'] for t in await mcp_stub.list_tools()][:2])`, "['echo', 'add']"},
		{"describe_server cwd", `desc = runtime.describe_server('stub')
print('Server cwd:', desc.get('cwd') or 'bridge-default', desc['alias'], desc['name'])`, "Server cwd: bridge-default stub stub"},
		{"detailed discovery", `print(runtime.discovered_servers(detailed=True)[0]['description'])`, "a small test server"},
		{"call_tool with an arguments dict", `print(await mcp.runtime.call_tool('stub', 'add', {'a': 1, 'b': 2}))`, "3"},
		{"MCPError is the base of tool errors", `try:
    await mcp_stub.fail(message='nope')
except runtime.MCPError as e:
    print('caught', type(e).__name__, isinstance(e, RuntimeError))`, "caught ToolError True"},
		{"query_tool_docs by alias, summary keys", `d = runtime.query_tool_docs_sync('stub', 'echo')
print(sorted(k for k in d if k in ('server', 'serverAlias', 'tool', 'toolAlias', 'description')))`,
			"['description', 'server', 'serverAlias', 'tool', 'toolAlias']"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			got := b.ok(c.code)
			if !strings.Contains(got, c.want) {
				t.Fatalf("want %q in:\n%s", c.want, got)
			}
		})
	}
}
