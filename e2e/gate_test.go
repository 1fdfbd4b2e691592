package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The gate (issue 14), end to end: policy rules and modes, approval with
// a real client that answers elicitations, the audit log (also across a
// killed bridge), OpenTelemetry spans at an OTLP receiver, personal data
// as tokens, and upstream secrets that never reach the model.

// gateHome writes one config file holding servers (with "tools" rules or
// anything else a server entry takes) and, when given, top-level "redact"
// patterns; it returns HOME and the audit log's path there.
func gateHome(t *testing.T, servers map[string]any, redact map[string]string) (string, string) {
	t.Helper()
	h := t.TempDir()
	cfg := map[string]any{"mcpServers": servers}
	if redact != nil {
		cfg["redact"] = redact
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h, "MCPs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h, "MCPs", "gate.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return h, filepath.Join(h, "audit.jsonl")
}

// withTools is a server entry with "tools" rules.
func withTools(s server, rules map[string][]string) map[string]any {
	return map[string]any{"command": s.Command, "args": s.Args, "env": s.Env, "tools": rules}
}

// auditLines reads the audit log; every line must be a whole JSON object.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %d is not whole JSON (%v): %q", i+1, err, line)
		}
		out = append(out, m)
	}
	return out
}

// TestGatePolicyDeniedToolIsInvisible: a tool a rule denies is absent
// from list_tools, search and help(); calling it anyway raises an
// exception that names the rule and its file; the audit says so; the
// allowed tools still work, and read-only mode denies the rest.
func TestGatePolicyDeniedToolIsInvisible(t *testing.T) {
	needEnv(t)
	h, audit := gateHome(t, map[string]any{
		"memory": withTools(npmServer("mcp-server-memory"), map[string][]string{"deny": {"delete_*"}}),
	}, nil)
	b := startBridge(t, h, "CODEBRIDGE_AUDIT="+audit, "CODEBRIDGE_POLICY=read-only")
	got := b.ok(`names = [t["name"] for t in await runtime.list_tools("memory")]
print("listed:", sorted(names))
hits = await runtime.search_tool_docs("delete entities observations relations", limit=20)
print("found:", sorted(h.get("tool", "") for h in hits))
import io, contextlib
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    help(mcp_memory)
print("help mentions delete:", "delete" in buf.getvalue())
print("read_graph:", type(await mcp_memory.read_graph()).__name__)
for tool in ["delete_entities", "create_entities"]:
    try:
        await call_tool("memory", tool, {"entityNames": ["x"]} if tool.startswith("delete") else {"entities": []})
    except Exception as e:
        print(tool, "raised", type(e).__name__, "-", e)`)
	if strings.Contains(strings.SplitN(got, "help mentions", 2)[0], "delete_") {
		t.Fatalf("a denied tool was listed or found:\n%s", got)
	}
	mustContain(t, got, "read_graph", "help mentions delete: False", "read_graph: dict",
		`delete_entities raised PermissionDenied - tool memory.delete_entities was denied`, `rule tools.deny "delete_*" of server "memory" in `+filepath.Join(h, "MCPs", "gate.json"),
		`create_entities raised PermissionDenied`, "policy read-only (the tool is not marked read-only)")
	var denied []string
	for _, r := range auditLines(t, audit) {
		if r["outcome"] == "denied" {
			denied = append(denied, r["name"].(string)+" "+r["rule"].(string))
		}
	}
	if len(denied) != 2 || !strings.HasPrefix(denied[0], `delete_entities rule tools.deny "delete_*"`) || !strings.HasPrefix(denied[1], "create_entities policy read-only") {
		t.Fatalf("denied calls in the audit: %q", denied)
	}
}

// elicitClient runs the TypeScript SDK client (testdata/npm) in mode
// against a bridge with HOME h and env, running codes in order.
func elicitClient(t *testing.T, h, mode string, env []string, codes ...string) (asked []string, results []runResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(repoRoot, "testdata/npm/elicit_client.mjs"), mode}, codes...)...)
	cmd.Env = append(append(testEnv(h), "CODEBRIDGE_BIN="+binary), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript client (%s): %v\nstderr:\n%s", mode, err, stderr.String())
	}
	var out struct {
		Asked   []string
		Results []struct {
			Text    string
			IsError bool
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("the client printed %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	for _, r := range out.Results {
		results = append(results, runResult{text: r.Text, isError: r.IsError})
	}
	return out.Asked, results
}

// TestGateApprovalWithRealClient: in ask-destructive mode a destructive
// tool asks the user through elicitation/create; the TypeScript SDK
// client accepts, accepts for the session (asked once for two calls),
// declines (a Python exception with the reason), never answers (denied
// when the wait ends), or cannot be asked (denied, saying how to allow).
// The additive create_entities never asks.
func TestGateApprovalWithRealClient(t *testing.T) {
	needEnv(t)
	needTool(t, "node", "nodejs")
	mem := npmServer("mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")} // not beside the package, which may be read-only
	h, audit := gateHome(t, map[string]any{"memory": mem}, nil)
	env := []string{"CODEBRIDGE_POLICY=ask-destructive", "CODEBRIDGE_AUDIT=" + audit, "CODEBRIDGE_APPROVAL_TIMEOUT=3"}
	const create = `await mcp_memory.create_entities(entities=[{"name": "n", "entityType": "t", "observations": []}])
print("created")`
	const del = `try:
    await mcp_memory.delete_entities(entityNames=["n"])
    print("deleted")
except Exception as e:
    print("refused:", e)`

	asked, res := elicitClient(t, h, "accept", env, create, del)
	if len(asked) != 1 || !strings.Contains(asked[0], "memory.delete_entities") || !strings.Contains(asked[0], `"entityNames"`) {
		t.Fatalf("accept: asked %q", asked)
	}
	mustContain(t, res[0].text+res[1].text, "created", "deleted")

	asked, res = elicitClient(t, h, "session", env, del, del)
	if len(asked) != 1 {
		t.Fatalf("accept for the session: asked %d times: %q", len(asked), asked)
	}
	mustContain(t, res[0].text+res[1].text, "deleted\ndeleted")

	_, res = elicitClient(t, h, "decline", env, del)
	mustContain(t, res[0].text, "refused: tool memory.delete_entities was denied: the user did not approve it", "the user declined")

	asked, res = elicitClient(t, h, "ignore", env, del)
	if len(asked) != 1 {
		t.Fatalf("no answer: asked %q", asked)
	}
	mustContain(t, res[0].text, "refused:", "did not answer the approval request in time")

	asked, res = elicitClient(t, h, "none", env, del)
	if len(asked) != 0 {
		t.Fatalf("a client without elicitation was asked: %q", asked)
	}
	mustContain(t, res[0].text, "refused:", "cannot ask for it (no elicitation support)", `"tools": {"allow": [...]}`, "--policy open")

	var by []string
	for _, r := range auditLines(t, audit) {
		if r["event"] == "call" && r["name"] == "delete_entities" {
			by = append(by, r["by"].(string))
		}
	}
	if strings.Join(by, ",") != "user,user,session,user,timeout,no-client" {
		t.Fatalf("who decided the deletes, by the audit: %v", by)
	}
}

// TestGateAuditLog: a tool call and a run_python each leave their lines,
// with sizes, hashes, durations and outcomes, and no argument unless
// asked; `codebridge audit` reads them.
func TestGateAuditLog(t *testing.T) {
	needEnv(t)
	h, audit := gateHome(t, map[string]any{"stub": stub()}, nil)
	b := startBridge(t, h, "CODEBRIDGE_AUDIT="+audit)
	b.ok(`print(await mcp_stub.echo(message="private words"))`)
	b.close()
	recs := auditLines(t, audit)
	if len(recs) != 3 {
		t.Fatalf("want call, done and run lines, got %v", recs)
	}
	call, done, run := recs[0], recs[1], recs[2]
	if call["event"] != "call" || call["name"] != "echo" || call["decision"] != "allow" || call["by"] != "policy" || call["arg_sha256"] == "" || call["arg_bytes"].(float64) < 10 {
		t.Fatalf("call line: %v", call)
	}
	if done["event"] != "done" || done["id"] != call["id"] || done["outcome"] != "ok" || done["result_bytes"].(float64) == 0 {
		t.Fatalf("done line: %v", done)
	}
	if run["event"] != "run" || run["outcome"] != "ok" || run["session"] != call["session"] {
		t.Fatalf("run line: %v", run)
	}
	if data, _ := os.ReadFile(audit); bytes.Contains(data, []byte("private words")) {
		t.Fatalf("arguments were kept without --audit-args:\n%s", data)
	}
	out, err := exec.Command(binary, "audit", "--audit", audit).CombinedOutput()
	if err != nil {
		t.Fatalf("codebridge audit: %v\n%s", err, out)
	}
	mustContain(t, string(out), "tool stub.echo", "allow (policy)", "run_python")
}

// TestGateAuditSurvivesKilledBridge: a call that reached the upstream is
// on record even when the bridge is killed (SIGKILL) while the call runs,
// every line whole; `codebridge audit` shows it unfinished.
func TestGateAuditSurvivesKilledBridge(t *testing.T) {
	needEnv(t)
	h, audit := gateHome(t, map[string]any{"stub": stub()}, nil)
	b := startBridge(t, h, "CODEBRIDGE_AUDIT="+audit)
	b.ok(`print("warm")`)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = b.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "await mcp_stub.sleep(seconds=600)"}})
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(readFile(audit), `"name":"sleep"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the call never reached the audit log:\n%s", readFile(audit))
		}
		time.Sleep(20 * time.Millisecond) // polling for the condition, not timing it
	}
	b.kill(syscall.SIGKILL)
	wg.Wait()
	recs := auditLines(t, audit)
	last := recs[len(recs)-1]
	if last["event"] != "call" || last["name"] != "sleep" {
		t.Fatalf("last line: %v", last)
	}
	out, _ := exec.Command(binary, "audit", "--audit", audit).CombinedOutput()
	mustContain(t, string(out), "tool stub.sleep", "unfinished")
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// TestGateRedactsPersonalData: the memory server holds a person's email
// and phone; the code prints them and the model sees only tokens; the
// code passes the tokens to another tool and the upstream stores the real
// values (read from its file on the host). Near-misses stay readable, and
// a custom pattern from the config gets its own tokens.
func TestGateRedactsPersonalData(t *testing.T) {
	needEnv(t)
	memFile := filepath.Join(t.TempDir(), "memory.jsonl")
	seed := `{"type":"entity","name":"Dana Reyes","entityType":"person","observations":["email dana.reyes@example.org","phone +1 415 555 0132","order 2024-03-15 #4411","badge EMP-204518"]}` + "\n"
	if err := os.WriteFile(memFile, []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	mem := npmServer("mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": memFile}
	h, _ := gateHome(t, map[string]any{"memory": mem}, map[string]string{"badge": `EMP-[0-9]{6}`})
	b := startBridge(t, h, "CODEBRIDGE_REDACT=email,phone")
	got := b.ok(`g = await mcp_memory.read_graph()
obs = g["entities"][0]["observations"]
print(obs)
email = obs[0].split(" ", 1)[1]
await mcp_memory.create_entities(entities=[{"name": "follow-up", "entityType": "task", "observations": ["write to " + email, "call " + obs[1].split(" ", 1)[1]]}])
print("stored", email)`)
	for _, leak := range []string{"dana.reyes@", "555 0132", "EMP-204518"} {
		if strings.Contains(got, leak) {
			t.Fatalf("the model saw %q:\n%s", leak, got)
		}
	}
	mustContain(t, got, "email <email_1>", "phone <phone_1>", "order 2024-03-15 #4411", "badge <badge_1>", "stored <email_1>")
	b.close()
	stored := readFile(memFile)
	mustContain(t, stored, `"write to dana.reyes@example.org"`, `"call +1 415 555 0132"`)
}

// TestGateSecretsNeverReachModel: with no flag, the values of an
// upstream's env never reach the model: not when the server echoes them
// (everything's get-env), not when the code prints what it got.
func TestGateSecretsNeverReachModel(t *testing.T) {
	needEnv(t)
	s := npmServer("mcp-server-everything")
	s.Env = map[string]string{"SERVICE_TOKEN": "tok-9f8e7d6c5b4a"}
	h, _ := gateHome(t, map[string]any{"everything": s}, nil)
	b := startBridge(t, h)
	got := b.ok(`import json
env = json.loads(await mcp_everything.get_env())
print("token:", env.get("SERVICE_TOKEN"))
print(await mcp_everything.echo(message="echo " + env.get("SERVICE_TOKEN")))`)
	if strings.Contains(got, "tok-9f8e7d6c5b4a") {
		t.Fatalf("the secret reached the model:\n%s", got)
	}
	mustContain(t, got, "token: <secret:everything.env.SERVICE_TOKEN>")
}

// TestGateOpenTelemetry: with OTEL_EXPORTER_OTLP_ENDPOINT set, the bridge
// exports a span per run_python and a child span per tool call to an OTLP
// receiver (an HTTP server on loopback decoding the protobuf).
func TestGateOpenTelemetry(t *testing.T) {
	needEnv(t)
	var mu sync.Mutex
	spans := map[string][]byte{} // name -> parent span id
	ids := map[string][]byte{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := io.Reader(r.Body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		data, _ := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(data, &req); err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "bad request", 400)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans[s.Name], ids[s.Name] = s.ParentSpanId, s.SpanId
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out) // a failed write is the exporter's to report
	}))
	defer recv.Close()
	h, _ := gateHome(t, map[string]any{"stub": stub()}, nil)
	b := startBridge(t, h, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
	b.ok(`print(await mcp_stub.add(a=1, b=2))`)
	b.close() // the bridge sends what it holds when it stops
	mu.Lock()
	defer mu.Unlock()
	parent, ok := spans["tool stub.add"]
	if !ok || ids["run_python"] == nil {
		t.Fatalf("spans received: %v", spans)
	}
	if !bytes.Equal(parent, ids["run_python"]) {
		t.Fatalf("the tool call's span is not a child of run_python's")
	}
}

// TestGateRedactsProgress: progress messages, which quote the latest line
// the code printed, show the token, never the address.
func TestGateRedactsProgress(t *testing.T) {
	needEnv(t)
	notes := make(chan string, 100)
	cs := connectWith(t, home(t, nil), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case notes <- req.Params.Message:
			default:
			}
		},
	}, "CODEBRIDGE_REDACT=email")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
		"code": "print('writing to ann.lee@example.com')\nimport time\ntime.sleep(4)"}}
	params.SetProgressToken("tok")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("run_python: %v %+v", err, res)
	}
	for {
		select {
		case m := <-notes:
			if strings.Contains(m, "ann.lee") {
				t.Fatalf("a progress message showed the address: %q", m)
			}
			if strings.Contains(m, "writing to <email_1>") {
				return
			}
		case <-ctx.Done():
			t.Fatal("no progress notification quoted the line")
		}
	}
}
