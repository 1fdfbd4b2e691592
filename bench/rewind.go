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
//     runtime that only this bench touches), in the same sandbox: first
//     in a new interpreter, then holding the heap.
//   - Rewind: a cell `x = 1`, then the run_python call `rewind(1)` timed
//     by the client: the cell, the rewind frame, the checkpoint waking and
//     its answer, to the result.
//   - Memory: after a cell that changes 1% of the objects (every 100th,
//     so spread over the heap), what the checkpoint taken before it holds
//     alone (Private of /proc/<pid>/smaps_rollup; Pss beside it).
//   - A full collection: `gc.collect()` in a cell, timed in the runtime,
//     and the memory it made the runtime's own (Private_Dirty before and
//     after): the collector writes to every object it examines, so the
//     pages the checkpoints shared are copied. gc.freeze() before each
//     fork would avoid it, at the price of never collecting cycles made
//     before it (docs/rewind.md).
//
// Published figures of VM snapshots are printed beside them.

// rewindHeap builds about 200 MB of Python objects: 950,000 lists of an
// int and a str.
const rewindHeap = "objs = [[i, str(i) * 4] for i in range(950_000)]\n" +
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

// fullCollection prints the milliseconds a full collection takes in the
// runtime and the MB of private dirty memory it added.
const fullCollection = `import gc, time
def _dirty():
    for line in open('/proc/self/smaps_rollup'):
        if line.startswith('Private_Dirty:'):
            return int(line.split()[1]) * 1024
_d = _dirty()
_t = time.perf_counter()
gc.collect()
print((time.perf_counter() - _t) * 1e3, (_dirty() - _d) / 1e6)`

func (e *env) measureRewind(ctx context.Context) ([]row, error) {
	b, err := e.startBridgeWith(ctx, []string{"CODEBRIDGE_MEMORY=1g"})
	if err != nil {
		return nil, err
	}
	defer b.close()
	smallOn, smallOff, err := e.checkpointCost(ctx, b)
	if err != nil {
		return nil, err
	}
	out, err := b.run(ctx, rewindHeap)
	if err != nil {
		return nil, err
	}
	heap, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
	on, off, err := e.checkpointCost(ctx, b)
	if err != nil {
		return nil, err
	}
	pausedOn, pausedOff, err := pausedPrints(ctx, b)
	if err != nil {
		return nil, err
	}
	rewinds, err := timeRewinds(ctx, b)
	if err != nil {
		return nil, err
	}
	firstFork, forks, err := timeForks(ctx, b)
	if err != nil {
		return nil, err
	}
	private, pss, kept, err := checkpointBytes(ctx, b)
	if err != nil {
		return nil, err
	}
	out, err = b.run(ctx, fullCollection)
	if err != nil {
		return nil, err
	}
	var gcMS, gcMB float64
	if _, err := fmt.Sscan(strings.TrimSpace(out), &gcMS, &gcMB); err != nil {
		return nil, fmt.Errorf("the full collection's cost: %q: %w", out, err)
	}
	note := runsNote(e.runs, min(e.calls, 500))
	return append([]row{
		costRow("Rewind: checkpoint cost added to a warm `print(1)`, a new interpreter (median with − without)", smallOn, smallOff, note, true),
		{name: "Rewind: the interpreter's heap below (VmRSS after building it)", value: fmtBytes(heap), info: true, ok: true},
		costRow("Rewind: checkpoint cost added to a warm `print(1)`, that heap (median with − without)", on, off, note, false),
		{
			name: fmt.Sprintf("Rewind: the same, %s after the last answer, as an agent's next turn comes (median with − without)", rewindPause),
			value: fmt.Sprintf("%s (%s vs %s)", fmtSeconds(pausedOn.median()-pausedOff.median()),
				fmtSeconds(pausedOn.median()), fmtSeconds(pausedOff.median())),
			spread: spread(pausedOn, fmtSeconds) + " vs " + spread(pausedOff, fmtSeconds) + ", 100 calls each",
			target: "≤ 1 ms", ok: pausedOn.median()-pausedOff.median() <= 1e-3,
		},
		{
			name:   "Rewind: `rewind(1)` to its result (client), median",
			value:  fmtSeconds(rewinds.median()),
			spread: spread(rewinds, fmtSeconds) + ", 30 rewinds",
			target: "≤ 20 ms", ok: rewinds.median() <= 20e-3,
		},
		{
			name:  "Rewind: a checkpoint's memory after a cell changing 1% of the objects (Private; Pss)",
			value: fmt.Sprintf("%s; %s (%d checkpoints kept)", fmtBytes(private), fmtBytes(pss), kept),
			info:  true, ok: true,
		},
		{
			name:  "Rewind: a full `gc.collect()` at that heap with checkpoints kept (what gc.freeze() before each fork would save)",
			value: fmt.Sprintf("%.0f ms; the runtime's private memory grew %.0f MB (pages it shared with the checkpoints)", gcMS, gcMB), info: true, ok: true,
		},
		{name: "Rewind, published: E2B pause / resume of a VM", value: "about 4 s per GiB / about 1 s", info: true, ok: true},
		{name: "Rewind, published: Blaxel resume of a standby VM", value: "about 25 ms", info: true, ok: true},
	}, forkRows(firstFork, forks)...), nil
}

// costRow is a checkpoint-cost row: on less off, against the 1 ms target
// when target is set (else for information: the target is for the 200
// MB heap, and that row carries it).
func costRow(name string, on, off runStats, note string, small bool) row {
	added := on.medians.median() - off.medians.median()
	r := row{
		name:   name,
		value:  fmt.Sprintf("%s (%s vs %s)", fmtSeconds(added), fmtSeconds(on.medians.median()), fmtSeconds(off.medians.median())),
		spread: spread(on.medians, fmtSeconds) + " vs " + spread(off.medians, fmtSeconds) + note,
		target: "≤ 1 ms", ok: added <= 1e-3,
	}
	if small {
		r.target, r.info, r.ok = "", true, true
	}
	return r
}

// checkpointCost times warm print(1) with the runtime's checkpoints on
// and off, in that order.
func (e *env) checkpointCost(ctx context.Context, b *bridge) (on, off runStats, err error) {
	if on, err = e.warmPrints(ctx, b, true); err != nil {
		return
	}
	off, err = e.warmPrints(ctx, b, false)
	if err == nil {
		_, err = b.run(ctx, checkpointSwitch(true))
	}
	return
}

// warmPrints switches checkpoints on or off and times print(1).
func (e *env) warmPrints(ctx context.Context, b *bridge, on bool) (runStats, error) {
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

// rewindPause is the time between an answer and the next call in
// pausedPrints: less than any model's turn, more than a 200 MB fork.
const rewindPause = 50 * time.Millisecond

// pausedPrints times print(1) calls made rewindPause after the last
// answer, with checkpoints on and off (each set, 100 calls): a checkpoint
// is taken after the answer is sent, so an agent's next call finds it
// done.
func pausedPrints(ctx context.Context, b *bridge) (on, off sample, err error) {
	for _, sw := range []bool{true, false} {
		if _, err = b.run(ctx, checkpointSwitch(sw)); err != nil {
			return
		}
		var lat sample
		for range 100 {
			time.Sleep(rewindPause) // the agent's turn, not a synchronisation
			t := time.Now()
			if _, err = b.run(ctx, "print(1)"); err != nil {
				return
			}
			lat = append(lat, time.Since(t).Seconds())
		}
		if sw {
			on = lat
		} else {
			off = lat
		}
	}
	_, err = b.run(ctx, checkpointSwitch(true))
	return
}

// timeRewinds times 30 rewind(1) calls, each after a cell `x = 1`.
func timeRewinds(ctx context.Context, b *bridge) (sample, error) {
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
	return rewinds, nil
}

// checkpointBytes runs a cell that changes 1% of the heap's objects and
// reads what the checkpoint before it holds.
func checkpointBytes(ctx context.Context, b *bridge) (private, pss float64, kept int, err error) {
	if _, err = b.run(ctx, "for o in objs[::100]:\n    o[0] += 1"); err != nil {
		return
	}
	out, err := b.run(ctx, checkpointMemory)
	if err != nil {
		return
	}
	if _, err = fmt.Sscan(strings.TrimSpace(out), &private, &pss, &kept); err != nil {
		err = fmt.Errorf("the checkpoint's memory: %q: %w", out, err)
	}
	return
}
