package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runStats summarises repeated runs of the same timed loop: each run
// gives a median and a p99; the report shows the median over runs and
// the min–max across runs.
type runStats struct{ medians, p99s, rates sample }

func (r *runStats) add(lat sample, total time.Duration) {
	r.medians = append(r.medians, lat.median())
	r.p99s = append(r.p99s, lat.p99())
	r.rates = append(r.rates, float64(len(lat))/total.Seconds())
}

// echoArgs is the call every latency figure makes: the everything
// server's echo, the smallest real round trip it offers.
var echoArgs = map[string]any{"message": "ping"}

// measureLatency times warm run_python calls, a proxied upstream call
// against the same call made directly, and 1,000-call batches.
func (e *env) measureLatency(ctx context.Context) ([]row, error) {
	cfg, err := e.writeConfig("latency.json", map[string]server{"everything": e.everything()})
	if err != nil {
		return nil, err
	}
	b, err := e.startBridgeWith(ctx, e.profileEnv(), cfg)
	if err != nil {
		return nil, err
	}
	defer b.close()
	prof := e.profiler(b)
	// Warm up: the sandbox, the upstream, both code paths.
	for range 20 {
		if _, err = b.run(ctx, "print(1)"); err != nil {
			return nil, err
		}
	}
	for _, expr := range []string{echoCall, hostRPC} {
		if _, err = b.run(ctx, pythonSequential(50, expr)); err != nil {
			return nil, err
		}
	}

	warm, err := e.warmRuns(ctx, b, prof)
	if err != nil {
		return nil, err
	}
	// Proxied calls, and the part of each that is the sandbox-host round
	// trip alone.
	proxied, err := e.sequentialRuns(ctx, b, prof, echoCall)
	if err != nil {
		return nil, err
	}
	rpc, err := e.sequentialRuns(ctx, b, prof, hostRPC)
	if err != nil {
		return nil, err
	}
	gathered, err := e.gatheredRuns(ctx, b, prof)
	if err != nil {
		return nil, err
	}
	if err = e.pythonProfiles(ctx, b); err != nil {
		return nil, err
	}

	directSeq, directConc, err := e.directEcho(ctx)
	if err != nil {
		return nil, err
	}

	ratio := proxied.medians.median() / directSeq.medians.median()
	share := gathered.median() / directConc.median()
	return []row{
		{
			name:   "Warm run_python `print(1)`, median",
			value:  fmtSeconds(warm.medians.median()),
			spread: spread(warm.medians, fmtSeconds) + runsNote(e.runs, e.calls),
			target: "≤ 0.5 ms", ok: warm.medians.median() <= 0.5e-3,
		},
		{
			name:   "Warm run_python `print(1)`, p99",
			value:  fmtSeconds(warm.p99s.median()),
			spread: spread(warm.p99s, fmtSeconds) + runsNote(e.runs, e.calls),
			target: "", info: true, ok: true,
		},
		{
			name: "Proxied call (everything `echo`) from Python, median",
			value: fmt.Sprintf("%s vs %s direct (%.2f×)", fmtSeconds(proxied.medians.median()),
				fmtSeconds(directSeq.medians.median()), ratio),
			spread: spread(proxied.medians, fmtSeconds) + " vs " + spread(directSeq.medians, fmtSeconds) + runsNote(e.runs, e.calls),
			target: "≤ 1.5× direct go-sdk", ok: ratio <= 1.5,
		},
		{
			name:   "Sandbox→host RPC answered by the bridge (`list_servers`), median",
			value:  fmtSeconds(rpc.medians.median()),
			spread: spread(rpc.medians, fmtSeconds) + runsNote(e.runs, e.calls),
			target: "the frame-channel share of a proxied call", info: true, ok: true,
		},
		{
			name: "Proxied call (everything `echo`) from Python, p99",
			value: fmt.Sprintf("%s vs %s direct", fmtSeconds(proxied.p99s.median()),
				fmtSeconds(directSeq.p99s.median())),
			spread: spread(proxied.p99s, fmtSeconds) + " vs " + spread(directSeq.p99s, fmtSeconds) + runsNote(e.runs, e.calls),
			target: "", info: true, ok: true,
		},
		{
			name:   fmt.Sprintf("%s proxied calls, sequential", commas(e.calls)),
			value:  fmt.Sprintf("%s vs %s direct", fmtRate(proxied.rates.median()), fmtRate(directSeq.rates.median())),
			spread: spread(proxied.rates, fmtRate) + " vs " + spread(directSeq.rates, fmtRate) + fmt.Sprintf(", %d runs", e.runs),
			target: "", info: true, ok: true,
		},
		{
			name: fmt.Sprintf("%s proxied calls, asyncio.gather", commas(e.calls)),
			value: fmt.Sprintf("%s vs %s direct concurrent (%.0f%%)", fmtRate(gathered.median()),
				fmtRate(directConc.median()), 100*share),
			spread: spread(gathered, fmtRate) + " vs " + spread(directConc, fmtRate) + fmt.Sprintf(", %d runs", e.runs),
			target: "≥ 80% of direct concurrent", ok: share >= 0.8,
		},
	}, nil
}

// warmRuns times warm run_python round trips of print(1), by the MCP client.
func (e *env) warmRuns(ctx context.Context, b *bridge, prof *profiler) (runStats, error) {
	var warm runStats
	defer prof.window("print(1), sequential run_python calls")()
	for range e.runs {
		lat := make(sample, 0, e.calls)
		start := time.Now()
		for range e.calls {
			t := time.Now()
			out, err := b.run(ctx, "print(1)")
			if err != nil {
				return warm, err
			}
			lat = append(lat, time.Since(t).Seconds())
			if strings.TrimSpace(out) != "1" {
				return warm, fmt.Errorf("print(1) returned %q", out)
			}
		}
		warm.add(lat, time.Since(start))
	}
	return warm, nil
}

// sequentialRuns times calls of expr made one after another from Python,
// timed inside Python.
func (e *env) sequentialRuns(ctx context.Context, b *bridge, prof *profiler, expr string) (runStats, error) {
	var stats runStats
	defer prof.window(expr + ", sequential")()
	for range e.runs {
		out, err := b.run(ctx, pythonSequential(e.calls, expr))
		if err != nil {
			return stats, err
		}
		total, lat, err := parseTimings(out, e.calls)
		if err != nil {
			return stats, err
		}
		stats.add(lat, total)
	}
	return stats, nil
}

// gatheredRuns measures the rate of proxied calls made all at once with
// asyncio.gather.
func (e *env) gatheredRuns(ctx context.Context, b *bridge, prof *profiler) (sample, error) {
	var gathered sample
	defer prof.window("echo, asyncio.gather")()
	for range e.runs {
		out, err := b.run(ctx, pythonGathered(e.calls))
		if err != nil {
			return nil, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("gathered calls printed %q", out)
		}
		gathered = append(gathered, float64(e.calls)/time.Duration(ns).Seconds())
	}
	return gathered, nil
}

// directEcho makes the same echo calls with a go-sdk client wired straight
// to a fresh everything server: sequential (timed one by one) and all at
// once from as many goroutines.
func (e *env) directEcho(ctx context.Context) (runStats, sample, error) {
	var seq runStats
	var conc sample
	cs, err := direct(ctx, e.everything())
	if err != nil {
		return seq, nil, err
	}
	defer cs.Close()
	call := func() error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
		if err != nil {
			return err
		}
		if res.IsError || !strings.Contains(resultText(res), "ping") {
			return fmt.Errorf("direct echo returned %q", resultText(res))
		}
		return nil
	}
	for range 50 {
		if err := call(); err != nil {
			return seq, nil, err
		}
	}
	for range e.runs {
		lat := make(sample, 0, e.calls)
		start := time.Now()
		for range e.calls {
			t := time.Now()
			if err := call(); err != nil {
				return seq, nil, err
			}
			lat = append(lat, time.Since(t).Seconds())
		}
		seq.add(lat, time.Since(start))
	}
	for range e.runs {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		start := time.Now()
		for range e.calls {
			wg.Go(func() {
				if err := call(); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if first != nil {
			return seq, nil, first
		}
		conc = append(conc, float64(e.calls)/time.Since(start).Seconds())
	}
	return seq, conc, nil
}

// echoCall is the proxied call, as the agent's Python makes it.
const echoCall = `await mcp_everything.echo(message="ping")`

// hostRPC is a request the host answers itself, with no upstream: the
// sandbox-to-host round trip inside every proxied call.
const hostRPC = `await runtime.list_servers(detailed=True)`

// pythonSequential times n evaluations of expr one after the other inside
// the sandbox and prints the total and each one, in nanoseconds.
func pythonSequential(n int, expr string) string {
	return fmt.Sprintf(`import time
_t = []
_s = time.perf_counter_ns()
for _ in range(%d):
    _a = time.perf_counter_ns()
    %s
    _t.append(time.perf_counter_ns() - _a)
print(time.perf_counter_ns() - _s, *_t)`, n, expr)
}

// pythonGathered makes n echo calls at once and prints the wall time in
// nanoseconds.
func pythonGathered(n int) string {
	return fmt.Sprintf(`import asyncio, time
_s = time.perf_counter_ns()
_r = await asyncio.gather(*[mcp_everything.echo(message="ping") for _ in range(%d)])
_e = time.perf_counter_ns() - _s
assert len(_r) == %d and all("ping" in str(x) for x in _r), _r[:3]
print(_e)`, n, n)
}

// parseTimings reads what pythonSequential printed.
func parseTimings(out string, n int) (time.Duration, sample, error) {
	f := strings.Fields(out)
	if len(f) != n+1 {
		return 0, nil, fmt.Errorf("timed loop printed %d numbers, want %d: %.200q", len(f), n+1, out)
	}
	var lat sample
	var total time.Duration
	for i, s := range f {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, nil, fmt.Errorf("timed loop printed %q", s)
		}
		if i == 0 {
			total = time.Duration(v)
			continue
		}
		lat = append(lat, time.Duration(v).Seconds())
	}
	return total, lat, nil
}

func runsNote(runs, calls int) string {
	return fmt.Sprintf(", %d runs × %s calls", runs, commas(calls))
}

// commas writes n with thousands separators.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
