package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// warmAllCode calls each of the three npm upstreams once.
const warmAllCode = `await mcp_everything.echo(message="warm")
await mcp_filesystem.list_allowed_directories()
await mcp_memory.read_graph()
print("warm")`

// measureColdAndIdle starts fresh bridges configured with the three npm
// reference servers. Each one gives a cold start (process launch to the
// first run_python result, a container created and booted on the way)
// and then, once each upstream was called and the bridge left alone, its
// idle RSS.
func (e *env) measureColdAndIdle(ctx context.Context) ([]row, error) {
	cfg, err := e.writeConfig("cold.json", map[string]server{
		"everything": e.everything(),
		"filesystem": e.filesystem(e.tmp),
		"memory":     e.memory(e.path("idle-memory.jsonl")),
	})
	if err != nil {
		return nil, err
	}
	var cold, idle sample
	for range e.coldRuns {
		start := time.Now()
		b, err := e.startBridge(ctx, cfg)
		if err != nil {
			return nil, err
		}
		out, err := b.run(ctx, "print(1)")
		took := time.Since(start)
		if err != nil || strings.TrimSpace(out) != "1" {
			b.close()
			return nil, fmt.Errorf("first run_python: %q, %w", out, err)
		}
		cold = append(cold, took.Seconds())

		if _, err = b.run(ctx, warmAllCode); err != nil {
			b.close()
			return nil, err
		}
		rss, err := idleRSS(b.pid)
		b.close()
		if err != nil {
			return nil, err
		}
		idle = append(idle, rss)
	}
	return []row{
		{
			name:   "Cold start: bridge launch to first `print(1)` result",
			value:  fmtSeconds(cold.median()),
			spread: spread(cold, fmtSeconds) + fmt.Sprintf(", %d runs", len(cold)),
			target: "≤ 0.5 s", ok: cold.median() <= 0.5,
		},
		{
			name:   "Idle bridge RSS, warm sandbox + 3 warm upstreams",
			value:  fmtBytes(idle.median()),
			spread: spread(idle, fmtBytes) + fmt.Sprintf(", %d bridges", len(idle)),
			target: "≤ 25 MB", ok: idle.median() <= 25e6,
		},
	}, nil
}

// idleRSS leaves the bridge alone for a moment and returns the median of
// a few VmRSS readings.
func idleRSS(pid int) (float64, error) {
	time.Sleep(2 * time.Second)
	var s sample
	for range 5 {
		v, err := procStatus(pid, "VmRSS")
		if err != nil {
			return 0, err
		}
		s = append(s, v)
		time.Sleep(200 * time.Millisecond)
	}
	return s.median(), nil
}
