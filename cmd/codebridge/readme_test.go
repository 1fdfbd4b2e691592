package main

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/httpserve"
)

// settingsTable reads the settings reference's tables (docs/settings.md):
// each row's flag names, and the row's cells.
func settingsTable(t *testing.T) (rows map[string][]string, doc string) {
	t.Helper()
	b, err := os.ReadFile(settingsDocFile)
	if err != nil {
		t.Fatal(err)
	}
	doc = string(b)
	flagName := regexp.MustCompile("`--([a-z-]+)")
	rows = map[string][]string{}
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "/"), "|")[1:]
		for _, m := range flagName.FindAllStringSubmatch(cells[0], -1) {
			rows[m[1]] = cells
		}
	}
	return rows, doc
}

// The settings reference is true: every setting's flag has a row, with
// its variables and its default; every flag in the tables is a setting;
// every variable is named. README's Settings section sends the reader
// there.
func TestSettingsReferenceTable(t *testing.T) {
	rows, doc := settingsTable(t)
	flags := map[string]bool{}
	for _, e := range settingsOf(reflect.TypeFor[settings]()) {
		for _, env := range e.envs {
			if !strings.Contains(doc, "`"+env+"`") {
				t.Errorf("docs/settings.md does not name %s", env)
			}
		}
		if e.flag == "" {
			continue
		}
		flags[e.flag] = true
		cells, ok := rows[e.flag]
		if !ok {
			t.Errorf("docs/settings.md has no row for --%s", e.flag)
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
			t.Errorf("docs/settings.md has --%s, which is no setting", name)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Settings\n")
	if section, _, _ = strings.Cut(section, "\n## "); !ok || !strings.Contains(section, "](docs/settings.md)") {
		t.Error("README's Settings section does not link docs/settings.md")
	}
}

// docs/settings.md is what go generate ./cmd/codebridge writes from the
// settings' definitions.
func TestSettingsReferenceIsGenerated(t *testing.T) {
	b, err := os.ReadFile(settingsDocFile)
	if err != nil {
		t.Fatal(err)
	}
	got, want := strings.Split(string(b), "\n"), strings.Split(string(settingsDoc()), "\n")
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			t.Fatalf("docs/settings.md is stale from line %d: run go generate ./cmd/codebridge", i+1)
		}
	}
}

// The settings reference's row of --max-sessions-per-user, whose default
// is derived from --max-sessions rather than a value of its own, states
// the rule and what it comes to with the default total.
func TestSettingsReferenceDerivedSessionDefault(t *testing.T) {
	rows, _ := settingsTable(t)
	cells := rows["max-sessions-per-user"]
	if len(cells) < 4 {
		t.Fatal("docs/settings.md has no row for --max-sessions-per-user")
	}
	rule := fmt.Sprintf("--max-sessions/%d, at least 1", httpserve.DefaultUserShare)
	example := fmt.Sprintf("%d of %d", httpserve.DefaultMaxSessionsPerUser(httpserve.DefaultMaxSessions), httpserve.DefaultMaxSessions)
	if !strings.Contains(cells[2], rule) || !strings.Contains(cells[2], example) {
		t.Fatalf("--max-sessions-per-user: the row's default %q does not say %s (%s)", cells[2], rule, example)
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
