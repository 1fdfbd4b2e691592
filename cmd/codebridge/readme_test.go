package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// settingsTable reads README's Settings table: each row's flag names,
// and the row's cells.
func settingsTable(t *testing.T) (rows map[string][]string, section string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Settings\n")
	if start < 0 {
		t.Fatal("README has no Settings section")
	}
	section = doc[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	flagName := regexp.MustCompile("`--([a-z-]+)")
	rows = map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "/"), "|")[1:]
		for _, m := range flagName.FindAllStringSubmatch(cells[0], -1) {
			rows[m[1]] = cells
		}
	}
	return rows, section
}

// README's Settings table is true: every setting's flag has a row, with
// its variables and its default; every flag in the table is a setting;
// every variable is named in the section.
func TestReadmeSettingsTable(t *testing.T) {
	rows, section := settingsTable(t)
	flags := map[string]bool{}
	for _, e := range entries {
		for _, env := range e.envs {
			if !strings.Contains(section, "`"+env+"`") && !strings.Contains(section, env) {
				t.Errorf("README's Settings section does not name %s", env)
			}
		}
		if e.flag == "" {
			continue
		}
		flags[e.flag] = true
		cells, ok := rows[e.flag]
		if !ok {
			t.Errorf("README's Settings table has no row for --%s", e.flag)
			continue
		}
		if len(cells) < 4 {
			t.Errorf("--%s: the row has %d cells", e.flag, len(cells))
			continue
		}
		for _, env := range e.envs {
			if !strings.Contains(cells[1], "`"+env+"`") {
				t.Errorf("--%s: the row does not name %s", e.flag, env)
			}
		}
		if e.def != "" && !strings.Contains(cells[2], "`"+e.def+"`") {
			t.Errorf("--%s: the row's default %q does not say `%s`", e.flag, cells[2], e.def)
		}
	}
	for name := range rows {
		if !flags[name] {
			t.Errorf("README's Settings table has --%s, which is no setting", name)
		}
	}
}

// README's SDK snippets are the example scripts the end-to-end tests run
// (examples/sdk), without their comment lines.
func TestReadmeSDKSnippetsAreTheExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for file, comment := range map[string]string{"client.py": "#", "client.mjs": "//"} {
		b, err := os.ReadFile("../../examples/sdk/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var code []string
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, comment) {
				code = append(code, line)
			}
		}
		if snippet := strings.Trim(strings.Join(code, "\n"), "\n"); !strings.Contains(string(readme), "\n"+snippet+"\n```") {
			t.Errorf("README does not show examples/sdk/%s as it is:\n%s", file, snippet)
		}
	}
}
