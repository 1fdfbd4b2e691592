package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge/codebridge/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cells are what the soak runs, round robin; each says what a good answer
// contains. Faults leave the bridge to recover.
var cells = []struct {
	name, code string
	timeout    int
	want       string
}{
	{"print", "print('soak', 1 + 1)", 30, "soak 2"},
	{"state", "soak_n = globals().get('soak_n', 0) + 1\nprint('n', soak_n)", 30, "n "},
	{"proxied call", "print(await mcp_everything.get_sum(a=20, b=22))", 30, "42"},
	{"gathered calls", "import asyncio\nr = await asyncio.gather(*[mcp_stub.echo(message=str(i)) for i in range(100)])\nprint(len(r))", 60, "100"},
	{"big output", "print('x' * 200000)", 30, "characters"},
	{"subprocesses", "import subprocess\nprint(subprocess.run(['sh', '-c', 'echo sub'], capture_output=True, text=True).stdout)", 30, "sub"},
	{"upstream crash", "try:\n    await mcp_stub.crash()\nexcept Exception as e:\n    print('crashed', type(e).__name__)", 30, ""},
	{"timeout", "while True:\n    pass", 1, "timeout"},
	{"sandbox crash", "import os\nos._exit(3)", 30, "restarted"},
}

type sample struct {
	at                        time.Duration
	rssKB, fds, threads, ctrs int
}

func main() {
	dur := flag.Duration("duration", 10*time.Minute, "how long to soak")
	every := flag.Duration("sample", 10*time.Second, "how often to sample the bridge")
	bin := flag.String("bin", "bin/codebridge", "the codebridge binary")
	repo := flag.String("repo", ".", "the repository (for testdata)")
	flag.Parse()
	if err := run(*dur, *every, *bin, *repo); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(dur, every time.Duration, bin, repo string) error {
	home, err := configHome(repo)
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "HOME="+home)
	logf, err := os.CreateTemp("", "codebridge-soak-*.log")
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stderr = logf
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		return fmt.Errorf("starting %s: %w (its log: %s)", bin, err, logf.Name())
	}
	defer cs.Close()
	eng, err := sandbox.Connect(ctx, sandbox.EngineOptions{Kind: os.Getenv("CODEBRIDGE_ENGINE")})
	if err != nil {
		return err
	}
	defer eng.Close()

	start := time.Now()
	var samples []sample
	counts, bad := map[string]int{}, map[string]int{}
	next := start
	for i := 0; time.Since(start) < dur; i++ {
		c := cells[i%len(cells)]
		text, err := call(ctx, cs, c.code, c.timeout)
		counts[c.name]++
		if err != nil || !strings.Contains(text, c.want) {
			bad[c.name]++
			if bad[c.name] <= 3 {
				fmt.Fprintf(os.Stderr, "soak: %s: unexpected answer (err %v):\n%.500s\n", c.name, err, text)
			}
		}
		if time.Now().After(next) {
			samples = append(samples, measure(ctx, eng, cmd.Process.Pid, time.Since(start)))
			next = next.Add(every)
		}
	}
	samples = append(samples, measure(ctx, eng, cmd.Process.Pid, time.Since(start)))
	report(samples, counts, bad, logf.Name())
	if len(bad) > 0 {
		return fmt.Errorf("%d kinds of cell answered wrongly", len(bad))
	}
	return nil
}

func call(ctx context.Context, cs *mcp.ClientSession, code string, timeout int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "timeout": timeout}})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String(), nil
}

// configHome makes a HOME whose ~/MCPs configures the npm everything server
// and the stdlib stub server from testdata.
func configHome(repo string) (string, error) {
	repo, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	home, err := os.MkdirTemp("", "codebridge-soak-home-")
	if err != nil {
		return "", err
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": filepath.Join(repo, "testdata/npm/node_modules/.bin/mcp-server-everything")},
		"stub":       map[string]any{"command": "python3", "args": []string{filepath.Join(repo, "testdata/servers/stub_server.py")}},
	}}
	b, _ := json.Marshal(cfg)
	if err := os.MkdirAll(filepath.Join(home, "MCPs"), 0o755); err != nil {
		return "", err
	}
	return home, os.WriteFile(filepath.Join(home, "MCPs", "soak.json"), b, 0o644)
}

// measure reads the bridge's RSS and threads from /proc/PID/status, its
// descriptors from /proc/PID/fd, and its containers from the engine.
func measure(ctx context.Context, eng sandbox.Engine, pid int, at time.Duration) sample {
	s := sample{at: at}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "VmRSS:" {
				s.rssKB, _ = strconv.Atoi(f[1])
			}
			if len(f) >= 2 && f[0] == "Threads:" {
				s.threads, _ = strconv.Atoi(f[1])
			}
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.fds = len(fds)
	}
	if list, err := eng.List(ctx); err == nil {
		for _, c := range list {
			if c.Labels[sandbox.LabelPID] == strconv.Itoa(pid) {
				s.ctrs++
			}
		}
	}
	return s
}

func report(samples []sample, counts, bad map[string]int, log string) {
	fmt.Printf("soak: %d samples over %s; the bridge's log: %s\n", len(samples), samples[len(samples)-1].at.Round(time.Second), log)
	for _, c := range cells {
		fmt.Printf("  %-15s %5d cells, %d wrong\n", c.name, counts[c.name], bad[c.name])
	}
	curve := func(name string, get func(sample) int) {
		first, last, peak := get(samples[0]), get(samples[len(samples)-1]), 0
		for _, s := range samples {
			peak = max(peak, get(s))
		}
		fmt.Printf("  %-15s start %7d  peak %7d  end %7d\n", name, first, peak, last)
	}
	curve("RSS (KiB)", func(s sample) int { return s.rssKB })
	curve("open fds", func(s sample) int { return s.fds })
	curve("threads", func(s sample) int { return s.threads })
	curve("containers", func(s sample) int { return s.ctrs })
}
