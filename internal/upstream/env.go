package upstream

import (
	"runtime"
	"slices"
	"strings"
)

// inheritedEnv names the variables of the bridge's own environment that a
// stdio upstream inherits. The list follows the official MCP SDKs (Python
// and TypeScript: the variables sudo keeps), plus the locale (LANG,
// LANGUAGE and every LC_*), the time zone and the temporary directory.
// Everything else, the MCP client's tokens included, stays with the
// bridge: a server that needs more names it in its config's "env", such as
// "GOPATH": "${GOPATH}".
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "TZ", "LANG", "LANGUAGE"}

// inheritedEnvWindows is inheritedEnv on Windows.
var inheritedEnvWindows = []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
	"PROCESSOR_ARCHITECTURE", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP",
	"USERNAME", "USERPROFILE"}

// upstreamEnv returns the environment of a stdio upstream: the inherited
// part of environ (KEY=value entries), then the configured variables,
// which win.
func upstreamEnv(environ []string, configured map[string]string) []string {
	names := inheritedEnv
	if runtime.GOOS == "windows" {
		names = inheritedEnvWindows
	}
	var env []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.HasPrefix(v, "()") { // an exported shell function, not data
			continue
		}
		if runtime.GOOS == "windows" {
			k = strings.ToUpper(k)
		}
		if slices.Contains(names, k) || strings.HasPrefix(k, "LC_") {
			env = append(env, kv)
		}
	}
	for _, k := range sortedKeys(configured) {
		env = append(env, k+"="+configured[k]) // a later entry wins in exec.Cmd.Env
	}
	return env
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
