package discovery

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
)

// ToolRules are a server's "tools" entry: which of its tools the sandbox
// may call (allow), may never call or even see (deny), and may call once
// the user approves (ask), as globs over tool names ("delete_*").
type ToolRules struct {
	Allow []string
	Deny  []string
	Ask   []string
}

// Empty reports whether no rule is set.
func (r ToolRules) Empty() bool { return len(r.Allow)+len(r.Deny)+len(r.Ask) == 0 }

// toolRules reads the "tools" field of an entry.
func (e *entry) toolRules() ToolRules {
	raw, ok := e.get("tools")
	if !ok {
		return ToolRules{}
	}
	var fields map[string]json.RawMessage
	if kindOf(raw) != "an object" || json.Unmarshal(raw, &fields) != nil {
		e.fail("tools", fmt.Errorf(`must be an object, not %s; write {"allow": ["read_*"], "deny": ["delete_*"], "ask": ["create_*"]}`, kindOf(raw)))
		return ToolRules{}
	}
	var r ToolRules
	for _, k := range sortedKeys(fields) {
		var globs []string
		if kindOf(fields[k]) != "an array" || json.Unmarshal(fields[k], &globs) != nil {
			e.fail("tools."+k, fmt.Errorf(`must be an array of strings, not %s; write ["name", "prefix_*"]`, kindOf(fields[k])))
			continue
		}
		for _, g := range globs {
			if _, err := path.Match(g, ""); err != nil {
				e.fail("tools."+k, fmt.Errorf("%q is not a valid pattern: use * and ? (such as \"delete_*\")", g))
			}
		}
		switch k {
		case "allow":
			r.Allow = globs
		case "deny":
			r.Deny = globs
		case "ask":
			r.Ask = globs
		default:
			e.fail("tools."+k, fmt.Errorf(`is not a rule; use "allow", "deny" or "ask"`))
		}
	}
	return r
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

// Patterns reads the custom redaction patterns of the same files Load
// reads: each file's top-level "redact" object maps a name to a regular
// expression ({"employee_id": "EMP-[0-9]{6}"}); the first definition of a
// name wins. Matches are shown to the model as <employee_id_1>.
func Patterns(opts Options) (map[string]string, []Problem) {
	l, files := configFiles(opts)
	out := map[string]string{}
	seen := map[string]bool{}
	for _, f := range files {
		if info, err := os.Stat(f); err == nil {
			dup := false
			for _, prev := range l.read {
				dup = dup || os.SameFile(prev, info)
			}
			if dup {
				continue
			}
			l.read = append(l.read, info)
		}
		l.patternsOf(f, out, seen)
	}
	return out, l.problems
}

// patternsOf adds the "redact" patterns of one file; a file Load cannot
// read is Load's to report.
func (l *loader) patternsOf(file string, out map[string]string, seen map[string]bool) {
	raw, ok := topLevel(file)["redact"]
	if !ok {
		return
	}
	var pats map[string]string
	if kindOf(raw) != "an object" || json.Unmarshal(raw, &pats) != nil {
		l.problem(file, "", "redact", fmt.Errorf(`must be an object of name -> regular expression, such as {"employee_id": "EMP-[0-9]{6}"}`))
		return
	}
	names := make([]string, 0, len(pats))
	for n := range pats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !seen[n] {
			seen[n], out[n] = true, pats[n]
		}
	}
}
