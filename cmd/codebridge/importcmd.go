package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/codebridge/codebridge/discovery"
	"github.com/spf13/cobra"
	"github.com/tailscale/hujson"
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
		Long: `Read the MCP servers of Claude Desktop, Claude Code, Cursor and VS Code and
write them to ~/MCPs/` + importFilePrefix + `CLIENT.json, saying per server what it did.
A server already defined in your configuration is never replaced, and the
files sort after yours, so your definitions keep winning. Variables in the
clients' syntax (${env:X}, ${userHome}) are translated; a server using one
that cannot be (${input:x}, ${workspaceFolder}) is skipped and named, as are
SSE servers and Claude Code's project-scoped servers (unless --projects).`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.write, "write", false, "write the files (default: show what would be written)")
	fs.StringVar(&o.home, "home", "", "home directory to read client configs from (default: yours)")
	fs.StringVar(&o.dir, "dir", "", "where to write (default: HOME/MCPs)")
	fs.StringArrayVar(&o.from, "from", nil, "read this client config `file` too (repeatable); its format is detected")
	fs.BoolVar(&o.projects, "projects", false, "also import Claude Code's project-scoped servers (as global ones)")
	var s struct {
		Upstream upstreamFlags
		Log      logFlags
	}
	return c.settingsCommand(cmd, &s, slices.Concat([]string{"config"}, flagsOf[logFlags]()), commandLogLevel, func([]string) error {
		return c.runImport(s.Upstream.Configs, o)
	})
}

// importOptions are import's flags.
type importOptions struct {
	write, projects bool
	home, dir       string
	from            []string
	self, path      string // this executable, and PATH, to spot entries that launch codebridge
	// isSet says whether an environment variable is set here, to note
	// imported references to ones that are not.
	isSet func(string) bool
}

// importFilePrefix starts the names of the files import writes. "zz-" sorts
// them after the user's own files, which therefore keep winning.
const importFilePrefix = "zz-imported-"

// candidate is one server definition found in a client's config.
type candidate struct {
	client, path, name string
	project            string // Claude Code: the project it is scoped to
	entry              map[string]any
	verdict            string // empty: imported
	notes              []string
}

// runImport copies MCP server definitions from other clients into ~/MCPs,
// one file per client, and says per server what it did. Without --write it
// only shows what it would write.
// configs are the --config files, whose servers are the user's too.
func (c *cli) runImport(configs []string, o importOptions) error {
	if o.home == "" {
		o.home, _ = os.UserHomeDir()
	}
	if o.dir == "" {
		o.dir = filepath.Join(o.home, "MCPs")
	}
	if o.self == "" {
		o.self, _ = os.Executable()
	}
	o.path = c.getenv("PATH")
	o.isSet = func(name string) bool { return c.getenv(name) != "" }
	var cands []*candidate
	read := func(cc clientConfig, path string) {
		found, err := readClientConfig(path, cc)
		if err != nil {
			fmt.Fprintf(c.stderr, "warning: skipped %s: %v\n", path, err)
		}
		cands = append(cands, found...)
	}
	for _, cc := range knownConfigs {
		if p := filepath.Join(o.home, cc.path); fileExists(p) {
			read(cc, p)
		}
	}
	for _, f := range o.from {
		read(detectClient(f), f)
	}
	if len(cands) == 0 {
		fmt.Fprintln(c.stdout, "found no MCP servers in Claude Desktop, Claude Code, Cursor or VS Code configs under", o.home)
		return nil
	}
	judge(cands, o, existingServers(configs, o.dir, o.home))
	report(c.stdout, cands, o.write)
	return writeImports(c, cands, o)
}

// judge decides, in order, what happens to each candidate: skipped with a
// reason, or imported (with its variables translated).
func judge(cands []*candidate, o importOptions, existing map[string]string) {
	selfRefs := launchingSelf(cands, o.self, o.path)
	taken := map[string]string{}
	for i, cd := range cands {
		switch {
		case cd.project != "" && !o.projects:
			cd.verdict = fmt.Sprintf("skipped: Claude Code scopes it to the project %s, and codebridge's servers are global; rerun with --projects to import it as global", cd.project)
		case existing[cd.name] != "":
			cd.verdict = fmt.Sprintf("skipped: already defined in %s, which keeps winning", existing[cd.name])
		case taken[cd.name] != "":
			cd.verdict = fmt.Sprintf("skipped: the definition from %s is imported under this name", taken[cd.name])
		case pythonBridge(cd.entry):
			cd.verdict = "skipped: it is the Python code-execution bridge, which codebridge replaces"
		case selfRefs[i]:
			cd.verdict = "skipped: it is codebridge itself"
		case isSSE(cd.entry):
			cd.verdict = "skipped: it uses the SSE transport, which codebridge does not speak; if the server also offers streamable HTTP (often at /mcp), add that url to ~/MCPs by hand"
		default:
			notes, err := translateVars(cd.entry, cd.client, o.isSet)
			if err != nil {
				cd.verdict = "skipped: " + err.Error()
				continue
			}
			cd.notes = notes
			if cd.project != "" {
				cd.notes = append(cd.notes, "imported as global; Claude Code scoped it to "+cd.project)
			}
			taken[cd.name] = cd.path
		}
	}
}

// existingServers maps the names the user's configuration defines (except
// in files import writes) to the file that defines them.
func existingServers(configs []string, dir, home string) map[string]string {
	files := slices.Clone(configs)
	if matches, err := filepath.Glob(filepath.Join(dir, "*.json")); err == nil {
		files = append(files, matches...)
	}
	specs, _ := discovery.Load(discovery.Options{Home: home, Files: files})
	out := map[string]string{}
	for _, sp := range specs {
		if !strings.HasPrefix(filepath.Base(sp.Source), importFilePrefix) {
			out[sp.Name] = sp.Source
		}
	}
	return out
}

// launchingSelf reports which candidates would launch this codebridge,
// asking discovery, which resolves commands as it will when loading them.
func launchingSelf(cands []*candidate, self, path string) []bool {
	out := make([]bool, len(cands))
	dir, err := os.MkdirTemp("", "codebridge-import-")
	if err != nil || self == "" {
		return out
	}
	defer os.RemoveAll(dir)
	servers := map[string]any{}
	for i, cd := range cands {
		servers[strconv.Itoa(i)] = cd.entry
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	f := filepath.Join(dir, "check.json")
	if os.WriteFile(f, b, 0o600) != nil {
		return out
	}
	// Every variable counts as set, so that no entry stops at an unset one
	// before discovery reaches its command.
	lookup := func(k string) (string, bool) {
		if k == "PATH" {
			return path, true
		}
		return "x", true
	}
	_, problems := discovery.Load(discovery.Options{Home: dir, Files: []string{f}, Self: self, LookupEnv: lookup})
	for _, p := range problems {
		if i, err := strconv.Atoi(p.Server); err == nil && errors.Is(p, discovery.ErrSelfReference) {
			out[i] = true
		}
	}
	return out
}

// pythonBridge reports whether an entry launches the Python
// code-execution bridge, as discovery would skip it.
func pythonBridge(e map[string]any) bool {
	command, _ := e["command"].(string)
	var args []string
	list, _ := e["args"].([]any)
	for _, a := range list {
		if s, ok := a.(string); ok {
			args = append(args, s)
		}
	}
	return discovery.LaunchesPythonBridge(command, args)
}

// isSSE reports whether an entry is an SSE server: "type": "sse", or, as
// Cursor writes them, a url ending in /sse and no type.
func isSSE(e map[string]any) bool {
	typ, _ := e["type"].(string)
	u, _ := e["url"].(string)
	return typ == "sse" || (typ == "" && strings.HasSuffix(strings.TrimRight(u, "/"), "/sse"))
}

// report says what import did, or would do, with each server.
func report(w io.Writer, cands []*candidate, write bool) {
	did := map[bool]string{true: "imported", false: "would import"}[write]
	for _, cd := range cands {
		v := cd.verdict
		if v == "" {
			v = did + " into " + importFilePrefix + cd.client + ".json"
			if len(cd.notes) > 0 {
				v += " (" + strings.Join(cd.notes, "; ") + ")"
			}
		}
		fmt.Fprintf(w, "%s %q from %s: %s\n", cd.client, cd.name, cd.path, v)
	}
}

// writeImports writes one file per client with the imported servers.
func writeImports(c *cli, cands []*candidate, o importOptions) error {
	byClient := map[string]map[string]any{}
	for _, cd := range cands {
		if cd.verdict != "" {
			continue
		}
		if byClient[cd.client] == nil {
			byClient[cd.client] = map[string]any{}
		}
		byClient[cd.client][cd.name] = cd.entry
	}
	clients := slices.Sorted(maps.Keys(byClient))
	failed := false
	for _, cl := range clients {
		target := filepath.Join(o.dir, importFilePrefix+cl+".json")
		b, _ := json.MarshalIndent(map[string]any{"mcpServers": byClient[cl]}, "", "  ")
		b = append(b, '\n')
		if !o.write {
			shown, _ := json.MarshalIndent(map[string]any{"mcpServers": previewServers(byClient[cl])}, "", "  ")
			fmt.Fprintf(c.stdout, "\nwould write %s (%d servers; secret values shown as %s):\n%s\n", target, len(byClient[cl]), masked, shown)
			continue
		}
		if err := os.MkdirAll(o.dir, 0o755); err != nil {
			fmt.Fprintln(c.stderr, "codebridge import:", err)
			return errReported
		}
		if err := os.WriteFile(target, b, 0o600); err != nil {
			fmt.Fprintln(c.stderr, "codebridge import:", err)
			failed = true
			continue
		}
		fmt.Fprintf(c.stdout, "wrote %s (%d servers)\n", target, len(byClient[cl]))
	}
	if !o.write && len(clients) > 0 {
		fmt.Fprintln(c.stdout, "run again with --write to write these files")
	}
	if failed {
		return errReported
	}
	return nil
}

// readClientConfig returns the server entries under cc.key ("mcpServers",
// "servers", or "mcp.servers" for VS Code settings), and Claude Code's
// per-project servers with their project. Comments and trailing commas (VS
// Code's JSONC) are accepted.
func readClientConfig(path string, cc clientConfig) ([]*candidate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	std, err := hujson.Standardize(raw) // VS Code's JSONC: comments and trailing commas
	if err == nil {
		err = json.Unmarshal(std, &doc)
	}
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	var out []*candidate
	collect := func(m any, project string) {
		servers, _ := m.(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(servers)) {
			if e, ok := servers[name].(map[string]any); ok {
				out = append(out, &candidate{client: cc.client, path: path, name: name, project: project, entry: normalizeEntry(e)})
			}
		}
	}
	node := any(doc)
	for _, part := range strings.Split(cc.key, ".") {
		obj, _ := node.(map[string]any)
		node = obj[part]
	}
	collect(node, "")
	if projects, ok := doc["projects"].(map[string]any); ok { // Claude Code
		for _, p := range slices.Sorted(maps.Keys(projects)) {
			if proj, ok := projects[p].(map[string]any); ok {
				collect(proj["mcpServers"], p)
			}
		}
	}
	return out, nil
}

// normalizeEntry keeps the fields codebridge reads, in its format.
func normalizeEntry(e map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"type", "command", "args", "env", "cwd", "url", "headers", "description", "disabled"} {
		if v, ok := e[k]; ok {
			out[k] = v
		}
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
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

// previewServers is servers as the preview prints them: an env or header
// value that is a reference (${NAME}) is shown as it will be written, any
// other value as [masked], and a URL's password and query values masked,
// so that no secret value reaches the terminal. The entries themselves are
// not changed.
func previewServers(servers map[string]any) map[string]any {
	out := make(map[string]any, len(servers))
	for name, v := range servers {
		e, ok := v.(map[string]any)
		if !ok {
			out[name] = v
			continue
		}
		shown := maps.Clone(e)
		for _, k := range []string{"env", "headers"} {
			if m, ok := e[k].(map[string]any); ok {
				shown[k] = maskValues(m)
			}
		}
		if u, ok := e["url"].(string); ok {
			shown["url"] = maskURL(u)
		}
		out[name] = shown
	}
	return out
}

// maskValues returns m with every value that is not wholly a variable
// reference replaced by [masked].
func maskValues(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		s, _ := v.(string)
		if loc := clientVar.FindStringIndex(s); loc != nil && loc[0] == 0 && loc[1] == len(s) {
			out[k] = s
			continue
		}
		out[k] = masked
	}
	return out
}
