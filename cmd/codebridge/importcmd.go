package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// clientConfig is a place an MCP client keeps its server list.
type clientConfig struct {
	client string // "claude-desktop", "claude-code", "cursor", "vscode"
	path   string // relative to the home directory
	key    string // "mcpServers", or "servers" (VS Code)
}

// knownConfigs are the user-level configs of the clients codebridge imports
// from, for Linux, macOS and Windows layouts.
var knownConfigs = []clientConfig{
	{"claude-desktop", ".config/Claude/claude_desktop_config.json", "mcpServers"},
	{"claude-desktop", "Library/Application Support/Claude/claude_desktop_config.json", "mcpServers"},
	{"claude-desktop", "AppData/Roaming/Claude/claude_desktop_config.json", "mcpServers"},
	{"claude-code", ".claude.json", "mcpServers"},
	{"claude-code", ".claude/mcp.json", "mcpServers"},
	{"cursor", ".cursor/mcp.json", "mcpServers"},
	{"vscode", ".config/Code/User/mcp.json", "servers"},
	{"vscode", ".config/Code/User/settings.json", "mcp.servers"},
	{"vscode", "Library/Application Support/Code/User/mcp.json", "servers"},
	{"vscode", "Library/Application Support/Code/User/settings.json", "mcp.servers"},
}

func (c *cli) importCommand() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Read the MCP servers of Claude Desktop, Claude Code, Cursor and VS Code and write ~/MCPs files",
		Args:  cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.write, "write", false, "write the files (default: show what would be written)")
	fs.StringVar(&o.home, "home", "", "home directory to read client configs from (default: yours)")
	fs.StringVar(&o.dir, "dir", "", "where to write (default: HOME/MCPs)")
	fs.StringArrayVar(&o.from, "from", nil, "read this client config `file` too (repeatable); its format is detected")
	return c.settingsCommand(cmd, slices.Concat([]string{"config"}, logKnobs), commandLogLevel, func(s *settings, _ []string) int {
		return c.runImport(s, o)
	})
}

// importOptions are import's flags.
type importOptions struct {
	write     bool
	home, dir string
	from      []string
}

// runImport copies MCP server definitions from other clients into ~/MCPs,
// one file per client. Without --write it only shows what it would write.
func (c *cli) runImport(s *settings, o importOptions) int {
	write, homeDir, outDir, from := o.write, o.home, o.dir, o.from
	if homeDir == "" {
		homeDir, _ = os.UserHomeDir()
	}
	if outDir == "" {
		outDir = filepath.Join(homeDir, "MCPs")
	}
	self, _ := os.Executable()

	imported := map[string]map[string]any{} // client -> name -> entry
	var notes []string
	read := func(cc clientConfig, path string) {
		servers, err := readClientConfig(path, cc.key)
		if err != nil {
			notes = append(notes, fmt.Sprintf("skipped %s: %v", path, err))
			return
		}
		if imported[cc.client] == nil {
			imported[cc.client] = map[string]any{}
		}
		for name, entry := range servers {
			if launchesSelf(entry, self) {
				notes = append(notes, fmt.Sprintf("%s: %q is codebridge itself; not imported", path, name))
				continue
			}
			if _, dup := imported[cc.client][name]; dup {
				notes = append(notes, fmt.Sprintf("%s: %q was already imported from another %s config; kept the first", path, name, cc.client))
				continue
			}
			imported[cc.client][name] = entry
		}
	}
	for _, cc := range knownConfigs {
		p := filepath.Join(homeDir, cc.path)
		if _, err := os.Stat(p); err == nil {
			read(cc, p)
		}
	}
	for _, f := range from {
		read(detectClient(f), f)
	}

	clients := make([]string, 0, len(imported))
	for cl := range imported {
		clients = append(clients, cl)
	}
	sort.Strings(clients)
	for _, n := range notes {
		fmt.Fprintln(c.stderr, "note:", n)
	}
	if len(clients) == 0 {
		fmt.Fprintln(c.stdout, "found no MCP servers in Claude Desktop, Claude Code, Cursor or VS Code configs under", homeDir)
		return 0
	}
	failed := false
	for _, cl := range clients {
		target := filepath.Join(outDir, "imported-"+cl+".json")
		b, _ := json.MarshalIndent(map[string]any{"mcpServers": imported[cl]}, "", "  ")
		b = append(b, '\n')
		if !write {
			fmt.Fprintf(c.stdout, "would write %s (%d servers):\n%s\n", target, len(imported[cl]), b)
			continue
		}
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			fmt.Fprintln(c.stderr, "codebridge import:", err)
			return 1
		}
		if err := os.WriteFile(target, b, 0o600); err != nil {
			fmt.Fprintln(c.stderr, "codebridge import:", err)
			failed = true
			continue
		}
		fmt.Fprintf(c.stdout, "wrote %s (%d servers)\n", target, len(imported[cl]))
	}
	if !write {
		fmt.Fprintln(c.stdout, "run again with --write to write these files")
	}
	if failed {
		return 1
	}
	return 0
}

// readClientConfig returns the server entries under key ("mcpServers",
// "servers", or "mcp.servers" for VS Code settings). Claude Code's
// per-project servers are included too. Comments and trailing commas (VS
// Code's JSONC) are accepted.
func readClientConfig(path, key string) (map[string]map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(stripJSONC(raw), &doc); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	out := map[string]map[string]any{}
	collect := func(m any) {
		servers, _ := m.(map[string]any)
		for name, v := range servers {
			if e, ok := v.(map[string]any); ok {
				out[name] = normalizeEntry(e)
			}
		}
	}
	node := any(doc)
	for _, part := range strings.Split(key, ".") {
		obj, _ := node.(map[string]any)
		node = obj[part]
	}
	collect(node)
	if projects, ok := doc["projects"].(map[string]any); ok { // Claude Code
		names := make([]string, 0, len(projects))
		for p := range projects {
			names = append(names, p)
		}
		sort.Strings(names)
		for _, p := range names {
			if proj, ok := projects[p].(map[string]any); ok {
				collect(proj["mcpServers"])
			}
		}
	}
	return out, nil
}

// normalizeEntry keeps the fields codebridge reads, in its format.
func normalizeEntry(e map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"command", "args", "env", "cwd", "url", "headers", "description", "disabled"} {
		if v, ok := e[k]; ok {
			out[k] = v
		}
	}
	if t, _ := e["type"].(string); t == "sse" {
		out["type"] = t // kept so that codebridge reports it is unsupported
	}
	return out
}

// launchesSelf reports whether an entry's command is this binary.
func launchesSelf(e map[string]any, self string) bool {
	cmd, _ := e["command"].(string)
	if cmd == "" || self == "" {
		return false
	}
	if filepath.Base(cmd) == "codebridge" {
		return true
	}
	a, err1 := os.Stat(cmd)
	b, err2 := os.Stat(self)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// detectClient guesses which client wrote a config file given with --from.
func detectClient(path string) clientConfig {
	base := strings.ToLower(filepath.Base(path))
	dir := strings.ToLower(filepath.Base(filepath.Dir(path)))
	switch {
	case base == "claude_desktop_config.json":
		return clientConfig{client: "claude-desktop", key: "mcpServers"}
	case base == ".claude.json" || base == ".mcp.json":
		return clientConfig{client: "claude-code", key: "mcpServers"}
	case dir == ".cursor":
		return clientConfig{client: "cursor", key: "mcpServers"}
	case dir == ".vscode" || base == "settings.json":
		if base == "settings.json" {
			return clientConfig{client: "vscode", key: "mcp.servers"}
		}
		return clientConfig{client: "vscode", key: "servers"}
	}
	return clientConfig{client: "other", key: "mcpServers"}
}

// stripJSONC removes // and /* */ comments and trailing commas outside
// strings, so VS Code's settings files parse as JSON.
func stripJSONC(b []byte) []byte {
	var out bytes.Buffer
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if inString {
			out.WriteByte(ch)
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
			continue
		}
		switch {
		case ch == '"':
			inString = true
			out.WriteByte(ch)
		case ch == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out.WriteByte('\n')
		case ch == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/') {
				i++
			}
			i++
		case ch == ',':
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				continue // trailing comma
			}
			out.WriteByte(ch)
		default:
			out.WriteByte(ch)
		}
	}
	return out.Bytes()
}
