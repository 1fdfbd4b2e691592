package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codebridge/codebridge/internal/imagebuild"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// noImageSetting unsets CODEBRIDGE_IMAGE, as for a user who set nothing.
const noImageSetting = "CODEBRIDGE_IMAGE="

// needBuiltImage skips unless the image under test is the one
// `codebridge image build` makes (the one codebridge picks by itself).
func needBuiltImage(t *testing.T) {
	t.Helper()
	needEnv(t)
	if testImage != imagebuild.DefaultTag {
		t.Skipf("the image under test is %s, not the built default %s", testImage, imagebuild.DefaultTag)
	}
}

// After `codebridge image build`, doctor and exec use the built image with
// no variable set.
func TestBuiltImageIsTheDefault(t *testing.T) {
	needBuiltImage(t)
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	out, errOut, code := cli(t, h, "", []string{noImageSetting}, "doctor")
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, out, "ok    image      "+imagebuild.DefaultTag+" is present", "verdict: codebridge is ready")
	out, errOut, code = cli(t, h, "import sys; print(sys.version_info[:2])\n", []string{noImageSetting}, "exec", "-")
	if code != 0 || !strings.Contains(out, "(3, 11)") {
		t.Fatalf("exec: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A missing configured image: doctor's fix line is a command that builds
// exactly that image.
func TestDoctorMissingImageFix(t *testing.T) {
	needEnv(t)
	h := home(t, nil)
	missing := "localhost/codebridge-missing:e2e"
	out, _, code := cli(t, h, "", []string{"CODEBRIDGE_IMAGE=" + missing}, "doctor")
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	mustContain(t, out, "FAIL  image      "+missing+" is not present", "fix: codebridge image build --tag "+missing)
}

// serve says on stderr, right after starting, that the image is missing,
// and the client's handshake completes regardless.
func TestServeWarnsMissingImage(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(binary)
	cmd.Env = append(testEnv(home(t, nil)), "CODEBRIDGE_IMAGE=localhost/codebridge-missing:e2e")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	warned := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "sandbox image is not present") {
				warned <- sc.Text()
			}
		}
		close(warned)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer cs.Close()
	select {
	case line, ok := <-warned:
		if !ok {
			t.Fatal("serve ended without warning about the image")
		}
		mustContain(t, line, "level=WARN", "localhost/codebridge-missing:e2e", "codebridge image build --tag localhost/codebridge-missing:e2e")
	case <-ctx.Done():
		t.Fatal("no warning about the missing image")
	}
}

// The command line as a newcomer meets it: help lists the commands,
// --version works, flags follow arguments, results carry no INFO logs,
// and servers --json hides secrets.
func TestCommandLineFirstHour(t *testing.T) {
	needEnv(t)
	h := home(t, map[string]map[string]server{"s.json": {"stub": stub()}})
	cfg := `{"mcpServers": {"remote": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer e2e-secret-1"}},
		"local": {"command": "x", "env": {"API_KEY": "e2e-secret-2"}}}}`
	if err := os.WriteFile(filepath.Join(h, "MCPs", "t.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := cli(t, h, "", nil, "--help")
	if code != 0 || strings.Contains(out, "--memory") {
		t.Fatalf("--help: exit %d\n%s", code, out)
	}
	mustContain(t, out, "doctor", "exec", "import", "servers")
	if out, _, code = cli(t, h, "", nil, "--version"); code != 0 || !strings.HasPrefix(out, "codebridge ") {
		t.Fatalf("--version: exit %d: %s", code, out)
	}

	out, errOut, code := cli(t, h, "", nil, "tools", "stub", "--json")
	var listing []struct {
		Server string `json:"server"`
		Tools  []any  `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &listing); err != nil || code != 0 || len(listing) != 1 || len(listing[0].Tools) != 10 {
		t.Fatalf("tools stub --json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if strings.Contains(errOut, "level=INFO") {
		t.Errorf("a command logged at INFO:\n%s", errOut)
	}

	out, errOut, code = cli(t, h, "", nil, "servers", "--json")
	if code != 0 || strings.Contains(out+errOut, "e2e-secret") {
		t.Fatalf("servers --json: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, out, `"name": "remote"`, `"Authorization": "***"`, `"API_KEY": "***"`)
}

// make test installs the npm servers when they are missing, and makes the
// end-to-end tests required.
func TestMakeTestInstallsWhatItNeeds(t *testing.T) {
	needTool(t, "make", "make")
	if _, err := os.Stat(filepath.Join(repoRoot, "Makefile")); err != nil {
		unprivilegedSkip(t, "the tests run from a copy of testdata without the Makefile")
	}
	empty := t.TempDir()
	cmd := exec.Command("make", "-n", "test", "NPM_DIR="+empty)
	cmd.Dir = repoRoot
	cmd.Env = withoutE2E()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n test: %v\n%s", err, out)
	}
	mustContain(t, string(out), "npm ci --prefix "+empty, "go test")
	cmd = exec.Command("make", "-s", "-f", "-", "show")
	cmd.Dir = repoRoot
	cmd.Env = withoutE2E()
	cmd.Stdin = strings.NewReader("include Makefile\nshow:\n\t@echo E2E=$$CODEBRIDGE_E2E IMAGE=$(IMAGE)\n")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "E2E=1 IMAGE="+imagebuild.DefaultTag) {
		t.Fatalf("make's settings: %v\n%s", err, out)
	}
}

// withoutE2E is the environment without CODEBRIDGE_E2E, as on a newcomer's
// machine.
func withoutE2E() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CODEBRIDGE_E2E=") {
			env = append(env, kv)
		}
	}
	return env
}
