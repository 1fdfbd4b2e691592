package discovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds the config loader any file: it never panics, every
// server it returns is usable (a name, and a command or a URL), and
// every problem names the file.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "seeds", "*.json"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["${HOME}", "${NOPE:-d}"], "env": {"K": "${UNSET}"}}}}`))
	f.Add([]byte("\xEF\xBB\xBF{\"mcpServers\": {\"r\": {\"url\": \"https://h/mcp\", \"headers\": {\"A\": \"${T}\"}}}}"))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}, "": {}, "d": {"disabled": true}}}`))
	f.Add([]byte(`{"servers": {}}`))
	f.Add([]byte(`[1, 2`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"HOME": "/home/u", "T": "tok"}
		servers, problems := Load(Options{Home: dir, Files: []string{path}, LookupEnv: func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		}})
		seen := map[string]bool{}
		for _, s := range servers {
			if s.Name == "" || (s.Command == "") == (s.URL == "") || s.Source != path || seen[s.Name] {
				t.Fatalf("unusable or duplicate server %+v", s)
			}
			seen[s.Name] = true
		}
		for _, p := range problems {
			if p.File != path || !strings.HasPrefix(p.Error(), "discovery: "+path+": ") {
				t.Fatalf("problem without its file: %v", p)
			}
		}
	})
}

// FuzzExpand holds ${VAR} expansion to its contract on any input: text
// without "${" is unchanged; each missing name is reported once and is
// really unset; expanding with every variable set to "" removes exactly
// the references expand reports as missing otherwise.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"${A}", "${A:-x}", "$A", "${", "${}", "${A", "${A:-", "${A:-}}", "a${B}c${B}", "${1A}", "${A}${UNSET}${UNSET}", "${A:-${B}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lookup := func(k string) (string, bool) {
			if k == "A" {
				return "va", true
			}
			return "", false
		}
		out, missing := expand(s, lookup)
		if !strings.Contains(s, "${") && (out != s || missing != nil) {
			t.Fatalf("expand(%q) = %q, %q; want it unchanged", s, out, missing)
		}
		reported := map[string]bool{}
		for _, m := range missing {
			if reported[m] || m == "A" || !strings.Contains(s, "${"+m) {
				t.Fatalf("expand(%q) reports %q missing (all: %q)", s, m, missing)
			}
			reported[m] = true
		}
		if _, again := expand(s, func(string) (string, bool) { return "", true }); again != nil {
			t.Fatalf("expand(%q) with everything set still misses %q", s, again)
		}
	})
}
