package e2e

import (
	"strings"
	"testing"
)

// TestUpstreamEnvironmentIsMinimal: an upstream inherits only a minimal
// set of the bridge's variables (PATH, HOME, the locale...) plus the ones
// its config names. A secret in the bridge's environment does not reach
// the everything server, whose get-env tool would hand it to the sandbox;
// a configured variable, and one passed on with ${VAR}, do.
func TestUpstreamEnvironmentIsMinimal(t *testing.T) {
	needEnv(t)
	s := npmServer("mcp-server-everything")
	s.Env = map[string]string{"CONFIGURED_SETTING": "from-the-config", "PASSED_ON": "${CODEBRIDGE_E2E_PASSED}"}
	b := startBridge(t, home(t, map[string]map[string]server{"e.json": {"everything": s}}),
		"CODEBRIDGE_E2E_SECRET=hunter2-bridge-secret", "CODEBRIDGE_E2E_PASSED=passed-on-value")
	got := b.ok(`import json
env = json.loads(await mcp_everything.get_env())
print(sorted(env))
print(env.get("CONFIGURED_SETTING"), env.get("PASSED_ON"), "PATH" in env, "HOME" in env)`)
	// The values arrive, and (issue 14) reach the model only as the names
	// of the secrets they are.
	mustContain(t, got, "<secret:everything.env.CONFIGURED_SETTING> <secret:everything.env.PASSED_ON> True True")
	for _, leaked := range []string{"hunter2-bridge-secret", "CODEBRIDGE_E2E_SECRET", "CODEBRIDGE_E2E_PASSED", "CODEBRIDGE_IMAGE"} {
		if strings.Contains(got, leaked) {
			t.Fatalf("the upstream saw the bridge's %q:\n%s", leaked, got)
		}
	}
}
