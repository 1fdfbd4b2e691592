package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cli runs the codebridge binary with HOME set to homeDir and returns its
// output and exit code.
func cli(t *testing.T, homeDir, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(testEnv(homeDir), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running codebridge %v: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func TestInspectorCLI(t *testing.T) {
	needEnv(t)
	inspector := filepath.Join(repoRoot, "testdata/npm/node_modules/.bin/mcp-inspector")
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, inspector, append([]string{"--cli", binary}, args...)...)
		cmd.Env = testEnv(h)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	mustContain(t, run("--method", "tools/list"), `"name": "run_python"`)
	got := run("--method", "tools/call", "--tool-name", "run_python", "--tool-arg", `code=print(await mcp_stub.add(a=40, b=2))`)
	mustContain(t, got, `"text": "42\n"`)
}

func TestDoctor(t *testing.T) {
	needEnv(t)
	good := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	broken := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	must(t, os.WriteFile(filepath.Join(broken, "MCPs", "bad.json"), []byte(`{"mcpServers": {"x": {"command": 5}}}`), 0o644))
	dead := home(t, map[string]map[string]server{"s.json": {
		"stub":   stub(),
		"broken": {Command: "python3", Args: []string{"-c", "import sys; print('no API key set', file=sys.stderr); sys.exit(1)"}},
	}})
	cases := []struct {
		name  string
		home  string
		env   []string
		code  int
		wants []string
	}{
		// Limits are "ok" where the engine enforces them and "warn" where it
		// cannot (rootless on cgroup v1); either way the verdict is ready.
		{"healthy", good, nil, 0, []string{"ok    engine", "ok    image", "ok    sandbox", "  memory     limit", "  pids       limit", "stub: starts, 10 tools", "verdict: codebridge is ready"}},
		{"broken config", broken, nil, 1, []string{"FAIL  config", "bad.json", `"x"`, "command", "verdict: 1 problem(s)"}},
		{"upstream will not start", dead, nil, 1, []string{"FAIL  server", `broken`, "no API key set", "ok    server     stub: starts"}},
		{"no engine", good, []string{"CODEBRIDGE_ENGINE=docker", "DOCKER_HOST=unix:///nonexistent/docker.sock"}, 1,
			[]string{"FAIL  engine", "/nonexistent/docker.sock", "fix: install Podman"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := cli(t, c.home, "", c.env, "doctor")
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.code, out, errOut)
			}
			mustContain(t, out, c.wants...)
			if strings.Contains(out, "or `codebridge doctor`") {
				t.Errorf("doctor's advice points at doctor itself:\n%s", out)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		out, _, code := cli(t, dead, "", nil, "doctor", "--json")
		var report struct {
			OK     bool
			Checks []struct {
				Name, Detail, Fix string
				OK                bool
			}
		}
		if err := json.Unmarshal([]byte(out), &report); err != nil || code != 1 || report.OK {
			t.Fatalf("exit %d, err %v:\n%s", code, err, out)
		}
		for _, c := range report.Checks {
			if !c.OK && c.Fix == "" {
				t.Errorf("a failed check gives no fix: %+v", c)
			}
		}
	})
}

func TestExecAndListings(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	out, errOut, code := cli(t, h, "print(await mcp_stub.echo(message='from exec'))\n", nil, "exec", "-")
	if code != 0 || !strings.Contains(out, "from exec") {
		t.Fatalf("exec: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = cli(t, h, "import os; print('uid', os.getuid())\n", []string{"MCP_BRIDGE_CONTAINER_USER=1234:1234"}, "exec", "-")
	if code != 0 || !strings.Contains(out, "uid 1234") {
		t.Fatalf("the container user setting did not apply: exit %d\n%s", code, out)
	}
	out, _, code = cli(t, h, "raise RuntimeError('nope')\n", nil, "exec", "-")
	if code != 1 || !strings.Contains(out, "RuntimeError: nope") {
		t.Fatalf("failing exec: exit %d\n%s", code, out)
	}
	out, _, code = cli(t, h, "", nil, "servers")
	if code != 0 || !strings.Contains(out, "stub") || !strings.Contains(out, "s.json") {
		t.Fatalf("servers: exit %d\n%s", code, out)
	}
	out, _, code = cli(t, h, "", nil, "tools", "stub")
	if code != 0 || !strings.Contains(out, "stub (10 tools)") || !strings.Contains(out, "echo") {
		t.Fatalf("tools: exit %d\n%s", code, out)
	}
	out, _, code = cli(t, h, "", nil, "search", "add", "numbers")
	if code != 0 || !strings.HasPrefix(strings.Fields(out)[1], "stub.add") {
		t.Fatalf("search: exit %d\n%s", code, out)
	}
	// The command line's search is the sandbox's: a saved skill is found too.
	if out, errOut, code = cli(t, h, "def total_of_numbers(xs):\n    return sum(xs)\nruntime.save_skill('total_of_numbers', total_of_numbers, description='Add up a list of numbers')\n", nil, "exec", "-"); code != 0 {
		t.Fatalf("saving a skill: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = cli(t, h, "", nil, "search", "total", "of", "numbers")
	if code != 0 || !strings.Contains(out, "skills.total_of_numbers") {
		t.Fatalf("search does not find the saved skill: exit %d\n%s", code, out)
	}
	_, errOut, code = cli(t, h, "", nil, "tools", "nope")
	if code != 1 || !strings.Contains(errOut, `no MCP server "nope"`) {
		t.Fatalf("tools of an unknown server: exit %d\n%s", code, errOut)
	}
}

// A remote upstream over streamable HTTP, with a header taken from the
// environment, works like a stdio one from inside the sandbox.
func TestRemoteUpstream(t *testing.T) {
	needEnv(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	type greetArgs struct {
		Name string `json:"name"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greet someone."}, func(ctx context.Context, req *mcp.CallToolRequest, a greetArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + a.Name}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var sawAuth bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		sawAuth = true
		handler.ServeHTTP(w, r)
	}))
	// Cleanups run last-in first-out: the bridge (registered later) stops
	// before the server, whose Close waits for open streams.
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })

	h := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(h, "MCPs"), 0o755))
	cfg := `{"mcpServers": {"remote": {"url": "` + hs.URL + `", "headers": {"Authorization": "Bearer ${E2E_REMOTE_TOKEN}"}}}}`
	must(t, os.WriteFile(filepath.Join(h, "MCPs", "remote.json"), []byte(cfg), 0o644))
	b := startBridge(t, h, "E2E_REMOTE_TOKEN=s3cret")
	mustContain(t, b.ok(`print(await mcp_remote.greet(name="sandbox"))`), "hello, sandbox")
	if !sawAuth {
		t.Fatal("the remote server never saw the configured header")
	}
}
