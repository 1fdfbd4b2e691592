package e2e

import (
	"strings"
	"testing"
)

// referenceHome configures the three npm reference servers and the stub.
func referenceHome(t *testing.T) string {
	return home(t, map[string]map[string]server{"servers.json": {
		"everything": npmServer("mcp-server-everything"),
		"filesystem": npmServer("mcp-server-filesystem", t.TempDir()),
		"memory":     npmServer("mcp-server-memory"),
		"math":       stub("--name=math"),
	}})
}

func TestSearchToolDocs(t *testing.T) {
	needEnv(t)
	b := startBridge(t, referenceHome(t))
	cases := []struct {
		query  string
		within int
		server string
		tool   string // a prefix of the tool name is enough
	}{
		{"read file", 1, "filesystem", "read_"},
		{"add two numbers", 3, "math", "add"},
		{"knowledge graph entities", 2, "memory", "create_entities"},
		{"fielsystem directory", 5, "filesystem", "list_directory"},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			code := `
for h in await runtime.search_tool_docs(` + pyStr(c.query) + `, limit=5):
    print(h.get("server"), h.get("tool"), h.get("python"), "|", h.get("summary", "")[:60])`
			got := b.ok(code)
			lines := strings.Split(strings.TrimSpace(got), "\n")
			for i, l := range lines {
				if i >= c.within {
					break
				}
				f := strings.Fields(l)
				if len(f) >= 3 && f[0] == c.server && strings.HasPrefix(f[1], c.tool) {
					if !strings.HasPrefix(f[2], "mcp_"+c.server+".") {
						t.Fatalf("the python name %q is not callable as mcp_%s.<tool>", f[2], c.server)
					}
					return
				}
			}
			t.Fatalf("%s.%s* not in the top %d:\n%s", c.server, c.tool, c.within, got)
		})
	}
}

func TestToolDocsAndSignatures(t *testing.T) {
	needEnv(t)
	b := startBridge(t, referenceHome(t))
	t.Run("full docs carry the schema", func(t *testing.T) {
		got := b.ok(`d = await runtime.query_tool_docs("everything", "get-sum", detail="full")
print(d)`)
		mustContain(t, got, "inputSchema", "'a'", "'b'")
	})
	t.Run("signature matches required and optional", func(t *testing.T) {
		// memory's search_nodes requires query; filesystem's
		// read_text_file requires path and has optional head/tail.
		code := `
import inspect
sig = inspect.signature(mcp_filesystem.read_text_file)
for name, p in sig.parameters.items():
    print(name, "required" if p.default is inspect.Parameter.empty else "optional")
schema = (await runtime.query_tool_docs("filesystem", "read_text_file", detail="full"))["inputSchema"]
print("schema-required", sorted(schema.get("required", [])))
print("schema-all", sorted(schema["properties"]))`
		got := b.ok(code)
		mustContain(t, got, "path required", "head optional", "tail optional", "schema-required ['path']")
	})
	t.Run("help shows parameters", func(t *testing.T) {
		got := b.ok(`help(mcp_everything.get_sum)`)
		mustContain(t, got, "get_sum", "a", "b")
	})
	t.Run("import from mcp.servers", func(t *testing.T) {
		got := b.ok(`from mcp.servers.everything import echo
print(await echo(message="imported"))`)
		mustContain(t, got, "imported")
	})
	t.Run("manual", func(t *testing.T) {
		mustContain(t, b.ok(`print(runtime.capability_summary())`), "search_tool_docs", "everything", "filesystem", "memory")
	})
	t.Run("a search survives a server that will not start", func(t *testing.T) {
		b2 := startBridge(t, home(t, map[string]map[string]server{"s.json": {
			"math":   stub("--name=math"),
			"broken": {Command: "python3", Args: []string{"-c", "import sys; sys.exit(1)"}},
		}}))
		got := b2.ok(`
for h in await runtime.search_tool_docs("add numbers", limit=20):
    print(h)`)
		mustContain(t, got, "'tool': 'add'", "broken", "unavailable")
	})
}

// pyStr quotes s as a Python string literal.
func pyStr(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
