package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientAs opens an MCP session with an HTTP bridge with a bearer token.
func (b *httpBridge) clientAs(t *testing.T, name, token string) *httpClient {
	t.Helper()
	hc := &http.Client{Transport: withBearer{token}}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: hc, DisableStandaloneSSE: true}, oldProtocol) // a session: 2025-11-25
	if err != nil {
		t.Fatalf("connecting %s: %v\nstderr:\n%s", name, err, b.stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &httpClient{t: t, cs: cs, name: name}
}

// TestPrincipalsKeepTheirOwnState: two team members share one HTTP bridge
// with named tokens. Bob, the attacker, saves a skill under the name of
// Alice's; Alice's next session still runs her own code. Bob can neither
// list nor delete Alice's skills (nor see the host user's, in the list or
// the manual), does not see her workspace files, and the audit names the
// token owner of each run and call.
func TestPrincipalsKeepTheirOwnState(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	state := filepath.Join(t.TempDir(), "state")
	tokens := filepath.Join(t.TempDir(), "tokens")
	const aliceTok, bobTok = "alice-0123456789abcdef", "bob-0123456789abcdef0"
	if err := os.WriteFile(tokens, []byte("alice "+aliceTok+"\nbob "+bobTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The host's own user (stdio) has a skill too: no token holder sees it.
	if err := os.MkdirAll(filepath.Join(state, "skills"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "skills", "owner_only.py"), []byte("def owner_only():\n    return 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startHTTP(t, h, []string{"CODEBRIDGE_STATE_DIR=" + state}, "--token-file", tokens) // the warm pool, as served by default

	alice := b.clientAs(t, "alice", aliceTok)
	aliceSave := `print(runtime.save_skill("report", "def report():\n    return 'alice-report'\n", "Alice's report.")["name"])
open("/workspace/alice-notes.txt", "w").write("private")
print(await mcp_stub.add(a=1, b=2))`
	mustContain(t, alice.ok(aliceSave), "report", "3")

	bob := b.clientAs(t, "bob", bobTok)
	bobLook := `import os
print("listed:", sorted(s["name"] for s in runtime.list_skills()))
print("file:", os.path.exists("/workspace/alice-notes.txt"))
try:
    runtime.delete_skill("report")
    print("deleted alice's skill")
except Exception as e:
    print("delete refused:", type(e).__name__)`
	out := bob.ok(bobLook)
	mustContain(t, out, "listed: []", "file: False", "delete refused")
	if strings.Contains(out, "deleted alice's skill") {
		t.Fatalf("bob deleted alice's skill:\n%s", out)
	}
	bobSave := `print(runtime.save_skill("report", "def report():\n    return 'bob-was-here'\n", "Bob's trap.")["name"])`
	mustContain(t, bob.ok(bobSave), "report")
	manual := readHTTPResource(t, bob, "codebridge://manual")
	if strings.Contains(manual, "owner_only") || !strings.Contains(manual, "report") {
		t.Fatalf("bob's manual should list his own skills only:\n%s", manual)
	}
	_ = alice.cs.Close()

	again := b.clientAs(t, "alice-again", aliceTok)
	got := again.ok("from skills import report\nprint(report())\nprint(sorted(s['description'] for s in runtime.list_skills()))")
	if strings.Contains(got, "bob-was-here") || !strings.Contains(got, "alice-report") {
		t.Fatalf("alice's next session ran bob's code:\n%s", got)
	}
	mustContain(t, got, "[\"Alice's report.\"]")
	mustContain(t, bob.ok("from skills import report\nprint(report())"), "bob-was-here")

	// The audit names the token owner of every run and call.
	want := map[string]string{sha(aliceSave): "token:alice", sha(bobLook): "token:bob", sha(bobSave): "token:bob"}
	seen := map[string]bool{}
	toolCall := ""
	f, err := os.Open(filepath.Join(state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct{ Event, Kind, Name, Principal, ArgSHA string }
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(sc.Bytes(), &rec)
		rec.ArgSHA, _ = raw["arg_sha256"].(string)
		if p, ok := want[rec.ArgSHA]; ok && rec.Event == "run" {
			seen[rec.ArgSHA] = true
			if rec.Principal != p {
				t.Errorf("the audit gives a run of %s to %q: %s", p, rec.Principal, sc.Text())
			}
		}
		if rec.Event == "call" && rec.Name == "add" {
			toolCall = rec.Principal
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("the audit holds %d of the %d runs", len(seen), len(want))
	}
	if toolCall != "token:alice" {
		t.Fatalf("alice's tool call is audited as %q", toolCall)
	}
}

// readHTTPResource reads one resource's text through an HTTP session.
func readHTTPResource(t *testing.T, c *httpClient, uri string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("%s: resources/read %s: %v", c.name, uri, err)
	}
	return res.Contents[0].Text
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestTeamSkillsAreReadOnly: a skill the host publishes with `codebridge
// skills publish` reaches every token holder's sessions; one holder can
// neither delete nor change it for the others (their own skill of its
// name hides it for them alone).
func TestTeamSkillsAreReadOnly(t *testing.T) {
	needEnv(t)
	h := home(t, nil)
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(filepath.Join(state, "skills"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "skills", "team_tool.py"), []byte("def team_tool():\n    return 'from-the-team'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"CODEBRIDGE_STATE_DIR=" + state}
	out, errOut, code := cli(t, h, "", env, "skills", "publish", "team_tool")
	if code != 0 {
		t.Fatalf("skills publish: %d\n%s%s", code, out, errOut)
	}
	published := filepath.Join(state, "team", "skills", "team_tool.py")
	before, err := os.ReadFile(published)
	if err != nil {
		t.Fatal(err)
	}

	tokens := filepath.Join(t.TempDir(), "tokens")
	const aliceTok, bobTok = "alice-0123456789abcdef", "bob-0123456789abcdef0"
	if err = os.WriteFile(tokens, []byte("alice "+aliceTok+"\nbob "+bobTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startHTTP(t, h, env, "--token-file", tokens)
	use := "from skills import team_tool\nprint(team_tool())\nprint([(s['name'], s.get('team')) for s in runtime.list_skills()])"
	mustContain(t, b.clientAs(t, "alice", aliceTok).ok(use), "from-the-team", "[('team_tool', True)]")

	bob := b.clientAs(t, "bob", bobTok)
	r, err := bob.run(`runtime.delete_skill("team_tool")`)
	if err != nil {
		t.Fatal(err)
	}
	if !r.isError || !strings.Contains(r.text, "is the team's") {
		t.Fatalf("bob's delete of the team's skill should be refused:\n%s", r.text)
	}
	mustContain(t, bob.ok(`print(runtime.save_skill("team_tool", "def team_tool():\n    return 'bob-was-here'\n")["name"])`), "team_tool")
	mustContain(t, b.clientAs(t, "bob-again", bobTok).ok(use), "bob-was-here")

	got := b.clientAs(t, "alice-again", aliceTok).ok(use)
	if !strings.Contains(got, "from-the-team") || strings.Contains(got, "bob-was-here") {
		t.Fatalf("bob changed the team's skill for alice:\n%s", got)
	}
	if after, err := os.ReadFile(published); err != nil || string(after) != string(before) {
		t.Fatalf("the published file changed: %v\n%s", err, after)
	}
}
