package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rewind (pyruntime/mcp/_rewind.py): the checkpoint the runtime forks
// after every cell, and a rewind to one, with an interpreter holding
// about 200 MB of Python objects.
//
//   - Checkpoint cost: warm print(1) with checkpoints, against the same
//     calls with the runtime's checkpoints switched off (a knob of the
//     runtime that only this bench touches), in the same sandbox.
//   - Rewind: a cell `x = 1`, then the run_python call `rewind(1)` timed
//     by the client: the cell, the rewind frame, the checkpoint waking and
//     its answer, to the result.
//   - Memory: after a cell that changes 1% of the objects (every 100th,
//     so spread over the heap), what the checkpoint taken before it holds
//     alone (Private of /proc/<pid>/smaps_rollup; Pss beside it).
//
// Published figures of VM snapshots are printed beside them.

// rewindHeap builds about 200 MB of Python objects: 1.6 million lists of
// an int and a str.
const rewindHeap = "objs = [[i, str(i) * 4] for i in range(1_600_000)]\n" +
	"print(int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) * 1024)"

// checkpointSwitch turns the runtime's checkpoints on or off.
func checkpointSwitch(on bool) string {
	v := "False"
	if on {
		v = "True"
	}
	return "from mcp import _rewind\n_rewind._keeper.enabled = " + v
}

// checkpointMemory prints the Private and Pss bytes of the newest
// checkpoint but one (the one taken before the last cell).
const checkpointMemory = `from mcp import _rewind
p = _rewind._keeper.points[-2]
m = {}
for line in open(f'/proc/{p.pid}/smaps_rollup'):
    k, _, v = line.partition(':')
    if v.strip().endswith('kB'):
        m[k] = int(v.split()[0]) * 1024
print(m['Private_Clean'] + m['Private_Dirty'], m['Pss'], len(_rewind._keeper.points))`

func (e *env) measureRewind(ctx context.Context) ([]row, error) {
	b, err := e.startBridgeWith(ctx, []string{"CODEBRIDGE_MEMORY=1g"})
	if err != nil {
		return nil, err
	}
	defer b.close()
	out, err := b.run(ctx, rewindHeap)
	if err != nil {
		return nil, err
	}
	heap, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
	warm := func(on bool) (runStats, error) {
		var st runStats
		if _, err := b.run(ctx, checkpointSwitch(on)); err != nil {
			return st, err
		}
		for range 20 {
			if _, err := b.run(ctx, "print(1)"); err != nil {
				return st, err
			}
		}
		for range e.runs {
			lat := make(sample, 0, e.calls)
			start := time.Now()
			for range min(e.calls, 500) {
				t := time.Now()
				if _, err := b.run(ctx, "print(1)"); err != nil {
					return st, err
				}
				lat = append(lat, time.Since(t).Seconds())
			}
			st.add(lat, time.Since(start))
		}
		return st, nil
	}
	off, err := warm(false)
	if err != nil {
		return nil, err
	}
	on, err := warm(true)
	if err != nil {
		return nil, err
	}
	var rewinds sample
	for range 30 {
		if _, err := b.run(ctx, "x = 1"); err != nil {
			return nil, err
		}
		t := time.Now()
		if _, err := b.run(ctx, "rewind(1)"); err != nil {
			return nil, err
		}
		rewinds = append(rewinds, time.Since(t).Seconds())
	}
	if _, err := b.run(ctx, "for o in objs[::100]:\n    o[0] += 1"); err != nil {
		return nil, err
	}
	out, err = b.run(ctx, checkpointMemory)
	if err != nil {
		return nil, err
	}
	var private, pss float64
	var kept int
	if _, err := fmt.Sscan(strings.TrimSpace(out), &private, &pss, &kept); err != nil {
		return nil, fmt.Errorf("the checkpoint's memory: %q: %v", out, err)
	}
	added := on.medians.median() - off.medians.median()
	return []row{
		{name: "Rewind: the interpreter's heap (VmRSS after building it)", value: fmtBytes(heap), info: true, ok: true},
		{
			name:   "Rewind: checkpoint cost, added to a warm `print(1)` (median with − without)",
			value:  fmt.Sprintf("%s (%s vs %s)", fmtSeconds(added), fmtSeconds(on.medians.median()), fmtSeconds(off.medians.median())),
			spread: spread(on.medians, fmtSeconds) + " vs " + spread(off.medians, fmtSeconds) + runsNote(e.runs, min(e.calls, 500)),
			target: "≤ 1 ms", ok: added <= 1e-3,
		},
		{
			name:   "Rewind: `rewind(1)` to its result, median",
			value:  fmtSeconds(rewinds.median()),
			spread: spread(rewinds, fmtSeconds) + ", 30 rewinds",
			target: "≤ 20 ms", ok: rewinds.median() <= 20e-3,
		},
		{
			name:  "Rewind: a checkpoint's memory after a cell changing 1% of the objects (Private; Pss)",
			value: fmt.Sprintf("%s; %s (of a %s heap; %d checkpoints kept)", fmtBytes(private), fmtBytes(pss), fmtBytes(heap), kept),
			info:  true, ok: true,
		},
		{name: "Rewind, published: E2B pause / resume of a VM", value: "about 4 s per GiB / about 1 s", info: true, ok: true},
		{name: "Rewind, published: Blaxel resume of a standby VM", value: "about 25 ms", info: true, ok: true},
	}, nil
}
