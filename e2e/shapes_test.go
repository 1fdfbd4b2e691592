package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// shapesHome is a HOME whose one config holds servers given as raw
// entries (per_session is not a field of the harness's server).
func shapesHome(t *testing.T, servers map[string]any) string {
	t.Helper()
	h := t.TempDir()
	if err := os.MkdirAll(filepath.Join(h, "MCPs"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h, "MCPs", "shapes.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// observedRE finds the section help() gains, and the shape on its next line.
var observedRE = regexp.MustCompile(`Returns \(observed from (\d+) calls?[^)]*\):\n\s+(.+)`)

// TestObservedShapes: help() of a tool of a real reference server shows
// the shape of its results after one call, in the same cell; a new
// bridge on the same state directory still shows it; once the tool's
// definition changes (the stub's add gets another description) it is
// gone, while the unchanged tool's stays. Search hits carry the one-line
// form.
func TestObservedShapes(t *testing.T) {
	needEnv(t)
	state := "CODEBRIDGE_STATE_DIR=" + filepath.Join(t.TempDir(), "state")
	everything := npmServer("mcp-server-everything")
	v1 := shapesHome(t, map[string]any{"everything": everything, "stub": stub("--describe=add=Add two numbers (v1).")})

	b := startBridge(t, v1, state)
	out := b.ok(`print("before:", "Returns (observed" in mcp_everything.get_resource_links.__doc__)
links = await mcp_everything.get_resource_links(count=2)
print(await mcp_stub.add(a=1, b=2))
help(mcp_everything.get_resource_links)
help(mcp_stub.add)
for hit in runtime.search_tool_docs_sync("resource links", limit=3):
    print("hit:", hit["tool"], "->", hit.get("returns"))`)
	mustContain(t, out, "before: False",
		"Returns (observed from 1 call):",
		"[str(text)|resource_link]", // get-resource-links: a text block and two links
		"str(JSON int)",             // the stub's add: "3"
		"hit: get-resource-links -> [str(text)|resource_link]")
	b.close()

	again := startBridge(t, v1, state)
	out = again.ok("help(mcp_everything.get_resource_links)\nhelp(mcp_stub.add)")
	if got := observedRE.FindAllStringSubmatch(out, -1); len(got) != 2 || got[0][2] != "[str(text)|resource_link]" || got[1][2] != "str(JSON int)" {
		t.Fatalf("after a restart, the shapes are not shown: %q\n%s", got, out)
	}
	again.close()

	v2 := shapesHome(t, map[string]any{"everything": everything, "stub": stub("--describe=add=Add two numbers (v2).")})
	changed := startBridge(t, v2, state)
	out = changed.ok("help(mcp_stub.add)\nprint('-----')\nhelp(mcp_everything.get_resource_links)")
	stubHelp, evHelp, _ := strings.Cut(out, "-----")
	mustContain(t, stubHelp, "Add two numbers (v2).")
	if strings.Contains(stubHelp, "Returns (observed") {
		t.Fatalf("the shape of a tool whose definition changed is still shown:\n%s", stubHelp)
	}
	mustContain(t, evHelp, "Returns (observed from 1 call):")
}

// TestObservedShapesStayWithTheirPrincipal: over HTTP, the shapes of
// tool results are kept for the principal whose calls made them, a
// per_session server's and a shared server's alike (a key can be data):
// Bob's help() does not show what Alice's calls returned.
func TestObservedShapesStayWithTheirPrincipal(t *testing.T) {
	needEnv(t)
	state := filepath.Join(t.TempDir(), "state")
	tokens := filepath.Join(t.TempDir(), "tokens")
	const aliceTok, bobTok = "alice-0123456789abcdef", "bob-0123456789abcdef0"
	if err := os.WriteFile(tokens, []byte("alice "+aliceTok+"\nbob "+bobTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	own := stub("--name=own")
	h := shapesHome(t, map[string]any{
		"own":    map[string]any{"command": own.Command, "args": own.Args, "per_session": true},
		"shared": stub("--name=shared"),
	})
	b := startHTTP(t, h, []string{"CODEBRIDGE_STATE_DIR=" + state}, "--token-file", tokens)
	alice := b.clientAs(t, "alice", aliceTok)
	out := alice.ok("await mcp_own.add(a=1, b=2)\nawait mcp_shared.add(a=1, b=2)\nhelp(mcp_own.add)\nhelp(mcp_shared.add)")
	if n := strings.Count(out, "Returns (observed from 1 call):"); n != 2 {
		t.Fatalf("alice sees %d observed shapes, want 2:\n%s", n, out)
	}

	bob := b.clientAs(t, "bob", bobTok)
	out = bob.ok("help(mcp_own.add)\nprint('-----')\nhelp(mcp_shared.add)")
	ownHelp, sharedHelp, _ := strings.Cut(out, "-----")
	if strings.Contains(ownHelp, "Returns (observed") {
		t.Fatalf("bob sees the shape of alice's per_session server:\n%s", ownHelp)
	}
	if strings.Contains(sharedHelp, "Returns (observed") {
		t.Fatalf("bob sees the shape of alice's calls of a shared server:\n%s", sharedHelp)
	}
	out = bob.ok("await mcp_shared.add(a=2, b=3)\nhelp(mcp_shared.add)")
	mustContain(t, out, "Returns (observed from 1 call):", "str(JSON int)")
	if _, err := os.Stat(filepath.Join(state, "principals", "t-alice", "shapes")); err != nil {
		t.Fatalf("alice's shapes are not in her place: %v", err)
	}
}

// TestObservedShapesOfReferenceServers is the measurement for the note:
// every tool of the three npm reference servers (issue 26 counts 37; they
// list 38 to the bridge, below), each called once with
// arguments that work; how many then show an observed shape in help(),
// and the longest one-line form. Every tool that answered without an
// error and declares no outputSchema must show one; a tool with an
// outputSchema must show its schema and no observation.
func TestObservedShapesOfReferenceServers(t *testing.T) {
	needEnv(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	memory := npmServer("mcp-server-memory")
	memory.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	h := home(t, map[string]map[string]server{"npm.json": {
		"everything": npmServer("mcp-server-everything"),
		"filesystem": npmServer("mcp-server-filesystem", dir),
		"memory":     memory,
	}})
	b := startBridge(t, h, "CODEBRIDGE_STATE_DIR="+filepath.Join(t.TempDir(), "state"))
	code := fmt.Sprintf(`import json
D = %q
calls = {
 "everything": [("echo", {"message": "hi"}), ("get-annotated-message", {"messageType": "success", "includeImage": True}),
   ("get-env", {}), ("get-resource-links", {"count": 2}), ("get-resource-reference", {}),
   ("get-structured-content", {"location": "New York"}), ("get-sum", {"a": 1, "b": 2}), ("get-tiny-image", {}),
   ("gzip-file-as-resource", {"data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"}),
   ("toggle-simulated-logging", {}), ("toggle-subscriber-updates", {}),
   ("trigger-long-running-operation", {"duration": 1, "steps": 1}), ("simulate-research-query", {"topic": "shapes"}),
   ("trigger-sampling-request", {"prompt": "hi"}), ("trigger-elicitation-request", {})],
 "filesystem": [("read_file", {"path": D + "/a.txt"}), ("read_text_file", {"path": D + "/a.txt"}),
   ("write_file", {"path": D + "/b.txt", "content": "x"}), ("edit_file", {"path": D + "/b.txt", "edits": [{"oldText": "x", "newText": "y"}]}),
   ("read_media_file", {"path": D + "/a.txt"}), ("read_multiple_files", {"paths": [D + "/a.txt", D + "/b.txt"]}),
   ("create_directory", {"path": D + "/sub"}), ("list_directory", {"path": D}), ("list_directory_with_sizes", {"path": D}),
   ("directory_tree", {"path": D}), ("move_file", {"source": D + "/b.txt", "destination": D + "/sub/b.txt"}),
   ("search_files", {"path": D, "pattern": "*.txt"}), ("get_file_info", {"path": D + "/a.txt"}), ("list_allowed_directories", {})],
 "memory": [("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": ["o"]}, {"name": "b", "entityType": "t", "observations": []}]}),
   ("create_relations", {"relations": [{"from": "a", "to": "b", "relationType": "knows"}]}),
   ("add_observations", {"observations": [{"entityName": "a", "contents": ["p"]}]}),
   ("read_graph", {}), ("search_nodes", {"query": "a"}), ("open_nodes", {"names": ["a"]}),
   ("delete_observations", {"deletions": [{"entityName": "a", "observations": ["p"]}]}),
   ("delete_relations", {"relations": [{"from": "a", "to": "b", "relationType": "knows"}]}),
   ("delete_entities", {"entityNames": ["b"]})],
}
rows = []
for server, tools in calls.items():
    for tool, args in tools:
        try:
            await call_tool(server, tool, args)
            ok = "ok"
        except Exception as e:
            ok = type(e).__name__
        rows.append((server, tool, ok))
docs = {}
for server in calls:
    for d in runtime.query_tool_docs_sync(server, detail="full"):
        docs[(server, d["tool"])] = d
for server, tool in sorted(set(docs) - {(s, t) for s, t, _ in rows}):
    rows.append((server, tool, "not called"))
for server, tool, ok in rows:
    d = docs[(server, tool)]
    fn = getattr(mcp_servers[server], d["toolAlias"])
    has = "Returns (observed" in mcp._proxy.refreshed(fn).__doc__
    print("ROW", json.dumps([server, tool, ok, "outputSchema" in d, has, d.get("returns")]))`, dir)
	out := b.ok(code)
	var tools, shown, longest int
	var longestTool string
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "ROW ")
		if !ok {
			continue
		}
		var row []any
		if err := json.Unmarshal([]byte(rest), &row); err != nil {
			t.Fatal(err)
		}
		tools++
		server, tool, outcome, declared, has := row[0].(string), row[1].(string), row[2].(string), row[3].(bool), row[4].(bool)
		line, _ := row[5].(string)
		t.Logf("%-10s %-32s %-16s outputSchema=%-5v observed=%-5v %s", server, tool, outcome, declared, has, line)
		switch {
		case declared && has:
			t.Errorf("%s.%s declares an outputSchema and shows an observed shape", server, tool)
		case !declared && outcome == "ok" && !has:
			t.Errorf("%s.%s answered and shows no observed shape", server, tool)
		}
		if has {
			shown++
			if len(line) > longest {
				longest, longestTool = len(line), server+"."+tool
			}
		}
	}
	// 36 tools, and the two of server-everything that it lists to a
	// client that takes sampling and elicitation requests (the bridge).
	if tools < 36 {
		t.Fatalf("%d tools measured, want every tool of the three reference servers:\n%s", tools, out)
	}
	t.Logf("NUMBERS: %d of %d tools show an observed shape after one call each; the longest one-line shape is %d bytes (%s)", shown, tools, longest, longestTool)
}
