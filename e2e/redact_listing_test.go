package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an upstream chooses to say, from the attacker's side: a careless
// or hostile server (testdata/servers/telling_server.py) puts an email
// address and its own env value into its tool listing (title,
// descriptions, schema, annotations), names a tool after that value, and
// asks the client's model and the user about the address. The code prints
// what it got as hex, which the redaction of the output cannot recognise;
// the real client records what its model and user were shown; the host's
// log names the server whose tool it left out, not the tool.

// tellingClient answers sampling and elicitation by echoing what it was
// shown, and keeps it.
type tellingClient struct {
	mu   sync.Mutex
	seen []string
}

func (c *tellingClient) saw(s ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, s...)
}

func (c *tellingClient) shown() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.seen, "\n")
}

func (c *tellingClient) createMessage(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	text := ""
	if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
		text = tc.Text
	}
	c.saw(req.Params.SystemPrompt, text)
	return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: "You asked: " + text}}, nil
}

func (c *tellingClient) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	schema, _ := json.Marshal(req.Params.RequestedSchema)
	c.saw(req.Params.Message, string(schema))
	who := strings.TrimSuffix(strings.TrimPrefix(req.Params.Message, "Is "), " your address?")
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": who}}, nil
}

func TestRedactListingsAndSampling(t *testing.T) {
	needEnv(t)
	const email, token = "ann.lee@example.com", "tk-4f9a8b7c6d5e-key"
	tell := server{Command: "python3", Args: []string{filepath.Join(repoRoot, "testdata/servers/telling_server.py")},
		Env: map[string]string{"TELLING_TOKEN": token}, Sampling: true}
	h, _ := gateHome(t, map[string]any{"tell": tell}, nil)
	tc := &tellingClient{}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-telling", Version: "1"},
		&mcp.ClientOptions{CreateMessageHandler: tc.createMessage, ElicitationHandler: tc.elicit})
	b := startBridgeClient(t, h, client, oldProtocol, "CODEBRIDGE_REDACT=email")
	got := b.ok(`docs = runtime.query_tool_docs_sync('tell', detail='full')
print("docs", repr(docs).encode().hex())
print("names", sorted(d['tool'] for d in docs))
hits = await runtime.search_tool_docs('tool named after key lookup people', limit=10, detail='full')
print("hits", repr(hits).encode().hex())
found = {h['tool'] for h in hits if h.get('server') == 'tell'}
print("found lookup", 'lookup' in found, "only listed names", found <= {'lookup', 'ask_model', 'ask_user'})
print("server", repr(runtime.describe_server('tell')).encode().hex())
print("model:", await mcp_tell.ask_model())
print("user:", await mcp_tell.ask_user())`)
	mustNotSee(t, got, email, token)
	mustContain(t, got, hexOf("Support: <email_1>; key <secret:tell.env.TELLING_TOKEN>."), hexOf("<secret:tell.env.TELLING_TOKEN>"),
		"names ['ask_model', 'ask_user', 'lookup']", "found lookup True only listed names True",
		"model: real email in reply: True; key in reply: False",
		"user: real email in reply: True; key in reply: False")
	log := b.stderr.String()
	mustContain(t, log, `server lists tools whose names hold a secret or personal data`, "server=tell tools=1")
	if strings.Contains(log, token) {
		t.Fatalf("the host's log shows the secret:\n%s", log)
	}
	shown := tc.shown()
	if strings.Contains(shown, email) || strings.Contains(shown, token) {
		t.Fatalf("the client's model or user was shown a hidden value:\n%s", shown)
	}
	if !strings.Contains(shown, "Summarise the account of <email_1>.") || !strings.Contains(shown, "<secret:tell.env.TELLING_TOKEN>") ||
		!strings.Contains(shown, "Is <email_1> your address?") {
		t.Fatalf("the client was shown:\n%s\nwant the token and the secret's name", shown)
	}
}
