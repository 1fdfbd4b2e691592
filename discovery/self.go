package discovery

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// selfFile describes the running executable, for spotting entries that would
// launch it. Its zero value matches nothing.
type selfFile struct {
	info fs.FileInfo
}

// newSelfFile resolves path (symlinks included). An empty or unusable path
// gives a selfFile that matches nothing.
func newSelfFile(path string) selfFile {
	if path == "" {
		return selfFile{}
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	info, err := os.Stat(path)
	if err != nil {
		return selfFile{}
	}
	return selfFile{info: info}
}

// launches reports whether running command, with the given working
// directory and PATH, would start the executable that s describes, and if so
// the file the command resolves to.
//
// The command is resolved the way exec.LookPath does: a name that contains a
// slash is a path (taken relative to cwd when it is relative and cwd is set);
// any other name is looked up in the directories of path.
func (s selfFile) launches(command, cwd, path string) (string, bool) {
	if s.info == nil || command == "" {
		return "", false
	}
	if strings.ContainsRune(command, '/') || strings.ContainsRune(command, filepath.Separator) {
		p := command
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		return p, s.sameAs(p)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "." // as in exec.LookPath: an empty element means the current directory
		}
		p := filepath.Join(dir, command)
		if !isExecutable(p) {
			continue
		}
		// The first match is what would run; it is codebridge or it is not.
		return p, s.sameAs(p)
	}
	return "", false
}

// sameAs reports whether p, symlinks resolved, is the file s describes.
func (s selfFile) sameAs(p string) bool {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	info, err := os.Stat(p)
	return err == nil && os.SameFile(info, s.info)
}

// isExecutable reports whether p is a file that exec.LookPath would accept.
func isExecutable(p string) bool {
	info, err := os.Stat(p)
	if err != nil || info.IsDir() {
		return false
	}
	if filepath.Separator == '\\' {
		return true // Windows has no execute bit; LookPath goes by extension there.
	}
	return info.Mode().Perm()&0o111 != 0
}

// pythonBridgeName is the Python code-execution bridge codebridge replaces
// (github.com/elusznik/mcp-server-code-execution-mode), in the spelling
// [launchName] brings its package, command, module and script names to.
const pythonBridgeName = "mcp-server-code-execution-mode"

// LaunchesPythonBridge reports whether an entry starts the Python bridge:
// its command or one of its arguments names its script
// (mcp_server_code_execution_mode.py), its module (python -m ...), its
// command or package (uvx mcp-server-code-execution-mode@latest), or its
// repository (uvx --from git+https://github.com/...). A user who switches
// to codebridge often keeps that entry; it would run a second bridge, with
// its own sandbox, inside this one.
func LaunchesPythonBridge(command string, args []string) bool {
	for _, a := range append([]string{command}, args...) {
		if launchName(a) == pythonBridgeName {
			return true
		}
	}
	return false
}

// launchName is the name a command-line word gives a program: its last
// path (or URL) element, without a version (@1.2, ==1.2), .git or .py,
// lower case, with underscores as dashes.
func launchName(word string) string {
	w := strings.TrimRight(strings.ReplaceAll(word, `\`, "/"), "/")
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		w = w[i+1:]
	}
	for _, sep := range []string{"==", "@", "#"} {
		if i := strings.Index(w, sep); i > 0 {
			w = w[:i]
		}
	}
	w = strings.TrimSuffix(strings.TrimSuffix(w, ".git"), ".py")
	return strings.ReplaceAll(strings.ToLower(w), "_", "-")
}
