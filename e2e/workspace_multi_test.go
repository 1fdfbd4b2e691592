package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startBridgeIn starts a stdio codebridge the way a client starts it for a
// project: in the project's directory, with the default workspace.
func startBridgeIn(t *testing.T, dir, homeDir string) *bridge {
	t.Helper()
	cmd := exec.Command(binary, "serve")
	cmd.Dir = dir
	cmd.Env = append(testEnv(homeDir), "CODEBRIDGE_LOG_LEVEL=debug", "CODEBRIDGE_WORKSPACE=project")
	return connectCmd(t, cmd, mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil), nil)
}

// codebridgeIn runs a codebridge command in dir with the default
// workspace and returns its stdout; it fails the test on a non-zero exit.
func codebridgeIn(t *testing.T, dir, homeDir, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(testEnv(homeDir), "CODEBRIDGE_WORKSPACE=project")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("codebridge %v in %s: %v\n%s%s", args, dir, err, out.String(), errb.String())
	}
	return out.String()
}

// TestWorkspaceTwoBridgesOfOneProject: a user with two clients open in one
// project (two stdio bridges at once, and a codebridge exec beside them)
// gets working bridges that share the project's workspace, as two
// terminals share a directory; a bridge of another project does not see
// its files; a file is there after the bridges restart. Before per-project
// workspaces the second bridge was refused ("in use by another
// codebridge") and every project shared one volume.
func TestWorkspaceTwoBridgesOfOneProject(t *testing.T) {
	localEngineOnly(t, "persistent workspaces are engine volumes; the kubernetes engine has none yet")
	needEnv(t)
	h := home(t, nil)
	var projA, projB string
	for _, p := range []*string{&projA, &projB} {
		d, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		*p = filepath.Join(d, "project")
		if err := os.Mkdir(*p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	volA := strings.Fields(codebridgeIn(t, projA, h, "", "workspace", "here"))[0]
	volB := strings.Fields(codebridgeIn(t, projB, h, "", "workspace", "here"))[0]
	if volA == volB {
		t.Fatalf("two projects share the volume %s", volA)
	}
	t.Cleanup(func() { // after the bridges have ended (cleanups run last first)
		rm := exec.Command(binary, "workspace", "rm", volA, volB)
		rm.Env = testEnv(h)
		_ = rm.Run()
	})

	// Both bridges make their sandbox, and the project's new volume, at
	// the same time.
	first, second := startBridgeIn(t, projA, h), startBridgeIn(t, projA, h)
	var wg sync.WaitGroup
	results := make([]runResult, 2)
	errs := make([]error, 2)
	for i, b := range []*bridge{first, second} {
		wg.Go(func() {
			results[i], errs[i] = runPython(b.cs, fmt.Sprintf(`open("/workspace/from-%d.txt", "w").write("written by %d"); print("written")`, i, i))
		})
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i].isError || !strings.Contains(results[i].text, "written") {
			t.Fatalf("bridge %d of two started at once: %v\n%s", i, errs[i], results[i].text)
		}
	}
	mustContain(t, second.ok(`print(open("/workspace/from-0.txt").read())`), "written by 0")
	mustContain(t, first.ok(`print(open("/workspace/from-1.txt").read())`), "written by 1")
	if a, b := containersOf(t, first.pid), containersOf(t, second.pid); len(a) != 1 || len(b) != 1 {
		t.Fatalf("both bridges should run a sandbox at once: %v and %v", a, b)
	}
	mustContain(t, codebridgeIn(t, projA, h, `print(open("/workspace/from-0.txt").read())`, "exec", "-"), "written by 0")

	other := startBridgeIn(t, projB, h)
	mustContain(t, other.ok(`import os; print("seen" if os.path.exists("/workspace/from-0.txt") else "not seen")`), "not seen")

	list := codebridgeIn(t, projA, h, "", "workspace", "list")
	mustContain(t, list, volA, projA, volB, projB)

	first.close()
	second.close()
	other.close()
	mustContain(t, startBridgeIn(t, projA, h).ok(`print(open("/workspace/from-1.txt").read())`), "written by 1")
}
