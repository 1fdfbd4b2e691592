//go:build linux

package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The first hour, second pass (issue 22, items 4 and 5): what a new user
// meets on the command line.

// The filesystem server works without roots: when nothing could give
// roots (codebridge exec has no MCP client, and no --root is set), the
// server is not offered them, so it keeps the directory its args name and
// no command warns about roots.
func TestNoRootsWarningWhenNothingCanAnswer(t *testing.T) {
	needEnv(t)
	dir := rootsDir(t, "notes.txt", "kept directory")
	h := home(t, map[string]map[string]server{"a.json": {"fs": npmServer("mcp-server-filesystem", dir)}})
	out, errOut, code := cli(t, h, "print(await mcp_fs.read_text_file(path="+pyQuote(filepath.Join(dir, "notes.txt"))+"))\n", nil, "exec", "-")
	if code != 0 {
		t.Fatalf("exec: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, out, "kept directory")
	if strings.Contains(errOut, "roots") || strings.Contains(errOut, "--root") {
		t.Errorf("a warning about roots, though the server works without them:\n%s", errOut)
	}
}

// A server that asks for roots whatever it was offered, when nothing can
// answer, gets a refusal and the user a warning whose advice does not
// break a working server: name the directory in the server's own entry.
func TestRootsAskedAnywayWarnsSafely(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"a.json": {"needy": stub("--ask-roots")}})
	out, errOut, code := cli(t, h, "print(await mcp_needy.echo(message='answered'))\n", nil, "exec", "-")
	if code != 0 {
		t.Fatalf("exec: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, out, "answered")
	mustContain(t, errOut, "the server asked for roots, and none could be given", "name it in the server's own entry",
		"in place of the directories their args name")
	if strings.Contains(errOut, "start it with --root") {
		t.Errorf("advice that replaces a server's directories:\n%s", errOut)
	}
}

// The command line a new user meets (issue 22, item 5), through the built
// binary: a --config file that does not exist is a usage error; doctor's
// fix for a missing config file is to create it; tools with no servers
// says so; servers shows the whole launch line; exec takes --state-dir;
// import says which imported variables are not set here.
func TestFirstHourCommandLine(t *testing.T) {
	needEnv(t)
	h := home(t, nil)
	missing := filepath.Join(h, "nope.json")
	_, errOut, code := cli(t, h, "", nil, "servers", "--config", missing)
	if code != 2 || !strings.Contains(errOut, "config file "+missing+" does not exist") {
		t.Errorf("servers --config MISSING: exit %d: %s", code, errOut)
	}
	out, errOut, code := cli(t, h, "", []string{"CODEBRIDGE_CONFIG=" + missing}, "doctor")
	if code != 1 || !strings.Contains(out, "fix: create "+missing) || strings.Contains(out, "fix: edit "+missing) {
		t.Errorf("doctor with a missing config file: exit %d\n%s\n%s", code, out, errOut)
	}
	registry := "docker.io/codebridge/missing:e2e"
	out, errOut, code = cli(t, h, "", []string{"CODEBRIDGE_IMAGE=" + registry}, "doctor")
	if code != 1 || !strings.Contains(out, "fix: pull "+registry) || strings.Contains(out, "--tag "+registry) {
		t.Errorf("doctor names a built image after a registry's: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli(t, h, "", nil, "tools")
	if code != 0 || !strings.Contains(out, "no servers configured") {
		t.Errorf("tools with no servers: exit %d, stdout %q, stderr %s", code, out, errOut)
	}

	dir := filepath.Join(t.TempDir(), "a", "directory", "deep", "enough", "to", "be", "cut", "before")
	withServer := home(t, map[string]map[string]server{"a.json": {"fs": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", dir}}}})
	out, errOut, code = cli(t, withServer, "", nil, "servers")
	if code != 0 || !strings.Contains(out, "npx -y @modelcontextprotocol/server-filesystem "+dir) {
		t.Errorf("servers hides the launch line's arguments: exit %d\n%s\n%s", code, out, errOut)
	}

	state := t.TempDir()
	out, errOut, code = cli(t, h, "print(runtime.save_skill('twice', 'def twice(x):\\n    return 2 * x\\n')['name'])\n", nil, "exec", "--state-dir", state, "-")
	if code != 0 || !strings.Contains(out, "twice") {
		t.Fatalf("exec --state-dir: exit %d\n%s\n%s", code, out, errOut)
	}
	if !holdsFile(t, state, "twice.py") {
		t.Errorf("exec --state-dir %s: the skill is not there", state)
	}

	cursor := filepath.Join(h, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cursor), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cursor, []byte(`{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"TOKEN": "${env:CODEBRIDGE_E2E_SURELY_UNSET}"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = cli(t, h, "", nil, "import", "--home", h, "--write")
	if code != 0 || !strings.Contains(out, "CODEBRIDGE_E2E_SURELY_UNSET is not set here") {
		t.Errorf("import --write: exit %d\n%s\n%s", code, out, errOut)
	}
}

// holdsFile reports whether a file called name is somewhere under dir.
func holdsFile(t *testing.T, dir, name string) bool {
	t.Helper()
	found := false
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == name && !d.IsDir() {
			found = true
		}
		return nil
	})
	return found
}

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
