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
