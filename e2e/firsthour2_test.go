//go:build linux

package e2e

import (
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

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
