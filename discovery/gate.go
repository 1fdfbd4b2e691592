package discovery

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/codebridge/codebridge/internal/gate"
)

// policyFields are the entry's fields of rules for the gate, each read
// into the lists of its kind.
var policyFields = []struct {
	name string
	of   func(*gate.Rules) *gate.Lists
}{
	{"tools", func(r *gate.Rules) *gate.Lists { return &r.Tools }},
	{"resources", func(r *gate.Rules) *gate.Lists { return &r.Resources }},
	{"prompts", func(r *gate.Rules) *gate.Lists { return &r.Prompts }},
}

// policy reads the "tools", "resources" and "prompts" fields of an entry:
// which tools, resources and prompts the sandbox may use (allow), may
// never use or see (deny), and may use once the user approves (ask), as
// patterns over tool names, resource URIs and prompt names (gate.Rules
// says how they combine).
func (e *entry) policy() gate.Rules {
	var r gate.Rules
	for _, f := range policyFields {
		*f.of(&r) = e.lists(f.name)
	}
	if !r.Empty() {
		r.Source = e.file
	}
	return r
}

// lists reads one field of rules: {"allow": [...], "deny": [...], "ask": [...]}.
func (e *entry) lists(field string) gate.Lists {
	raw, ok := e.get(field)
	if !ok {
		return gate.Lists{}
	}
	var fields map[string]json.RawMessage
	if kindOf(raw) != "an object" || json.Unmarshal(raw, &fields) != nil {
		e.fail(field, fmt.Errorf(`must be an object, not %s; write {"allow": ["read_*"], "deny": ["delete_*"], "ask": ["create_*"]}`, kindOf(raw)))
		return gate.Lists{}
	}
	var l gate.Lists
	for _, k := range sortedKeys(fields) {
		var patterns []string
		if kindOf(fields[k]) != "an array" || json.Unmarshal(fields[k], &patterns) != nil {
			e.fail(field+"."+k, fmt.Errorf(`must be an array of strings, not %s; write ["name", "prefix_*"]`, kindOf(fields[k])))
			continue
		}
		for _, g := range patterns {
			if err := gate.CheckPattern(g); err != nil {
				e.fail(field+"."+k, err)
			}
		}
		switch k {
		case "allow":
			l.Allow = patterns
		case "deny":
			l.Deny = patterns
		case "ask":
			l.Ask = patterns
		default:
			e.fail(field+"."+k, fmt.Errorf(`is not a rule; use "allow", "deny" or "ask"`))
		}
	}
	return l
}

// keepTokens reads the entry's "redact" object: {"restore": false} keeps
// the tokens in the arguments the server receives (restore is on when
// absent).
func (e *entry) keepTokens() bool {
	raw, ok := e.get("redact")
	if !ok {
		return false
	}
	var fields map[string]json.RawMessage
	if kindOf(raw) != "an object" || json.Unmarshal(raw, &fields) != nil {
		e.fail("redact", fmt.Errorf(`must be an object, not %s; write {"restore": false}`, kindOf(raw)))
		return false
	}
	keep := false
	for _, k := range sortedKeys(fields) {
		var restore bool
		switch {
		case k != "restore":
			e.fail("redact."+k, fmt.Errorf(`is not a setting; use "restore" (true or false)`))
		case kindOf(fields[k]) != "a boolean" || json.Unmarshal(fields[k], &restore) != nil:
			e.fail("redact.restore", fmt.Errorf("must be true or false, not %s; write false without quotes", kindOf(fields[k])))
		default:
			keep = !restore
		}
	}
	return keep
}

// patternsOf adds the "redact" patterns of one file's top-level object.
func (l *loader) patternsOf(file string, top map[string]json.RawMessage) {
	raw, ok := top["redact"]
	if !ok {
		return
	}
	var pats map[string]string
	if kindOf(raw) != "an object" || json.Unmarshal(raw, &pats) != nil {
		l.problem(file, "", "redact", &kindError{`must be an object of name -> regular expression, such as {"employee_id": "EMP-[0-9]{6}"}`, ErrRedactPatterns})
		return
	}
	names := make([]string, 0, len(pats))
	for n := range pats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := l.patterns[n]; !ok {
			l.patterns[n] = pats[n]
		}
	}
}
