package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/discovery"
	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The values a careless or hostile upstream tells (testdata/servers/
// telling_server.py): an email address, and its own env value.
const (
	tellEmail  = "ann.lee@example.com"
	tellToken  = "tk-4f9a8b7c6d5e-key"
	tellSecret = "<secret:tell.env.TELLING_TOKEN>"
)

// tellingGate is a gate session that hides emails and the telling
// server's env value, as the binary's does for a server entry's env.
func tellingGate(t *testing.T, keep map[string]bool) *gate.Gate {
	t.Helper()
	red, err := gate.NewRedactor([]string{"email"}, nil, []gate.Secret{{Name: "tell.env.TELLING_TOKEN", Value: tellToken}})
	if err != nil {
		t.Fatal(err)
	}
	return gate.New(gate.Config{Redactor: red, KeepTokens: keep})
}

// tellingCall is a call of a sandbox session whose one upstream, "tell",
// is the telling server, run for real.
func tellingCall(t *testing.T) *call {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(filepath.Dir(file)), "testdata/servers/telling_server.py")
	pool := upstream.NewPool([]discovery.Server{{Name: "tell", Command: "python3", Args: []string{script},
		Env: map[string]string{"TELLING_TOKEN": tellToken}, Source: "test"}}, upstream.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	h := newSandboxHost(pool, slog.New(slog.DiscardHandler))
	h.gate = tellingGate(t, nil).NewSession()
	return &call{sandboxHost: h}
}

// mustHide fails when what the sandbox got holds the email or the env
// value, or lacks the token and the secret's name in their place.
func mustHide(t *testing.T, what string, got []byte) {
	t.Helper()
	s := string(got)
	if strings.Contains(s, tellEmail) || strings.Contains(s, tellToken) {
		t.Fatalf("%s shows the sandbox a hidden value:\n%s", what, s)
	}
	if !strings.Contains(s, "<email_1>") || !strings.Contains(s, tellSecret) {
		t.Fatalf("%s lacks <email_1> and %s:\n%s", what, tellSecret, s)
	}
}

// TestToolListingRedacted: an upstream that puts an email address and
// its own env value into its tools' title, descriptions, schema
// (description, default, examples) and annotations, and names a tool
// after the env value: list_tools and search_tools show the sandbox the
// token and the secret's name, the other tools under their exact names
// (a call must name them so), and not the tool whose name is the secret.
func TestToolListingRedacted(t *testing.T) {
	c := tellingCall(t)
	ctx := context.Background()
	raw, err := methods[protocol.MListTools](ctx, c, protocol.RPC{Params: json.RawMessage(`{"server":"tell"}`)})
	if err != nil {
		t.Fatal(err)
	}
	mustHide(t, "list_tools", raw)
	var tools []mcp.Tool
	if err = json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, " ") != "lookup ask_model ask_user" {
		t.Fatalf("list_tools names %q; want the exact names but the one that is the secret", names)
	}
	if tools[0].Title != "Lookup for <email_1>" || tools[0].Annotations.Title != "uses "+tellSecret {
		t.Fatalf("lookup's title %q, annotations' title %q", tools[0].Title, tools[0].Annotations.Title)
	}

	raw, err = methods[protocol.MSearchTools](ctx, c, protocol.RPC{Params: json.RawMessage(`{"query":"tool named after key lookup people","limit":10,"detail":"full"}`)})
	if err != nil {
		t.Fatal(err)
	}
	mustHide(t, "search_tools", raw)
	var hits []protocol.SearchHit
	if err := json.Unmarshal(raw, &hits); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range hits {
		found = found || (h.Tool == "lookup" && h.Server == "tell")
	}
	if !found {
		t.Fatalf("search_tools did not find lookup under its exact name:\n%s", raw)
	}
}

// TestListedNameKeptOrWithheld: a listing entry keeps its name exact
// when the redaction leaves the name as it is; an entry whose name shows
// an email, a secret, or a value the session already has a token for (as
// written or JSON-escaped) is left out; an entry without a name field is
// kept, redacted whole.
func TestListedNameKeptOrWithheld(t *testing.T) {
	s := tellingGate(t, nil).NewSession()
	s.Redact("known: bob.ray@example.com") // the session hands out <email_1> for it
	c := &call{sandboxHost: &sandboxHost{gate: s, log: slog.New(slog.DiscardHandler)}}
	answer := func(context.Context, *call, protocol.RPC) (json.RawMessage, error) {
		return json.Marshal([]map[string]any{
			{"name": "send_mail", "description": "mail bob.ray@example.com"},
			{"name": "bob.ray@example.com"},
			{"name": "to_" + tellToken},
			{"name": `bob.ray\u0040example.com`},
			{"description": "no name, " + tellToken},
		})
	}
	raw, err := redacted(toolListing, answer)(context.Background(), c, protocol.RPC{})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"description":"mail <email_1>","name":"send_mail"},{"description":"no name, ` + tellSecret + `"}]`
	if string(raw) != want {
		t.Fatalf("listing\n%s\nwant\n%s", raw, want)
	}
}

// TestListingErrorRedacted: a listing's error can quote the upstream (a
// tools/list it failed): the sandbox gets it redacted, its cause intact.
func TestListingErrorRedacted(t *testing.T) {
	c := &call{sandboxHost: &sandboxHost{gate: tellingGate(t, nil).NewSession(), log: slog.New(slog.DiscardHandler)}}
	failed := func(context.Context, *call, protocol.RPC) (json.RawMessage, error) {
		return nil, fmt.Errorf("tools/list of tell: key %s is not %s's: %w", tellToken, tellEmail, upstream.ErrNoClient)
	}
	_, err := redacted(toolListing, failed)(context.Background(), c, protocol.RPC{})
	if !errors.Is(err, upstream.ErrNoClient) {
		t.Fatalf("the cause is lost: %v", err)
	}
	mustHide(t, "a listing's error", []byte(err.Error()))
}
