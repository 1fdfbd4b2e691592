package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessAs connects a go-sdk client as it connects by default
// (protocol 2026-07-28: no MCP session) with a bearer token, and lists
// the tools, as agents do first: a client mirrors run_python's `session`
// into the Mcp-Param-Session header (SEP-2243) once it knows the schema.
func (b *httpBridge) statelessAs(t *testing.T, name, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: &http.Client{Transport: withBearer{token}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connecting %s: %v\nstderr:\n%s", name, err, b.stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" || cs.ID() != "" {
		t.Fatalf("%s speaks %q with session %q; want 2026-07-28 and none", name, v, cs.ID())
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return cs
}

// handleAnswer is a run_python answer as a stateless client reads it.
type handleAnswer struct {
	text    string
	handle  string // the handle in structured content, if any
	isError bool
}

// callHandle calls run_python with code, in session handle ("" for none).
func callHandle(t *testing.T, cs *mcp.ClientSession, code, handle string) handleAnswer {
	t.Helper()
	args := map[string]any{"code": code}
	if handle != "" {
		args["session"] = handle
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		t.Fatalf("run_python: %v", err)
	}
	var a handleAnswer
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			a.text += tc.Text
		}
	}
	a.isError = res.IsError
	if m, ok := res.StructuredContent.(map[string]any); ok {
		a.handle, _ = m["session"].(string)
	}
	return a
}

var handleInText = regexp.MustCompile(`new session (cbs_[a-z2-7]{26})`)

// teamBridge serves HTTP with two tokens, alice's and bob's, and no warm
// pool (each container is a session's).
func teamBridge(t *testing.T, h string, env []string, args ...string) (b *httpBridge, aliceTok, bobTok string) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens")
	aliceTok, bobTok = "alice-0123456789abcdef", "bob-0123456789abcdef0"
	if err := os.WriteFile(tokens, []byte("alice "+aliceTok+"\nbob "+bobTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startHTTP(t, h, env, append([]string{"--token-file", tokens, "--warm", "0"}, args...)...), aliceTok, bobTok
}

// TestHTTPHandles: a go-sdk client on 2026-07-28 over HTTP gets a handle
// with its first call (in the text and in structured content) and keeps
// its variables by passing it; a call without it starts a new session. A
// 2025-11-25 client of the same user on the same endpoint keeps its MCP
// session, and may pass a handle too. From the attacker's side: bob with
// alice's handle and a guessed handle get the same answer, word for
// word, and touch nothing of alice's; the sandbox lists its principal's
// sessions by tag (never a handle), ends one, and that handle then says
// it was ended; its container is gone.
func TestHTTPHandles(t *testing.T) {
	needEnv(t)
	b, aliceTok, bobTok := teamBridge(t, home(t, nil), nil)
	alice := b.statelessAs(t, "alice-new", aliceTok, nil)
	h, other := handlesKeepVariables(t, alice)
	olderClientKeepsSession(t, b, aliceTok, h)
	bob := b.statelessAs(t, "bob", bobTok, nil)
	strangerHandlesAnswerAlike(t, alice, bob, h)
	sandboxListsAndEnds(t, b, alice, bob, h, other)
	if strings.Contains(b.stderr.String(), strings.TrimPrefix(h, "cbs_")) {
		t.Fatal("the bridge's log shows a handle")
	}
}

// handlesKeepVariables checks that alice's first call gets a handle, in
// the text and in structured content, that passing it keeps her variables,
// and that a call without it starts a new session; it returns the first
// handle (x = 41 in it) and the new session's.
func handlesKeepVariables(t *testing.T, alice *mcp.ClientSession) (h, other string) {
	t.Helper()
	first := callHandle(t, alice, "x = 41\nprint('set')", "")
	m := handleInText.FindStringSubmatch(first.text)
	if first.isError || m == nil || first.handle != m[1] {
		t.Fatalf("the first call's answer names no handle (structured %q):\n%s", first.handle, first.text)
	}
	h = first.handle
	if got := callHandle(t, alice, "print(x + 1)", h); got.isError || !strings.Contains(got.text, "42") || strings.Contains(got.text, "new session") {
		t.Fatalf("the second call, with the handle, does not see x:\n%s", got.text)
	}
	o := callHandle(t, alice, "print('x' in globals())", "")
	if o.handle == "" || o.handle == h || !strings.Contains(o.text, "False") {
		t.Fatalf("a call without a handle did not start a new session (%q):\n%s", o.handle, o.text)
	}
	return h, o.handle
}

// olderClientKeepsSession checks that an older client of alice's on the
// same endpoint (2025-11-25) keeps its MCP session, is given no handle, and
// may pass alice's handle h.
func olderClientKeepsSession(t *testing.T, b *httpBridge, aliceTok, h string) {
	t.Helper()
	old := b.clientAs(t, "alice-old", aliceTok) // 2025-11-25
	if v := old.cs.InitializeResult().ProtocolVersion; v != "2025-11-25" || old.cs.ID() == "" {
		t.Fatalf("the older client speaks %q with session %q", v, old.cs.ID())
	}
	old.ok("y = 7")
	mustContain(t, old.ok("print(y * 6)"), "42")
	if got := old.ok("print(y)"); strings.Contains(got, "new session") {
		t.Fatalf("the older client was given a handle:\n%s", got)
	}
	mustContain(t, old.ok("print(x)", "session", h), "41")
}

// strangerHandlesAnswerAlike checks, from the attacker's side, that bob
// with alice's live handle h and with a guessed one gets the same answer,
// word for word, and that alice's x is untouched.
func strangerHandlesAnswerAlike(t *testing.T, alice, bob *mcp.ClientSession, h string) {
	t.Helper()
	stolen := callHandle(t, bob, "x = 'bob was here'\nprint(x)", h)
	guessed := callHandle(t, bob, "print(1)", "cbs_"+strings.Repeat("a", 26))
	if !stolen.isError || !strings.Contains(stolen.text, "knows no session with this handle") || strings.Contains(stolen.text, "bob was here") {
		t.Fatalf("bob with alice's handle:\n%s", stolen.text)
	}
	if stolen.text != guessed.text {
		t.Fatalf("alice's handle and a guessed one answer bob differently (an oracle):\n%s\n---\n%s", stolen.text, guessed.text)
	}
	mustContain(t, callHandle(t, alice, "print(x)", h).text, "41")
}

// sandboxListsAndEnds checks that the sandbox lists alice's sessions by
// tag, never by handle, and not to bob; that it ends her first session h
// from the other one; that h then says it was ended; and that its
// container is gone.
func sandboxListsAndEnds(t *testing.T, b *httpBridge, alice, bob *mcp.ClientSession, h, other string) {
	t.Helper()
	listing := callHandle(t, alice, `import json
s = await runtime.sessions()
print(json.dumps(s))
print('OTHERS', [x['tag'] for x in s if not x['current']])`, other)
	for _, handle := range []string{h, other} {
		if strings.Contains(listing.text, strings.TrimPrefix(handle, "cbs_")) {
			t.Fatalf("the listing shows a handle:\n%s", listing.text)
		}
	}
	var tags []string
	if m := regexp.MustCompile(`OTHERS (\[.*\])`).FindStringSubmatch(listing.text); m != nil {
		_ = json.Unmarshal([]byte(strings.ReplaceAll(m[1], "'", `"`)), &tags)
	}
	if len(tags) != 1 {
		t.Fatalf("alice's listing, from her second session, shows other sessions %v, want one (her first):\n%s", tags, listing.text)
	}
	if got := callHandle(t, bob, "print(await runtime.sessions())", ""); strings.Contains(got.text, tags[0]) {
		t.Fatalf("bob's listing shows alice's session:\n%s", got.text)
	}
	waitContainers(t, b.cmd.Process.Pid, 4) // alice's two handles and MCP session, bob's last handle (his refused calls made none)
	mustContain(t, callHandle(t, alice, "print(await runtime.end_session("+strconvQuote(tags[0])+"))", other).text, "{'ended': True}")
	ended := callHandle(t, alice, "print(x)", h)
	if !ended.isError || !strings.Contains(ended.text, "was ended") {
		t.Fatalf("alice's ended handle:\n%s", ended.text)
	}
	waitContainers(t, b.cmd.Process.Pid, 3)
}

// strconvQuote quotes s for Python.
func strconvQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// TestHTTPHandleApprovals: on 2026-07-28 over HTTP what a cell needs of
// the client comes as input requests of the call (the go-sdk answers them
// and calls again, with the request state and the same handle, on a new
// request): the gate's approval, an upstream's sampling and elicitation,
// one a per_session server's. The cell goes on in the handle's session.
func TestHTTPHandleApprovals(t *testing.T) {
	needEnv(t)
	mem := npmServer("mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	sampler := npmServer("mcp-server-everything")
	sampler.Sampling = true
	own := map[string]any{"command": sampler.Command, "args": sampler.Args, "sampling": true, "per_session": true}
	h := home(t, map[string]map[string]server{"a.json": {"memory": mem, "everything": sampler}})
	if err := os.WriteFile(filepath.Join(h, "MCPs", "own.json"), mustJSON(t, map[string]any{"mcpServers": map[string]any{"own": own}}), 0o600); err != nil {
		t.Fatal(err)
	}
	b, aliceTok, _ := teamBridge(t, h, []string{"CODEBRIDGE_POLICY=ask-destructive"})
	sc := &samplingClient{}
	var mu sync.Mutex
	var asked []string
	alice := b.statelessAs(t, "alice", aliceTok, &mcp.ClientOptions{
		CreateMessageHandler: sc.createMessage,
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Message)
			if strings.HasPrefix(req.Params.Message, "codebridge:") {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"session": false}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
		},
	})
	first := callHandle(t, alice, "x = 41", "")
	if first.handle == "" {
		t.Fatalf("no handle:\n%s", first.text)
	}
	got := callHandle(t, alice, `print('SAMPLED', await mcp_everything.trigger_sampling_request(prompt='what is six times seven'))
print('OWN', await mcp_own.trigger_sampling_request(prompt='and again'))
print('ELICITED', await mcp_everything.trigger_elicitation_request())
await mcp_memory.create_entities(entities=[{'name': 'a', 'entityType': 't', 'observations': []}])
print('DELETED', await mcp_memory.delete_entities(entityNames=['a']))
print('X', x + 1)`, first.handle)
	mustContain(t, got.text, "SAMPLED", "the model says 42", "OWN", "ELICITED", "Ada Lovelace", "DELETED", "X 42")
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || !strings.Contains(asked[1], "memory.delete_entities") {
		t.Fatalf("the client was asked %q", asked)
	}
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHTTPHandlesPythonSDK: the Python SDK 2.x, a real client that
// negotiates 2026-07-28 by itself, gets a handle from its first call over
// HTTP and sees the first call's variable in its second, by passing it.
func TestHTTPHandlesPythonSDK(t *testing.T) {
	needEnv(t)
	python := pythonSDK(t)
	handleClient(t, python, filepath.Join(repoRoot, "testdata/pysdk/handles_client.py"))
}

// TestHTTPHandlesTypeScriptSDK: the same with the TypeScript SDK v2
// (@modelcontextprotocol/client), asked to negotiate (it speaks
// 2025-11-25 unless asked).
func TestHTTPHandlesTypeScriptSDK(t *testing.T) {
	needEnv(t)
	needTool(t, "node", "nodejs")
	if _, err := os.Stat(filepath.Join(repoRoot, "testdata/npm/node_modules/@modelcontextprotocol/client/package.json")); err != nil {
		t.Fatal("the TypeScript SDK v2 (@modelcontextprotocol/client) is not installed: run `npm ci --prefix testdata/npm`")
	}
	handleClient(t, "node", filepath.Join(repoRoot, "testdata/npm/handles_client_v2.mjs"))
}

// handleClient runs a client program against a bridge of alice's token:
// it calls run_python without a session, then with the handle from the
// first answer's structured content, and prints what it saw as JSON. The
// client negotiated 2026-07-28, both forms of the answer name the same
// handle, and the second call saw the first's variable.
func handleClient(t *testing.T, program, script string) {
	t.Helper()
	b, aliceTok, _ := teamBridge(t, home(t, nil), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, script)
	cmd.Env = append(os.Environ(), "CODEBRIDGE_URL="+b.url, "CODEBRIDGE_TOKEN="+aliceTok)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the client: %v\nstderr:\n%s", err, stderr.String())
	}
	var out struct {
		Protocol, First, Handle, Second string
		SecondError                     bool `json:"second_error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("the client printed %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	if out.Protocol != "2026-07-28" {
		t.Fatalf("the client negotiated %q", out.Protocol)
	}
	if m := handleInText.FindStringSubmatch(out.First); m == nil || m[1] != out.Handle {
		t.Fatalf("the first answer's text and structured content name different handles (%q):\n%s", out.Handle, out.First)
	}
	if out.SecondError || !strings.Contains(out.Second, "42") {
		t.Fatalf("the second call, with the handle:\n%s", out.Second)
	}
}

// TestHTTPHandleExpires: a handle with no call for --idle-timeout ends:
// its container is removed, and its next use says it expired and what
// to do, while another principal using it still reads it as unknown.
func TestHTTPHandleExpires(t *testing.T) {
	needEnv(t)
	b, aliceTok, bobTok := teamBridge(t, home(t, nil), nil, "--idle-timeout", "2")
	alice := b.statelessAs(t, "alice", aliceTok, nil)
	first := callHandle(t, alice, "x = 1", "")
	if first.handle == "" {
		t.Fatalf("no handle:\n%s", first.text)
	}
	// The call ran in a container (no warm pool: the session's own); the
	// engine is polled until the idle handle's sandbox is gone.
	waitContainers(t, b.cmd.Process.Pid, 0)
	got := callHandle(t, alice, "print(x)", first.handle)
	if !got.isError || !strings.Contains(got.text, "expired") || !strings.Contains(got.text, "omit `session`") {
		t.Fatalf("alice's expired handle:\n%s", got.text)
	}
	bob := b.statelessAs(t, "bob", bobTok, nil)
	if got := callHandle(t, bob, "print(1)", first.handle); !strings.Contains(got.text, "knows no session with this handle") {
		t.Fatalf("bob with alice's expired handle:\n%s", got.text)
	}
}
