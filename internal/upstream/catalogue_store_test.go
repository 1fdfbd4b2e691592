package upstream

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/statedir"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func savedTools(names ...string) []*mcp.Tool {
	var tools []*mcp.Tool
	for _, n := range names {
		tools = append(tools, &mcp.Tool{Name: n, Description: "Does " + n + ".", InputSchema: map[string]any{"type": "object"}})
	}
	return tools
}

func spec(name string, args ...string) discovery.Server {
	return discovery.Server{Name: name, Command: "srv", Args: args, Env: map[string]string{"TOKEN": "secret-value"}}
}

func toolNames(tools []*mcp.Tool) string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return strings.Join(names, ",")
}

// TestSavedListingRoundTrip: what one bridge's server lists, a new store
// over the same state directory reads back, tools and offers, as
// current; the file holds neither the env's value nor the server's name
// in its path.
func TestSavedListingRoundTrip(t *testing.T) {
	dir := statedir.Dir(filepath.Join(t.TempDir(), "state"))
	l := newSavedListing(OpenCatalogue(dir, nil), "", spec("files"))
	if v := l.view(); v.state != savedNone {
		t.Fatalf("a server never listed has a listing: %+v", v)
	}
	l.keepTools(savedTools("read_file", "write_file"))
	l.keepOffers([]Entry{offerEntry("files", KindResource, "file:///a", "a", "", "The file a.")})

	v := newSavedListing(OpenCatalogue(dir, nil), "", spec("files")).view()
	if v.state != savedCurrent || toolNames(v.tools) != "read_file,write_file" || len(v.offers) != 1 {
		t.Fatalf("read back: %+v", v)
	}
	if o := v.offers[0]; o.Kind != KindResource || o.URI != "file:///a" || o.Tool.Description != "The file a." || o.words == nil {
		t.Fatalf("the offer read back: %+v", o)
	}
	files, _ := os.ReadDir(dir.Path(statedir.Catalogue))
	if len(files) != 1 || !strings.HasSuffix(files[0].Name(), ".json") || strings.Contains(files[0].Name(), "files") {
		t.Fatalf("catalogue files: %v", files)
	}
	data, _ := os.ReadFile(filepath.Join(dir.Path(statedir.Catalogue), files[0].Name()))
	if strings.Contains(string(data), "secret-value") {
		t.Fatal("the listing file holds the value of an env variable")
	}
}

// TestSavedListingStaleAfterTheEntryChanged: a listing made under an
// earlier form of the entry (other args, another env value, another
// command) is stale, still readable; tools listed under the new entry
// drop the old offers.
func TestSavedListingStaleAfterTheEntryChanged(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	old := newSavedListing(OpenCatalogue(dir, nil), "", spec("s", "--v1"))
	old.keepTools(savedTools("a"))
	old.keepOffers([]Entry{offerEntry("s", KindPrompt, "", "p", "", "")})

	otherEnv := spec("s", "--v1")
	otherEnv.Env["TOKEN"] = "rotated"
	otherURL := spec("s", "--v1")
	otherURL.Command, otherURL.URL = "", "http://127.0.0.1:1/mcp"
	for _, changed := range []discovery.Server{spec("s", "--v2"), otherEnv, otherURL} {
		v := newSavedListing(OpenCatalogue(dir, nil), "", changed).view()
		if v.state != savedStale || toolNames(v.tools) != "a" {
			t.Fatalf("entry %+v: %+v", changed, v)
		}
	}
	described := spec("s", "--v1")
	described.Description, described.Timeout = "now described", time.Minute
	if v := newSavedListing(OpenCatalogue(dir, nil), "", described).view(); v.state != savedCurrent {
		t.Fatalf("a description or timeout made the listing %v", v.state)
	}

	now := newSavedListing(OpenCatalogue(dir, nil), "", spec("s", "--v2"))
	now.keepTools(savedTools("b"))
	v := newSavedListing(OpenCatalogue(dir, nil), "", spec("s", "--v2")).view()
	if v.state != savedOld || toolNames(v.tools) != "b" || v.offers != nil {
		t.Fatalf("listed anew without offers: %+v", v)
	}
}

// TestSavedListingWritesOnlyWhatChanged: a list read again that says the
// same is not written again (a sandbox naming tools no server lists makes
// the server list again at each call), until the listing grows old; one
// that says something else is.
func TestSavedListingWritesOnlyWhatChanged(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	store := OpenCatalogue(dir, nil)
	l := newSavedListing(store, "", spec("s"))
	l.keepTools(savedTools("a"))
	l.keepOffers(nil)
	path := store.path("", "s")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	l.keepTools(savedTools("a"))
	l.keepOffers(nil)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the same listing was written again: %v", err)
	}
	store.now = func() time.Time { return time.Now().Add(savedMaxAge) }
	l.keepTools(savedTools("a"))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("an old listing read again was not written: %v", err)
	}
	os.Remove(path)
	l.keepTools(savedTools("a", "b"))
	if v := newSavedListing(OpenCatalogue(dir, nil), "", spec("s")).view(); toolNames(v.tools) != "a,b" {
		t.Fatalf("a changed list was not written: %+v", v)
	}
}

// TestSavedListingAges: a listing older than savedMaxAge is old, not
// current (the search lists it again in the background).
func TestSavedListingAges(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	store := OpenCatalogue(dir, nil)
	l := newSavedListing(store, "", spec("s"))
	l.keepTools(savedTools("a"))
	l.keepOffers(nil)
	if v := l.view(); v.state != savedCurrent {
		t.Fatalf("just listed: %v", v.state)
	}
	store.now = func() time.Time { return time.Now().Add(savedMaxAge + time.Hour) }
	if v := l.view(); v.state != savedOld {
		t.Fatalf("a day later: %v", v.state)
	}
}

// TestSavedListingHostileNames: a server's name is data: whatever it
// holds, its listing is one file named by a digest inside catalogue/,
// and each name gets its own.
func TestSavedListingHostileNames(t *testing.T) {
	root := t.TempDir()
	dir := statedir.Dir(filepath.Join(root, "state"))
	names := []string{"../../escape", "/etc/passwd", "a/b", "..", ".", "-rf", "x\x00y", "\x1b[31mred", strings.Repeat("n", 5000), "C:\\win"}
	for i, name := range names {
		newSavedListing(OpenCatalogue(dir, nil), "", spec(name)).keepTools(savedTools("t" + string(rune('a'+i))))
	}
	var files []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if len(files) != len(names) {
		t.Fatalf("%d names made %d files: %v", len(names), len(files), files)
	}
	for _, f := range files {
		base := filepath.Base(f)
		if filepath.Dir(f) != dir.Path(statedir.Catalogue) || len(base) != 32+len(".json") || strings.Trim(strings.TrimSuffix(base, ".json"), "0123456789abcdef") != "" {
			t.Fatalf("a listing file at %s", f)
		}
	}
	for i, name := range names {
		if v := newSavedListing(OpenCatalogue(dir, nil), "", spec(name)).view(); toolNames(v.tools) != "t"+string(rune('a'+i)) {
			t.Fatalf("%q reads %+v", name, v)
		}
	}
}

// TestSavedListingIgnoresBadFiles: a file that does not parse, is of
// another format, names another server, holds too many tools, a tool
// without a name, an unknown kind, or is too large, is not used.
func TestSavedListingIgnoresBadFiles(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	store := OpenCatalogue(dir, nil)
	good := newSavedListing(store, "", spec("s"))
	good.keepTools(savedTools("a"))
	path := store.path("", "s")
	valid, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(change func(f map[string]any)) string {
		var f map[string]any
		if err := json.Unmarshal(valid, &f); err != nil {
			t.Fatal(err)
		}
		change(f)
		b, _ := json.Marshal(f)
		return string(b)
	}
	many := make([]any, maxSavedEntries+1)
	for i := range many {
		many[i] = map[string]any{"name": "t", "inputSchema": map[string]any{}}
	}
	bad := map[string]string{
		"garbage":        "{not json",
		"another format": edit(func(f map[string]any) { f["v"] = 99 }),
		"another server": edit(func(f map[string]any) { f["server"] = "other" }),
		"too many tools": edit(func(f map[string]any) { f["tools"] = many }),
		"nameless tool":  edit(func(f map[string]any) { f["tools"] = []any{map[string]any{"description": "x"}} }),
		"unknown kind":   edit(func(f map[string]any) { f["offers"] = []any{map[string]any{"kind": "weird", "name": "x"}} }),
		"too large":      edit(func(f map[string]any) { f["pad"] = strings.Repeat("x", maxSavedFile) }),
	}
	for what, content := range bad {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if v := newSavedListing(OpenCatalogue(dir, nil), "", spec("s")).view(); v.state != savedNone || v.tools != nil {
			t.Errorf("%s: read as %+v", what, v)
		}
	}
	// A bad file is replaced by the next listing.
	l := newSavedListing(OpenCatalogue(dir, nil), "", spec("s"))
	l.keepTools(savedTools("b"))
	if v := newSavedListing(OpenCatalogue(dir, nil), "", spec("s")).view(); toolNames(v.tools) != "b" {
		t.Fatalf("after a new listing: %+v", v)
	}
}

// TestSavedListingTooLargeIsNotKept: a server that lists more tools than
// a listing holds is not saved (every bridge lists it anew).
func TestSavedListingTooLargeIsNotKept(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	many := make([]string, maxSavedEntries+1)
	for i := range many {
		many[i] = "t"
	}
	newSavedListing(OpenCatalogue(dir, nil), "", spec("s")).keepTools(savedTools(many...))
	if v := newSavedListing(OpenCatalogue(dir, nil), "", spec("s")).view(); v.state != savedNone {
		t.Fatalf("a listing over the bound was kept: %v", v.state)
	}
}

// TestSavedListingPrincipalsApart: a per_session server's listing is
// kept in the place of the principal whose session listed it: another
// principal, and the local user, do not read it.
func TestSavedListingPrincipalsApart(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	newSavedListing(OpenCatalogue(dir, nil), "t-alice", spec("own")).keepTools(savedTools("alice_only"))
	for _, place := range []string{"t-bob", ""} {
		if v := newSavedListing(OpenCatalogue(dir, nil), place, spec("own")).view(); v.state != savedNone {
			t.Fatalf("%q reads alice's listing: %+v", place, v)
		}
	}
	if v := newSavedListing(OpenCatalogue(dir, nil), "t-alice", spec("own")).view(); toolNames(v.tools) != "alice_only" {
		t.Fatalf("alice's own listing: %+v", v)
	}
	if _, err := os.Stat(dir.Of("t-alice").Path(statedir.Catalogue)); err != nil {
		t.Fatalf("alice's listing is not in her place: %v", err)
	}
}

// TestCatalogueOfANewPoolStartsNothing: a pool lists a server and keeps
// the listing; a new pool over the same state directory searches it
// without starting it, and lends its tools to Listed without starting
// it either.
func TestCatalogueOfANewPoolStartsNothing(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	opts := Options{Catalogue: OpenCatalogue(dir, nil)}
	ctx := context.Background()
	first := newTestPool(t, opts, stubSpec("stub", "--tool=quokka_census"))
	if _, err := first.Get("stub"); err != nil {
		t.Fatal(err)
	}
	if errs := first.Start(ctx, []string{"stub"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	entries, down, stale := first.Catalogue(ctx, time.Minute)
	if len(down) != 0 || len(stale) != 0 || !hasTool(entries, "quokka_census") {
		t.Fatalf("the first pool's search: %d entries, down %v, stale %v", len(entries), down, stale)
	}
	first.Close()

	again := newTestPool(t, Options{Catalogue: OpenCatalogue(dir, nil)}, stubSpec("stub", "--tool=quokka_census"))
	entries, down, stale = again.Catalogue(ctx, time.Minute)
	s, _ := again.Get("stub")
	if s.Running() {
		t.Fatal("the search of a new pool started a server whose listing it keeps")
	}
	if len(down) != 0 || len(stale) != 0 || !hasTool(entries, "quokka_census") {
		t.Fatalf("the new pool's search: %d entries, down %v, stale %v", len(entries), down, stale)
	}
	tools, err := s.Listed(ctx, nil)
	if err != nil || s.Running() || !strings.Contains(toolNames(tools), "quokka_census") {
		t.Fatalf("Listed: %v %v, running %v", toolNames(tools), err, s.Running())
	}
}

// TestCatalogueMarksAChangedEntryStale: a server whose entry changed
// since it was listed, and that is not listed again in time (this one
// never answers), is searched from its old listing and named stale; one
// never listed is unavailable.
func TestCatalogueMarksAChangedEntryStale(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	newSavedListing(OpenCatalogue(dir, nil), "", discovery.Server{Name: "changed", Command: "sleep", Args: []string{"1"}}).keepTools(savedTools("narwhal_tally"))
	silent := func(name string) discovery.Server {
		return discovery.Server{Name: name, Command: "sleep", Args: []string{"600"}, Source: "test"}
	}
	p := newTestPool(t, Options{Catalogue: OpenCatalogue(dir, nil)}, silent("changed"), silent("never"))
	entries, down, stale := p.Catalogue(context.Background(), 0)
	if len(stale) != 1 || stale[0].Server != "changed" || !hasTool(entries, "narwhal_tally") {
		t.Fatalf("stale %v, entries %d", stale, len(entries))
	}
	if len(down) != 1 || down[0].Server != "never" || !strings.Contains(down[0].Err.Error(), "search again") {
		t.Fatalf("down %v", down)
	}
	s, _ := p.Get("changed")
	if _, ok := s.saved.lend(); ok {
		t.Fatal("a stale listing is lent in place of the live list")
	}
}

// TestListChangedUpdatesTheSavedListing: a server that says its tools
// changed is listed again in the background, and the new list is saved
// without anyone asking for it.
func TestListChangedUpdatesTheSavedListing(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	p := newTestPool(t, Options{Catalogue: OpenCatalogue(dir, nil)}, stubSpec("stub"))
	s, _ := p.Get("stub")
	ctx := context.Background()
	if _, err := s.Call(ctx, nil, "grow", json.RawMessage(`{"name":"okapi_ledger"}`)); err != nil {
		t.Fatal(err)
	}
	path := OpenCatalogue(dir, nil).path("", "stub")
	deadline := time.Now().Add(time.Minute)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), "okapi_ledger") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the saved listing never got the new tool:\n%s", data)
		}
		time.Sleep(20 * time.Millisecond) // polling for the condition, not timing it
	}
}

// TestListedMovesTheGenerationWhenTheLiveListDiffers: tools lent from a
// saved listing that the server, once started, no longer lists count as
// a change, so that the sandbox lists again.
func TestListedMovesTheGenerationWhenTheLiveListDiffers(t *testing.T) {
	dir := statedir.Dir(t.TempDir())
	spec := stubSpec("stub")
	newSavedListing(OpenCatalogue(dir, nil), "", spec).keepTools(savedTools("gone"))
	p := newTestPool(t, Options{Catalogue: OpenCatalogue(dir, nil)}, spec)
	s, _ := p.Get("stub")
	ctx := context.Background()
	if tools, err := s.Listed(ctx, nil); err != nil || toolNames(tools) != "gone" {
		t.Fatalf("lent %v %v", toolNames(tools), err)
	}
	gen := s.ToolsGeneration()
	if _, err := s.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	if s.ToolsGeneration() == gen {
		t.Fatal("the live list differs from the lent one, and the generation did not move")
	}
	if tools, _ := s.Listed(ctx, nil); !strings.Contains(toolNames(tools), "echo") {
		t.Fatalf("a running server's Listed: %v", toolNames(tools))
	}
}

func hasTool(entries []Entry, name string) bool {
	for _, e := range entries {
		if e.Kind == "" && e.Tool.Name == name {
			return true
		}
	}
	return false
}
