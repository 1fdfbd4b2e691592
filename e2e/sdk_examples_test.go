package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSDKExamples runs README's two SDK scripts (examples/sdk) as a user
// would, with a real SDK each: the TypeScript SDK of testdata/npm and the
// Python SDK whose interpreter CODEBRIDGE_PYTHON_SDK names (.ci/run makes
// a virtualenv with `pip install mcp`). Each starts codebridge by name from
// PATH and prints what the cell printed.
func TestSDKExamples(t *testing.T) {
	needEnv(t)
	needTool(t, "node", "nodejs")
	h := home(t, nil)
	bin := t.TempDir() // codebridge by name, as the scripts start it
	if err := os.Symlink(binary, filepath.Join(bin, "codebridge")); err != nil {
		t.Fatal(err)
	}
	env := append(testEnv(h), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	t.Run("typescript", func(t *testing.T) {
		// Node resolves the SDK from the script's own directory.
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(repoRoot, "testdata/npm/node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(dir, "client.mjs")
		copyFile(t, filepath.Join(repoRoot, "examples/sdk/client.mjs"), script)
		runExample(t, env, "node", script)
	})
	t.Run("python", func(t *testing.T) {
		python := pythonSDK(t)
		script := filepath.Join(t.TempDir(), "client.py")
		copyFile(t, filepath.Join(repoRoot, "examples/sdk/client.py"), script)
		runExample(t, env, python, script)
	})
}

// runExample runs an example script and checks it printed the cell's 42.
func runExample(t *testing.T, env []string, program, script string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, script)
	cmd.Env = env
	cmd.Dir = filepath.Dir(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", program, filepath.Base(script), err, stderr.String())
	}
	if strings.TrimSpace(stdout.String()) != "42" {
		t.Fatalf("%s printed %q, want 42\nstderr:\n%s", filepath.Base(script), stdout.String(), stderr.String())
	}
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
