package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// searchColdServers is how many servers the first-search measurement
// configures: the 70 of issue 31's held-back set.
const searchColdServers = 70

// searchColdCode is the first run_python of a new bridge: one search,
// timed inside Python (the sandbox's start is not part of it), then how
// many servers run, and the best hit. The query names a tool of one of
// the stub servers.
const searchColdCode = `import time
t = time.perf_counter()
hits = runtime.search_tool_docs_sync("s42 quokka census", limit=5)
took = time.perf_counter() - t
running = sum(1 for s in runtime.list_servers_sync(detailed=True) if s["running"])
print("SEARCH", took, running, hits[0]["tool"] if hits else None)`

// measureSearchCold measures the first search of a new bridge over 70
// configured servers none of which is running (69 stub servers, each with
// a tool of its own, and the 1,000-tool catalogue): once over an empty
// state directory, where the search starts every server to list it, then
// over the state directory that bridge left, where it answers from the
// listings kept there. Each run starts two new bridges.
func (e *env) measureSearchCold(ctx context.Context) ([]row, error) {
	servers := map[string]server{"catalogue": e.catalogue()}
	for i := 1; i < searchColdServers; i++ {
		name := fmt.Sprintf("s%02d", i)
		s := e.stub()
		s.Args = append(s.Args, "--name="+name, "--tool="+name+"_quokka_census")
		servers[name] = s
	}
	cfg, err := e.writeConfig("search-cold.json", servers)
	if err != nil {
		return nil, err
	}
	state := e.path("search-cold-state")
	var empty, saved sample
	startedEmpty, startedSaved := 0, 0
	for range e.runs {
		if err := os.RemoveAll(state); err != nil {
			return nil, err
		}
		took, running, err := e.firstSearch(ctx, cfg, state)
		if err != nil {
			return nil, err
		}
		empty, startedEmpty = append(empty, took), max(startedEmpty, running)
		if took, running, err = e.firstSearch(ctx, cfg, state); err != nil {
			return nil, err
		}
		saved, startedSaved = append(saved, took), max(startedSaved, running)
	}
	note := fmt.Sprintf("; %d servers, %d runs, a new bridge each", searchColdServers, e.runs)
	return []row{
		{
			name:   "First search of a new bridge over 70 servers none of which runs, listed by an earlier bridge (state directory), median",
			value:  fmt.Sprintf("%s, %d servers started", fmtSeconds(saved.median()), startedSaved),
			spread: spread(saved, fmtSeconds) + note,
			target: "≤ 100 ms, none started", ok: saved.median() <= 0.1 && startedSaved == 0,
		},
		{
			name:   "The same search with an empty state directory (it starts every server to list it), median",
			value:  fmt.Sprintf("%s, %d servers started", fmtSeconds(empty.median()), startedEmpty),
			spread: spread(empty, fmtSeconds) + note,
			info:   true,
		},
	}, nil
}

// firstSearch starts a new bridge over config and state, runs
// searchColdCode as its first cell, and returns the search's time in
// seconds and how many servers ran after it.
func (e *env) firstSearch(ctx context.Context, config, state string) (float64, int, error) {
	b, err := e.startBridgeWith(ctx, []string{"CODEBRIDGE_STATE_DIR=" + state}, config)
	if err != nil {
		return 0, 0, err
	}
	defer b.close()
	out, err := b.run(ctx, searchColdCode)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "SEARCH" {
			continue
		}
		if f[3] != "s42_quokka_census" {
			return 0, 0, fmt.Errorf("the first search found %s first, not s42_quokka_census:\n%s", f[3], out)
		}
		took, err1 := strconv.ParseFloat(f[1], 64)
		running, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			break
		}
		return took, running, nil
	}
	return 0, 0, fmt.Errorf("the first search printed no timing:\n%s", out)
}
