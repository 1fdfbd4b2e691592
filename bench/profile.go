package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
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
	f, err := os.OpenFile(filepath.Join(p.dir, "windows.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		fmt.Fprintf(f, "%d %s\n", p.n, name)
		_ = f.Close()
	}
	n := p.n
	return func() { p.toggle(fmt.Sprintf("allocs-%d-stop.pprof", n)) }
}

// toggle signals the bridge and waits until it wrote the file that says
// it saw the signal: two signals sent at once would arrive as one.
func (p *profiler) toggle(written string) {
	_ = syscall.Kill(p.pid, syscall.SIGUSR1)
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
	for name, body := range map[string]string{
		"python-sequential.txt": pythonSequential(e.calls, echoCall),
		"python-gathered.txt":   pythonGathered(e.calls),
	} {
		out, err := b.run(ctx, pythonProfiled(body))
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
