package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNewProtocolClientQuestions: a client on MCP protocol 2026-07-28,
// which takes no request from a server in the middle of a call (SEP-2322),
// still answers what a cell needs of it: an upstream's sampling and
// elicitation, and the gate's approval. The run_python call ends with
// input requests, the client (the go-sdk's own multi round-trip support)
// calls again with the answers, and the same cell goes on, its variables
// intact. A declined approval raises in Python; the session carries on.
func TestNewProtocolClientQuestions(t *testing.T) {
	needEnv(t)
	sampler := npmServer("mcp-server-everything")
	sampler.Sampling = true
	mem := npmServer("mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")} // not beside the package, which may be read-only
	h := home(t, map[string]map[string]server{"a.json": {"everything": sampler, "memory": mem}})
	env := []string{"CODEBRIDGE_POLICY=ask-destructive"}
	sc := &samplingClient{}
	var mu sync.Mutex
	var asked []string
	approve := true
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-newest", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: sc.createMessage,
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Message)
			if strings.HasPrefix(req.Params.Message, "codebridge:") {
				if !approve {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"session": false}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
		},
	})
	b := startBridgeClient(t, h, client, nil, env...)
	if v := b.cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("the client speaks protocol %s, not one without server requests in calls", v)
	}
	out := b.ok(`x = 41
print('SAMPLED', await mcp_everything.trigger_sampling_request(prompt='what is six times seven'))
print('ELICITED', await mcp_everything.trigger_elicitation_request())
await mcp_memory.create_entities(entities=[{'name': 'a', 'entityType': 't', 'observations': []}])
print('DELETED', await mcp_memory.delete_entities(entityNames=['a']))
print('X', x + 1)`)
	mustContain(t, out, "SAMPLED", "the model says 42", "ELICITED", "Ada Lovelace", "DELETED", "X 42")
	mu.Lock()
	if len(asked) != 2 || !strings.Contains(asked[1], "memory.delete_entities") {
		t.Fatalf("the client was asked %q", asked)
	}
	approve = false
	mu.Unlock()
	out = b.run(`try:
    await mcp_memory.delete_entities(entityNames=['b'])
except Exception as e:
    print('REFUSED', type(e).__name__, e)
print('X', x)`).text
	mustContain(t, out, "REFUSED", "declined", "X 41")
}
