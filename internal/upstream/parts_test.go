package upstream

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inMemory returns a supervisor whose live session is with srv, over
// in-memory transports: the parts built on a supervisor are tested
// without a process. The client has no handlers, so the server's
// list_changed notifications change nothing.
func inMemory(t *testing.T, srv *mcp.Server) *supervisor {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return &supervisor{
		spec:        discovery.Server{Name: "mem", Source: "test"},
		callTimeout: time.Minute,
		log:         slog.New(slog.DiscardHandler),
		stderr:      newTailBuffer(1024),
		conn:        &conn{client: client, cs: cs, exited: make(chan struct{})},
	}
}

func addTool(srv *mcp.Server, name string) {
	mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
}

// TestSessionList: a list is kept for the session it was read in only; a
// list read while the list changed is not kept; forget drops only the
// list it is given, and neither counts as a change.
func TestSessionList(t *testing.T) {
	var l sessionList[int]
	a, b := &conn{}, &conn{}
	if _, _, ok := l.cached(a); ok {
		t.Fatal("an empty cache returned a list")
	}
	_, gen, _ := l.cached(a)
	l.put(a, gen, []int{1, 2})
	if got, _, ok := l.cached(a); !ok || len(got) != 2 {
		t.Fatalf("the list read in session a: %v %v", got, ok)
	}
	if _, _, ok := l.cached(b); ok {
		t.Fatal("session b got the list read in session a")
	}

	_, gen, _ = l.cached(b)
	l.changed()
	if l.generation() != gen+1 {
		t.Fatalf("generation %d after one change from %d", l.generation(), gen)
	}
	if _, _, ok := l.cached(a); ok {
		t.Fatal("the list was kept after it changed")
	}
	l.put(b, gen, []int{3}) // read before the change
	if _, _, ok := l.cached(b); ok {
		t.Fatal("a list read before a change was kept")
	}

	_, gen, _ = l.cached(a)
	kept := []int{4}
	l.put(a, gen, kept)
	l.forget([]int{4}) // another list with the same contents
	if _, _, ok := l.cached(a); !ok {
		t.Fatal("forget dropped a list it was not given")
	}
	l.forget(kept)
	if _, _, ok := l.cached(a); ok || l.generation() != gen {
		t.Fatalf("forget: kept %v, generation %d (want %d)", ok, l.generation(), gen)
	}
}

// TestToolCatalogueLookup: the exact lookup matches case and punctuation;
// the list is read once; a tool added without a list_changed notification
// is found by looking again in a fresh list, and that does not count as a
// change of the list.
func TestToolCatalogueLookup(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem"}, nil)
	addTool(srv, "read_file")
	cat := &toolCatalogue{sup: inMemory(t, srv)}
	ctx := context.Background()
	first, err := cat.tools(ctx, nil)
	if err != nil || len(first) != 1 {
		t.Fatalf("tools: %v %v", first, err)
	}
	again, _ := cat.tools(ctx, nil)
	if again[0] != first[0] {
		t.Fatal("the tool list was read again instead of kept")
	}
	for _, name := range []string{"Read_File", "read-file", "read_file ", ""} {
		if tool, err := cat.lookup(ctx, nil, name); tool != nil || err != nil {
			t.Fatalf("lookup(%q) = %v, %v; want no tool", name, tool, err)
		}
	}
	if tool, err := cat.lookup(ctx, nil, "read_file"); err != nil || tool == nil || tool.Name != "read_file" {
		t.Fatalf("lookup(read_file) = %v, %v", tool, err)
	}
	addTool(srv, "late")
	if tool, err := cat.lookup(ctx, nil, "late"); err != nil || tool == nil {
		t.Fatalf("a tool added after the list was read was not found: %v, %v", tool, err)
	}
	if g := cat.generation(); g != 0 {
		t.Fatalf("looking again counted as a change: generation %d", g)
	}
	cat.changed()
	if g := cat.generation(); g != 1 {
		t.Fatalf("generation %d after a change", g)
	}
	fresh, _ := cat.tools(ctx, nil)
	if len(fresh) != 2 || fresh[0] == first[0] {
		t.Fatalf("the list was not read again after a change: %d tools", len(fresh))
	}
}

// TestToolsGenerationCountsARestart: a server that restarted may list
// other tools, so its tool list's generation moves.
func TestToolsGenerationCountsARestart(t *testing.T) {
	p := newTestPool(t, Options{}, stubSpec("stub"))
	s, _ := p.Get("stub")
	ctx := context.Background()
	if _, err := s.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	if g := s.ToolsGeneration(); g != 0 {
		t.Fatalf("generation %d after the first start", g)
	}
	if _, err := s.Call(ctx, nil, "crash", nil); err == nil {
		t.Fatal("a call whose server died returned no error")
	}
	if _, err := s.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	if g := s.ToolsGeneration(); g != 1 {
		t.Fatalf("generation %d after a restart, want 1", g)
	}
}

// TestOfferCache: resources, templates and prompts are listed as search
// entries once, kept until a list changes, and a server that declares
// none offers none.
func TestOfferCache(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem"}, nil)
	read := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	srv.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes", Description: "Meeting notes."}, read)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///{name}", Name: "any file"}, read)
	srv.AddPrompt(&mcp.Prompt{Name: "summarise"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	offers := &offerCache{sup: inMemory(t, srv)}
	ctx := context.Background()
	list := offers.entries(ctx)
	kinds := map[string]string{}
	for _, e := range list {
		kinds[e.Tool.Name] = e.Kind
		if e.Server != "mem" || e.words == nil {
			t.Fatalf("entry %+v: wrong server or no search words", e)
		}
	}
	if len(list) != 3 || kinds["notes"] != KindResource || kinds["any file"] != KindTemplate || kinds["summarise"] != KindPrompt {
		t.Fatalf("offers: %v", kinds)
	}
	srv.AddResource(&mcp.Resource{URI: "file:///later.txt", Name: "later"}, read)
	if again := offers.entries(ctx); len(again) != 3 || &again[0] != &list[0] {
		t.Fatal("the offers were listed again instead of kept")
	}
	offers.changed()
	if fresh := offers.entries(ctx); len(fresh) != 4 {
		t.Fatalf("after a change: %d offers, want 4", len(fresh))
	}

	bare := mcp.NewServer(&mcp.Implementation{Name: "bare"}, nil)
	addTool(bare, "only")
	if got := (&offerCache{sup: inMemory(t, bare)}).entries(ctx); len(got) != 0 {
		t.Fatalf("a server with only tools offers %d entries", len(got))
	}
}

// TestWordIndex: the search words of a tool list are computed once, and
// again for another list.
func TestWordIndex(t *testing.T) {
	var x wordIndex
	tools := []*mcp.Tool{{Name: "readFile"}, {Name: "write_file"}}
	w := x.of("fs", tools)
	if len(w) != 2 || w[0].Doc.Name != "readFile" || w[0].Doc.Server != "fs" {
		t.Fatalf("words: %+v", w[0])
	}
	if again := x.of("fs", tools); again[0] != w[0] {
		t.Fatal("the words were computed again for the same list")
	}
	other := []*mcp.Tool{{Name: "list_dir"}}
	if got := x.of("fs", other); len(got) != 1 || got[0].Doc.Name != "list_dir" {
		t.Fatalf("words of another list: %+v", got)
	}
}
