package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// forkHandle is the handle a fork's answer gives, or fails the test.
func forkHandle(t *testing.T, answer string) string {
	t.Helper()
	m := handleInText.FindStringSubmatch(answer)
	if m == nil || !strings.Contains(answer, "[forked: new session") {
		t.Fatalf("fork() gave no new session's handle:\n%s", answer)
	}
	return m[1]
}

// TestForkDiverges: over stdio, fork() gives a new session's handle; the
// fork starts with the parent's variables and a copy of its files in its
// own folder (its working directory), and what it changes (a variable, a
// file by a relative path) leaves the parent as it was, while an
// absolute /workspace path is the parent's file. A rewind in the parent
// after the fork works. A fork can be forked, and the grandchild has the
// fork's state. When the bridge ends, no
// container is left.
func TestForkDiverges(t *testing.T) {
	needEnv(t)
	forkDiverges(t)
}

// TestForkDivergesAttach is TestForkDiverges with the parent's frames on
// the engine's attach stream: closing the parent's session ends only its
// runtime, the fork's goes on.
func TestForkDivergesAttach(t *testing.T) {
	needEnv(t)
	forkDiverges(t, "CODEBRIDGE_CHANNEL=attach")
}

func forkDiverges(t *testing.T, env ...string) {
	b := startBridge(t, home(t, nil), env...)
	b.ok("x = 1\nopen('/workspace/a.txt', 'w').write('parent')")
	out := b.ok("fork()")
	mustContain(t, out, "Shared: the container with its CPU, memory and process limits, /tmp, and absolute /workspace paths",
		"Its own: interpreter, handle, tool-call ledger, gate session and approvals", "holds a copy of this workspace's files")
	h := forkHandle(t, out)
	got := b.ok("x = 2\nopen('a.txt', 'w').write('fork')\nimport os\nprint(x, open('/workspace/a.txt').read(), os.getcwd().startswith('/workspace/.forks/'))", "session", h)
	if strings.TrimSpace(got) != "2 parent True" {
		t.Fatalf("the fork printed %q, want its own x, the parent's absolute file and a folder of its own", got)
	}
	if got := b.ok("print(x, open('a.txt').read())"); strings.TrimSpace(got) != "1 parent" {
		t.Fatalf("the fork touched its parent: the parent printed %q", got)
	}
	// A rewind after the fork (on Kubernetes, after the first fork made
	// the init) restores the parent's state before the undone cell.
	b.ok("x = 5")
	mustContain(t, b.ok("rewind(1)"), "[rewound 1 cell and this one")
	if got := b.ok("print(x)"); strings.TrimSpace(got) != "1" {
		t.Fatalf("a rewind after the fork: the parent printed %q, want 1", got)
	}
	h2 := forkHandle(t, b.ok("fork()", "session", h))
	if got := b.ok("print(x, open('a.txt').read())", "session", h2); strings.TrimSpace(got) != "2 fork" {
		t.Fatalf("the fork of the fork printed %q, want the fork's state", got)
	}
	b.close()
	if left := containersOf(t, b.pid); len(left) != 0 {
		t.Fatalf("%d containers left after the bridge ended", len(left))
	}
}

// TestForkBomb: forks of forks, each forking again, meet the limit of
// runtimes per container with an error that says so, and every session
// made goes on working, the first one too.
func TestForkBomb(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	b.ok("n = 0")
	handles := []string{""}
	for i := 0; i < 40; i++ {
		last := handles[len(handles)-1]
		args := []any{}
		if last != "" {
			args = []any{"session", last}
		}
		r := b.run("n += 1\nfork()", args...)
		if strings.Contains(r.text, "[fork not made:") {
			if !strings.Contains(r.text, "the most one container holds") && !strings.Contains(r.text, "processes and threads in use") {
				t.Fatalf("the fork bomb met no clear limit:\n%s", r.text)
			}
			t.Logf("after %d forks: %s", len(handles)-1, r.text)
			break
		}
		handles = append(handles, forkHandle(t, r.text))
	}
	if len(handles) < 2 || len(handles) > 40 {
		t.Fatalf("%d forks made: the limit was not met, or no fork was made", len(handles)-1)
	}
	for _, h := range []string{"", handles[1], handles[len(handles)-1]} {
		args := []any{}
		if h != "" {
			args = []any{"session", h}
		}
		b.ok("print(n)", args...)
	}
	b.close()
	if left := containersOf(t, b.pid); len(left) != 0 {
		t.Fatalf("%d containers left after the bridge ended", len(left))
	}
}

// TestForkHTTP: over HTTP with two principals, alice forks her session
// and the fork diverges from it; bob, holding alice's handles, can fork
// neither her session nor her fork, nor run in them: each answer is the
// unknown-handle answer, and alice's state is untouched. Ending alice's
// parent session and her fork's fork leaves her fork working, in the one
// container.
func TestForkHTTP(t *testing.T) {
	needEnv(t)
	b, aliceTok, bobTok := teamBridge(t, home(t, nil), nil)
	alice := b.statelessAs(t, "alice-new", aliceTok, nil)
	h := callHandle(t, alice, "x = 1", "").handle
	if h == "" {
		t.Fatal("alice's first call gave no handle")
	}
	fa := callHandle(t, alice, "fork()", h)
	hf := forkHandle(t, fa.text)
	if got := callHandle(t, alice, "x = 2\nprint(x)", hf); got.isError || strings.TrimSpace(got.text) != "2" {
		t.Fatalf("alice's fork: %q", got.text)
	}
	bob := b.statelessAs(t, "bob", bobTok, nil)
	for _, stolen := range []string{h, hf} {
		r := callHandle(t, bob, "x = 99\nfork()", stolen)
		if !r.isError || !strings.Contains(r.text, "knows no session with this handle") || strings.Contains(r.text, "[forked") {
			t.Fatalf("bob with alice's handle got:\n%s", r.text)
		}
	}
	if got := callHandle(t, alice, "print(x)", h); strings.TrimSpace(got.text) != "1" {
		t.Fatalf("alice's session after bob's tries: %q", got.text)
	}
	if got := callHandle(t, alice, "print(x)", hf); strings.TrimSpace(got.text) != "2" {
		t.Fatalf("alice's fork after bob's tries: %q", got.text)
	}
	// Ending the parent, then the fork's own fork, ends their runtimes,
	// not the container the fork uses: its init follows every runtime.
	hg := forkHandle(t, callHandle(t, alice, "fork()", hf).text)
	before := strings.TrimSpace(callHandle(t, alice, "import os\nprint(os.getppid())", hf).text)
	for _, gone := range []string{h, hg} {
		mustContain(t, callHandle(t, alice, "print(await runtime.end_session("+strconvQuote(tagOf(gone))+"))", hf).text, "{'ended': True}")
		if got := callHandle(t, alice, "print(x)", hf); got.isError || strings.TrimSpace(got.text) != "2" {
			t.Fatalf("alice's fork after another session of its container ended: %q", got.text)
		}
		if gone == h { // her (detachable) parent's runtime exits: the fork is the init's now
			if got := callHandle(t, alice, "parent = "+before+"\n"+parentGone, hf); strings.TrimSpace(got.text) != "moved" {
				t.Fatalf("the ended parent's runtime (pid %s) still runs: the fork's parent is %q, not the init", before, got.text)
			}
		}
	}
	waitContainers(t, b.cmd.Process.Pid, 1)
}

// parentGone prints "moved" once the fork's parent is no longer the
// runtime it was forked from (the pid the cell sets as parent) but the init (pid 1 under
// Docker and Podman; on Kubernetes the process the bridge exec'd, which
// became the init), or its parent pid after 20 s (within the call's
// 30 s).
const parentGone = `import os, time
deadline = time.monotonic() + 20
while os.getppid() == parent and time.monotonic() < deadline:
    time.sleep(0.05)
print("moved" if os.getppid() != parent else parent)`

// tagOf is the tag a listing gives the session of handle h.
func tagOf(h string) string {
	sum := sha256.Sum256([]byte(h))
	return "s-" + hex.EncodeToString(sum[:])[:16]
}
