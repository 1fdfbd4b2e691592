//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
			sb := b.in(t)
			got := sb.ok(c.code)
			if !strings.Contains(got, c.want) {
				t.Fatalf("want %q in:\n%s", c.want, got)
			}
		})
	}
}

// TestCompatDocumentedBehaviour checks, against real servers, what the
// Python bridge's README, guides and tests document and codebridge did
// differently (issue 22, item 7): a configured cwd is reported; a
// file-level description applies to the file's servers without one; an
// entry that launches the Python bridge itself is skipped; search results
// carry server and tool and honour limit; list_tools_sync() without a
// server raises MCPError; its capabilities resource is listed and read.
func TestCompatDocumentedBehaviour(t *testing.T) {
	needEnv(t)
	h := home(t, nil)
	work := t.TempDir()
	stubPath := filepath.Join(repoRoot, "testdata/servers/stub_server.py")
	config := fmt.Sprintf(`{"description": "Team tools", "mcpServers": {
		"stub": {"command": "python3", "args": [%q], "cwd": %q},
		"other": {"command": "python3", "args": [%q, "--name=other"], "description": "its own"},
		"broken": {"command": "python3", "args": ["-c", "import sys; sys.exit(1)"]},
		"old-bridge": {"command": "uvx", "args": ["mcp-server-code-execution-mode@latest", "run"]}
	}}`, stubPath, work, stubPath)
	if err := os.WriteFile(filepath.Join(h, "MCPs", "team.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBridge(t, h)
	cases := []struct{ name, code, want string }{
		{"describe_server cwd", `print('cwd:', runtime.describe_server('stub')['cwd'])`, "cwd: " + work},
		{"loaded metadata cwd", `await mcp_stub.echo(message='start')
print('loaded cwd:', [s['cwd'] for s in runtime.list_loaded_server_metadata() if s['name'] == 'stub'])`, "loaded cwd: ['" + work + "']"},
		{"file-level description", `print({s['name']: s['description'] for s in runtime.discovered_servers(detailed=True)})`,
			"{'stub': 'Team tools', 'other': 'its own', 'broken': 'Team tools'}"},
		{"search limit and keys", `hits = await runtime.search_tool_docs('echo a message', limit=1)
print('hits:', len(hits), [(h['server'], h['tool']) for h in hits])
wide = await runtime.search_tool_docs('echo a message', limit=50)
print('keys:', all('server' in h and 'tool' in h for h in wide), any('unavailable' in h for h in wide))`,
			"hits: 1 ["},
		{"list_tools_sync without a server", `try:
    runtime.list_tools_sync()
except runtime.MCPError as e:
    print('MCPError:', e)`, "MCPError: list_tools needs a server name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := b.in(t).ok(c.code)
			mustContain(t, got, c.want)
			if c.name == "search limit and keys" {
				mustContain(t, got, "keys: True True")
			}
		})
	}
	t.Run("the Python bridge's entry is skipped", func(t *testing.T) {
		got := b.in(t).ok(`print(runtime.discovered_servers())`)
		if strings.Contains(got, "old-bridge") {
			t.Errorf("an entry that launches the Python bridge is configured: %s", got)
		}
		mustContain(t, b.stderr.String(), "launches the Python code-execution bridge")
	})
	t.Run("capabilities resource", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, err := b.cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range list.Resources {
			uris = append(uris, r.URI)
		}
		const uri = "resource://mcp-server-code-execution-mode/capabilities"
		mustContain(t, strings.Join(uris, " "), uri, "codebridge://manual")
		res, err := b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		// The peer's text tells the model where a server runs (its cwd).
		if len(res.Contents) != 1 || res.Contents[0].URI != uri || !strings.Contains(res.Contents[0].Text, "search_tool_docs") ||
			!strings.Contains(res.Contents[0].Text, `describe_server("server")["cwd"]`) {
			t.Errorf("read %s: %+v", uri, res.Contents)
		}
	})
}

// The user guide promises decorators in skills: a function whose decorator
// returns a wrapper (no functools.wraps) is saved with its decorator and
// works when loaded as a skill (issue 22, item 6).
func TestCompatSkillOfDecoratedFunction(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	b.ok(`def shout(f):
    def wrapper(*args):
        return f(*args).upper()
    return wrapper`)
	b.ok(`@shout
def greet(name):
    return 'hello ' + name`)
	got := b.ok(`print(runtime.save_skill('greet', greet)['name'])`)
	mustContain(t, got, "greet")
	got = b.ok(`from skills import greet as saved
print(saved('ada'))`)
	mustContain(t, got, "HELLO ADA")
}
