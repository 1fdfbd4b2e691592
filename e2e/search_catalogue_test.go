package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// searchBoth asks for the tools of both servers of the catalogue tests and
// prints each hit (server, tool, whether it is marked stale), then the
// servers that run.
const searchBoth = `hits = runtime.search_tool_docs_sync("quokka census narwhal tally", limit=10)
for h in hits:
    print("HIT", h["server"], h["tool"], "stale" if h.get("stale") else "fresh", h.get("unavailable") or "")
    if h.get("stale"):
        print("NOTE", h["stale"])
print("RUNNING", sorted(s["name"] for s in runtime.list_servers_sync(detailed=True) if s["running"]))`

// TestSearchCatalogueOutlivesTheBridge: a bridge's search lists its
// servers (they start) and the state directory keeps what they listed; a
// new bridge over the same state directory answers a search from it
// without starting any server: alpha (whose command notes each start in a
// file) does not start, and its hit is not marked; beta, whose entry
// changed in between (its new command waits for a FIFO nobody opens, so
// it never lists again in time), is answered from its old listing, and
// its hit is marked stale. The tool found from the saved listing is
// called by the Python name the search gave.
func TestSearchCatalogueOutlivesTheBridge(t *testing.T) {
	needEnv(t)
	dir := t.TempDir()
	state := "CODEBRIDGE_STATE_DIR=" + filepath.Join(dir, "state")
	stubPath := filepath.Join(repoRoot, "testdata/servers/stub_server.py")
	starts := filepath.Join(dir, "alpha-starts")
	alpha := server{Command: "sh", Args: []string{"-c", `echo started >> "$0"; exec python3 "$1" --name=alpha --tool=quokka_census`, starts, stubPath}}
	beta := stub("--name=beta", "--tool=narwhal_tally")

	first := startBridge(t, home(t, map[string]map[string]server{"s.json": {"alpha": alpha, "beta": beta}}), state)
	out := first.ok(searchBoth)
	mustContain(t, out, "HIT alpha quokka_census fresh", "HIT beta narwhal_tally fresh", "RUNNING ['alpha', 'beta']")
	first.close()
	if n := startCount(t, starts); n != 1 {
		t.Fatalf("alpha started %d times in the first bridge, want 1", n)
	}

	fifo := filepath.Join(dir, "beta-gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	changed := server{Command: "sh", Args: []string{"-c", `cat "$0" >/dev/null; exec python3 "$1" --name=beta --tool=narwhal_tally`, fifo, stubPath}}
	again := startBridge(t, home(t, map[string]map[string]server{"s.json": {"alpha": alpha, "beta": changed}}), state)
	out = again.ok(searchBoth)
	mustContain(t, out, "HIT alpha quokka_census fresh", "HIT beta narwhal_tally stale", "RUNNING []",
		"entry in the configuration changed", "search again")
	if n := startCount(t, starts); n != 1 {
		t.Fatalf("the new bridge's search started alpha (%d starts in all), whose listing the state directory keeps:\n%s", n, out)
	}
	mustContain(t, again.ok(`print("CALLED", await mcp_alpha.quokka_census())`), "CALLED quokka_census")
	if n := startCount(t, starts); n != 2 {
		t.Fatalf("calling alpha's tool made %d starts in all, want 2", n)
	}
}

// startCount is how many times the wrapper of a server noted a start.
func startCount(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "started")
}

// TestSearchCatalogueOfPerSessionServersStaysWithItsPrincipal: over HTTP,
// what a per_session server lists for one principal's session is kept in
// that principal's place (its listing can differ by principal), and a
// shared server's in the state directory's root; another principal's
// search does not read the first one's listing (bob's per_session server
// is listed for him: it starts).
func TestSearchCatalogueOfPerSessionServersStaysWithItsPrincipal(t *testing.T) {
	needEnv(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	tokens := filepath.Join(dir, "tokens")
	const aliceTok, bobTok = "alice-0123456789abcdef", "bob-0123456789abcdef0"
	if err := os.WriteFile(tokens, []byte("alice "+aliceTok+"\nbob "+bobTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	own := stub("--name=own", "--tool=okapi_ledger")
	h := shapesHome(t, map[string]any{
		"own":    map[string]any{"command": own.Command, "args": own.Args, "per_session": true},
		"shared": stub("--name=shared", "--tool=quokka_census"),
	})
	b := startHTTP(t, h, []string{"CODEBRIDGE_STATE_DIR=" + state}, "--token-file", tokens)
	// The hits that match by name (the ranking may add weaker ones, such
	// as both servers' stats).
	search := `print("HITS", sorted(h["tool"] for h in runtime.search_tool_docs_sync("okapi ledger quokka census", limit=10) if h["tool"] in ("okapi_ledger", "quokka_census")))
print("RUNNING", sorted(s["name"] for s in runtime.list_servers_sync(detailed=True) if s["running"]))`
	mustContain(t, b.clientAs(t, "alice", aliceTok).ok(search), "HITS ['okapi_ledger', 'quokka_census']")
	if n := listingFiles(t, filepath.Join(state, "principals", "t-alice", "catalogue")); n != 1 {
		t.Fatalf("alice's place holds %d listings, want her per_session server's", n)
	}
	if n := listingFiles(t, filepath.Join(state, "catalogue")); n != 1 {
		t.Fatalf("the root holds %d listings, want the shared server's alone", n)
	}
	mustContain(t, b.clientAs(t, "bob", bobTok).ok(search), "HITS ['okapi_ledger', 'quokka_census']", "RUNNING ['own', 'shared']")
	if n := listingFiles(t, filepath.Join(state, "principals", "t-bob", "catalogue")); n != 1 {
		t.Fatalf("bob's place holds %d listings, want his per_session server's", n)
	}
}

// listingFiles counts the listing files in dir.
func listingFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("no listings in %s: %v", dir, err)
	}
	return len(entries)
}
