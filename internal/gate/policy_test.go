package gate

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPatternCoversEveryCharacter: "*" and "?" match "/" and "." like any
// other character (path.Match stops at "/", which let "deny": ["*"] pass
// a tool named "fs/delete"); classes and escapes still work; a pattern
// matches the whole name, case-sensitively.
func TestPatternCoversEveryCharacter(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "fs/delete", true}, {"*", "", true}, {"fs/*", "fs/a/b", true}, {"*delete*", "fs/delete.all", true},
		{"delete_*", "delete_all", true}, {"delete_*", "DELETE_ALL", false}, {"delete_*", "x_delete_all", false},
		{"?", "/", true}, {"a?c", "a/c", true}, {"a?c", "abbc", false}, {"?", "é", true},
		{"*/*", "fs/delete", true}, {"*/*", "delete", false}, {"a*b*c", "aXbYbZc", true}, {"a*b*c", "aXbYbZ", false},
		{"[^a]", "/", true}, {"[a-c]x", "bx", true}, {"[a-c]x", "dx", false},
		{`\*`, "*", true}, {`\*`, "a", false}, {"file:///*", "file:///etc/passwd", true},
		{"echo", "echo", true}, {"echo", "echo2", false}, {"echo", "ech", false},
	} {
		if got := matchPattern(c.pattern, c.name); got != c.want {
			t.Errorf("%q against %q: %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	for _, bad := range []string{"[a", `a\`, "[]"} {
		if CheckPattern(bad) == nil {
			t.Errorf("%q passed the check", bad)
		}
	}
}

// TestDenyStarDeniesSlashedNames: "deny": ["*"] denies a tool, resource
// or prompt whatever characters its name holds.
func TestDenyStarDeniesSlashedNames(t *testing.T) {
	p := Policy{Servers: map[string]Rules{"fs": {
		Tools: Lists{Deny: []string{"*"}}, Resources: Lists{Deny: []string{"*"}}, Prompts: Lists{Deny: []string{"*"}}}}}
	for _, tg := range []protocol.Target{
		{Kind: "tool", Server: "fs", Name: "fs/delete"}, {Kind: "tool", Server: "fs", Name: "a.b"},
		{Kind: "resource", Server: "fs", Name: "file:///etc/passwd"}, {Kind: "prompt", Server: "fs", Name: "x/y"},
	} {
		if d := p.Decide(tg, nil); d.Verdict != Deny {
			t.Errorf("%+v: %+v", tg, d)
		}
	}
}

// TestAskListAloneDeniesNothing: an ask list means "ask before these";
// the other tools fall to the mode, as if there were no list.
func TestAskListAloneDeniesNothing(t *testing.T) {
	p := Policy{Mode: Open, Servers: map[string]Rules{"mem": {Tools: Lists{Ask: []string{"delete_*"}}}}}
	if d := p.Decide(tool("delete_all"), nil); d.Verdict != Ask {
		t.Errorf("delete_all: %+v", d)
	}
	if d := p.Decide(tool("read_graph"), nil); d.Verdict != Allow || d.Rule != "policy open" {
		t.Errorf("read_graph: %+v", d)
	}
	if d := p.Decide(protocol.Target{Kind: "resource", Server: "mem", Name: "mem://x"}, nil); d.Verdict != Allow {
		t.Errorf("a resource of a server with an ask list: %+v", d)
	}
}

// TestAllowListLimitsTheWholeServer: a tools allow list makes the entry
// an allow-list for resources and prompts too, unless they have allow
// lists of their own; without an allow list, resources and prompts with
// no rules fall to the mode, and their own lists apply to URIs and names.
func TestAllowListLimitsTheWholeServer(t *testing.T) {
	p := Policy{Mode: Open, Servers: map[string]Rules{
		"only-echo": {Tools: Lists{Allow: []string{"echo"}}, Source: "/cfg/e.json"},
		"docs":      {Tools: Lists{Allow: []string{"echo"}}, Resources: Lists{Allow: []string{"test://static/resource/1"}}, Prompts: Lists{Allow: []string{"simple_*"}}},
		"open":      {Tools: Lists{Deny: []string{"x"}}, Resources: Lists{Deny: []string{"secret://*"}}, Prompts: Lists{Ask: []string{"complex_*"}}},
	}}
	res := func(s, uri string) protocol.Target { return protocol.Target{Kind: "resource", Server: s, Name: uri} }
	prompt := func(s, name string) protocol.Target { return protocol.Target{Kind: "prompt", Server: s, Name: name} }
	for _, c := range []struct {
		t    protocol.Target
		want Verdict
		rule string
	}{
		{res("only-echo", "test://static/resource/1"), Deny, `rule tools.allow of server "only-echo" in /cfg/e.json (an allow list limits the server to what its lists name, and no "resources" list names this resource)`},
		{prompt("only-echo", "simple_prompt"), Deny, `no "prompts" list names this prompt`},
		{res("docs", "test://static/resource/1"), Allow, `rule resources.allow "test://static/resource/1"`},
		{res("docs", "test://static/resource/2"), Deny, `rule resources.allow of server "docs" (the resource is in none of its lists)`},
		{prompt("docs", "simple_prompt"), Allow, `rule prompts.allow "simple_*"`},
		{prompt("docs", "complex_prompt"), Deny, `rule prompts.allow of server "docs" (the prompt is in none`},
		{res("open", "secret://key"), Deny, `rule resources.deny "secret://*"`},
		{res("open", "file:///a"), Allow, "policy open"},
		{prompt("open", "complex_prompt"), Ask, `rule prompts.ask "complex_*"`},
		{prompt("open", "simple_prompt"), Allow, "policy open"},
		{protocol.Target{Kind: "package", Name: "numpy"}, Allow, "policy open"},
	} {
		d := p.Decide(c.t, nil)
		if d.Verdict != c.want || !strings.Contains(d.Rule, c.rule) {
			t.Errorf("%+v: %+v, want %s by %q", c.t, d, c.want, c.rule)
		}
	}
	if !p.HiddenName("resource", "only-echo", "test://static/resource/1") || p.HiddenName("resource", "docs", "test://static/resource/1") {
		t.Error("HiddenName: only denied resources are hidden")
	}
}

// TestDeniedSaysByWhichRule: the error the runtime raises for a denied
// tool named by attribute is the one a call gets: denied by the policy,
// with the rule and its file.
func TestDeniedSaysByWhichRule(t *testing.T) {
	p := Policy{Servers: map[string]Rules{"mem": {Tools: Lists{Deny: []string{"delete_*"}}, Source: "/cfg/m.json"}}}
	err := p.Denied("mem", &mcp.Tool{Name: "delete_all"})
	var de *DeniedError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), `tool mem.delete_all was denied: the policy does not allow it`) ||
		!strings.Contains(err.Error(), `rule tools.deny "delete_*" of server "mem" in /cfg/m.json`) {
		t.Fatalf("Denied: %v", err)
	}
	if p.Denied("mem", &mcp.Tool{Name: "read_graph"}) != nil {
		t.Fatal("an allowed tool is denied")
	}
}

// FuzzPatternAgreesWithPathMatch: on names without "/", where path.Match's
// one difference does not apply, a valid pattern matches exactly the names
// path.Match says it does. Both are valid UTF-8, as JSON gives them
// (path.Match steps through an invalid pattern byte by byte).
func FuzzPatternAgreesWithPathMatch(f *testing.F) {
	for _, s := range [][2]string{{"delete_*", "delete_all"}, {"a*b?c", "axxbyc"}, {"[^a-c]x*", "dxy"}, {`\*a`, "*a"}, {"*a*a*a", "aaaa"}, {"é?", "éé"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if strings.Contains(name, "/") || strings.Contains(pattern, "/") || CheckPattern(pattern) != nil ||
			!utf8.ValidString(pattern) || !utf8.ValidString(name) {
			return
		}
		want, _ := path.Match(pattern, name)
		if got := matchPattern(pattern, name); got != want {
			t.Fatalf("%q against %q: %v, path.Match says %v", pattern, name, got, want)
		}
	})
}
