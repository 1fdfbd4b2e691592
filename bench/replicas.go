package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Replicas (issue 33): two bridges of one engine serve the same session
// handles, as replicas behind a load balancer do. The client speaks
// 2026-07-28 (no MCP session) to each bridge directly, so that the bench
// chooses the replica of every call. It times
//   - a call on the bridge that holds the handle's channel, and one on the
//     other bridge, which must take the handle over (its Lease on
//     Kubernetes, then the runtime's channel through the relay);
//   - the time from a bridge's SIGKILL to the session answering on the
//     other: once while the session was idle, once in the middle of a cell
//     (whose remaining second counts, and on Kubernetes the dead
//     replica's Lease, held until it expires);
//   - calls per second from replicaWorkers sessions at once with one
//     bridge, with two bridges each session on one of them (routed on the
//     handle), and with two bridges and every call sent to either at
//     random (no affinity: most calls take the session over).

// replicaCalls is how many calls each latency row times.
const replicaCalls = 20

// replicaWorkers is how many sessions call at once in the rate rows, and
// replicaRateCalls how many calls each makes.
const (
	replicaWorkers   = 4
	replicaRateCalls = 15
)

// replicaCell is the code of a timed call: it changes and reads the
// state, so a call answered by a fresh interpreter fails the bench.
const replicaCell = "n += 1\nprint(n)"

// replica is one bridge of the pair and a 2026-07-28 client of it.
type replica struct {
	b  *httpBridge
	cs *mcp.ClientSession
}

// startReplica starts a bridge serving HTTP and connects a client.
func (e *env) startReplica(ctx context.Context) (*replica, error) {
	b, err := e.startHTTPBridge("--warm", "0")
	if err != nil {
		return nil, err
	}
	s, err := b.session(ctx)
	if err != nil {
		b.stop()
		return nil, err
	}
	// A client mirrors `session` into the Mcp-Param-Session header
	// (SEP-2243) once it has read the tool's schema, as agents do first.
	if _, err := s.cs.ListTools(ctx, nil); err != nil {
		b.stop()
		return nil, err
	}
	return &replica{b: b, cs: s.cs}, nil
}

func (r *replica) stop() {
	_ = r.cs.Close()
	r.b.stop()
}

// call runs code in the session of handle ("": a new one) and returns its
// text and the session's handle.
func (r *replica) call(ctx context.Context, code, handle string) (text, got string, err error) {
	args := map[string]any{"code": code}
	if handle != "" {
		args["session"] = handle
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res, err := r.cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		return "", "", fmt.Errorf("run_python: %w\nstderr:\n%s", err, r.b.stderr)
	}
	text = resultText(res)
	if res.IsError {
		return text, "", fmt.Errorf("run_python reported an error for\n%s\n---\n%s\nstderr:\n%s", code, text, r.b.stderr)
	}
	if m, ok := res.StructuredContent.(map[string]any); ok {
		got, _ = m["session"].(string)
	}
	if got == "" {
		got = handle
	}
	return text, got, nil
}

// open starts a session on r with n = 0 and returns its handle.
func (r *replica) open(ctx context.Context) (string, error) {
	_, h, err := r.call(ctx, "n = 0", "")
	if err == nil && h == "" {
		err = fmt.Errorf("the first call gave no session handle\nstderr:\n%s", r.b.stderr)
	}
	return h, err
}

// step runs replicaCell in handle's session on r and checks that n is
// want; it returns how long the call took.
func (r *replica) step(ctx context.Context, handle string, want int) (float64, error) {
	t := time.Now()
	out, _, err := r.call(ctx, replicaCell, handle)
	took := time.Since(t).Seconds()
	if err == nil && !strings.HasSuffix(strings.TrimSpace(out), fmt.Sprint(want)) {
		err = fmt.Errorf("the session's n is %q, want %d: its state was lost", out, want)
	}
	return took, err
}

// endHandles ends handles from an MCP session of protocol 2025-11-25
// on r (a cell cannot end its own session; this one's sandbox ends with
// its MCP session), so that no sandbox outlives the bench.
func (r *replica) endHandles(ctx context.Context, handles ...string) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "codebridge-bench-admin", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.b.url, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connecting to end the sessions: %w", err)
	}
	defer cs.Close()
	var code strings.Builder
	for _, h := range handles {
		fmt.Fprintf(&code, "await runtime.end_session(%q)\n", h)
	}
	if _, err = cs.ListTools(ctx, nil); err != nil {
		return err
	}
	admin := &replica{b: r.b, cs: cs}
	_, _, err = admin.call(ctx, code.String(), "")
	return err
}

// measureReplicas is the replicas' section.
func (e *env) measureReplicas(ctx context.Context) ([]row, error) {
	held, over, err := e.replicaLatencies(ctx)
	if err != nil {
		return nil, err
	}
	idle, err := e.replicaDeath(ctx, false)
	if err != nil {
		return nil, err
	}
	midCell, err := e.replicaDeath(ctx, true)
	if err != nil {
		return nil, err
	}
	rates := map[string]float64{}
	for _, mode := range []string{"one", "routed", "random"} {
		if rates[mode], err = e.replicaRate(ctx, mode); err != nil {
			return nil, fmt.Errorf("calls/s, %s: %w", mode, err)
		}
	}
	n := fmt.Sprintf("%d calls", replicaCalls)
	return []row{
		{name: "Replicas: a call on the bridge that holds the session (`n += 1`), median", value: fmtSeconds(held.median()), spread: spread(held, fmtSeconds) + ", " + n, info: true},
		{name: "Replicas: a call on the other bridge, which takes the session over, median", value: fmtSeconds(over.median()), spread: spread(over, fmtSeconds) + ", " + n, info: true},
		{name: "Replicas: a bridge killed (SIGKILL) while the session is idle, to the session's answer on the other", value: fmtSeconds(idle), info: true},
		{name: "Replicas: a bridge killed one second into a two-second cell, to the session's next answer on the other", value: fmtSeconds(midCell), info: true},
		{name: fmt.Sprintf("Replicas: calls/s, %d sessions at once, one bridge", replicaWorkers), value: fmtRate(rates["one"]), info: true},
		{name: fmt.Sprintf("Replicas: calls/s, %d sessions at once, two bridges, each session on one", replicaWorkers), value: fmtRate(rates["routed"]), spread: fmt.Sprintf("%.2fx one bridge", rates["routed"]/rates["one"]), info: true},
		{name: fmt.Sprintf("Replicas: calls/s, %d sessions at once, two bridges, each call on either at random", replicaWorkers), value: fmtRate(rates["random"]), spread: fmt.Sprintf("%.2fx one bridge", rates["random"]/rates["one"]), info: true},
	}, nil
}

// pair starts two replicas.
func (e *env) pair(ctx context.Context) ([2]*replica, error) {
	var rs [2]*replica
	for i := range rs {
		r, err := e.startReplica(ctx)
		if err != nil {
			if i == 1 {
				rs[0].stop()
			}
			return rs, err
		}
		rs[i] = r
	}
	return rs, nil
}

// replicaLatencies times replicaCalls calls on the holder, then
// replicaCalls calls each on the other bridge than the one before.
func (e *env) replicaLatencies(ctx context.Context) (held, over sample, err error) {
	rs, err := e.pair(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer rs[0].stop()
	defer rs[1].stop()
	h, err := rs[0].open(ctx)
	if err != nil {
		return nil, nil, err
	}
	n := 0
	for i := range 2 * replicaCalls {
		on := 0
		if i >= replicaCalls {
			on = 1 - i%2 // alternate, starting on the other bridge
		}
		n++
		took, err := rs[on].step(ctx, h, n)
		if err != nil {
			return nil, nil, err
		}
		if i < replicaCalls {
			held = append(held, took)
		} else {
			over = append(over, took)
		}
	}
	return held, over, rs[0].endHandles(ctx, h) // the last call was on the first
}

// replicaDeath kills the bridge that holds a session, idle or one second
// into a two-second cell, and times from the kill to the session's next
// answer on the other bridge.
func (e *env) replicaDeath(ctx context.Context, midCell bool) (float64, error) {
	rs, err := e.pair(ctx)
	if err != nil {
		return 0, err
	}
	defer rs[1].stop()
	h, err := rs[0].open(ctx)
	if err != nil {
		rs[0].stop()
		return 0, err
	}
	if midCell {
		go func() { _, _, _ = rs[0].call(ctx, "import time\ntime.sleep(2)", h) }()
		time.Sleep(time.Second) // into the cell: a bench's pacing, not a synchronisation
	}
	t := time.Now()
	_ = rs[0].b.cmd.Process.Signal(syscall.SIGKILL)
	_ = rs[0].b.cmd.Wait()
	_ = rs[0].cs.Close()
	if _, err := rs[1].step(ctx, h, 1); err != nil {
		return 0, err
	}
	return time.Since(t).Seconds(), rs[1].endHandles(ctx, h)
}

// replicaRate is the rate of replicaCell calls from replicaWorkers
// sessions at once: on one bridge ("one"), on two with each session on
// one of them ("routed"), or on two with each call on either at random
// ("random").
func (e *env) replicaRate(ctx context.Context, mode string) (float64, error) {
	rs, err := e.pair(ctx)
	if err != nil {
		return 0, err
	}
	defer rs[0].stop()
	defer rs[1].stop()
	handles := make([]string, replicaWorkers)
	for i := range handles {
		if handles[i], err = rs[homeOf(mode, i)].open(ctx); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, replicaWorkers)
	for i, h := range handles {
		wg.Go(func() {
			for n := 1; n <= replicaRateCalls && errs[i] == nil; n++ {
				on := homeOf(mode, i)
				if mode == "random" {
					on = rand.IntN(2)
				}
				_, errs[i] = rs[on].step(ctx, h, n)
			}
		})
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	for i, h := range handles { // untimed: the first bridge holds every session, and ends them
		if _, err := rs[0].step(ctx, h, replicaRateCalls+1); err != nil {
			return 0, fmt.Errorf("session %d: %w", i, err)
		}
	}
	return float64(replicaWorkers*replicaRateCalls) / took, rs[0].endHandles(ctx, handles...)
}

// homeOf is the bridge session i starts on: the first with one bridge,
// else alternately.
func homeOf(mode string, i int) int {
	if mode == "one" {
		return 0
	}
	return i % 2
}
