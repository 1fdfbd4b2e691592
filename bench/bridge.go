package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildBridge compiles ./cmd/codebridge into dir with the build tags
// given (see env.bridgeTags) and returns the binary.
func buildBridge(ctx context.Context, repo, dir string, tags []string) (string, error) {
	bin := filepath.Join(dir, "codebridge")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/codebridge")...)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/codebridge: %w\n%s", err, out)
	}
	return bin, nil
}

// bridge is a running codebridge process driven by a go-sdk MCP client,
// the way an agent's MCP client drives it.
type bridge struct {
	cmd    *exec.Cmd
	cs     *mcp.ClientSession
	pid    int
	stderr *tailBuffer
}

// startBridge starts the codebridge binary with the given --config files
// and an empty HOME (so the user's ~/MCPs does not count), and completes
// the MCP handshake.
func (e *env) startBridge(ctx context.Context, configs ...string) (*bridge, error) {
	return e.startBridgeWith(ctx, nil, configs...)
}

// startBridgeWith is startBridge with extra environment variables.
func (e *env) startBridgeWith(ctx context.Context, extraEnv []string, configs ...string) (*bridge, error) {
	args := []string{"serve"}
	for _, c := range configs {
		args = append(args, "--config", c)
	}
	cmd := exec.Command(e.bin, args...)
	cmd.Env = append(append(os.Environ(), "HOME="+e.home, "CODEBRIDGE_IMAGE="+e.image,
		// Several bridges run at once (the gate on and off): none shares a workspace.
		"CODEBRIDGE_WORKSPACE=ephemeral"), extraEnv...)
	b := &bridge{cmd: cmd, stderr: &tailBuffer{max: 64 << 10}}
	cmd.Stderr = b.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "codebridge-bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to codebridge: %w\nstderr:\n%s", err, b.stderr)
	}
	b.cs, b.pid = cs, cmd.Process.Pid
	return b, nil
}

// call runs code with run_python and returns the whole result.
func (b *bridge) call(ctx context.Context, code string) (*mcp.CallToolResult, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res, err := b.cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
	if err != nil {
		return nil, fmt.Errorf("run_python: %w\nstderr:\n%s", err, b.stderr)
	}
	return res, nil
}

// run runs code with run_python and returns its text, or an error when
// the call failed or the code raised.
func (b *bridge) run(ctx context.Context, code string) (string, error) {
	res, err := b.call(ctx, code)
	if err != nil {
		return "", err
	}
	text := resultText(res)
	if res.IsError {
		return text, fmt.Errorf("run_python reported an error for\n%s\n---\n%s", code, text)
	}
	return text, nil
}

// close ends the session (stdin EOF) and waits for the bridge to exit,
// which removes its container.
func (b *bridge) close() {
	if b != nil && b.cs != nil {
		_ = b.cs.Close()
	}
}

// resultText joins the text content of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

// procStatus reads a kB field of /proc/<pid>/status (VmRSS, VmHWM) and
// returns it in bytes.
func procStatus(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// resetPeak resets the peak RSS (VmHWM) of pid to its current RSS, so that
// the next reading is the peak of what follows.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
