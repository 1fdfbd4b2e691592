package httpserve

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBothProtocolsOnOneEndpoint: on /mcp, a go-sdk client left to its
// default negotiates 2026-07-28 and has no session; one that asks for
// 2025-11-25 opens a session, as before. A token is required of both.
func TestBothProtocolsOnOneEndpoint(t *testing.T) {
	url := serve(t, Options{Tokens: mustTokens(t, "alice "+token)})
	ctx := context.Background()
	newer, err := connectAt(ctx, url, token, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	if v := newer.InitializeResult().ProtocolVersion; v != "2026-07-28" || newer.ID() != "" {
		t.Fatalf("the default go-sdk client got protocol %q, session %q; want 2026-07-28 and none", v, newer.ID())
	}
	older, err := connect(ctx, url, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Close()
	if v := older.InitializeResult().ProtocolVersion; v != "2025-11-25" || older.ID() == "" {
		t.Fatalf("a 2025-11-25 client got protocol %q, session %q", v, older.ID())
	}
	for name, cs := range map[string]*mcp.ClientSession{"2026-07-28": newer, "2025-11-25": older} {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) != 1 {
			t.Fatalf("%s: tools/list: %v", name, err)
		}
		// The handle is advertised for routing (SEP-2243).
		schema, _ := json.Marshal(tools.Tools[0].InputSchema)
		if !strings.Contains(string(schema), `"x-mcp-header":"Session"`) {
			t.Errorf("%s: run_python's schema advertises no header for its session: %s", name, schema)
		}
	}
	if _, err := connectAt(ctx, url, "not-the-token-at-all", nil, ""); err == nil {
		t.Fatal("a 2026-07-28 client with a wrong token connected")
	}
}

// mustTokens parses a token file's text.
func mustTokens(t *testing.T, text string) *Tokens {
	t.Helper()
	tk, err := ParseTokens(text)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

var handlePattern = regexp.MustCompile(`cbs_[a-z2-7]+`)

// runText calls run_python and returns the text of its answer.
func runText(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestHandlesCountAsSessions: a handle takes a place as a session does.
// With one session per user, a user's second handle ends the first (idle)
// one to make room, and the first handle then says so; another user's
// handle is never ended for it. (No engine runs here: the cells fail,
// but their sessions are made.)
func TestHandlesCountAsSessions(t *testing.T) {
	url := serve(t, Options{Tokens: mustTokens(t, "alice "+token+"\nbob bob-0123456789abcdef0"), MaxSessions: 4, MaxSessionsPerUser: 1})
	ctx := context.Background()
	alice, err := connectAt(ctx, url, token, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bob, err := connectAt(ctx, url, "bob-0123456789abcdef0", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	// A client mirrors `session` into its header (SEP-2243) once it has
	// listed the tool; the go-sdk's handler refuses a call without it.
	for _, cs := range []*mcp.ClientSession{alice, bob} {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	first := handlePattern.FindString(runText(t, alice, map[string]any{"code": "1"}))
	bobs := handlePattern.FindString(runText(t, bob, map[string]any{"code": "1"}))
	if first == "" || bobs == "" {
		t.Fatal("a call that names no session got no handle")
	}
	second := handlePattern.FindString(runText(t, alice, map[string]any{"code": "2"}))
	if second == "" || second == first {
		t.Fatalf("alice's second handle: %q", second)
	}
	if got := runText(t, alice, map[string]any{"code": "3", "session": first}); !strings.Contains(got, "make room") {
		t.Fatalf("alice's first handle, ended for her second: %s", got)
	}
	if got := runText(t, bob, map[string]any{"code": "3", "session": bobs}); strings.Contains(got, "make room") || strings.Contains(got, "knows no session") {
		t.Fatalf("bob's handle was ended for alice's: %s", got)
	}
	// Bob with alice's live handle reads as a handle nobody has.
	if got := runText(t, bob, map[string]any{"code": "3", "session": second}); !strings.Contains(got, "knows no session with this handle") {
		t.Fatalf("bob with alice's handle: %s", got)
	}
}
