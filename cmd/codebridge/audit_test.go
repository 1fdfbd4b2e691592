package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuditCommand: the audit command joins each call's two lines, marks
// a call the bridge never finished, filters with --since, skips a torn
// line with a warning, and prints JSON with --json.
func TestAuditCommand(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	now := time.Now().UTC()
	old := now.Add(-48 * time.Hour).Format(time.RFC3339Nano)
	recent := now.Add(-time.Minute).Format(time.RFC3339Nano)
	lines := []string{
		`{"time":"` + old + `","event":"call","id":"1","session":"s1","kind":"tool","server":"mem","name":"old_tool","decision":"allow","by":"policy","arg_bytes":2}`,
		`{"time":"` + recent + `","event":"call","id":"2","session":"s2","kind":"tool","server":"mem","name":"read_graph","decision":"ask","by":"user","arg_bytes":2}`,
		`{"time":"` + recent + `","event":"done","id":"2","session":"s2","outcome":"ok","duration_ms":1.5,"result_bytes":99,"arg_bytes":0}`,
		`{"time":"` + recent + `","event":"call","id":"3","session":"s2","kind":"tool","server":"stub","name":"sleep","decision":"allow","by":"policy","arg_bytes":12}`,
		`{"time":"` + recent + `","event":"ru`,
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, nil, "audit", "--audit", log, "--since", "1d")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mustContain(t, out, "tool mem.read_graph", "ask (user)", "ok", "99 B", "tool stub.sleep", "unfinished")
	mustContain(t, errOut, "1 lines are not audit records")
	if strings.Contains(out, "old_tool") {
		t.Fatalf("--since 1d showed an entry of two days ago:\n%s", out)
	}
	out, _, _ = runCLI(t, nil, "audit", "--audit", log, "--json")
	if n := strings.Count(out, `"event": "call"`); n != 3 {
		t.Fatalf("--json: %d calls:\n%s", n, out)
	}
	if _, errOut, code := runCLI(t, nil, "audit", "--audit", log, "--since", "yesterday"); code != 2 || !strings.Contains(errOut, "neither a duration") {
		t.Fatalf("bad --since: exit %d, %s", code, errOut)
	}
	if out, _, _ := runCLI(t, nil, "audit", "-h"); !strings.Contains(out, "--since") || !strings.Contains(out, "--audit") {
		t.Fatalf("help:\n%s", out)
	}
}

// TestAuditEscapesWhatOthersChose: a tool name and an error an upstream
// chose stay in their row, escaped, in the table and in --json.
func TestAuditEscapesWhatOthersChose(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	lines := []string{
		`{"time":"` + now + `","event":"call","id":"1","session":"s1","kind":"tool","server":"stub","name":"x\n2099-01-01 forged\u001b[2J\u009b31m\tcol","decision":"allow","by":"policy","arg_bytes":2}`,
		`{"time":"` + now + `","event":"done","id":"1","session":"s1","outcome":"tool_error","error":"bad\r\u001b]0;title\u0007","arg_bytes":0}`,
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"audit", "--audit", log}, {"audit", "--audit", log, "--json"}} {
		out, errOut, code := runCLI(t, nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if strings.ContainsAny(out, "\x1b\r\a\u009b") || strings.Contains(out, "\n2099") {
			t.Fatalf("%v printed a control character or a forged line:\n%q", args, out)
		}
		if len(args) == 3 {
			mustContain(t, out, `tool stub.x\n2099-01-01 forged\x1b[2J\u009b31m\tcol`, `tool_error: bad\r\x1b]0;title\a`)
			if n := strings.Count(out, "\n"); n != 2 {
				t.Fatalf("want a header and one row, got %d lines:\n%s", n, out)
			}
		}
	}
}
