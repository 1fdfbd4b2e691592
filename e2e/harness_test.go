package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/imagebuild"
	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	binary    string // the built codebridge
	repoRoot  string
	testImage string
	skipWhy   string // non-empty: the environment cannot run these tests
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Dir(filepath.Dir(file))
	if r := os.Getenv("CODEBRIDGE_REPO"); r != "" {
		repoRoot = r // a copy of the repository another user can read (rootless runs)
	}
	testImage = os.Getenv("CODEBRIDGE_TEST_IMAGE")
	if testImage == "" {
		testImage = imagebuild.DefaultTag
	}
	required := os.Getenv("CODEBRIDGE_E2E") == "1"

	dir, err := os.MkdirTemp("", "codebridge-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = os.Getenv("CODEBRIDGE_BIN") // prebuilt, for runs as a user without Go
	if binary == "" {
		binary = filepath.Join(dir, "codebridge")
		build := exec.Command("go", slices.Concat([]string{"build"}, buildTags(), []string{"-o", binary, "./cmd/codebridge"})...)
		build.Dir = repoRoot
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building codebridge:", err)
			return 1
		}
	}

	if err := errors.Join(checkBinaryEngine(binary), kubeSetup()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		if required {
			return 1
		}
		skipWhy = err.Error()
	}
	if skipWhy == "" {
		skipWhy = checkEnvironment()
	}
	if skipWhy != "" && required {
		fmt.Fprintf(os.Stderr, "e2e: CODEBRIDGE_E2E=1 but the environment cannot run the end-to-end tests: %s\n", skipWhy)
		return 1
	}
	return m.Run()
}

// checkEnvironment returns why the tests cannot run here, or "".
func checkEnvironment() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng, err := sandbox.Connect(ctx, engineOptions())
	if err != nil {
		return err.Error()
	}
	defer eng.Close()
	ok, err := eng.HasImage(ctx, testImage)
	if err != nil {
		return err.Error()
	}
	if !ok {
		return fmt.Sprintf("image %s is missing on %s: build it with `make image` (codebridge image build)", testImage, eng.Name())
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "testdata/npm/node_modules/.bin/mcp-server-everything")); err != nil {
		return "the npm reference servers are not installed: run `npm ci --prefix testdata/npm`"
	}
	return ""
}

// needTool skips a test that needs a program the machine lacks, or fails
// it when the end-to-end tests are required (CODEBRIDGE_E2E=1): CI must
// install it.
func needTool(t *testing.T, program, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(program); err == nil {
		return
	}
	if os.Getenv("CODEBRIDGE_E2E") == "1" {
		t.Fatalf("%s is not installed (Debian package %s), and CODEBRIDGE_E2E=1 requires this test", program, pkg)
	}
	t.Skipf("%s is not installed (Debian package %s)", program, pkg)
}

// unprivilegedSkip skips a test that an unprivileged run cannot do
// (network namespaces need root; the copy of testdata it runs from has no
// Makefile) only where CI says this run is one (CODEBRIDGE_E2E_UNPRIVILEGED=1,
// its rootless stage); anywhere else CODEBRIDGE_E2E=1 makes it a failure.
func unprivilegedSkip(t *testing.T, why string) {
	t.Helper()
	switch {
	case os.Getenv("CODEBRIDGE_E2E_UNPRIVILEGED") == "1":
		t.Skip(why + " (the unprivileged stage; the rootful stage runs this test)")
	case os.Getenv("CODEBRIDGE_E2E") == "1":
		t.Fatal(why + ", and CODEBRIDGE_E2E=1 requires this test (set CODEBRIDGE_E2E_UNPRIVILEGED=1 for an unprivileged run)")
	}
	t.Skip(why)
}

func needEnv(t *testing.T) {
	t.Helper()
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
}

// server is one entry of an mcpServers config.
type server struct {
	Command     string            `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Description string            `json:"description,omitempty"`
	Sampling    bool              `json:"sampling,omitempty"`
}

// stub is the stdlib Python server in testdata, with extra arguments.
func stub(args ...string) server {
	return server{
		Command:     "python3",
		Args:        append([]string{filepath.Join(repoRoot, "testdata/servers/stub_server.py")}, args...),
		Description: "a small test server",
	}
}

// eventStub is the stub server writing its events (sleep-started, ...) to
// a file, whose path it returns for waitForLine.
func eventStub(t *testing.T) (server, string) {
	events := filepath.Join(t.TempDir(), "events")
	s := stub()
	s.Env = map[string]string{"STUB_EVENTS": events}
	return s, events
}

// npmServer is one of the npm reference servers installed in testdata/npm.
func npmServer(bin string, args ...string) server {
	return server{
		Command: filepath.Join(repoRoot, "testdata/npm/node_modules/.bin", bin),
		Args:    args,
	}
}

// home makes a HOME with ~/MCPs/NAME.json files holding the given configs.
func home(t *testing.T, files map[string]map[string]server) string {
	t.Helper()
	h := t.TempDir()
	if err := os.MkdirAll(filepath.Join(h, "MCPs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, servers := range files {
		b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h, "MCPs", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// testEnv is the environment of a codebridge under test: HOME is a temp
// dir holding its MCPs configs, while rootless Podman keeps finding its
// image storage and configuration under the real home.
func testEnv(homeDir string) []string {
	env := append(os.Environ(), "HOME="+homeDir, "CODEBRIDGE_IMAGE="+testImage)
	// Tests share one engine: each keeps its files to itself unless it
	// names a workspace (the default volume is one per project).
	env = append(env, "CODEBRIDGE_WORKSPACE=ephemeral")
	if real, err := os.UserHomeDir(); err == nil {
		if os.Getenv("XDG_DATA_HOME") == "" {
			env = append(env, "XDG_DATA_HOME="+filepath.Join(real, ".local", "share"))
		}
		if os.Getenv("XDG_CONFIG_HOME") == "" {
			env = append(env, "XDG_CONFIG_HOME="+filepath.Join(real, ".config"))
		}
	}
	return env
}

// bridge is a running codebridge driven by a go-sdk MCP client.
type bridge struct {
	t      *testing.T
	cmd    *exec.Cmd
	cs     *mcp.ClientSession
	stderr *syncBuffer
	pid    int
	closed bool
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startBridge starts codebridge with HOME set to homeDir and connects an
// MCP client to it. The bridge is stopped at the end of the test.
func startBridge(t *testing.T, homeDir string, env ...string) *bridge {
	t.Helper()
	return startBridgeClient(t, homeDir, mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil), nil, env...)
}

// startBridgeClient is startBridge with the given client and session
// options (handlers for sampling, elicitation, roots, logs).
func startBridgeClient(t *testing.T, homeDir string, client *mcp.Client, opts *mcp.ClientSessionOptions, env ...string) *bridge {
	t.Helper()
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(testEnv(homeDir), "CODEBRIDGE_LOG_LEVEL=debug")
	cmd.Env = append(cmd.Env, env...)
	return connectCmd(t, cmd, client, opts)
}

// connectCmd starts a prepared `codebridge serve` command (its directory,
// environment) and connects client to it, as startBridgeClient does.
func connectCmd(t *testing.T, cmd *exec.Cmd, client *mcp.Client, opts *mcp.ClientSessionOptions) *bridge {
	t.Helper()
	b := &bridge{t: t, cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = b.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitWithin}, opts)
	if err != nil {
		t.Fatalf("connecting to codebridge: %v\nstderr:\n%s", err, b.stderr)
	}
	b.cs, b.pid = cs, cmd.Process.Pid
	t.Cleanup(func() {
		b.close()
		if t.Failed() {
			t.Logf("codebridge stderr:\n%s", b.stderr)
		}
	})
	return b
}

// exitWithin bounds how long a test waits for a bridge to exit once told
// to: the bridge's own bound on removing a container (its sandboxes go
// at once, together), and a margin for a loaded machine.
const exitWithin = sandbox.RemoveTimeout + 30*time.Second

// close ends the MCP session (stdin EOF) and waits for the bridge to exit.
func (b *bridge) close() {
	if b.closed {
		return
	}
	b.closed = true
	_ = b.cs.Close()
}

// kill sends sig to the bridge and waits for it to exit.
func (b *bridge) kill(sig syscall.Signal) {
	b.t.Helper()
	if err := b.cmd.Process.Signal(sig); err != nil {
		b.t.Fatalf("signalling the bridge: %v", err)
	}
	b.closed = true
	_ = b.cs.Close() // waits for the process
}

type runResult struct {
	text    string
	isError bool
	images  []*mcp.ImageContent
}

// run calls run_python and returns its text.
func (b *bridge) run(code string, extra ...any) runResult {
	b.t.Helper()
	r, err := runPython(b.cs, code, extra...)
	if err != nil {
		b.t.Fatalf("run_python: %v\nstderr:\n%s", err, b.stderr)
	}
	return r
}

// runPython calls run_python on cs with code and extra arguments (name,
// value pairs) and returns what it answered.
func runPython(cs *mcp.ClientSession, code string, extra ...any) (runResult, error) {
	args := map[string]any{"code": code}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		return runResult{}, err
	}
	r := runResult{isError: res.IsError}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			r.text += c.Text
		case *mcp.ImageContent:
			r.images = append(r.images, c)
		}
	}
	return r, nil
}

// ok runs code, fails the test unless it succeeded, and returns the text.
func (b *bridge) ok(code string, extra ...any) string {
	b.t.Helper()
	r := b.run(code, extra...)
	if r.isError {
		b.t.Fatalf("run_python failed:\ncode:\n%s\nresult:\n%s", code, r.text)
	}
	return r.text
}

// containersOf lists the containers labelled with the bridge pid.
func containersOf(t *testing.T, pid int) []sandbox.ContainerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eng, err := sandbox.Connect(ctx, engineOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	all, err := eng.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []sandbox.ContainerInfo
	for _, c := range all {
		if c.Labels[sandbox.LabelPID] == fmt.Sprint(pid) {
			mine = append(mine, c)
		}
	}
	return mine
}

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Fatalf("output does not contain %q:\n%s", w, got)
		}
	}
}

// must fails the test at once when a step of its set-up returned an error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
