package e2e

import (
	"strings"
	"testing"
)

// TestRewindRestoresState: over stdio with a real server-everything, a
// cell that changes a variable, imports a module, rewrites a workspace
// file, writes a new one and calls a tool is undone by rewind(1): the
// variable, the imports and the files are as they were before it, and
// the answer lists the call it made as done outside and not undone. The
// state it went back to can be rewound to again.
func TestRewindRestoresState(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"a.json": {"everything": npmServer("mcp-server-everything")}}))
	b.ok("a = 1\nimport json\nopen('/workspace/keep.txt', 'w').write('one')")
	b.ok("a = 2\nimport fractions\nopen('/workspace/keep.txt', 'w').write('two')\n" +
		"open('/workspace/new.txt', 'w').write('x')\nawait mcp_everything.echo(message='acted')")
	out := b.ok("rewind(1)")
	mustContain(t, out,
		"[rewound 1 cell and this one: variables, imports and functions are as they were before them (names: a; modules: json)",
		"/workspace: 1 file as they were (1 copied back, 1 removed)",
		"[tool calls of the undone cells: they acted outside the sandbox and were NOT undone]\n  1 cell back, 1 call\n    1 ok: everything.echo")
	t.Logf("the rewind's answer:\n%s", out)
	got := b.ok("import os\nprint(a, 'fractions' in globals(), open('keep.txt').read(), " +
		"sorted(f for f in os.listdir('/workspace') if not f.startswith('.')))")
	if strings.TrimSpace(got) != "1 False one ['keep.txt']" {
		t.Fatalf("after the rewind the cell printed %q, want the state before the undone cell", got)
	}
	b.ok("b = 3")
	mustContain(t, b.ok("rewind(2)"), "[rewound 2 cells and this one")
	if got := b.ok("print(a, 'b' in globals(), 'os' in globals())"); strings.TrimSpace(got) != "1 False False" {
		t.Fatalf("a second rewind, from the restored state: %q", got)
	}
}

// TestRewindLimit: after ten cells only the last seven can be undone (eight
// checkpoints are kept, the newest being the asking cell's own start): a
// rewind past them fails in the cell, saying why, and changes nothing; one
// within them works.
func TestRewindLimit(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	for i := 1; i <= 10; i++ {
		b.ok("x = " + string(rune('0'+i%10)))
	}
	r := b.run("rewind(8)")
	if !r.isError {
		t.Fatalf("a rewind past the kept checkpoints worked:\n%s", r.text)
	}
	mustContain(t, r.text, "the checkpoint before that cell is gone: at most 8 are kept; the earliest cell that can be rewound to is 7 cells back")
	if got := b.ok("print(x)"); strings.TrimSpace(got) != "0" {
		t.Fatalf("a refused rewind changed the state: x is %q", got)
	}
	mustContain(t, b.ok("rewind(7)"), "[rewound 7 cells and this one")
	// Twelve cells ran (the refused rewind and the print count): the
	// seventh back is the state after cell 5.
	if got := b.ok("print(x)"); strings.TrimSpace(got) != "5" {
		t.Fatalf("rewind(7) after twelve cells: x is %q, want 5", got)
	}
}

// TestRewindCheckpointsOff: with CODEBRIDGE_CHECKPOINTS=0 the sandbox
// takes no checkpoints, and rewind(1) fails in the cell, saying
// checkpoints are off and how to turn them on, and changes nothing.
func TestRewindCheckpointsOff(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil), "CODEBRIDGE_CHECKPOINTS=0")
	b.ok("x = 1")
	b.ok("x = 2")
	r := b.run("rewind(1)")
	if !r.isError {
		t.Fatalf("a rewind with checkpoints off worked:\n%s", r.text)
	}
	mustContain(t, r.text, "checkpoints are off in this sandbox", "start the bridge with --checkpoints N")
	if got := b.ok("print(x)"); strings.TrimSpace(got) != "2" {
		t.Fatalf("a refused rewind changed the state: x is %q", got)
	}
}

// TestRewindAfterReplace: when the sandbox ended and a new one replaced
// it, rewind says the checkpoints of the earlier cells are gone.
func TestRewindAfterReplace(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	b.ok("a = 1")
	b.ok("a = 2")
	r := b.run("import os\nos._exit(3)")
	mustContain(t, r.text, "variables, imports and files from earlier calls are gone")
	r = b.run("rewind(1)")
	if !r.isError {
		t.Fatalf("a rewind in a new sandbox worked:\n%s", r.text)
	}
	mustContain(t, r.text, "only 0 cells lie behind this one in this sandbox", "the checkpoints of earlier cells are gone")
}

// TestRewindMemoryPressure: in a 256 MiB sandbox, a cell that rewrites
// 60 MiB the checkpoint before it shares and allocates 100 MiB more
// leaves no room for that checkpoint: it is dropped (or the kernel kills
// it first, never the runtime), the rewind to it fails saying so, and
// the session is as it was.
func TestRewindMemoryPressure(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil), "CODEBRIDGE_MEMORY=256m")
	if got := sandboxCgroup(t, b, "memory.max", "memory/memory.limit_in_bytes"); got != "268435456" {
		skipOrFail(t, "the sandbox's memory limit is %s, not 256 MiB: this engine cannot apply it", got)
	}
	b.ok("big = bytearray(b'\\x01') * (60 << 20)")
	b.ok("for i in range(0, len(big), 4096):\n    big[i] = 2\nmore = bytearray(b'\\x03') * (100 << 20)")
	r := b.run("rewind(1)")
	if !r.isError {
		t.Fatalf("a rewind to a checkpoint that memory pressure took worked:\n%s", r.text)
	}
	if !strings.Contains(r.text, "MiB of memory") && !strings.Contains(r.text, "killed (out of memory") {
		t.Fatalf("the failed rewind does not say memory was short:\n%s", r.text)
	}
	t.Logf("the refused rewind:\n%s", r.text)
	// The answer may go on with a note on stderr (another checkpoint
	// dropped): its first line is the printed one.
	if got := b.ok("print(big[4096], len(more) >> 20)"); strings.SplitN(got, "\n", 2)[0] != "2 100" {
		t.Fatalf("after the refused rewind the session changed: %q", got)
	}
}

// TestRewindThenCrash: a runtime that a rewind made (the checkpoint that
// took over) and that then exits is reported as that runtime ended: the
// init that followed the hand-over (pid 1, or in a Kubernetes Pod the
// process the first rewind turned into one) exits as it did (that it
// leaves no process behind: pyruntime/tests/test_rewind.py); the next
// sandbox has no checkpoints.
func TestRewindThenCrash(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	b.ok("a = 1")
	b.ok("a = 2")
	mustContain(t, b.ok("rewind(1)"), "[rewound 1 cell and this one")
	b.ok("b = 3")
	mustContain(t, b.ok("rewind(1)"), "[rewound 1 cell and this one") // the second hand-over goes through the init
	r := b.run("import os\nos._exit(3)")
	mustContain(t, r.text, "exited with code 3", "variables, imports and files from earlier calls are gone")
	r = b.run("rewind(1)")
	if !r.isError {
		t.Fatalf("a rewind in the new sandbox worked:\n%s", r.text)
	}
	mustContain(t, r.text, "only 0 cells lie behind this one in this sandbox", "the checkpoints of earlier cells are gone")
}
