package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/codebridge/codebridge/internal/gate"
)

// Server is one upstream MCP server, as defined by one entry of an
// "mcpServers" object, with its variables expanded. A local server has a
// Command and no URL; a remote server has a URL and no Command.
type Server struct {
	// Name is the entry's key in "mcpServers", exactly as written.
	Name string
	// Command is the program that starts a local (stdio) server. It is
	// empty for a remote server.
	Command string
	// Args are the arguments passed to Command, with variables expanded.
	Args []string
	// Env holds the environment variables set for Command, with variables
	// expanded in the values.
	Env map[string]string
	// Cwd is the directory Command runs in, with variables and a leading ~
	// expanded. Empty means the directory codebridge runs in.
	Cwd string
	// Description says what the server is for, as written.
	Description string
	// URL is the endpoint of a remote (streamable HTTP) server, with
	// variables expanded. It is empty for a local server.
	URL string
	// Headers are HTTP headers sent to a remote server, with variables
	// expanded in the values.
	Headers map[string]string
	// Timeout is the time limit of one tool call to this server, from the
	// entry's "timeout" (in seconds). Zero means the bridge's default.
	Timeout time.Duration
	// Source is the path of the file the server was defined in.
	Source string
	// Sampling, from the entry's "sampling", lets the server ask the MCP
	// client's model (sampling/createMessage); off by default.
	Sampling bool
	// Policy are the entry's rules for the gate: its "tools", "resources"
	// and "prompts" fields, each with allow, deny and ask lists.
	Policy gate.Rules
	// PerSession, from the entry's "per_session", asks for one client of
	// this server per MCP session (when codebridge serves several, over
	// HTTP) rather than one shared by all: for per-user credentials.
	PerSession bool
	// KeepTokens, from the entry's "redact": {"restore": false}, sends this
	// server the sandbox's tokens (<email_1>) as they are, never the real
	// values they stand for.
	KeepTokens bool
}

// Problem describes a file or an entry that Load could not use, or a second
// definition of a name that it ignored. Its Error method gives a message of
// the form
//
//	discovery: FILE: server "NAME": field "FIELD": what is wrong; what to do
//
// where the server and field parts are left out when they do not apply.
type Problem struct {
	// File is the path of the file (or directory) at fault.
	File string
	// Server is the name of the entry at fault, or empty if the problem
	// concerns the whole file or the entry has an empty name.
	Server string
	// Field names the field at fault, such as "command", "args[2]" or
	// "env.TOKEN", or is empty if the problem concerns the whole entry.
	Field string
	// Err says what is wrong and what to do about it. It matches
	// ErrDuplicate, ErrSelfReference and ErrUnsetVariable with errors.Is
	// when it is one of those.
	Err error
}

// Error returns the problem as one line that names the file, server and
// field at fault.
func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString("discovery: ")
	if p.File != "" {
		b.WriteString(p.File)
		b.WriteString(": ")
	}
	if p.Server != "" {
		fmt.Fprintf(&b, "server %q: ", p.Server)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "field %q: ", p.Field)
	}
	if p.Err != nil {
		b.WriteString(p.Err.Error())
	} else {
		b.WriteString("unknown problem")
	}
	return b.String()
}

// Unwrap returns p.Err, so that errors.Is and errors.As see through a Problem.
func (p Problem) Unwrap() error { return p.Err }

// These errors classify some problems; a Problem's Err wraps one of them
// when it applies. Test for them with errors.Is.
var (
	// ErrDuplicate marks a server name defined a second time; the first
	// definition is loaded and the second one is ignored.
	ErrDuplicate = errors.New("duplicate server name")
	// ErrSelfReference marks an entry whose command would launch the
	// running codebridge executable itself, or the Python code-execution
	// bridge codebridge replaces; the entry is skipped.
	ErrSelfReference = errors.New("entry would launch codebridge itself")
	// ErrUnsetVariable marks a ${VAR} reference, without a default, to an
	// environment variable that is not set; the entry is skipped.
	ErrUnsetVariable = errors.New("environment variable not set")
	// ErrRedactPatterns marks a file's "redact" patterns that cannot be
	// used: the data they were to hide would reach the model.
	ErrRedactPatterns = errors.New("redaction patterns unusable")
)

// kindError is a message of its own that still matches a sentinel error.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Options says where Load looks for server definitions. The zero value reads
// $HOME/MCPs/*.json and expands variables from the process environment.
type Options struct {
	// Home is the home directory: Load reads Home/MCPs/*.json and expands a
	// leading ~ in cwd to it. Empty means os.UserHomeDir().
	Home string
	// Files are extra definition files (codebridge's --config flags), read
	// after the MCPs directory, in the order given. A file that is also in
	// the MCPs directory is read only once.
	Files []string
	// Self is the path of the running executable, as os.Executable returns
	// it. Entries whose command resolves to the same file, or that launch
	// the Python code-execution bridge, are skipped with a Problem. Empty
	// disables the check.
	Self string
	// LookupEnv looks up environment variables for ${VAR} expansion, and
	// PATH for resolving commands when an entry does not set its own. Nil
	// means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// ReadFile reads a definition file. Nil means os.ReadFile.
	ReadFile func(name string) ([]byte, error)
}

// Config is everything the definition files hold, each file read and
// parsed once: the servers, the custom redaction patterns, the package
// settings, and every problem found on the way, in one list.
type Config struct {
	// Servers are the servers loaded, as [Load] returns them.
	Servers []Server
	// Patterns are the files' custom redaction patterns: each file's
	// top-level "redact" object maps a name to a regular expression
	// ({"employee_id": "EMP-[0-9]{6}"}); the first definition of a name
	// wins. Matches are shown to the model as <employee_id_1>.
	Patterns map[string]string
	// Packages are the files' package settings ("packages",
	// "allow_packages", "package_index"), read in the order Load reads
	// the files.
	Packages Packages
	// Problems are the problems of every kind, file by file.
	Problems []Problem
}

// Read reads the definition files once, in the order [Load] describes,
// and returns everything they hold. Every problem is reported with the
// path of its file, and whatever else can be used is still loaded: an
// unreadable or invalid file is skipped whole, an invalid entry alone, an
// invalid top-level setting ("redact", "packages", ...) alone. A file's
// "redact" patterns that cannot be used are marked [ErrRedactPatterns],
// so that the commands that run code can refuse to start.
func Read(opts Options) Config {
	l := &loader{
		home:     opts.Home,
		lookup:   opts.LookupEnv,
		readFile: opts.ReadFile,
		self:     newSelfFile(opts.Self),
		seen:     map[string]string{},
		patterns: map[string]string{},
	}
	if l.home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			l.home = h
		}
	}
	if l.lookup == nil {
		l.lookup = os.LookupEnv
	}
	if l.readFile == nil {
		l.readFile = os.ReadFile
	}
	if l.home != "" {
		for _, f := range l.listDir(filepath.Join(l.home, "MCPs")) {
			l.loadFile(f)
		}
	}
	for _, f := range opts.Files {
		l.loadFile(f)
	}
	return Config{Servers: l.servers, Patterns: l.patterns, Packages: l.packages, Problems: l.problems}
}

// Load reads the server definitions in opts.Home/MCPs/*.json, in sorted file
// name order, and then those in opts.Files, in order. It returns the servers
// it loaded, file by file and in the order the entries are written within a
// file, and a Problem for everything it had to skip.
//
// Names starting with a dot and names not ending in .json are ignored in the
// MCPs directory, and a missing MCPs directory is not a problem. An entry
// with "disabled": true is skipped silently and does not claim its name. The
// first loaded definition of a name wins; a later one is reported as a
// duplicate. An unreadable or invalid file, or an invalid entry, is reported
// and skipped while the rest still load.
func Load(opts Options) (servers []Server, problems []Problem) {
	c := Read(opts)
	return c.Servers, c.Problems
}

// loader holds the state of one Read call.
type loader struct {
	home     string
	lookup   func(string) (string, bool)
	readFile func(string) ([]byte, error)
	self     selfFile
	seen     map[string]string // loaded server name -> its file
	read     []fs.FileInfo     // files read so far, to read each only once
	servers  []Server
	patterns map[string]string // custom redaction patterns; the first definition of a name wins
	packages Packages
	problems []Problem
}

func (l *loader) problem(file, server, field string, err error) {
	l.problems = append(l.problems, Problem{File: file, Server: server, Field: field, Err: err})
}

// listDir returns the *.json files of dir in sorted order.
func (l *loader) listDir(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if info, serr := os.Stat(dir); serr == nil && !info.IsDir() {
			l.problem(dir, "", "", errors.New("is not a directory; make it a directory of .json files, or move it away"))
			return nil
		}
		l.problem(dir, "", "", fmt.Errorf("cannot list the directory: %w; check its permissions", unwrapPath(err)))
		// os.ReadDir returns what it could read before the error; use it.
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			continue
		}
		files = append(files, p)
	}
	return files
}

// utf8BOM is the byte order mark that some Windows editors put in front of
// UTF-8 files; JSON does not allow it, so it is dropped.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// loadFile reads one definition file.
func (l *loader) loadFile(path string) {
	if info, err := os.Stat(path); err == nil {
		for _, prev := range l.read {
			if os.SameFile(prev, info) {
				return
			}
		}
		l.read = append(l.read, info)
	}
	data, err := l.readFile(path)
	if err != nil {
		l.problem(path, "", "", fmt.Errorf("cannot read the file: %w; check that it exists and is readable", unwrapPath(err)))
		return
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		l.problem(path, "", "", errors.New(`the file is empty; write {"mcpServers": {...}} in it, or remove it`))
		return
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			l.problem(path, "", "", fmt.Errorf("invalid JSON at line %d, column %d: %w; fix the syntax (JSON allows no comments and no trailing commas)", line, col, se))
			return
		}
		l.problem(path, "", "", fmt.Errorf(`the file holds %s, not a JSON object; write {"mcpServers": {...}}`, kindOf(data)))
		return
	}
	l.patternsOf(path, top)
	l.packagesOf(path, top)
	raw, ok := top["mcpServers"]
	if !ok {
		if _, vs := top["servers"]; vs {
			l.problem(path, "", "mcpServers", errors.New(`is missing, and "servers" is not read; rename "servers" to "mcpServers"`))
		} else {
			l.problem(path, "", "mcpServers", errors.New(`is missing; put the servers in an object under "mcpServers", such as {"mcpServers": {"name": {"command": "..."}}}`))
		}
		return
	}
	if k := kindOf(raw); k != "an object" {
		l.problem(path, "", "mcpServers", fmt.Errorf(`must be an object that maps server names to definitions, not %s; write {"mcpServers": {"name": {"command": "..."}}}`, k))
		return
	}
	// A file-level "description" is the description of its servers that
	// have none of their own.
	var fileDesc string
	if d, ok := top["description"]; ok && kindOf(d) != "null" {
		if json.Unmarshal(d, &fileDesc) != nil {
			l.problem(path, "", "description", fmt.Errorf("must be a string, not %s; write it in double quotes", kindOf(d)))
			fileDesc = ""
		}
	}
	// Decode token by token: a Go map would lose the order of the entries.
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the opening brace, checked above
		l.problem(path, "", "mcpServers", fmt.Errorf("cannot decode: %w", err))
		return
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			l.problem(path, "", "mcpServers", fmt.Errorf("cannot decode: %w", err))
			return
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			l.problem(path, name, "", fmt.Errorf("cannot decode: %w", err))
			return
		}
		l.loadEntry(path, name, v, fileDesc)
	}
}

// server reads the entry's fields (each field's problems are recorded on
// e) and its "type".
func (e *entry) server() (Server, string) {
	s := Server{Name: e.name, Source: e.file}
	s.Command = e.str("command")
	s.Args = e.strs("args")
	s.Env = e.strMap("env")
	s.Cwd = e.str("cwd")
	s.Description = e.str("description")
	s.URL = e.str("url")
	s.Headers = e.strMap("headers")
	s.Timeout = e.seconds("timeout")
	s.Sampling = e.boolean("sampling")
	s.Policy = e.policy()
	s.PerSession = e.boolean("per_session")
	s.KeepTokens = e.keepTokens()
	return s, e.str("type")
}

// loadEntry checks one entry of "mcpServers" and adds it to the servers, or
// reports why it cannot. fileDesc is the file's description, for an entry
// without one.
func (l *loader) loadEntry(file, name string, raw json.RawMessage, fileDesc string) {
	if k := kindOf(raw); k != "an object" {
		l.problem(file, name, "", fmt.Errorf(`must be an object, not %s; write {"command": "...", "args": [...]} or {"url": "https://..."}`, k))
		return
	}
	e := &entry{file: file, name: name}
	if err := json.Unmarshal(raw, &e.fields); err != nil {
		l.problem(file, name, "", fmt.Errorf("cannot decode: %w", err))
		return
	}
	if disabled := e.boolean("disabled"); len(e.problems) > 0 || disabled {
		l.problems = append(l.problems, e.problems...)
		return
	}
	if name == "" {
		l.problem(file, "", "", errors.New(`a server has an empty name; give it a name, such as "files": {...}`))
		return
	}
	if first, ok := l.seen[name]; ok {
		msg := fmt.Sprintf("is also defined in %s, which is used; this definition is ignored; rename or remove one of them", first)
		if first == file {
			msg = "is defined twice in this file; the first definition is used and this one is ignored; rename or remove one of them"
		}
		l.problem(file, name, "", &kindError{msg, ErrDuplicate})
		return
	}

	s, typ := e.server()
	if s.Description == "" {
		s.Description = fileDesc
	}
	if len(e.problems) > 0 {
		l.problems = append(l.problems, e.problems...)
		return
	}

	e.checkShape(s, typ)
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			e.fail("env", fmt.Errorf("has the invalid variable name %q; use a name without '=', such as \"API_KEY\"", k))
		}
	}
	if len(e.problems) > 0 {
		l.problems = append(l.problems, e.problems...)
		return
	}

	l.expandAll(e, &s)
	if len(e.problems) > 0 {
		l.problems = append(l.problems, e.problems...)
		return
	}

	if err := l.selfLaunch(s); err != nil {
		l.problem(file, name, "command", err)
		return
	}

	l.seen[name] = file
	l.servers = append(l.servers, s)
}

// expandAll expands ${VAR} in the fields that take it, and checks the URL
// that results; problems are recorded on e.
func (l *loader) expandAll(e *entry, s *Server) {
	for i := range s.Args {
		s.Args[i] = e.expand(fmt.Sprintf("args[%d]", i), s.Args[i], l.lookup)
	}
	for _, k := range sortedKeys(s.Env) {
		s.Env[k] = e.expand("env."+k, s.Env[k], l.lookup)
	}
	for _, k := range sortedKeys(s.Headers) {
		s.Headers[k] = e.expand("headers."+k, s.Headers[k], l.lookup)
	}
	rawURL := s.URL
	s.URL = e.expand("url", s.URL, l.lookup)
	s.Cwd = e.expandCwd(s.Cwd, l.home, l.lookup)
	if s.URL != "" && len(e.problems) == 0 {
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// Quote the URL as written: the expanded one may hold a secret.
			e.fail("url", fmt.Errorf("%q is not an http or https URL; give the server's full streamable HTTP endpoint, such as \"https://example.com/mcp\"", rawURL))
		}
	}
}

// selfLaunch is an error when s would start this codebridge.
func (l *loader) selfLaunch(s Server) error {
	path, ok := s.Env["PATH"]
	if !ok {
		path, _ = l.lookup("PATH")
	}
	if l.self.info != nil && LaunchesPythonBridge(s.Command, s.Args) {
		return &kindError{"launches the Python code-execution bridge (" + pythonBridgeName + "), which codebridge replaces: it would run a second bridge inside this one; remove this entry, or set \"disabled\": true in it", ErrSelfReference}
	}
	resolved, ok := l.self.launches(s.Command, s.Cwd, path)
	if !ok {
		return nil
	}
	msg := fmt.Sprintf("%q is this codebridge (%s), so it would launch codebridge itself; remove this entry, or point it at another server", s.Command, resolved)
	if resolved == s.Command {
		msg = fmt.Sprintf("%q is this codebridge, so it would launch codebridge itself; remove this entry, or point it at another server", s.Command)
	}
	return &kindError{msg, ErrSelfReference}
}

// entry reads the fields of one entry and collects its problems.
type entry struct {
	file, name string
	fields     map[string]json.RawMessage
	problems   []Problem
}

func (e *entry) fail(field string, err error) {
	e.problems = append(e.problems, Problem{File: e.file, Server: e.name, Field: field, Err: err})
}

// get returns the raw value of a field, or false if it is absent or null.
func (e *entry) get(field string) (json.RawMessage, bool) {
	raw, ok := e.fields[field]
	if !ok || kindOf(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// str returns a string field, or "" if it is absent, null or not a string.
func (e *entry) str(field string) string {
	raw, ok := e.get(field)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		e.fail(field, fmt.Errorf("must be a string, not %s; write it in double quotes", kindOf(raw)))
	}
	return s
}

// seconds returns a positive number of seconds as a duration, or 0 if the
// field is absent, null or not a positive number.
func (e *entry) seconds(field string) time.Duration {
	raw, ok := e.get(field)
	if !ok {
		return 0
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f <= 0 {
		e.fail(field, fmt.Errorf("must be a positive number of seconds, not %s; write e.g. 300", string(raw)))
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// boolean returns a boolean field, or false if it is absent, null or not a
// boolean.
func (e *entry) boolean(field string) bool {
	raw, ok := e.get(field)
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		e.fail(field, fmt.Errorf("must be true or false, not %s; write true or false without quotes", kindOf(raw)))
	}
	return b
}

// strs returns an array-of-strings field, or nil if it is absent, null or
// not an array of strings.
func (e *entry) strs(field string) []string {
	raw, ok := e.get(field)
	if !ok {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		e.fail(field, fmt.Errorf(`must be an array of strings, not %s; write ["--flag", "value"]`, kindOf(raw)))
		return nil
	}
	out := make([]string, len(items))
	bad := false
	for i, item := range items {
		if json.Unmarshal(item, &out[i]) != nil || kindOf(item) == "null" {
			e.fail(fmt.Sprintf("%s[%d]", field, i), fmt.Errorf("must be a string, not %s; write it in double quotes", kindOf(item)))
			bad = true
		}
	}
	if bad {
		return nil
	}
	return out
}

// strMap returns an object-of-strings field, or nil if it is absent, null or
// not an object of strings.
func (e *entry) strMap(field string) map[string]string {
	raw, ok := e.get(field)
	if !ok {
		return nil
	}
	var items map[string]json.RawMessage
	if kindOf(raw) != "an object" || json.Unmarshal(raw, &items) != nil {
		e.fail(field, fmt.Errorf(`must be an object of strings, not %s; write {"NAME": "value"}`, kindOf(raw)))
		return nil
	}
	out := make(map[string]string, len(items))
	bad := false
	for _, k := range sortedKeys(items) {
		var v string
		if json.Unmarshal(items[k], &v) != nil || kindOf(items[k]) == "null" {
			e.fail(field+"."+k, fmt.Errorf("must be a string, not %s; write it in double quotes", kindOf(items[k])))
			bad = true
		}
		out[k] = v
	}
	if bad {
		return nil
	}
	return out
}

// checkShape checks that s is either a local or a remote server, and that
// its "type", if any, agrees.
func (e *entry) checkShape(s Server, typ string) {
	_, hasCmd := e.get("command")
	_, hasURL := e.get("url")
	switch {
	case hasCmd && s.Command == "":
		e.fail("command", errors.New(`is empty; give the program that starts the server, such as "npx"`))
		return
	case hasURL && s.URL == "":
		e.fail("url", errors.New(`is empty; give the server's streamable HTTP endpoint, such as "https://example.com/mcp"`))
		return
	case hasCmd && hasURL:
		e.fail("", errors.New(`has both "command" and "url"; keep "command" for a local server or "url" for a remote one`))
		return
	case !hasCmd && !hasURL:
		e.fail("", errors.New(`has neither "command" nor "url"; add "command" to start a local server, or "url" for a remote (streamable HTTP) one`))
		return
	}
	switch typ {
	case "":
	case "stdio":
		if hasURL {
			e.fail("type", errors.New(`is "stdio" but the entry has a "url"; use "http" for a remote server, or give a "command" instead`))
		}
	case "http", "streamable-http", "streamableHttp":
		if hasCmd {
			e.fail("type", fmt.Errorf(`is %q but the entry has a "command"; use "stdio" for a local server, or give a "url" instead`, typ))
		}
	case "sse":
		e.fail("type", errors.New(`SSE transport is not supported; use streamable HTTP`))
	default:
		e.fail("type", fmt.Errorf(`is the unknown transport %q; use "stdio" with "command" or "http" with "url", or leave "type" out`, typ))
	}
}

// expand expands the variables in the value of field, and reports unset
// ones.
func (e *entry) expand(field, value string, lookup func(string) (string, bool)) string {
	out, missing := expand(value, lookup)
	if len(missing) > 0 {
		e.fail(field, unsetError(missing))
	}
	return out
}

// expandCwd expands a leading ~ and the variables in cwd.
func (e *entry) expandCwd(cwd, home string, lookup func(string) (string, bool)) string {
	if cwd != "~" && !strings.HasPrefix(cwd, "~/") {
		return e.expand("cwd", cwd, lookup)
	}
	if home == "" {
		e.fail("cwd", errors.New("starts with ~ but the home directory is unknown; write an absolute path"))
		return cwd
	}
	return home + e.expand("cwd", cwd[1:], lookup)
}

func unsetError(missing []string) error {
	q := make([]string, len(missing))
	for i, m := range missing {
		q[i] = fmt.Sprintf("%q", m)
	}
	if len(missing) == 1 {
		return &kindError{fmt.Sprintf("environment variable %s is not set; set it before starting codebridge, or write ${%s:-default}", q[0], missing[0]), ErrUnsetVariable}
	}
	return &kindError{fmt.Sprintf("environment variables %s are not set; set them before starting codebridge, or give defaults with ${NAME:-default}", strings.Join(q, ", ")), ErrUnsetVariable}
}

// kindOf names the kind of JSON value raw holds, with an article, for
// messages: "an object", "an array", "a string", "a number", "a boolean" or
// "null".
func kindOf(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// position turns the byte offset after which a syntax error was found into
// a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	i := int(offset) - 1
	if i < 0 {
		i = 0
	}
	if i > len(data) {
		i = len(data)
	}
	before := data[:i]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = i - bytes.LastIndexByte(before, '\n')
	return line, col
}

// unwrapPath drops the path from an *fs.PathError, which Problem already
// names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
