package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The run_python definition an agent pays for is small, and the same bytes
// whatever is configured.
func TestToolDefinitionIndependentOfServers(t *testing.T) {
	needEnv(t)
	list := func(b *bridge) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := b.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != "run_python" {
			t.Fatalf("want exactly run_python, got %d tools", len(res.Tools))
		}
		out, err := json.Marshal(res.Tools[0])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	none := list(startBridge(t, home(t, nil)))
	three := list(startBridge(t, home(t, map[string]map[string]server{"npm.json": {
		"everything": npmServer("mcp-server-everything"),
		"filesystem": npmServer("mcp-server-filesystem", t.TempDir()),
		"memory":     npmServer("mcp-server-memory"),
	}})))
	if string(none) != string(three) {
		t.Fatalf("the definition changes with the configured servers:\n%s\n%s", none, three)
	}
	if len(none) > 1000 {
		t.Fatalf("the definition is %d bytes, over 1,000: %s", len(none), none)
	}
	t.Logf("run_python definition: %d bytes", len(none))
}

func TestManualResource(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": stub()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "codebridge://manual"})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Contents[0].Text
	mustContain(t, text, "search_tool_docs", "Servers: stub", "ToolError")
	// The description points to it.
	tools, err := b.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, tools.Tools[0].Description, "codebridge://manual")
	// And the sandbox's own copy is the same text.
	mustContain(t, b.ok(`print(runtime.capability_summary())`), "Servers: stub (mcp_stub)")
}
