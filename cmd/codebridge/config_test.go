package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigOneErrorPolicy: the config files are read once for the
// whole command: each problem is reported once with its file, the good
// file's server still loads, and a file's unusable "redact" patterns stop
// the commands that run code (the data they were to hide would reach the
// model), naming the file.
func TestConfigOneErrorPolicy(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home+"/MCPs/good.json", `{"mcpServers": {"ok": {"command": "srv"}}}`)
	bad := filepath.Join(home, "MCPs", "bad.json")
	writeFile(t, bad, `{"packages": 5, "mcpServers": {"x": {"command": 5}}}`)
	_, errOut, code := runCLI(t, map[string]string{"HOME": home}, "servers")
	if code != 0 || strings.Count(errOut, "must be a list of strings") != 1 || strings.Count(errOut, "must be a string, not a number") != 1 || !strings.Contains(errOut, bad) {
		t.Fatalf("servers: exit %d\n%s", code, errOut)
	}

	redact := filepath.Join(home, "MCPs", "redact.json")
	writeFile(t, redact, `{"redact": ["EMP-[0-9]+"], "mcpServers": {}}`)
	codeFile := filepath.Join(home, "code.py")
	writeFile(t, codeFile, "print(1)")
	_, errOut, code = runCLI(t, map[string]string{"HOME": home, "CODEBRIDGE_WORKSPACE": "ephemeral"}, "exec", codeFile)
	if code != 1 || !strings.Contains(errOut, "codebridge exec: discovery: "+redact+`: field "redact"`) {
		t.Fatalf("exec: exit %d\n%s", code, errOut)
	}
}
