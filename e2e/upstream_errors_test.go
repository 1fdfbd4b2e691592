package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUpstreamErrorsKeepStderrOnTheHost: a server that logs its token on a
// failed login, at start or during a call, fails in the sandbox with an
// error that names the server and what failed, but neither its stderr
// (the token), nor its command, nor the config file's path: those go to
// the bridge's log only.
func TestUpstreamErrorsKeepStderrOnTheHost(t *testing.T) {
	needEnv(t)
	const token = "tok-e2e-7f3a9c"
	leaky := func(args ...string) server {
		return server{
			Command: "python3",
			Args:    append([]string{filepath.Join(repoRoot, "testdata/servers/leaky_server.py")}, args...),
			Env:     map[string]string{"LEAKY_TOKEN": token},
		}
	}
	homeDir := home(t, map[string]map[string]server{"leaky.json": {
		"atstart": leaky("--fail-at-start"),
		"incall":  leaky(),
	}})
	b := startBridge(t, homeDir)
	got := b.ok(`for server in ("atstart", "incall"):
    try:
        await call_tool(server, "login", {})
    except Exception as e:
        print(type(e).__name__, e)`)
	mustContain(t, got, `server "atstart" could not start`, `server "incall" exited while calling tool "login"`)
	for _, secret := range []string{token, "leaky_server.py", "python3", filepath.Join(homeDir, "MCPs"), "login failed"} {
		if strings.Contains(got, secret) {
			t.Fatalf("the sandbox saw %q:\n%s", secret, got)
		}
	}
	// run_python's own servers argument answers the model the same way.
	r := b.run("print(1)", "servers", []string{"atstart"})
	if !r.isError || !strings.Contains(r.text, `server "atstart"`) || strings.Contains(r.text, token) || strings.Contains(r.text, "leaky_server.py") {
		t.Fatalf("starting a failing server through `servers`: %+v", r)
	}
	// The host log has what the sandbox did not get.
	mustContain(t, b.stderr.String(), "login failed: token "+token, "leaky_server.py", filepath.Join(homeDir, "MCPs", "leaky.json"))
}
