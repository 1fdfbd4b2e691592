package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The bench's profiles (-profile DIR): the bridge of the latency section
// is built with its profiling hook (cmd/codebridge/benchprofile.go) and
// each timed loop runs inside a window the bench opens and closes with
// SIGUSR1; windows.txt names each window's number. The Python side is
// profiled with cProfile inside the sandbox (python-*.txt).

// profiler opens and closes the bridge's profile windows; nil profiles
// nothing.
type profiler struct {
	dir string
	pid int
	n   int
}

// profileEnv is the environment that turns the bridge's hook on.
func (e *env) profileEnv() []string {
	if e.profile == "" {
		return nil
	}
	return []string{"CODEBRIDGE_BENCH_PROFILE=" + e.profile}
}

func (e *env) profiler(b *bridge) *profiler {
	if e.profile == "" {
		return nil
	}
	return &profiler{dir: e.profile, pid: b.pid}
}

// window starts a profile window named name and returns what ends it.
func (p *profiler) window(name string) func() {
	if p == nil {
		return func() {}
	}
	p.n++
	p.toggle(fmt.Sprintf("cpu-%d.pprof", p.n))
	n, cpu := p.n, cpuTime(p.pid)
	return func() {
		used := cpuTime(p.pid) - cpu
		p.toggle(fmt.Sprintf("allocs-%d-stop.pprof", n))
		f, err := os.OpenFile(filepath.Join(p.dir, "windows.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d %s: bridge CPU %s\n", n, name, used)
			_ = f.Close()
		}
	}
}

// cpuTime is the user and system CPU time process pid used so far
// (/proc/PID/stat, in clock ticks of 10 ms).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from the state on
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// toggle signals the bridge and waits until it wrote the file that says
// it saw the signal: two signals sent at once would arrive as one.
func (p *profiler) toggle(written string) {
	signalProfile(p.pid)
	for range 500 {
		if _, err := os.Stat(filepath.Join(p.dir, written)); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pythonProfiles runs the proxied loops again under cProfile in the
// sandbox and writes what it printed (the main thread's functions by
// their own time) beside the bridge's profiles.
func (e *env) pythonProfiles(ctx context.Context, b *bridge) error {
	if e.profile == "" {
		return nil
	}
	for name, code := range map[string]string{
		"python-sequential.txt": pythonProfiled(pythonSequential(e.calls, echoCall)),
		"python-gathered.txt":   pythonProfiled(pythonGathered(e.calls)),
		"python-cpu.txt":        pythonCPU(e.calls),
	} {
		out, err := b.run(ctx, code)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(e.profile, name), []byte(out), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pythonProfiled wraps a timed loop's code in cProfile and prints the
// profile instead of the timings.
func pythonProfiled(body string) string {
	return fmt.Sprintf(`import cProfile, pstats, io, contextlib
_p = cProfile.Profile()
_p.enable()
with contextlib.redirect_stdout(io.StringIO()):
%s
_p.disable()
_o = io.StringIO()
pstats.Stats(_p, stream=_o).sort_stats("tottime").print_stats(40)
print(_o.getvalue())`, indent(body))
}

func indent(s string) string {
	out := "    "
	for _, c := range s {
		out += string(c)
		if c == '\n' {
			out += "    "
		}
	}
	return out
}

// pythonCPU prints the CPU time the runtime's process (all its threads:
// the cell's and the reader's) spends per proxied call, sequential and
// gathered, and per list_servers call, without a profiler's overhead.
func pythonCPU(n int) string {
	return fmt.Sprintf(`import time, asyncio
def _per(t): return (time.process_time_ns() - t) / %[1]d / 1000
_t = time.process_time_ns()
for _ in range(%[1]d):
    %[2]s
print("sequential echo: %%.1f us CPU per call" %% _per(_t))
_t = time.process_time_ns()
await asyncio.gather(*[mcp_everything.echo(message="ping") for _ in range(%[1]d)])
print("gathered echo: %%.1f us CPU per call" %% _per(_t))
_t = time.process_time_ns()
for _ in range(%[1]d):
    %[3]s
print("sequential list_servers: %%.1f us CPU per call" %% _per(_t))`, n, echoCall, hostRPC)
}
