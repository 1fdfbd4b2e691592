package main

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fork (pyruntime/mcp/_fork.py, sandbox/fork.go): with the heap of the
// rewind rows in the interpreter, the client times the call `fork()` and
// then the fork's first call, `print(1)` with the handle the first gave:
// the runtime's fork, the relay's exec, the channel's resume, the new
// session, and a first cell in it. Each fork is ended from its parent
// afterwards (not timed), so that the container's limits hold. The
// first fork of a sandbox execs the relay; later ones take the relay
// started after the one before (sandbox/fork.go).

// forkRuns is how many forks the bench times.
const forkRuns = 10

var forkHandleRE = regexp.MustCompile(`new session (cbs_[a-z2-7]{26})`)

// runIn runs code in the session of handle and returns its text.
func (b *bridge) runIn(ctx context.Context, code, handle string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	res, err := b.cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "session": handle}})
	if err != nil {
		return "", fmt.Errorf("run_python: %w\nstderr:\n%s", err, b.stderr)
	}
	if text := resultText(res); res.IsError {
		return text, fmt.Errorf("run_python in a fork reported an error:\n%s", text)
	}
	return resultText(res), nil
}

// forkPause is the time between an answer and the next fork in
// timeForks: an agent's turn, during which the relay started after the
// last fork gets ready (an exec and a Python start, about 70-90 ms here).
const forkPause = 250 * time.Millisecond

// timeForks times the sandbox's first fork (its relay is exec'd then),
// and forkRuns forks each made forkPause after the last answer (each
// takes the relay started after the one before).
func timeForks(ctx context.Context, b *bridge) (first float64, later sample, err error) {
	for i := range forkRuns + 1 {
		if i > 0 {
			time.Sleep(forkPause) // the agent's turn, not a synchronisation
		}
		t := time.Now()
		out, err := b.run(ctx, "fork()")
		if err != nil {
			return 0, nil, err
		}
		m := forkHandleRE.FindStringSubmatch(out)
		if m == nil {
			return 0, nil, fmt.Errorf("fork() gave no handle:\n%s", out)
		}
		if _, err := b.runIn(ctx, "print(1)", m[1]); err != nil {
			return 0, nil, err
		}
		if took := time.Since(t).Seconds(); i == 0 {
			first = took
		} else {
			later = append(later, took)
		}
		if _, err := b.run(ctx, fmt.Sprintf("await runtime.end_session(%q)", m[1])); err != nil { // by its handle
			return 0, nil, err
		}
	}
	return first, later, nil
}

// forkRows are the fork's rows, with published figures beside them.
func forkRows(first float64, later sample) []row {
	return []row{
		{
			name:  "Fork: a sandbox's first `fork()` to the fork's first result (`print(1)` in it), that heap, client-timed (the relay is exec'd)",
			value: fmtSeconds(first), info: true, ok: true,
		},
		{
			name:   fmt.Sprintf("Fork: later forks, each %s after the last answer (the relay waits ready), to the fork's first result, median", forkPause),
			value:  fmtSeconds(later.median()),
			spread: spread(later, fmtSeconds) + fmt.Sprintf(", %d forks", len(later)),
			target: "≤ 50 ms", ok: later.median() <= 50e-3,
		},
		{name: "Fork, published: E2B snapshot and resume of a VM (a fork)", value: "pause about 4 s per GiB, resume about 1 s", info: true, ok: true},
		{name: "Fork, published: Blaxel resume of a standby VM", value: "about 25 ms", info: true, ok: true},
	}
}

// measureKubeFork (-engine kubernetes) times fork() where the runtime is
// not pid 1 (docs/rewind.md, "Kubernetes"): in a new sandbox holding the
// heap of the rewind rows, the first fork hands the channel to a fresh
// copy (the exec'd process becomes its init) before it forks, and execs
// the relay; later forks are as under Docker and Podman. A second
// sandbox, whose first rewind made the init already, times a first fork
// without the handover: the difference is the handover's cost.
func (e *env) measureKubeFork(ctx context.Context) ([]row, error) {
	first, later, handover, err := e.kubeForks(ctx, false)
	if err != nil {
		return nil, err
	}
	afterRewind, _, _, err := e.kubeForks(ctx, true)
	if err != nil {
		return nil, err
	}
	rows := forkRows(first, later)
	rows[0].name = "Fork, Kubernetes: a sandbox's first `fork()` to the fork's first result, that heap, client-timed (the handover that makes the init, and the relay's exec)"
	rows[1].name = "Fork, Kubernetes: " + rows[1].name[len("Fork: "):]
	return append(rows[:2:2],
		row{name: "Fork, Kubernetes: of the first, the handover frame to the copy's forked frame (bridge's debug log)", value: fmtSeconds(handover), info: true, ok: true},
		row{
			name:  "Fork, Kubernetes: a first `fork()` after a rewind made the init (no handover; the relay's exec), to the fork's first result",
			value: fmtSeconds(afterRewind), info: true, ok: true,
		}), nil
}

// handoverLog is the bridge's debug line for a first fork's handover
// (sandbox/fork.go).
var handoverLog = regexp.MustCompile(`msg="the runtime became its copy's init before its first fork" took=(\S+)`)

// kubeForks starts a bridge, builds the heap and times its forks; with
// rewound, a rewind first makes the exec'd runtime the init. handover is
// what the bridge logged the handover took (0: none was logged).
func (e *env) kubeForks(ctx context.Context, rewound bool) (first float64, later sample, handover float64, err error) {
	b, err := e.startBridgeWith(ctx, []string{"CODEBRIDGE_MEMORY=1g", "CODEBRIDGE_LOG_LEVEL=debug"})
	if err != nil {
		return 0, nil, 0, err
	}
	defer b.close()
	if _, err = b.run(ctx, rewindHeap); err != nil {
		return 0, nil, 0, err
	}
	if rewound {
		for _, code := range []string{"pass", "rewind(1)"} {
			if _, err = b.run(ctx, code); err != nil {
				return 0, nil, 0, err
			}
		}
	}
	first, later, err = timeForks(ctx, b)
	if m := handoverLog.FindStringSubmatch(b.stderr.String()); m != nil {
		if d, perr := time.ParseDuration(m[1]); perr == nil {
			handover = d.Seconds()
		}
	}
	return first, later, handover, err
}
