package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSettings(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		argv    []string
		check   func(*settings) bool
		wantErr string
	}{
		{name: "defaults", check: func(s *settings) bool {
			return s.engine == "auto" && s.timeout == 30*time.Second && s.maxTimeout == 120*time.Second &&
				s.limits.Memory == 512<<20 && s.limits.Pids == 128 && s.output == "text" && s.user == "65534:65534"
		}},
		{name: "codebridge env", env: map[string]string{"CODEBRIDGE_MEMORY": "2g", "CODEBRIDGE_ENGINE": "docker"},
			check: func(s *settings) bool { return s.limits.Memory == 2<<30 && s.engine == "docker" }},
		{name: "python bridge env", env: map[string]string{"MCP_BRIDGE_RUNTIME": "podman", "MCP_BRIDGE_TIMEOUT": "10", "MCP_BRIDGE_MAX_TIMEOUT": "60",
			"MCP_BRIDGE_PIDS": "64", "MCP_BRIDGE_CPUS": "0.5", "MCP_BRIDGE_OUTPUT_MODE": "toon", "MCP_BRIDGE_IMAGE": "img", "MCP_BRIDGE_CONTAINER_USER": "1000:1000",
			"MCP_BRIDGE_STATE_DIR": "/var/x", "MCP_BRIDGE_LOG_LEVEL": "debug", "MCP_BRIDGE_MEMORY": "256m", "MCP_SERVERS_CONFIG": "/a.json"},
			check: func(s *settings) bool {
				return s.engine == "podman" && s.timeout == 10*time.Second && s.maxTimeout == time.Minute && s.limits.Pids == 64 &&
					s.limits.CPUs == 0.5 && s.output == "toon" && s.image == "img" && s.user == "1000:1000" && s.stateDir == "/var/x" &&
					s.logLevel.String() == "DEBUG" && s.limits.Memory == 256<<20 && len(s.configs) == 1 && s.configs[0] == "/a.json"
			}},
		{name: "codebridge wins over compat", env: map[string]string{"CODEBRIDGE_IMAGE": "a", "MCP_BRIDGE_IMAGE": "b"},
			check: func(s *settings) bool { return s.image == "a" }},
		{name: "flag wins over env", env: map[string]string{"CODEBRIDGE_TIMEOUT": "10"}, argv: []string{"--timeout", "5"},
			check: func(s *settings) bool { return s.timeout == 5*time.Second }},
		{name: "configs add up", env: map[string]string{"CODEBRIDGE_CONFIG": "/a.json" + string(os.PathListSeparator) + "/b.json"}, argv: []string{"--config", "/c.json"},
			check: func(s *settings) bool { return strings.Join(s.configs, ",") == "/a.json,/b.json,/c.json" }},
		{name: "default timeout capped", argv: []string{"--timeout", "500"},
			check: func(s *settings) bool { return s.timeout == 120*time.Second }},
		{name: "bad env names it", env: map[string]string{"MCP_BRIDGE_MEMORY": "lots"}, wantErr: `MCP_BRIDGE_MEMORY: "lots" is not a size`},
		{name: "bad engine", argv: []string{"--engine", "lxc"}, wantErr: `"lxc" is not an engine`},
		{name: "root user refused", env: map[string]string{"CODEBRIDGE_USER": "0:0"}, wantErr: "as root"},
		{name: "negative timeout", argv: []string{"--timeout", "-1"}, wantErr: "not a positive number of seconds"},
		{name: "flag given twice", argv: []string{"--image", "a", "--image", "b"}, wantErr: "given twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := newFlagSet("serve", "", "", &bytes.Buffer{})
			s, _, err := parseSettings(fs, c.argv, func(k string) string { return c.env[k] })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(s) {
				t.Fatalf("unexpected settings: %+v", *s)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	cases := map[string]int64{"512m": 512 << 20, "2g": 2 << 30, "1.5GiB": 3 << 29, "1048576": 1 << 20, "64k": 64 << 10, "100MB": 100 << 20}
	for in, want := range cases {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "m", "-1g", "lots"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"frobnicate"}, nil, &out, &errb, func(string) string { return "" }); code != 2 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(errb.String(), `unknown command "frobnicate"`) || !strings.Contains(errb.String(), "codebridge doctor") {
		t.Fatalf("stderr: %s", errb.String())
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands {
		argv := []string{c.name, "-h"}
		if c.name == "image" {
			argv = []string{"image", "build", "-h"}
		}
		if c.name == "version" {
			continue
		}
		var out, errb bytes.Buffer
		if code := run(argv, nil, &out, &errb, func(string) string { return "" }); code != 0 {
			t.Errorf("%s -h: exit %d: %s", c.name, code, errb.String())
		}
		if !strings.Contains(errb.String(), "usage: codebridge "+c.name) {
			t.Errorf("%s -h shows no usage: %s", c.name, errb.String())
		}
	}
}

func TestImport(t *testing.T) {
	home := copyTree(t, filepath.Join("..", "..", "testdata", "import", "home"))
	out := filepath.Join(t.TempDir(), "MCPs")
	env := func(string) string { return "" }

	// Without --write nothing is written.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import", "--home", home, "--dir", out}, nil, &stdout, &stderr, env); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("a dry run wrote files")
	}
	if !strings.Contains(stdout.String(), "would write") || !strings.Contains(stderr.String(), `"codebridge" is codebridge itself`) {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"import", "--home", home, "--dir", out, "--write"}, nil, &stdout, &stderr, env); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := map[string][]string{
		"imported-claude-desktop.json": {"filesystem"},
		"imported-claude-code.json":    {"github", "legacy", "sentry"},
		"imported-cursor.json":         {"memory"},
		"imported-vscode.json":         {"docs", "fetch"},
	}
	for file, names := range want {
		b, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatalf("%s: %v (stdout: %s)", file, err, stdout.String())
		}
		var doc struct {
			MCPServers map[string]map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(maps.Keys(doc.MCPServers))
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("%s has %v, want %v", file, got, names)
		}
		if file == "imported-claude-code.json" {
			if doc.MCPServers["github"]["env"].(map[string]any)["GITHUB_TOKEN"] != "${GITHUB_TOKEN}" {
				t.Errorf("env reference not kept: %v", doc.MCPServers["github"])
			}
			if doc.MCPServers["sentry"]["url"] != "https://mcp.sentry.dev/mcp" || doc.MCPServers["legacy"]["type"] != "sse" {
				t.Errorf("remote entries not kept: %v", doc.MCPServers)
			}
		}
	}
}

func TestStripJSONC(t *testing.T) {
	in := `{"a": "http://x//y", /* c */ "b": [1, 2,], // end
"c": "say \"/*hi*/\"",}`
	var v map[string]any
	if err := json.Unmarshal(stripJSONC([]byte(in)), &v); err != nil {
		t.Fatalf("%v: %s", err, stripJSONC([]byte(in)))
	}
	if v["a"] != "http://x//y" || v["c"] != `say "/*hi*/"` || len(v["b"].([]any)) != 2 {
		t.Fatalf("got %v", v)
	}
}

func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
