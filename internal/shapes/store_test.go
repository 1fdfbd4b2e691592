package shapes

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	first := Open(dir, nil)
	first.Book("").Observe("srv", echo, json.RawMessage(structured(`{"id":1}`)), false, nil)
	first.Close() // the bridge's end

	store := Open(dir, nil)
	again := store.Book("") // a new bridge, the same state directory
	seen, ok := again.Shape("srv", tool("echo", "Echo it."))
	if !ok || seen.Text != "{id: int}" || seen.Calls != 1 {
		t.Fatalf("after a restart: %+v %v", seen, ok)
	}
	if _, ok := again.Shape("srv", tool("echo", "Echo it, differently.")); ok {
		t.Fatal("a shape is shown for a tool whose definition changed")
	}
	again.Observe("srv", tool("echo", "Echo it, differently."), json.RawMessage(textResult("hi")), false, nil)
	store.Close()
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
	b.Observe("srv", echo, json.RawMessage(`{"content":[{"type":"text","text":"boom"}],"isError":true}`), true, nil)
	if _, ok := b.Shape("srv", echo); ok {
		t.Fatal("an error alone made a shape")
	}
	b.Observe("srv", echo, json.RawMessage(structured(`{"ok":true}`)), false, nil)
	if seen, _ := b.Shape("srv", echo); seen.Calls != 1 || seen.Errors != 1 || seen.Text != "{ok: bool}" {
		t.Fatalf("%+v", seen)
	}
}

func TestBookDeclaredSchemaWins(t *testing.T) {
	b := Open("", nil).Book("")
	stats := tool("stats", "")
	stats.OutputSchema = map[string]any{"type": "object"}
	b.Observe("srv", stats, json.RawMessage(structured(`{"count":1}`)), false, nil)
	if _, ok := b.Shape("srv", stats); ok {
		t.Fatal("a tool with an outputSchema has an observed shape")
	}
}

func TestBooksOfPrincipalsApart(t *testing.T) {
	root := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	s := Open(root, nil)
	echo := tool("echo", "")
	s.Book("t-alice").Observe("mem", echo, json.RawMessage(structured(`{"alice_only":1}`)), false, nil)
	s.Close()
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
	store := Open(root, nil)
	b := store.Book("")
	for _, name := range []string{"../../escape", "/etc/passwd", "a\x00b", strings.Repeat("x", 5000)} {
		b.Observe(name, tool("t", ""), json.RawMessage(structured(`{"a":1}`)), false, nil)
	}
	store.Close()
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
		b.Observe("srv", tool(strings.Repeat("t", i+1), ""), json.RawMessage(structured(`{"a":1}`)), false, nil)
	}
	b.mu.Lock()
	b.drain()
	n := len(b.servers["srv"].Tools)
	b.mu.Unlock()
	if n != MaxTools {
		t.Fatalf("%d tools kept", n)
	}
}

// paused is a store whose writer never runs: what its books observe
// waits until a Shape asks or Close.
func paused(dir statedir.Dir) *Store {
	s := Open(dir, nil)
	s.w.started = true
	return s
}

// TestObserveWritesOffTheCallPath: observing a result neither writes its
// file nor waits for anything that does: the store's writer does, and
// Close writes what is left. A Shape asked meanwhile shows it.
func TestObserveWritesOffTheCallPath(t *testing.T) {
	dir := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	s := paused(dir)
	echo := tool("echo", "")
	s.Book("").Observe("srv", echo, json.RawMessage(structured(`{"id":1}`)), false, nil)
	if _, err := os.Stat(dir.Path(statedir.Shapes)); err == nil {
		t.Fatal("Observe wrote the shapes file on the call's path")
	}
	if seen, ok := s.Book("").Shape("srv", echo); !ok || seen.Calls != 1 {
		t.Fatalf("the shape observed is not shown: %+v %v", seen, ok)
	}
	s.Close()
	if seen, ok := Open(dir, nil).Book("").Shape("srv", echo); !ok || seen.Calls != 1 || seen.Text != "{id: int}" {
		t.Fatalf("Close did not write the shape: %+v %v", seen, ok)
	}
}

// TestObserveBoundsWhatWaits: while the writer is behind, the results
// waiting for it stay within its budget (a caller past it merges its
// own), and none is lost: every one is counted, and Close writes them.
func TestObserveBoundsWhatWaits(t *testing.T) {
	dir := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	s := paused(dir)
	raw := json.RawMessage(structured(`{"id":1,"name":"x"}`))
	s.w.budget = int64(3 * len(raw))
	b := s.Book("")
	echo := tool("echo", "")
	for range 10 {
		b.Observe("srv", echo, raw, false, nil)
		if n := s.w.pending.Load(); n > s.w.budget {
			t.Fatalf("%d bytes wait, more than the budget of %d", n, s.w.budget)
		}
	}
	b.pmu.Lock()
	waiting := len(b.pending)
	b.pmu.Unlock()
	if waiting == 0 || waiting > 3 {
		t.Fatalf("%d results wait; want some, at most the 3 the budget holds", waiting)
	}
	s.Close()
	if n := s.w.pending.Load(); n != 0 {
		t.Fatalf("%d bytes still counted as waiting after Close", n)
	}
	if seen, ok := Open(dir, nil).Book("").Shape("srv", echo); !ok || seen.Calls != 10 {
		t.Fatalf("after Close: %+v %v; want 10 calls", seen, ok)
	}
}

// TestCloseLosesNothing: results observed at once from many calls, with
// the writer running, are all in the file once Close returned, and one
// observed after Close too.
func TestCloseLosesNothing(t *testing.T) {
	dir := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	s := Open(dir, nil)
	echo := tool("echo", "")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			s.Book("").Observe("srv", echo, json.RawMessage(structured(fmt.Sprintf(`{"id":%d}`, i))), i%5 == 0, nil)
		})
	}
	wg.Wait()
	s.Close()
	s.Book("").Observe("srv", echo, json.RawMessage(structured(`{"id":1}`)), false, nil)
	s.Close()
	seen, ok := Open(dir, nil).Book("").Shape("srv", echo)
	if !ok || seen.Calls != 41 || seen.Errors != 10 {
		t.Fatalf("after Close: %+v %v; want 41 calls and 10 errors", seen, ok)
	}
}
