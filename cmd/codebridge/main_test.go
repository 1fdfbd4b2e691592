package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/discovery"
	"github.com/spf13/pflag"
)

// parseFlags parses argv with every setting's flag, then resolves the
// settings against env, as a command does.
func parseFlags(argv []string, env map[string]string) (*settings, error) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var names []string
	for _, k := range entries {
		if k.flag != "" {
			names = append(names, k.flag)
		}
	}
	sf := addSettingFlags(fs, names, serveLogLevel)
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	return sf.resolve(func(k string) string { return env[k] })
}

func isDefault(s *settings) bool {
	return s.engine == "auto" && s.timeout == 30*time.Second && s.maxTimeout == 120*time.Second &&
		s.limits.Memory == 512<<20 && s.limits.Pids == 128 && s.output == "text" && s.user == "65534:65534" &&
		s.image == "" && s.limits.Runtime == "" && s.stateDir == "/h/.local/state/codebridge" && s.logLevel == slog.LevelInfo
}

func TestSettings(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		argv    []string
		check   func(*settings) bool
		wantErr string
	}{
		{name: "defaults", env: map[string]string{"HOME": "/h"}, check: isDefault},
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
		{name: "flag wins over a bad env", env: map[string]string{"CODEBRIDGE_TIMEOUT": "soon"}, argv: []string{"-t", "5"},
			check: func(s *settings) bool { return s.timeout == 5*time.Second }},
		{name: "configs add up", env: map[string]string{"CODEBRIDGE_CONFIG": "/a.json" + string(os.PathListSeparator) + "/b.json"}, argv: []string{"--config", os.DevNull},
			check: func(s *settings) bool { return strings.Join(s.configs, ",") == "/a.json,/b.json,"+os.DevNull }},
		{name: "default timeout capped", argv: []string{"--timeout", "500"},
			check: func(s *settings) bool { return s.timeout == 120*time.Second }},
		{name: "oci runtime flag", argv: []string{"--oci-runtime", "runsc"}, check: func(s *settings) bool { return s.limits.Runtime == "runsc" }},
		{name: "oci runtime env", env: map[string]string{"CODEBRIDGE_OCI_RUNTIME": "kata-runtime"}, check: func(s *settings) bool { return s.limits.Runtime == "kata-runtime" }},
		{name: "bad oci runtime", argv: []string{"--oci-runtime", "runsc --debug"}, wantErr: "not a runtime name"},
		{name: "state dir from XDG", env: map[string]string{"HOME": "/h", "XDG_STATE_HOME": "/x"}, check: func(s *settings) bool { return s.stateDir == "/x/codebridge" }},
		{name: "state dir with ~", env: map[string]string{"HOME": "/h", "MCP_BRIDGE_STATE_DIR": "~/MCPs"}, check: func(s *settings) bool { return s.stateDir == "/h/MCPs" }},
		{name: "bad env names it", env: map[string]string{"MCP_BRIDGE_MEMORY": "lots"}, wantErr: `MCP_BRIDGE_MEMORY: "lots" is not a size`},
		{name: "bad engine", argv: []string{"--engine", "lxc"}, wantErr: `"lxc" is not an engine`},
		{name: "negative timeout", argv: []string{"--timeout", "-1"}, wantErr: "not a positive number of seconds"},
		{name: "flag given twice", argv: []string{"--image", "a", "--image", "b"}, wantErr: "given twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := parseFlags(c.argv, c.env)
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

// The sandbox never runs as uid 0 or gid 0, however the number is spelled.
func TestUserNeverRoot(t *testing.T) {
	for _, bad := range []string{"0", "00", "0:0", "00:00", "65534:0", "65534:000", "0:65534", "root", "root:65534", "65534:root", ":", "1:", ":1", "1:2:3", "99999999999:1"} {
		for _, how := range []struct {
			argv []string
			env  map[string]string
		}{{argv: []string{"--user", bad}}, {env: map[string]string{"CODEBRIDGE_USER": bad}}, {env: map[string]string{"MCP_BRIDGE_CONTAINER_USER": bad}}} {
			if s, err := parseFlags(how.argv, how.env); err == nil {
				t.Errorf("user %q accepted (%v %v): %q", bad, how.argv, how.env, s.user)
			}
		}
	}
	for _, good := range []string{"65534:65534", "1000", "1000:1000", "nobody", "nobody:nogroup", "10:10"} {
		if s, err := parseFlags([]string{"--user", good}, nil); err != nil || s.user != good {
			t.Errorf("user %q: %v", good, err)
		}
	}
}

// Every value the Python code-execution bridge documents for its settings
// (README and GUIDE of elusznik/mcp-server-code-execution-mode) starts
// codebridge, mapped to the same meaning or accepted and ignored.
func TestPythonBridgeDocumentedValues(t *testing.T) {
	cases := []struct {
		env, value string
		check      func(*settings) bool
	}{
		{"MCP_BRIDGE_RUNTIME", "auto", func(s *settings) bool { return s.engine == "auto" }},
		{"MCP_BRIDGE_RUNTIME", "podman", func(s *settings) bool { return s.engine == "podman" }},
		{"MCP_BRIDGE_RUNTIME", "docker", func(s *settings) bool { return s.engine == "docker" }},
		{"MCP_BRIDGE_IMAGE", "python:3.14-slim", func(s *settings) bool { return s.image == "python:3.14-slim" }},
		{"MCP_BRIDGE_IMAGE", "python:3.11-slim", func(s *settings) bool { return s.image == "python:3.11-slim" }},
		{"MCP_BRIDGE_TIMEOUT", "30", func(s *settings) bool { return s.timeout == 30*time.Second }},
		{"MCP_BRIDGE_TIMEOUT", "30s", func(s *settings) bool { return s.timeout == 30*time.Second }},
		{"MCP_BRIDGE_MAX_TIMEOUT", "120", func(s *settings) bool { return s.maxTimeout == 120*time.Second }},
		{"MCP_BRIDGE_MAX_TIMEOUT", "120s", func(s *settings) bool { return s.maxTimeout == 120*time.Second }},
		{"MCP_BRIDGE_MEMORY", "512m", func(s *settings) bool { return s.limits.Memory == 512<<20 }},
		{"MCP_BRIDGE_MEMORY", "1g", func(s *settings) bool { return s.limits.Memory == 1<<30 }},
		{"MCP_BRIDGE_PIDS", "128", func(s *settings) bool { return s.limits.Pids == 128 }},
		{"MCP_BRIDGE_CPUS", "2.0", func(s *settings) bool { return s.limits.CPUs == 2 }},
		{"MCP_BRIDGE_CONTAINER_USER", "65534:65534", func(s *settings) bool { return s.user == "65534:65534" }},
		{"MCP_BRIDGE_CONTAINER_USER", "1000:1000", func(s *settings) bool { return s.user == "1000:1000" }},
		{"MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT", "300", func(s *settings) bool { return len(s.ignored) == 1 }},
		{"MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT", "300s", func(s *settings) bool { return len(s.ignored) == 1 }},
		{"MCP_BRIDGE_STATE_DIR", "~/MCPs", func(s *settings) bool { return s.stateDir == "/h/MCPs" }},
		{"MCP_BRIDGE_OUTPUT_MODE", "compact", func(s *settings) bool { return s.output == "text" }},
		{"MCP_BRIDGE_OUTPUT_MODE", "toon", func(s *settings) bool { return s.output == "toon" }},
		{"MCP_BRIDGE_LOG_LEVEL", "INFO", func(s *settings) bool { return s.logLevel == slog.LevelInfo }},
		{"MCP_BRIDGE_LOG_LEVEL", "DEBUG", func(s *settings) bool { return s.logLevel == slog.LevelDebug }},
		{"MCP_BRIDGE_LOG_LEVEL", "WARNING", func(s *settings) bool { return s.logLevel == slog.LevelWarn }},
		{"MCP_BRIDGE_LOG_LEVEL", "ERROR", func(s *settings) bool { return s.logLevel == slog.LevelError }},
		{"MCP_BRIDGE_LOG_LEVEL", "CRITICAL", func(s *settings) bool { return s.logLevel == slog.LevelError }},
		{"MCP_BRIDGE_ALLOW_SELF_SERVER", "1", func(s *settings) bool { return len(s.ignored) == 1 }},
		{"MCP_BRIDGE_ALLOW_SELF_SERVER", "0", func(s *settings) bool { return len(s.ignored) == 1 }},
		{"MCP_SERVERS_CONFIG", "/etc/mcp.json", func(s *settings) bool { return slices.Equal(s.configs, []string{"/etc/mcp.json"}) }},
	}
	for _, c := range cases {
		t.Run(c.env+"="+c.value, func(t *testing.T) {
			s, err := parseFlags(nil, map[string]string{c.env: c.value, "HOME": "/h"})
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(s) {
				t.Fatalf("not applied: %+v", *s)
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
	out, errOut, code := runCLI(t, nil, "frobnicate")
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	mustContain(t, errOut, `unknown command "frobnicate"`, "codebridge --help")
}

// runCLI runs the command line with an environment of env.
func runCLI(t *testing.T, env map[string]string, argv ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(argv, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	return out.String(), errb.String(), code
}

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}

// The top-level help lists the commands, not serve's flags; each command's
// help shows its own flags with their defaults, and only those.
func TestHelp(t *testing.T) {
	for _, argv := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, _, code := runCLI(t, nil, argv...)
		if code != 0 {
			t.Fatalf("%v: exit %d", argv, code)
		}
		mustContain(t, out, "doctor", "servers", "tools", "search", "exec", "image", "import", "version")
		if strings.Contains(out, "--memory") {
			t.Errorf("%v shows serve's flags:\n%s", argv, out)
		}
	}
	cases := []struct {
		argv      []string
		want, not []string
	}{
		{[]string{"serve", "-h"}, []string{"--memory", "(default 512m)", "--oci-runtime", "--state-dir", "(default info)", "CODEBRIDGE_OCI_RUNTIME"}, []string{"--json"}},
		{[]string{"servers", "-h"}, []string{"--json", "--config", "(default warn)"}, []string{"--memory", "--timeout", "--image"}},
		{[]string{"tools", "--help"}, []string{"tools [SERVER]", "--json", "--call-timeout", "(default 120)"}, []string{"--memory", "--image"}},
		{[]string{"search", "-h"}, []string{"search QUERY", "-n, --limit", "(default 10)"}, []string{"--memory"}},
		{[]string{"exec", "-h"}, []string{"exec FILE|-", "--servers", "-t, --timeout", "(default 30)", "--memory", "--state-dir"}, []string{"--json"}},
		{[]string{"doctor", "-h"}, []string{"--json", "--image", "--memory"}, []string{"--timeout", "--state-dir"}},
		{[]string{"image", "-h"}, []string{"build"}, []string{"--memory"}},
		{[]string{"image", "build", "-h"}, []string{"codebridge image build [flags]", "--tag", "(default \"localhost/codebridge-python:bookworm\")", "--packages", "--engine"}, []string{"--memory", "codebridge image [flags] build"}},
		{[]string{"import", "-h"}, []string{"--write", "--from", "--config"}, []string{"--memory"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.argv, " "), func(t *testing.T) {
			out, errOut, code := runCLI(t, nil, c.argv...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			mustContain(t, out, c.want...)
			for _, n := range c.not {
				if strings.Contains(out, n) {
					t.Errorf("help shows %q:\n%s", n, out)
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, argv := range [][]string{{"--version"}, {"version"}} {
		out, errOut, code := runCLI(t, nil, argv...)
		if code != 0 || !strings.HasPrefix(out, "codebridge ") {
			t.Errorf("%v: exit %d: %q %q", argv, code, out, errOut)
		}
	}
}

// Flags may follow positional arguments, extra arguments are refused, and
// single-dash long flags (Go's flag syntax, which earlier versions used)
// still work.
func TestArguments(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	_, errOut, code := runCLI(t, env, "tools", "nope", "--json")
	if code != 1 || !strings.Contains(errOut, `no MCP server "nope"`) {
		t.Errorf("tools nope --json: exit %d: %s", code, errOut)
	}
	_, errOut, code = runCLI(t, env, "tools", "a", "b")
	if code != 2 || !strings.Contains(errOut, "at most 1") {
		t.Errorf("tools a b: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLI(t, env, "servers", "-json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("servers -json: exit %d: %q %s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, env, "image")
	if code != 2 || !strings.Contains(errOut, "build") {
		t.Errorf("image: exit %d: %s", code, errOut)
	}
	_, errOut, code = runCLI(t, env, "serve", "--user", "0:0")
	if code != 2 || !strings.Contains(errOut, "root") {
		t.Errorf("serve --user 0:0: exit %d: %s", code, errOut)
	}
	_, errOut, code = runCLI(t, env, "-user", "00")
	if code != 2 || !strings.Contains(errOut, "root") {
		t.Errorf("-user 00 (serve by default): exit %d: %s", code, errOut)
	}
}

// importInto runs import on a copy of home, with a stand-in for the
// codebridge executable on PATH.
func importInto(t *testing.T, home string, o importOptions) (string, string, int) {
	t.Helper()
	bin := t.TempDir()
	o.self = filepath.Join(bin, "codebridge")
	writeFile(t, o.self, "#!/bin/sh\n")
	if err := os.Chmod(o.self, 0o755); err != nil {
		t.Fatal(err)
	}
	o.home = home
	var out, errb bytes.Buffer
	c := &cli{stdout: &out, stderr: &errb, getenv: func(k string) string { return map[string]string{"PATH": bin, "HOME": home}[k] }}
	code := exitStatus(&errb, "codebridge import", c.runImport(&settings{}, o))
	return out.String(), errb.String(), code
}

func readImported(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.MCPServers
}

func TestImport(t *testing.T) {
	home := copyTree(t, filepath.Join("..", "..", "testdata", "import", "home"))
	out := filepath.Join(home, "MCPs")

	// Without --write nothing is written.
	stdout, stderr, code := importInto(t, home, importOptions{})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("a dry run wrote files")
	}
	mustContain(t, stdout, "would write", `claude-desktop "codebridge" from `, "skipped: it is codebridge itself",
		`"sentry" from `, "scopes it to the project /home/me/app", `"legacy" from `)

	stdout, stderr, code = importInto(t, home, importOptions{write: true})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := map[string][]string{
		"zz-imported-claude-desktop.json": {"filesystem"},
		"zz-imported-claude-code.json":    {"github"},
		"zz-imported-cursor.json":         {"memory"},
		"zz-imported-vscode.json":         {"docs", "fetch"},
	}
	for file, names := range want {
		servers := readImported(t, filepath.Join(out, file))
		if got := slices.Sorted(maps.Keys(servers)); !slices.Equal(got, names) {
			t.Errorf("%s has %v, want %v (stdout: %s)", file, got, names, stdout)
		}
		if file == "zz-imported-claude-code.json" && servers["github"]["env"].(map[string]any)["GITHUB_TOKEN"] != "${GITHUB_TOKEN}" {
			t.Errorf("env reference not kept: %v", servers["github"])
		}
	}

	// --projects imports Claude Code's project servers as global ones, and
	// says so; SSE is still skipped.
	stdout, _, _ = importInto(t, home, importOptions{write: true, projects: true})
	mustContain(t, stdout, "imported as global; Claude Code scoped it to /home/me/app", `"legacy" from`, "SSE transport")
	if cc := readImported(t, filepath.Join(out, "zz-imported-claude-code.json")); cc["sentry"]["url"] != "https://mcp.sentry.dev/mcp" || cc["legacy"] != nil {
		t.Errorf("project servers: %v", cc)
	}
}

// Import never changes which definition of a server wins: a name the user
// defines is skipped, and the files sort after the user's.
func TestImportKeepsUserDefinitions(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {"memory": {"command": "cursor-memory"}, "new": {"command": "n"}}}`)
	writeFile(t, filepath.Join(home, "MCPs", "mine.json"), `{"mcpServers": {"memory": {"command": "my-memory"}}}`)
	stdout, stderr, code := importInto(t, home, importOptions{write: true})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mustContain(t, stdout, `cursor "memory" from`, "skipped: already defined in "+filepath.Join(home, "MCPs", "mine.json"), `cursor "new" from`, "imported into")
	specs, problems := discovery.Load(discovery.Options{Home: home})
	got := map[string]string{}
	for _, sp := range specs {
		got[sp.Name] = sp.Command
	}
	if got["memory"] != "my-memory" || got["new"] != "n" || len(problems) != 0 {
		t.Fatalf("after import: %v, problems %v", got, problems)
	}
	// A second import changes nothing either (its own file does not count
	// as the user's).
	stdout, _, _ = importInto(t, home, importOptions{write: true})
	mustContain(t, stdout, `cursor "new" from`, "imported into zz-imported-cursor.json")
}

// Variables in the clients' syntax are translated, or the server is
// skipped with the reason; SSE servers written Cursor's way are skipped.
func TestImportVariablesAndTransports(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {
		"gh": {"command": "gh-mcp", "args": ["--home", "${userHome}/x"], "env": {"TOKEN": "${env:GH_TOKEN}", "KEEP": "${A:-b}"}},
		"stream": {"url": "https://example.com/sse"},
		"ws": {"command": "w", "cwd": "${workspaceFolder}"}}}`)
	writeFile(t, filepath.Join(home, ".config", "Code", "User", "mcp.json"), `{"servers": {
		"asks": {"type": "stdio", "command": "a", "env": {"KEY": "${input:api-key}"}}}}`)
	stdout, stderr, code := importInto(t, home, importOptions{write: true})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mustContain(t, stdout, "${env:GH_TOKEN} became ${GH_TOKEN}", "${userHome} became ${HOME}",
		"GH_TOKEN is not set here: set it in the environment codebridge starts in",
		`"stream" from`, "SSE transport",
		`"ws" from`, "uses ${workspaceFolder}",
		`vscode "asks" from`, "uses ${input:api-key}, which vscode fills in itself")
	gh := readImported(t, filepath.Join(home, "MCPs", "zz-imported-cursor.json"))
	if len(gh) != 1 || gh["gh"]["env"].(map[string]any)["TOKEN"] != "${GH_TOKEN}" || gh["gh"]["env"].(map[string]any)["KEEP"] != "${A:-b}" ||
		gh["gh"]["args"].([]any)[1] != "${HOME}/x" {
		t.Fatalf("imported: %v", gh)
	}
	if fileExists(filepath.Join(home, "MCPs", "zz-imported-vscode.json")) {
		t.Fatal("a server needing ${input:...} was imported")
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

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorCheckEscapesDetail: a server's stderr in a check's detail is
// escaped and indented, so that no line of it passes for a check.
func TestDoctorCheckEscapesDetail(t *testing.T) {
	var b bytes.Buffer
	printCheck(&b, check{Name: "server", Detail: "evil: exited\nok    server     forged\x1b[2J\r\nverdict: codebridge is ready", Fix: "fix\x1b[H"})
	out := b.String()
	if strings.ContainsAny(out, "\x1b\r") {
		t.Fatalf("a control character reached the output:\n%q", out)
	}
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if i > 0 && !strings.HasPrefix(line, "      ") || strings.HasPrefix(line, "ok") || strings.HasPrefix(line, "verdict") {
			t.Fatalf("line %d is not the check's own:\n%s", i+1, out)
		}
	}
	mustContain(t, out, "FAIL  server     evil: exited (0ms)", `forged\x1b[2J\r`, `fix: fix\x1b[H`)
}

// The dry run's preview shows what each secret becomes, never its value:
// literal env and header values and a URL's password and query values are
// masked, references are shown as they will be written, and --write still
// writes the values themselves (the file is the user's, mode 0600).
func TestImportPreviewHidesSecrets(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {
	  "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_LITERALSECRET1", "REF": "${env:OTHER}"}},
	  "web": {"url": "https://user:PASSWORDSECRET2@example.test/mcp?key=QUERYSECRET3", "headers": {"Authorization": "Bearer HEADERSECRET4"}}}}`)
	stdout, stderr, code := importInto(t, home, importOptions{})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, secret := range []string{"LITERALSECRET1", "PASSWORDSECRET2", "QUERYSECRET3", "HEADERSECRET4"} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("the preview shows %s:\n%s", secret, stdout)
		}
	}
	mustContain(t, stdout, `"GITHUB_TOKEN": "***"`, `"REF": "${OTHER}"`, `"Authorization": "***"`, "secret values shown as ***")

	if _, stderr, code = importInto(t, home, importOptions{write: true}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := readImported(t, filepath.Join(home, "MCPs", "zz-imported-cursor.json"))
	if got["gh"]["env"].(map[string]any)["GITHUB_TOKEN"] != "ghp_LITERALSECRET1" {
		t.Errorf("the written file lost the value: %v", got["gh"])
	}
}

// A mistyped flag is named as typed, with the nearest flag the command
// knows, and a bare codebridge with serve implied names no command the
// user did not type.
func TestUnknownFlagSuggestsNearest(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"--verison"}, "codebridge: unknown flag --verison; did you mean --version?"},
		{[]string{"--polcy", "open"}, "codebridge: unknown flag --polcy; did you mean --policy?"},
		{[]string{"search", "--limt", "3", "x"}, "codebridge search: unknown flag --limt; did you mean --limit?"},
		{[]string{"--zzzzzzzz"}, "codebridge: unknown flag --zzzzzzzz\n"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.argv, strings.NewReader(""), &out, &errb, func(string) string { return "" })
		if code != 2 || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "codebridge serve") && tc.argv[0] != "serve" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.argv, code, errb.String(), tc.want)
		}
	}
}

// Only a terminal on stdin gets the note that codebridge waits for a
// client: a pipe (what MCP clients give it) or /dev/null does not.
func TestWaitingNoteOnlyForATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(r) || isTerminal(null) || isTerminal(strings.NewReader("")) {
		t.Error("a pipe, /dev/null or a reader was taken for a terminal")
	}
}
