package shapes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/statedir"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func tool(name, description string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: description, InputSchema: map[string]any{"type": "object"}}
}

func TestBookKeepsShapesAcrossRestarts(t *testing.T) {
	dir := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	echo := tool("echo", "Echo it.")
	Open(dir, nil).Book("").Observe("srv", echo, json.RawMessage(structured(`{"id":1}`)), nil)

	again := Open(dir, nil).Book("") // a new bridge, the same state directory
	seen, ok := again.Shape("srv", tool("echo", "Echo it."))
	if !ok || seen.Text != "{id: int}" || seen.Calls != 1 {
		t.Fatalf("after a restart: %+v %v", seen, ok)
	}
	if _, ok := again.Shape("srv", tool("echo", "Echo it, differently.")); ok {
		t.Fatal("a shape is shown for a tool whose definition changed")
	}
	again.Observe("srv", tool("echo", "Echo it, differently."), json.RawMessage(textResult("hi")), nil)
	seen, _ = Open(dir, nil).Book("").Shape("srv", tool("echo", "Echo it, differently."))
	if seen.Text != "str(text)" || seen.Calls != 1 {
		t.Fatalf("the old shape was not dropped: %+v", seen)
	}
	if _, ok := Open(dir, nil).Book("").Shape("srv", echo); ok {
		t.Fatal("the old definition's shape came back")
	}
}

func TestBookCountsErrorsApart(t *testing.T) {
	b := Open("", nil).Book("")
	echo := tool("echo", "")
	b.Observe("srv", echo, json.RawMessage(`{"content":[{"type":"text","text":"boom"}],"isError":true}`), nil)
	if _, ok := b.Shape("srv", echo); ok {
		t.Fatal("an error alone made a shape")
	}
	b.Observe("srv", echo, json.RawMessage(structured(`{"ok":true}`)), nil)
	if seen, _ := b.Shape("srv", echo); seen.Calls != 1 || seen.Errors != 1 || seen.Text != "{ok: bool}" {
		t.Fatalf("%+v", seen)
	}
}

func TestBookDeclaredSchemaWins(t *testing.T) {
	b := Open("", nil).Book("")
	stats := tool("stats", "")
	stats.OutputSchema = map[string]any{"type": "object"}
	b.Observe("srv", stats, json.RawMessage(structured(`{"count":1}`)), nil)
	if _, ok := b.Shape("srv", stats); ok {
		t.Fatal("a tool with an outputSchema has an observed shape")
	}
}

func TestBooksOfPrincipalsApart(t *testing.T) {
	root := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	s := Open(root, nil)
	echo := tool("echo", "")
	s.Book("t-alice").Observe("mem", echo, json.RawMessage(structured(`{"alice_only":1}`)), nil)
	if _, ok := s.Book("t-bob").Shape("mem", echo); ok {
		t.Fatal("bob sees alice's shape")
	}
	if _, ok := Open(root, nil).Book("").Shape("mem", echo); ok {
		t.Fatal("the shared place holds alice's shape")
	}
	if seen, ok := Open(root, nil).Book("t-alice").Shape("mem", echo); !ok || seen.Text != "{alice_only: int}" {
		t.Fatalf("alice's shape was not kept in her place: %+v", seen)
	}
	if _, err := os.Stat(root.Of("t-alice").Path(statedir.Shapes)); err != nil {
		t.Fatalf("not under principals/t-alice: %v", err)
	}
}

// TestServerNamesAreNotPaths: a hostile server name makes a file named by
// its hash in the shapes directory, nowhere else.
func TestServerNamesAreNotPaths(t *testing.T) {
	root := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	b := Open(root, nil).Book("")
	for _, name := range []string{"../../escape", "/etc/passwd", "a\x00b", strings.Repeat("x", 5000)} {
		b.Observe(name, tool("t", ""), json.RawMessage(structured(`{"a":1}`)), nil)
	}
	var files []string
	_ = filepath.WalkDir(string(root), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 4 {
		t.Fatalf("files: %v", files)
	}
	for _, f := range files {
		if filepath.Dir(f) != root.Path(statedir.Shapes) || len(filepath.Base(f)) != 32+len(".json") {
			t.Errorf("a file outside shapes/ or not named by a hash: %s", f)
		}
	}
	// A file of another server copied over this one's is not read as its.
	data, _ := os.ReadFile(files[0])
	for _, f := range files[1:] {
		_ = os.WriteFile(f, data, 0o600)
	}
	fresh := Open(root, nil).Book("")
	shown := 0
	for _, name := range []string{"../../escape", "/etc/passwd", "a\x00b", strings.Repeat("x", 5000)} {
		if _, ok := fresh.Shape(name, tool("t", "")); ok {
			shown++
		}
	}
	if shown != 1 {
		t.Fatalf("%d servers show a shape from a file that is not theirs", shown)
	}
}

func TestBookKeepsAtMostMaxTools(t *testing.T) {
	b := Open("", nil).Book("")
	for i := range MaxTools + 10 {
		b.Observe("srv", tool(strings.Repeat("t", i+1), ""), json.RawMessage(structured(`{"a":1}`)), nil)
	}
	if n := len(b.servers["srv"].Tools); n != MaxTools {
		t.Fatalf("%d tools kept", n)
	}
}
