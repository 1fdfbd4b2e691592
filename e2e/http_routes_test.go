package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an upstream asks of its client (sampling, elicitation) and what it
// logs during principal alice's call reaches alice's client and never
// principal bob's, though both are connected to one HTTP bridge, bob's
// client would answer anything, and bob's cell runs at that moment (in
// another server). Each route is tested for a shared server (the one
// session calling it is the one asked) and a per_session one (its
// session's own).

// routeClient is a client that records what it is asked and told, and
// answers as its principal.
type routeClient struct {
	who    string
	mu     sync.Mutex
	asked  []string // sampling prompts and elicitation messages
	logged []string // log messages: logger and data
}

func (c *routeClient) record(to *[]string, s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*to = append(*to, s)
}

func (c *routeClient) text() (asked, logged string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.asked, "\n"), strings.Join(c.logged, "\n")
}

func (c *routeClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					c.record(&c.asked, tc.Text)
				}
			}
			return &mcp.CreateMessageResult{Model: c.who + "-model", Role: "assistant", Content: &mcp.TextContent{Text: c.who + "'s model answers"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.record(&c.asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": c.who + " answered", "check": true}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			data, _ := json.Marshal(req.Params.Data)
			c.record(&c.logged, req.Params.Logger+" "+string(data))
		},
	}
}

// connectRoute opens a session of the holder of who's team token, on the
// protocol whose servers ask in the middle of a call, hearing every log
// level.
func (b *httpBridge) connectRoute(t *testing.T, who string) (*httpClient, *routeClient) {
	t.Helper()
	rc := &routeClient{who: who}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: who, Version: "1"}, rc.options()).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: &http.Client{Transport: withBearer{teamTokens[who]}}}, oldProtocol)
	if err != nil {
		t.Fatalf("connecting %s: %v\nstderr:\n%s", who, err, b.stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	return &httpClient{t: t, cs: cs, name: who}, rc
}

// routeBridge starts an HTTP bridge for the team with the servers
// servers (a per_session one among them, say) and "wait", a stub whose
// sleep holds bob's cell; alice and bob connect, and bob's cell waits in
// "wait" until end wakes it.
func routeBridge(t *testing.T, servers map[string]any) (b *httpBridge, alice, bob *httpClient, ac, bc *routeClient, end func()) {
	t.Helper()
	h := home(t, nil)
	wait := stub("--name=wait")
	events := filepath.Join(t.TempDir(), "events")
	servers["wait"] = map[string]any{"command": wait.Command, "args": wait.Args, "env": map[string]string{"STUB_EVENTS": events}}
	raw, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h, "MCPs", "s.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	b = startHTTP(t, h, nil, "--warm", "0", "--token-file", teamTokenFile(t))
	alice, ac = b.connectRoute(t, "alice")
	bob, bc = b.connectRoute(t, "bob")
	bobDone := make(chan runResult, 1)
	go func() {
		r, err := bob.run("print(await mcp_wait.sleep(seconds=600))")
		if err != nil {
			t.Error(err)
		}
		bobDone <- r
	}()
	waitFile(t, events, "sleep-started")
	return b, alice, bob, ac, bc, func() {
		t.Helper()
		mustContain(t, alice.ok("print(await mcp_wait.wake())"), "woke")
		if r := <-bobDone; !strings.Contains(r.text, "woken") {
			t.Fatalf("bob's cell did not run through alice's calls:\n%s", r.text)
		}
		bob.ok("print('bob again')") // anything sent to bob's client before has arrived
	}
}

// everything is the reference server with sampling allowed, shared or,
// with perSession, one per session.
func everything(perSession bool) map[string]any {
	return map[string]any{"command": npmServer("mcp-server-everything").Command, "sampling": true, "per_session": perSession}
}

// TestHTTPSamplingStaysWithItsPrincipal: a sampling request a server
// makes during alice's call is put to alice's client's model, never to
// bob's.
func TestHTTPSamplingStaysWithItsPrincipal(t *testing.T) {
	needEnv(t)
	_, alice, _, ac, bc, end := routeBridge(t, map[string]any{"shared": everything(false), "own": everything(true)})
	out := alice.ok(`print('SHARED', await mcp_shared.trigger_sampling_request(prompt='alice-shared-prompt'))
print('OWN', await mcp_own.trigger_sampling_request(prompt='alice-own-prompt'))`)
	end()
	mustContain(t, out, "alice's model answers")
	if strings.Contains(out, "bob") {
		t.Fatalf("alice's calls got bob's model:\n%s", out)
	}
	if asked, _ := ac.text(); !strings.Contains(asked, "alice-shared-prompt") || !strings.Contains(asked, "alice-own-prompt") {
		t.Fatalf("alice's client was asked %q", asked)
	}
	if asked, logged := bc.text(); asked != "" || strings.Contains(logged, "alice") {
		t.Fatalf("bob's client was asked %q and told %q", asked, logged)
	}
}

// TestHTTPElicitationStaysWithItsPrincipal: an elicitation a server makes
// during alice's call is put to alice, never to bob.
func TestHTTPElicitationStaysWithItsPrincipal(t *testing.T) {
	needEnv(t)
	_, alice, _, ac, bc, end := routeBridge(t, map[string]any{"shared": everything(false), "own": everything(true)})
	out := alice.ok(`print('SHARED', await mcp_shared.trigger_elicitation_request())
print('OWN', await mcp_own.trigger_elicitation_request())`)
	end()
	if strings.Count(out, "Name: alice answered") != 2 || strings.Contains(out, "bob") {
		t.Fatalf("alice's calls got:\n%s", out)
	}
	ac.mu.Lock()
	n := len(ac.asked)
	ac.mu.Unlock()
	if asked, _ := ac.text(); n != 2 {
		t.Fatalf("alice was asked %q; want the two elicitations", asked)
	}
	if asked, _ := bc.text(); asked != "" {
		t.Fatalf("bob was asked %q", asked)
	}
}

// TestHTTPLogMessagesStayWithTheirPrincipal: what a shared server and
// alice's own server log during alice's call, and codebridge's own
// warning about that call (the server crashed in it), reach alice's
// client, never bob's.
func TestHTTPLogMessagesStayWithTheirPrincipal(t *testing.T) {
	needEnv(t)
	shared, own := stub("--name=shared"), stub("--name=own")
	b, alice, _, ac, bc, end := routeBridge(t, map[string]any{
		"shared": map[string]any{"command": shared.Command, "args": shared.Args},
		"own":    map[string]any{"command": own.Command, "args": own.Args, "per_session": true},
	})
	out := alice.ok(`await mcp_shared.warn(message='alice-shared-line')
await mcp_own.warn(message='alice-own-line')
try:
    await mcp_shared.crash()
except MCPError as e:
    print('CRASHED', e)`)
	mustContain(t, out, "[shared warning] alice-shared-line", "[own warning] alice-own-line", "CRASHED")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure guard
	defer cancel()
	for _, want := range []string{`shared "alice-shared-line"`, `own "alice-own-line"`, `exited while calling tool \"crash\"`} {
		for {
			if _, logged := ac.text(); strings.Contains(logged, want) {
				break
			}
			select {
			case <-ctx.Done():
				_, logged := ac.text()
				t.Fatalf("alice's client never heard %s; it heard:\n%s\nstderr:\n%s", want, logged, b.stderr)
			case <-time.After(20 * time.Millisecond): // polling what another goroutine records
			}
		}
	}
	end()
	if _, logged := bc.text(); strings.Contains(logged, "alice") || strings.Contains(logged, "crash") {
		t.Fatalf("bob's client heard of alice's calls:\n%s", logged)
	}
}
