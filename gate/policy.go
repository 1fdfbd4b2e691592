package gate

import (
	"fmt"
	"path"
	"strings"

	"github.com/codebridge/codebridge/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Verdict is what the policy says about one request.
type Verdict string

// The verdicts.
const (
	Allow Verdict = "allow"
	Ask   Verdict = "ask"
	Deny  Verdict = "deny"
)

// Mode is the global default for tools no server rule names, read from the
// tools' own annotations.
type Mode string

// The modes (the --policy setting).
const (
	// Open allows every tool: the default.
	Open Mode = "open"
	// AskDestructive allows read-only tools and tools marked not
	// destructive, and asks the user before any other (the MCP spec takes
	// a tool without annotations as destructive).
	AskDestructive Mode = "ask-destructive"
	// ReadOnly allows only tools marked readOnlyHint and denies the rest.
	ReadOnly Mode = "read-only"
)

// Modes lists the modes, for help and errors.
var Modes = []Mode{Open, AskDestructive, ReadOnly}

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%q is not a policy: use open, ask-destructive or read-only", s)
}

// Rules are one server's "tools" entry: globs (path.Match syntax, such as
// "delete_*") over its tool names. Deny wins over ask, ask over allow.
// When Allow (or Ask) is given, a tool that none of the lists matches is
// denied: the lists are then the whole of what the server may do.
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	// Source is where the rules were written (a config file), for messages.
	Source string `json:"-"`
}

// Decision is a verdict and the rule that gave it, in words a user can
// find in their configuration.
type Decision struct {
	Verdict Verdict
	Rule    string
}

// Policy decides each request from the servers' rules and the mode.
type Policy struct {
	Mode    Mode
	Servers map[string]Rules
}

// Decide returns the decision for target t. annotations are the tool's
// own (nil when it has none or t is not a tool).
func (p *Policy) Decide(t protocol.Target, annotations *mcp.ToolAnnotations) Decision {
	if t.Kind == "tool" {
		if d, ok := p.byRules(t); ok {
			return d
		}
	}
	return p.byMode(t, annotations)
}

// Hidden reports whether a tool is denied whatever happens, so that
// listings and search leave it out.
func (p *Policy) Hidden(server string, tool *mcp.Tool) bool {
	return p.Decide(protocol.Target{Kind: "tool", Server: server, Name: tool.Name}, tool.Annotations).Verdict == Deny
}

func (p *Policy) byRules(t protocol.Target) (Decision, bool) {
	r, ok := p.Servers[t.Server]
	if !ok {
		return Decision{}, false
	}
	where := fmt.Sprintf("server %q", t.Server)
	if r.Source != "" {
		where += " in " + r.Source
	}
	for _, l := range []struct {
		name  string
		globs []string
		v     Verdict
	}{{"deny", r.Deny, Deny}, {"ask", r.Ask, Ask}, {"allow", r.Allow, Allow}} {
		if g, ok := firstMatch(l.globs, t.Name); ok {
			return Decision{l.v, fmt.Sprintf(`rule tools.%s %q of %s`, l.name, g, where)}, true
		}
	}
	if len(r.Allow) > 0 || len(r.Ask) > 0 {
		return Decision{Deny, fmt.Sprintf(`rule tools.allow of %s (the tool is in none of its lists)`, where)}, true
	}
	return Decision{}, false
}

func (p *Policy) byMode(t protocol.Target, a *mcp.ToolAnnotations) Decision {
	rule := "policy " + string(p.Mode)
	switch p.Mode {
	case "", Open:
		return Decision{Allow, "policy open"}
	case ReadOnly:
		if readOnly(t, a) {
			return Decision{Allow, rule}
		}
		return Decision{Deny, rule + " (the " + t.Kind + " is not marked read-only)"}
	}
	if readOnly(t, a) || (t.Kind == "tool" && a != nil && a.DestructiveHint != nil && !*a.DestructiveHint) {
		return Decision{Allow, rule}
	}
	return Decision{Ask, rule + " (the " + t.Kind + " may change things)"}
}

// readOnly reports whether a request only reads: a tool marked
// readOnlyHint, a resource read, a prompt.
func readOnly(t protocol.Target, a *mcp.ToolAnnotations) bool {
	switch t.Kind {
	case "tool":
		return a != nil && a.ReadOnlyHint
	case "resource", "prompt":
		return true
	}
	return false
}

func firstMatch(globs []string, name string) (string, bool) {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return g, true
		}
	}
	return "", false
}

// CheckGlobs reports the first malformed glob, for configuration checks.
func (r Rules) CheckGlobs() error {
	for _, l := range [][]string{r.Allow, r.Deny, r.Ask} {
		for _, g := range l {
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("%q is not a valid pattern: use * and ? (such as \"delete_*\")", g)
			}
		}
	}
	return nil
}
