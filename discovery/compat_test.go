package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A file-level "description" is the description of that file's servers
// that have none; a server's own wins, and other files are untouched.
func TestFileLevelDescription(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "MCPs/a.json"), `{"description": "Team tools", "mcpServers": {
		"plain": {"command": "p"},
		"own": {"command": "o", "description": "Its own"}}}`)
	writeFile(t, filepath.Join(home, "MCPs/b.json"), `{"mcpServers": {"other": {"command": "x"}}}`)
	writeFile(t, filepath.Join(home, "MCPs/c.json"), `{"description": 5, "mcpServers": {"c": {"command": "c"}}}`)
	servers, problems := Load(Options{Home: home, LookupEnv: lookupIn(nil)})
	got := map[string]string{}
	for _, s := range servers {
		got[s.Name] = s.Description
	}
	if got["plain"] != "Team tools" || got["own"] != "Its own" || got["other"] != "" || got["c"] != "" {
		t.Errorf("descriptions %q", got)
	}
	checkProblems(t, home, problems, []wantProblem{{File: "MCPs/c.json", Field: "description", Contains: []string{"must be a string"}}})
}

// An entry that launches the Python code-execution bridge is skipped like
// one that launches codebridge, however it is spelled.
func TestPythonBridgeEntrySkipped(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "MCPs/a.json"), `{"mcpServers": {
		"script": {"command": "uv", "args": ["run", "python", "/opt/bridge/mcp_server_code_execution_mode.py"]},
		"uvx": {"command": "uvx", "args": ["mcp-server-code-execution-mode@latest", "run"]},
		"git": {"command": "uvx", "args": ["--from", "git+https://github.com/elusznik/mcp-server-code-execution-mode.git", "mcp-server-code-execution-mode"]},
		"module": {"command": "python3", "args": ["-m", "mcp_server_code_execution_mode"]},
		"command": {"command": "/home/me/.local/bin/mcp-server-code-execution-mode"},
		"similar": {"command": "uvx", "args": ["mcp-server-code-execution-mode-extras"]},
		"ordinary": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
	}}`)
	servers, problems := Load(Options{Home: home, Self: exe, LookupEnv: lookupIn(map[string]string{"PATH": t.TempDir()})})
	var got []string
	for _, s := range servers {
		got = append(got, s.Name)
	}
	if len(got) != 2 || got[0] != "similar" || got[1] != "ordinary" {
		t.Errorf("servers %q, want similar and ordinary", got)
	}
	var wp []wantProblem
	for _, name := range []string{"script", "uvx", "git", "module", "command"} {
		wp = append(wp, wantProblem{File: "MCPs/a.json", Server: name, Field: "command", Is: ErrSelfReference,
			Contains: []string{"Python code-execution bridge"}})
	}
	checkProblems(t, home, problems, wp)
	for _, p := range problems {
		if !errors.Is(p, ErrSelfReference) {
			t.Errorf("problem %v", p)
		}
	}
}

// A server's cwd is kept as configured, ~ expanded.
func TestCwdKept(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "MCPs/a.json"), `{"mcpServers": {"w": {"command": "w", "cwd": "~/work"}}}`)
	servers, _ := Load(Options{Home: home, LookupEnv: lookupIn(nil)})
	if len(servers) != 1 || servers[0].Cwd != filepath.Join(home, "work") {
		t.Errorf("servers %+v", servers)
	}
}
