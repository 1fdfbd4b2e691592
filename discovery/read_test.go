package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadOnce: one Read reads each file once (a file in ~/MCPs also
// given with --config included) and gives the servers, the redaction
// patterns, the package settings and every problem, each with its path;
// a broken file is skipped while the others load, and unusable "redact"
// patterns are marked ErrRedactPatterns.
func TestReadOnce(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "MCPs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, body string) string {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write(filepath.Join(dir, "a.json"), `{"redact": {"emp": "EMP-[0-9]+"}, "packages": ["pandas"],
	  "mcpServers": {"one": {"command": "true"}, "bad": {"command": 1}}}`)
	broken := write(filepath.Join(dir, "b.json"), `{"mcpServers": {`)
	extra := write(filepath.Join(t.TempDir(), "extra.json"), `{"redact": ["x"], "package_index": "https://i.invalid/simple",
	  "mcpServers": {"two": {"command": "true"}}}`)
	reads := map[string]int{}
	c := Read(Options{Home: home, Files: []string{extra, a}, LookupEnv: func(string) (string, bool) { return "", false },
		ReadFile: func(name string) ([]byte, error) {
			reads[name]++
			return os.ReadFile(name)
		}})
	for _, f := range []string{a, broken, extra} {
		if reads[f] != 1 {
			t.Errorf("%s read %d times", f, reads[f])
		}
	}
	var names []string
	for _, s := range c.Servers {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"one", "two"}) || c.Patterns["emp"] != "EMP-[0-9]+" ||
		!slices.Equal(c.Packages.Start, []string{"pandas"}) || c.Packages.Index != "https://i.invalid/simple" {
		t.Fatalf("servers %v, patterns %v, packages %+v", names, c.Patterns, c.Packages)
	}
	files := map[string]string{}
	redact := 0
	for _, p := range c.Problems {
		files[p.File] += p.Error()
		if errors.Is(p, ErrRedactPatterns) {
			redact++
			if p.File != extra {
				t.Errorf("redact problem of the wrong file: %v", p)
			}
		}
	}
	if len(c.Problems) != 3 || redact != 1 || !strings.Contains(files[a], `server "bad"`) || !strings.Contains(files[broken], "invalid JSON") {
		t.Fatalf("problems: %v", c.Problems)
	}
}
