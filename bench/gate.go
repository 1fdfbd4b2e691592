package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// gateRules are the 20 rules of the gated bridge's policy: the echo call
// is checked against every deny and ask glob before the allow list lets
// it through.
var gateRules = map[string][]string{
	"deny":  {"delete_*", "drop_*", "remove_*", "destroy_*", "purge_*", "truncate_*", "wipe_*", "reset_*", "kill_*", "shutdown_*"},
	"ask":   {"create_*", "update_*", "write_*", "send_*", "post_*", "move_*", "rename_*", "set_*"},
	"allow": {"get-*", "echo"},
}

// measureGate compares a proxied call through a bridge with the gate
// doing everything (the 20-rule policy above, every kind of redaction,
// the audit log) with the same call through a bridge whose gate does
// nothing (open policy, no redaction, audit off). Runs alternate between
// the two, so that the machine's load weighs on both alike.
func (e *env) measureGate(ctx context.Context) ([]row, error) {
	plain, err := e.writeConfig("gate-plain.json", map[string]server{"everything": e.everything()})
	if err != nil {
		return nil, err
	}
	ev := e.everything()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": ev.Command, "args": ev.Args, "tools": gateRules}}})
	gated := filepath.Join(e.tmp, "gate-rules.json")
	if err = os.WriteFile(gated, cfg, 0o644); err != nil {
		return nil, err
	}
	off, err := e.startBridgeWith(ctx, []string{"CODEBRIDGE_AUDIT=off"}, plain)
	if err != nil {
		return nil, err
	}
	defer off.close()
	on, err := e.startBridgeWith(ctx, []string{"CODEBRIDGE_REDACT=all", "CODEBRIDGE_AUDIT=" + filepath.Join(e.tmp, "gate-audit.jsonl")}, gated)
	if err != nil {
		return nil, err
	}
	defer on.close()
	for _, b := range []*bridge{off, on} { // warm up
		if _, err := b.run(ctx, pythonSequential(100, echoCall)); err != nil {
			return nil, err
		}
	}
	var without, with runStats
	for range e.runs {
		for _, m := range []struct {
			b     *bridge
			stats *runStats
		}{{off, &without}, {on, &with}} {
			out, err := m.b.run(ctx, pythonSequential(e.calls, echoCall))
			if err != nil {
				return nil, err
			}
			total, lat, err := parseTimings(out, e.calls)
			if err != nil {
				return nil, err
			}
			m.stats.add(lat, total)
		}
	}
	added := with.medians.median()/without.medians.median() - 1
	return []row{{
		name: "Gate on a proxied call (20-rule policy, all redaction, audit), median",
		value: fmt.Sprintf("%s vs %s without (%+.1f%%)", fmtSeconds(with.medians.median()),
			fmtSeconds(without.medians.median()), 100*added),
		spread: spread(with.medians, fmtSeconds) + " vs " + spread(without.medians, fmtSeconds) + runsNote(e.runs, e.calls),
		target: "< 5% added", ok: added < 0.05,
	}}, nil
}
