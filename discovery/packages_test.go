package discovery

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadPackages(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "MCPs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("a.json", `{"mcpServers": {}, "packages": ["pandas"], "allow_packages": ["pandas", "numpy*"], "package_index": "https://a.invalid/simple"}`)
	write("b.json", `{"mcpServers": {}, "packages": ["matplotlib>=3.8"], "package_index": "https://b.invalid/simple"}`)
	bad := write("c.json", `{"mcpServers": {}, "packages": "pandas", "allow_packages": [1]}`)
	p, problems := loadPackages(Options{Home: home})
	if !slices.Equal(p.Start, []string{"pandas", "matplotlib>=3.8"}) || !slices.Equal(p.Allow, []string{"pandas", "numpy*"}) || p.Index != "https://a.invalid/simple" {
		t.Fatalf("got %+v", p)
	}
	if len(problems) != 2 || problems[0].File != bad || !strings.Contains(problems[0].Error(), `field "packages": must be a list of strings`) {
		t.Fatalf("problems: %v", problems)
	}
	none, _ := loadPackages(Options{Home: t.TempDir()})
	if none.Allow != nil || none.Start != nil {
		t.Fatalf("no config: %+v", none)
	}
}

// packageKeys are the top-level keys of the package settings.
var packageKeys = []string{"packages", "allow_packages", "package_index"}

// loadPackages reads, for the tests, the package settings of the files Load reads, in the
// same order. The problems are those of the package settings only; [Read]
// gives all.
func loadPackages(opts Options) (Packages, []Problem) {
	c := Read(opts)
	return c.Packages, topLevelProblems(c.Problems, packageKeys...)
}

// topLevelProblems are the problems of the given top-level keys of the
// files.
func topLevelProblems(all []Problem, keys ...string) []Problem {
	var out []Problem
	for _, p := range all {
		if p.Server == "" && slices.Contains(keys, p.Field) {
			out = append(out, p)
		}
	}
	return out
}
