package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// afterwards (not timed), so that the container's limits hold.

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

// timeForks times forkRuns forks to their first result.
func timeForks(ctx context.Context, b *bridge) (sample, error) {
	var forks sample
	for range forkRuns {
		t := time.Now()
		out, err := b.run(ctx, "fork()")
		if err != nil {
			return nil, err
		}
		m := forkHandleRE.FindStringSubmatch(out)
		if m == nil {
			return nil, fmt.Errorf("fork() gave no handle:\n%s", out)
		}
		if _, err := b.runIn(ctx, "print(1)", m[1]); err != nil {
			return nil, err
		}
		forks = append(forks, time.Since(t).Seconds())
		sum := sha256.Sum256([]byte(m[1]))
		if _, err := b.run(ctx, fmt.Sprintf("await runtime.end_session(%q)", "s-"+hex.EncodeToString(sum[:])[:16])); err != nil {
			return nil, err
		}
	}
	return forks, nil
}

// forkRows are the fork's rows, with published figures beside them.
func forkRows(forks sample) []row {
	return []row{
		{
			name:   "Fork: `fork()` to the fork's first result (`print(1)` in it), that heap, client-timed, median",
			value:  fmtSeconds(forks.median()),
			spread: spread(forks, fmtSeconds) + fmt.Sprintf(", %d forks", len(forks)),
			target: "≤ 50 ms", ok: forks.median() <= 50e-3,
		},
		{name: "Fork, published: E2B snapshot and resume of a VM (a fork)", value: "pause about 4 s per GiB, resume about 1 s", info: true, ok: true},
		{name: "Fork, published: Blaxel resume of a standby VM", value: "about 25 ms", info: true, ok: true},
	}
}
