package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Everything an upstream offers besides tools (issue 15): resources,
// templates, prompts, and its requests to the client, forwarded to a real
// go-sdk client that answers them.

// oldProtocol is the protocol the test clients speak: from 2026-07-28 on a
// server may not send requests of its own in the middle of a call.
var oldProtocol = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

func pagesServer() server {
	return server{Command: "python3", Args: []string{filepath.Join(repoRoot, "testdata/servers/pages_server.py")}}
}

func TestUpstreamResourcesPromptsAndPages(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"a.json": {
		"everything": npmServer("mcp-server-everything"),
		"pages":      pagesServer(),
	}})
	b := startBridge(t, h)
	out := b.ok(`
ev = mcp_everything
docs = [r for r in await ev.list_resources() if r['uri'].startswith('demo://resource/static/document/')]
text = await ev.read_resource(docs[0]['uri'])
print('TEXT', type(text).__name__, len(text) > 20)
blob = await ev.read_resource('demo://resource/dynamic/blob/{resourceId}', resourceId=2)
print('BLOB', type(blob).__name__, blob.decode()[:40])
print('TMPL', (await runtime.read_resource('everything', 'demo://resource/dynamic/text/7'))[:45])
print('TEMPLATES', sorted(x['uriTemplate'] for x in ev.list_resource_templates_sync()))
p = await ev.get_prompt('args-prompt', city='Paris', state='Texas')
print('PROMPT', p['messages'][0]['content']['text'])
print('PAGES', [r['name'] for r in await mcp_pages.list_resources()], [p['name'] for p in mcp_pages.list_prompts_sync()])
print('ITEM', await mcp_pages.read_resource('res://item/3'))
print('LIMIT', [r['name'] for r in await mcp_pages.list_resources(limit=3)])
found = [(h.get('kind'), h.get('name')) for h in await runtime.search_tool_docs('item 4 prompt 4', limit=10)]
print('FOUND', ('resource', 'item-4') in found, ('prompt', 'prompt-4') in found)
try:
    await mcp_pages.read_resource('nope://x')
except Exception as e:
    print('ERR', type(e).__name__, e)
`)
	mustContain(t, out,
		"TEXT str True",
		"BLOB bytes Resource 2: This is a base64 blob",
		"TMPL Resource 7: This is a plaintext resource",
		"'demo://resource/dynamic/blob/{resourceId}', 'demo://resource/dynamic/text/{resourceId}'",
		"PROMPT", "Paris", "Texas",
		"PAGES ['item-0', 'item-1', 'item-2', 'item-3', 'item-4'] ['prompt-0', 'prompt-1', 'prompt-2', 'prompt-3', 'prompt-4']",
		"ITEM item 3", "LIMIT ['item-0', 'item-1', 'item-2']", "FOUND True True",
		"ERR UpstreamError", "Resource not found: nope://x")
}

// samplingClient answers sampling with a fixed message and records the
// prompts it was sent.
type samplingClient struct {
	mu      sync.Mutex
	prompts []string
}

func (c *samplingClient) createMessage(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range req.Params.Messages {
		if tc, ok := m.Content.(*mcp.TextContent); ok {
			c.prompts = append(c.prompts, tc.Text)
		}
	}
	return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: "the model says 42"}}, nil
}

func TestUpstreamSamplingByPolicy(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"a.json": {
		"sampler":   {Command: npmServer("mcp-server-everything").Command, Sampling: true},
		"nosampler": npmServer("mcp-server-everything"),
	}})
	sc := &samplingClient{}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-sampling", Version: "1"}, &mcp.ClientOptions{CreateMessageHandler: sc.createMessage})
	b := startBridgeClient(t, h, client, oldProtocol)
	out := b.ok(`
print('OK', await mcp_sampler.trigger_sampling_request(prompt='what is six times seven'))
try:
    await mcp_nosampler.trigger_sampling_request(prompt='refuse me')
except ToolError as e:
    print('REFUSED', e)
`)
	mustContain(t, out, "OK", "the model says 42", "e2e-model",
		"REFUSED", `does not let server "nosampler" use the client's model`, `set "sampling": true in its entry`,
		"MCP error -1:") // a real code, not the 0 a plain Go error becomes
	if strings.Contains(out, "MCP error 0:") {
		t.Errorf("the refusal reached the cell with code 0:\n%s", out)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.prompts) != 1 || !strings.Contains(sc.prompts[0], "what is six times seven") {
		t.Fatalf("the client was asked %q; want only the allowed server's prompt", sc.prompts)
	}
}

// TestUpstreamRequestsAnsweredByTypeScriptClient: the same sampling and
// elicitation, answered by the TypeScript SDK's client (testdata/npm),
// as Claude Desktop's and VS Code's stacks would; a server whose entry
// does not allow sampling is refused before the client is asked.
func TestUpstreamRequestsAnsweredByTypeScriptClient(t *testing.T) {
	needEnv(t)
	needTool(t, "node", "nodejs")
	h := home(t, map[string]map[string]server{"a.json": {
		"sampler":   {Command: npmServer("mcp-server-everything").Command, Sampling: true},
		"nosampler": npmServer("mcp-server-everything"),
	}})
	asked, results := elicitClient(t, h, "sample", nil,
		"print(await mcp_sampler.trigger_sampling_request(prompt='what is six times seven'))",
		"await mcp_nosampler.trigger_sampling_request(prompt='refuse me')")
	if len(results) != 2 || results[0].isError || !strings.Contains(results[0].text, "the TypeScript model says 42") {
		t.Fatalf("the allowed server's sampling: %+v", results)
	}
	if !results[1].isError || !strings.Contains(results[1].text, `set "sampling": true in its entry`) {
		t.Fatalf("the refused server's sampling: %+v", results[1])
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "what is six times seven") {
		t.Fatalf("the client was asked %q; want only the allowed server's prompt", asked)
	}
	asked, results = elicitClient(t, h, "ada", nil, "print(await mcp_sampler.trigger_elicitation_request())")
	if len(results) != 1 || results[0].isError || !strings.Contains(results[0].text, "Ada Lovelace") || len(asked) != 1 {
		t.Fatalf("elicitation: asked %q, results %+v", asked, results)
	}
}

func TestUpstreamElicitationAnsweredByClient(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"a.json": {"everything": npmServer("mcp-server-everything")}})
	var asked string
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-elicit", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
		},
	})
	b := startBridgeClient(t, h, client, oldProtocol)
	out := b.ok(`print(await mcp_everything.trigger_elicitation_request())`)
	mustContain(t, out, "Ada Lovelace")
	if !strings.Contains(asked, "Please provide inputs") {
		t.Fatalf("the client was asked %q", asked)
	}
}

func fileURI(dir string) string { return (&url.URL{Scheme: "file", Path: dir}).String() }

// rootsDir makes a directory holding name with text in it.
func rootsDir(t *testing.T, name, text string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestUpstreamRootsFromClientAndTheirChanges(t *testing.T) {
	needEnv(t)
	first, second := rootsDir(t, "a.txt", "first root"), rootsDir(t, "b.txt", "second root")
	h := home(t, map[string]map[string]server{"a.json": {"fs": npmServer("mcp-server-filesystem")}})
	asked := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-roots", Version: "1"}, nil)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "roots/list" {
				asked <- struct{}{}
			}
			return res, err
		}
	})
	client.AddRoots(&mcp.Root{URI: fileURI(first), Name: "first"})
	b := startBridgeClient(t, h, client, oldProtocol)
	b.ok("await runtime.start_servers('fs')")
	<-asked // the server's first question; it takes in the answer on its own time:
	out := b.ok(allowedThenRead(first, "", filepath.Join(first, "a.txt")), "timeout", 60)
	mustContain(t, out, "first root")

	client.RemoveRoots(fileURI(first))
	client.AddRoots(&mcp.Root{URI: fileURI(second), Name: "second"})
	<-asked // asked again after a change; the server may still be taking in the answer:
	out = b.ok(allowedThenRead(second, first, filepath.Join(second, "b.txt")), "timeout", 60)
	mustContain(t, out, "second root")
}

// allowedThenRead is a cell that waits (a bounded poll of the server's own
// answer) until the filesystem server allows dir and no longer allows
// gone, then reads path.
func allowedThenRead(dir, gone, path string) string {
	return fmt.Sprintf(`
import asyncio
for _ in range(300):
    dirs = str(await mcp_fs.list_allowed_directories())
    if %q in dirs and (not %q or %q not in dirs):
        break
    await asyncio.sleep(0.1)
print(await mcp_fs.read_text_file(path=%q))
`, dir, gone, gone, path)
}

func TestUpstreamRootsFromFlagWhenClientHasNone(t *testing.T) {
	needEnv(t)
	dir := rootsDir(t, "c.txt", "flag root")
	h := home(t, map[string]map[string]server{"a.json": {"fs": npmServer("mcp-server-filesystem")}})
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-noroots", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	b := startBridgeClient(t, h, client, oldProtocol, "CODEBRIDGE_ROOTS="+dir)
	out := b.ok(allowedThenRead(dir, "", filepath.Join(dir, "c.txt")), "timeout", 60)
	mustContain(t, out, "flag root")
}

// A client that supports none of sampling, elicitation and roots gets
// errors that say so, never a hang.
func TestUpstreamRequestsClientCannotAnswer(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"a.json": {
		"everything": {Command: npmServer("mcp-server-everything").Command, Sampling: true},
		"fs":         npmServer("mcp-server-filesystem"),
	}})
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-bare", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	b := startBridgeClient(t, h, client, oldProtocol)
	out := b.ok(`
for call in (mcp_everything.trigger_sampling_request(prompt='x'), mcp_everything.trigger_elicitation_request()):
    try:
        print('RESULT', await call)
    except ToolError as e:
        print('REFUSED', e)
try:
    print('FS', await mcp_fs.list_allowed_directories())
except MCPError as e:
    print('FS ERROR', e)
`)
	mustContain(t, out,
		`the MCP client (e2e-bare) does not support sampling, so server "everything" cannot use its model`,
		`the MCP client (e2e-bare) does not support elicitation`, "FS")
	// The client gives no roots and no --root is set, so the filesystem
	// server is not offered roots: it asks nothing, and nothing warns.
	if strings.Contains(b.stderr.String(), "roots") {
		t.Errorf("a roots warning though no server could be given roots:\n%s", b.stderr.String())
	}
}

func TestUpstreamLogsReachTheClient(t *testing.T) {
	needEnv(t)
	const secret = "s3cr3t-token-for-the-log-test"
	h := home(t, map[string]map[string]server{"a.json": {
		"everything": npmServer("mcp-server-everything"),
		"leaky": {Command: "python3", Args: []string{filepath.Join(repoRoot, "testdata/servers/leaky_server.py"), "--fail-at-start"},
			Env: map[string]string{"LEAKY_TOKEN": secret}},
	}})
	logs := make(chan *mcp.LoggingMessageParams, 100)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-logs", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			select {
			case logs <- req.Params:
			default:
			}
		},
	})
	b := startBridgeClient(t, h, client, oldProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := b.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	b.ok(`
print(await mcp_everything.toggle_simulated_logging())
try:
    await mcp_leaky.login()
except MCPError as e:
    print(e)
`)
	var fromUpstream, fromBridge bool
	for !fromUpstream || !fromBridge {
		select {
		case p := <-logs:
			text := fmt.Sprint(p.Data)
			if strings.Contains(text, secret) {
				t.Fatalf("a log message to the client holds the server's secret: %+v", p)
			}
			fromUpstream = fromUpstream || p.Logger == "everything" && strings.Contains(text, "-level message")
			fromBridge = fromBridge || p.Logger == "codebridge" && strings.Contains(text, `server "leaky" could not start`)
		case <-ctx.Done():
			t.Fatalf("no log message from the upstream (%v) or from the bridge (%v)", fromUpstream, fromBridge)
		}
	}
}

func TestUpstreamProgressInRunPythonProgress(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"a.json": {"everything": npmServer("mcp-server-everything")}})
	var mu sync.Mutex
	var messages []string
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-progress", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			messages = append(messages, req.Params.Message)
			mu.Unlock()
		},
	})
	b := startBridgeClient(t, h, client, oldProtocol)
	params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
		"code": "print(await mcp_everything.trigger_long_running_operation(duration=6, steps=3))"}}
	params.SetProgressToken("p1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := b.cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("run_python: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range messages {
		if strings.Contains(m, "everything: ") && strings.Contains(m, "/3") {
			return
		}
	}
	t.Fatalf("no progress message shows the upstream's progress: %q", messages)
}
