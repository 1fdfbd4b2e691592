package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolRulesAndPatterns: a server's "tools", "resources" and
// "prompts" rules and a file's "redact" patterns are read; wrong shapes
// and bad patterns are problems that name the field.
func TestToolRulesAndPatterns(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	must(t, os.WriteFile(good, []byte(`{"redact": {"employee_id": "EMP-[0-9]{6}"},
	  "mcpServers": {"m": {"command": "true", "tools": {"allow": ["read_*"], "deny": ["delete_*"], "ask": ["create_*"]},
	    "resources": {"deny": ["secret://*"]}, "prompts": {"allow": ["*"]}}}}`), 0o600))
	must(t, os.WriteFile(bad, []byte(`{"redact": ["x"],
	  "mcpServers": {"b": {"command": "true", "tools": {"deny": "delete_*"}}, "c": {"command": "true", "tools": {"deny": ["[x"]}}, "d": {"command": "true", "tools": {"block": []}},
	    "e": {"command": "true", "resources": ["x"]}, "f": {"command": "true", "prompts": {"ask": ["\\"]}}}}`), 0o600))
	opts := Options{Home: dir, Files: []string{good, bad}, LookupEnv: func(string) (string, bool) { return "", false }}
	servers, problems := Load(opts)
	if len(servers) != 1 {
		t.Fatalf("servers: %+v", servers)
	}
	if r := servers[0].Policy; strings.Join(r.Tools.Allow, ",") != "read_*" || r.Tools.Deny[0] != "delete_*" || r.Tools.Ask[0] != "create_*" ||
		r.Resources.Deny[0] != "secret://*" || r.Prompts.Allow[0] != "*" || r.Source != good {
		t.Fatalf("servers: %+v", servers)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`server "b": field "tools.deny": must be an array`, `server "c": field "tools.deny": "[x" is not a valid pattern`, `server "d": field "tools.block": is not a rule`,
		`server "e": field "resources": must be an object`, `server "f": field "prompts.ask": "\\" is not a valid pattern`} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem %q in:\n%s", want, all)
		}
	}
	pats, probs := patterns(opts)
	if pats["employee_id"] != "EMP-[0-9]{6}" || len(probs) != 1 || !strings.Contains(probs[0].Error(), `field "redact"`) {
		t.Fatalf("patterns %v, problems %v", pats, probs)
	}
}

// TestRedactRestoreSetting: a server entry's "redact": {"restore": false}
// keeps the tokens in its arguments; absent, it is off; a wrong shape is a
// problem that names the field.
func TestRedactRestoreSetting(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "s.json")
	must(t, os.WriteFile(f, []byte(`{"mcpServers": {
	  "keep": {"command": "true", "redact": {"restore": false}},
	  "plain": {"command": "true", "redact": {"restore": true}},
	  "none": {"command": "true"},
	  "bad1": {"command": "true", "redact": {"restore": "no"}},
	  "bad2": {"command": "true", "redact": {"restor": false}},
	  "bad3": {"command": "true", "redact": false}}}`), 0o600))
	servers, problems := Load(Options{Home: dir, Files: []string{f}, LookupEnv: func(string) (string, bool) { return "", false }})
	keep := map[string]bool{}
	for _, s := range servers {
		keep[s.Name] = s.KeepTokens
	}
	if len(keep) != 3 || !keep["keep"] || keep["plain"] || keep["none"] {
		t.Fatalf("servers: %v", keep)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`server "bad1": field "redact.restore": must be true or false`, `server "bad2": field "redact.restor": is not a setting`, `server "bad3": field "redact": must be an object`} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem %q in:\n%s", want, all)
		}
	}
}

// patterns reads, for the tests, the custom redaction patterns of the same files Load
// reads: each file's top-level "redact" object maps a name to a regular
// expression ({"employee_id": "EMP-[0-9]{6}"}); the first definition of a
// name wins. Matches are shown to the model as <employee_id_1>. The
// problems are those of the "redact" objects only; [Read] gives all.
func patterns(opts Options) (map[string]string, []Problem) {
	c := Read(opts)
	return c.Patterns, topLevelProblems(c.Problems, "redact")
}
