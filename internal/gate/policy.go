package gate

import (
	"fmt"
	"strings"

	"github.com/codebridge/codebridge/internal/protocol"
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

// Lists are the rules of one kind of request (tools, resources or
// prompts) of one server: patterns (see CheckPattern for their syntax)
// over tool names, resource URIs or prompt names. Deny wins over ask, ask
// over allow.
type Lists struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	Ask   []string `json:"ask,omitempty"`
}

// Empty reports whether no list is set.
func (l Lists) Empty() bool { return len(l.Allow)+len(l.Deny)+len(l.Ask) == 0 }

// Rules are one server's entry: the lists of its "tools", "resources"
// and "prompts". An allow list, of any kind, makes the entry an
// allow-list for the whole server: a tool, resource or prompt that no
// list of its own kind names is then denied. Without an allow list, what
// no list names falls to the mode. (An ask list alone never denies: it
// means "ask before these".)
type Rules struct {
	Tools     Lists `json:"tools,omitzero"`
	Resources Lists `json:"resources,omitzero"`
	Prompts   Lists `json:"prompts,omitzero"`
	// Source is where the rules were written (a config file), for messages.
	Source string `json:"-"`
}

// Empty reports whether the entry sets no rule.
func (r Rules) Empty() bool { return r.Tools.Empty() && r.Resources.Empty() && r.Prompts.Empty() }

// of is the lists of one kind of request, and the config field they
// come from; ok is false for kinds rules do not cover (packages, skills).
func (r Rules) of(kind string) (l Lists, field string, ok bool) {
	switch kind {
	case "tool":
		return r.Tools, "tools", true
	case "resource":
		return r.Resources, "resources", true
	case "prompt":
		return r.Prompts, "prompts", true
	}
	return Lists{}, "", false
}

// allowList names the field whose allow list limits the server, or "".
func (r Rules) allowList() string {
	for _, k := range []string{"tool", "resource", "prompt"} {
		if l, field, _ := r.of(k); len(l.Allow) > 0 {
			return field
		}
	}
	return ""
}

// Decision is a verdict and the rule that gave it, in words a user can
// find in their configuration.
type Decision struct {
	Verdict Verdict
	Rule    string
}

// rulePrefix begins the Rule of every decision a server's own rules made
// (the mode's decisions begin with "policy ").
const rulePrefix = "rule "

// fromRule reports whether a rule of the server's entry made d, rather
// than the policy mode.
func (d Decision) fromRule() bool { return strings.HasPrefix(d.Rule, rulePrefix) }

// Policy decides each request from the servers' rules and the mode.
type Policy struct {
	Mode    Mode
	Servers map[string]Rules
}

// Decide returns the decision for target t. annotations are the tool's
// own (nil when it has none or t is not a tool).
func (p *Policy) Decide(t protocol.Target, annotations *mcp.ToolAnnotations) Decision {
	if d, ok := p.byRules(t); ok {
		return d
	}
	return p.byMode(t, annotations)
}

// Hidden reports whether a tool is denied whatever happens, so that
// listings and search leave it out.
func (p *Policy) Hidden(server string, tool *mcp.Tool) bool {
	return p.Denied(server, tool) != nil
}

// Denied is the error of a call to a tool the policy denies whatever
// happens (the one a call would fail with), or nil: the runtime raises
// it when code names a tool the listings leave out.
func (p *Policy) Denied(server string, tool *mcp.Tool) error {
	t := protocol.Target{Kind: "tool", Server: server, Name: tool.Name}
	if d := p.Decide(t, tool.Annotations); d.Verdict == Deny {
		return &DeniedError{Target: t, Rule: d.Rule, Why: denyWhy("policy", d), Cause: ErrPolicy}
	}
	return nil
}

// HiddenName reports whether the resource URI or prompt name (kind
// "resource" or "prompt") of a server is denied whatever happens, so that
// its listing leaves it out.
func (p *Policy) HiddenName(kind, server, name string) bool {
	return p.Decide(protocol.Target{Kind: kind, Server: server, Name: name}, nil).Verdict == Deny
}

// HasRules reports whether the server's entry sets any rule.
func (p *Policy) HasRules(server string) bool {
	r, ok := p.Servers[server]
	return ok && !r.Empty()
}

func (p *Policy) byRules(t protocol.Target) (Decision, bool) {
	r, ok := p.Servers[t.Server]
	if !ok {
		return Decision{}, false
	}
	l, field, ok := r.of(t.Kind)
	if !ok {
		return Decision{}, false
	}
	where := fmt.Sprintf("server %q", t.Server)
	if r.Source != "" {
		where += " in " + r.Source
	}
	for _, c := range []struct {
		name     string
		patterns []string
		v        Verdict
	}{{"deny", l.Deny, Deny}, {"ask", l.Ask, Ask}, {"allow", l.Allow, Allow}} {
		if g, ok := firstMatch(c.patterns, t.Name); ok {
			return Decision{c.v, fmt.Sprintf(`%s%s.%s %q of %s`, rulePrefix, field, c.name, g, where)}, true
		}
	}
	if len(l.Allow) > 0 {
		return Decision{Deny, fmt.Sprintf(`rule %s.allow of %s (the %s is in none of its lists)`, field, where, t.Kind)}, true
	}
	if limit := r.allowList(); limit != "" {
		return Decision{Deny, fmt.Sprintf(`rule %s.allow of %s (an allow list limits the server to what its lists name, and no %q list names this %s)`,
			limit, where, field, t.Kind)}, true
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

func firstMatch(patterns []string, name string) (string, bool) {
	for _, g := range patterns {
		if matchPattern(g, name) {
			return g, true
		}
	}
	return "", false
}

// CheckPatterns reports the first malformed pattern, for configuration
// checks.
func (r Rules) CheckPatterns() error {
	for _, l := range []Lists{r.Tools, r.Resources, r.Prompts} {
		for _, ps := range [][]string{l.Allow, l.Deny, l.Ask} {
			for _, g := range ps {
				if err := CheckPattern(g); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
