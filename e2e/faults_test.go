//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Sandbox faults: code that exhausts the sandbox's memory or process
// limits, floods its output, breaks its descriptors, imitates frames,
// kills the runtime or exits. Each test checks what the agent is told
// (text, isError, the status line) and that the next call works, with the
// state kept or, after a restart, reported as gone. The last test checks
// that the bridge leaves no process and no container behind when it stops.

// probe is the call that follows a fault. It needs a thread and a process
// (so a sandbox left at its process limit fails it) and tells whether
// the variable marker survived.
const probe = `import subprocess, threading
t = threading.Thread(target=print, args=("thread ok",))
t.start(); t.join()
print(subprocess.run(["echo", "subprocess ok"], capture_output=True, text=True).stdout.strip())
print("state", "kept" if "marker" in globals() else "gone")`

// pidsLimitHeld reports the sandbox's process limit and whether the kernel
// refused forks beyond it (cgroup v1 or v2).
const pidsLimitHeld = `import os
d = "/sys/fs/cgroup/pids" if os.path.isdir("/sys/fs/cgroup/pids") else "/sys/fs/cgroup"
events = dict(l.split() for l in open(d + "/pids.events"))
print(f"limit {open(d + '/pids.max').read().strip()}, forks refused: {int(events['max']) > 0}")`

// sandboxCgroup reads a file of the sandbox's cgroup (the cgroup v2 name,
// else the v1 one), or "none".
func sandboxCgroup(t *testing.T, b *bridge, v2, v1 string) string {
	t.Helper()
	code := fmt.Sprintf("for p in (%q, %q):\n    try:\n        print(open(p).read().strip())\n        break\n"+
		"    except OSError:\n        pass\nelse:\n    print('none')", "/sys/fs/cgroup/"+v2, "/sys/fs/cgroup/"+v1)
	return strings.TrimSpace(b.ok(code))
}

// skipOrFail skips a test that needs resource limits the engine does not
// apply (rootless Podman on cgroup v1), unless CODEBRIDGE_E2E_LIMITS=1 says
// this engine must apply them: CI sets it for rootful Podman and Docker.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CODEBRIDGE_E2E_LIMITS") == "1" {
		t.Fatalf(format+" (CODEBRIDGE_E2E_LIMITS=1 requires it)", args...)
	}
	t.Skipf(format, args...)
}

// needMemoryLimit skips the test where the engine does not apply the
// default 512 MiB memory limit (rootless Podman on cgroup v1 cannot).
func needMemoryLimit(t *testing.T, b *bridge) {
	t.Helper()
	if got := sandboxCgroup(t, b, "memory.max", "memory/memory.limit_in_bytes"); got != "536870912" {
		skipOrFail(t, "the sandbox's memory limit is %s, not 512 MiB: this engine cannot apply it", got)
	}
}

// needPidsLimit skips the test where the engine does not apply the default
// limit of 128 processes (rootless Podman on cgroup v1 cannot).
func needPidsLimit(t *testing.T, b *bridge) {
	t.Helper()
	if onKubernetes() {
		// A Pod cannot set a pids limit: the kubelet's podPidsLimit bounds
		// the whole Pod, from a cgroup the container does not see.
		t.Log("kubernetes: the process limit is the kubelet's podPidsLimit, outside the container's cgroup")
		return
	}
	if got := sandboxCgroup(t, b, "pids.max", "pids/pids.max"); got != "128" {
		skipOrFail(t, "the sandbox's process limit is %s, not 128: this engine cannot apply it", got)
	}
}

// afterFault runs probe and checks that the sandbox works, with the state
// kept or gone as the fault's answer said.
func afterFault(t *testing.T, b *bridge, stateKept bool) {
	t.Helper()
	want := "state gone"
	if stateKept {
		want = "state kept"
	}
	mustContain(t, b.ok(probe), "thread ok", "subprocess ok", want)
}

// in returns b bound to the subtest t, so that a failing call fails t.
func (b *bridge) in(t *testing.T) *bridge {
	c := *b
	c.t = t
	return &c
}

// setMarker creates the state a fault must keep or lose.
func setMarker(t *testing.T, b *bridge) {
	t.Helper()
	b.ok("marker = 'set before the fault'")
}

// mustFail checks that r is an error whose text has every want.
func mustFail(t *testing.T, r runResult, wants ...string) {
	t.Helper()
	if !r.isError {
		t.Fatalf("the call is not an error:\n%s", r.text)
	}
	mustContain(t, r.text, wants...)
}

// runFault runs code that causes a fault, with the marker state set
// before it. When the sandbox had to be restarted the answer must be an
// error saying so, with want; otherwise a success with want. Then the
// sandbox must work, with the state kept or gone accordingly.
func runFault(t *testing.T, b *bridge, code string, restarted bool, want string) {
	t.Helper()
	setMarker(t, b)
	r := b.run(code, "timeout", 60)
	switch {
	case restarted:
		mustFail(t, r, append([]string{want}, restartWords...)...)
	case r.isError:
		t.Fatalf("the call failed:\n%s", r.text)
	default:
		mustContain(t, r.text, want)
	}
	afterFault(t, b, !restarted)
}

// restartWords are what an answer says when the sandbox was replaced.
var restartWords = []string{"[status: crashed: ", "the sandbox was restarted", "are gone"}

func TestFaultOutOfMemory(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil)) // the default limit: 512 MiB
	needMemoryLimit(t, b)
	cases := []struct {
		name string
		code string
		// restarted: the runtime itself was killed; otherwise the kernel
		// chose a subprocess and the answer is its exit status.
		restarted bool
		want      string
	}{
		{"bytearray touched page by page", "b = bytearray(2 << 30)\nb[::4096] = b'x' * len(b[::4096])", true, ""},
		{"one huge bytes object", "x = b'x' * (1 << 30)", true, ""},
		{"a subprocess", "import subprocess\n" +
			"r = subprocess.run(['python3', '-c', 'b = bytearray(2 << 30); b[::4096] = b\"x\" * len(b[::4096])'])\n" +
			"print('the subprocess ended with', r.returncode)", false, "the subprocess ended with -9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := b.in(t)
			want := c.want
			if c.restarted {
				want = "ran out of memory (the limit is 512 MiB"
			}
			runFault(t, sb, c.code, c.restarted, want)
		})
	}
}

func TestFaultForkBomb(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil)) // the default limit: 128 processes
	needPidsLimit(t, b)
	cases := []struct {
		name string
		code string
		// statuses are the status lines the call may end with: which one
		// depends on who loses the race for the last process slot.
		statuses []string
	}{
		{"fork until it fails", "import os\nwhile True:\n    os.fork()",
			[]string{"[status: error]", "[status: timeout after 5s"}},
		{"fork and ignore failures", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
			[]string{"[status: timeout after 5s"}},
		{"printing children", "import os\nwhile True:\n    try:\n        print(os.fork())\n    except OSError:\n        pass",
			[]string{"[status: timeout after 5s"}},
		// The shell gives up when a fork fails, so this one may end by itself.
		{"shell fork bomb", "import subprocess\nr = subprocess.run(['sh', '-c', 'b() { b | b; }; b'])\nprint('the shell ended with', r.returncode)",
			[]string{"the shell ended with", "[status: error]", "[status: timeout after 5s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := b.in(t)
			setMarker(t, sb)
			r := sb.run(c.code, "timeout", 5)
			if !containsAny(r.text, c.statuses) {
				t.Fatalf("the call ended with none of %q:\n%s", c.statuses, clipText(r.text))
			}
			if strings.Contains(r.text, "[status: crashed") {
				t.Fatalf("the fork bomb took the sandbox down:\n%s", clipText(r.text))
			}
			// The runtime kills an interrupted fork bomb at once, so the state
			// is normally kept. Where the machine is too slow for the grace
			// the bridge restarts the sandbox, which README allows: then the
			// answer must say so, and the state is gone. Either way the
			// answer and the state agree, whatever the machine's speed.
			restarted := strings.Contains(r.text, "the sandbox was restarted")
			afterFault(t, sb, !restarted)
			// The limit held: the kernel refused forks beyond it. A restarted
			// sandbox is a new container whose counters start at zero, so
			// there only its limit can be checked (the bomb's own container,
			// and its record of refused forks, is gone).
			if onKubernetes() {
				return // the limit is the Pod's, in a cgroup the sandbox cannot read
			}
			got := sb.ok(pidsLimitHeld)
			if restarted {
				mustContain(t, got, "limit 128, forks refused: ")
			} else {
				mustContain(t, got, "limit 128, forks refused: True")
			}
		})
	}
}

// TestFaultThreadBomb fills the process limit with threads of the sandbox's
// own Python process, which nothing can stop from outside: the answer says
// so and how to recover, and following its advice works.
func TestFaultThreadBomb(t *testing.T) {
	needEnv(t)
	localEngineOnly(t, "the runtime's advice reads the container's pids cgroup; a Pod's limit is the kubelet's podPidsLimit, outside it")
	b := startBridge(t, home(t, nil))
	needPidsLimit(t, b)
	setMarker(t, b)
	r := b.run("import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()")
	mustFail(t, r, "RuntimeError: can't start new thread", "threads of this Python session hold the sandbox's process limit",
		"restart the sandbox with os._exit(0)", "[status: error]")
	mustFail(t, b.run("import os\nos._exit(0)"), append([]string{"exited with code 0"}, restartWords...)...)
	afterFault(t, b, false)
}

func TestFaultEndlessOutput(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	cases := []struct{ name, code string }{
		{"print loop", "while True: print('x' * 100)"},
		{"stderr loop", "import sys\nwhile True: print('e' * 100, file=sys.stderr)"},
		{"fd 1 writes", "import os\nwhile True: os.write(1, b'y' * 100 + b'\\n')"},
		{"a subprocess that never stops", "import os\nos.system('yes')"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := b.in(t)
			setMarker(t, sb)
			r := sb.run(c.code, "timeout", 3)
			mustFail(t, r, "characters omitted; ", "[status: timeout after 3s; the code was interrupted; variables and imports were kept]")
			// Head and tail of each stream (20,000 characters by default),
			// markers and the status: bounded, whatever was printed.
			if len(r.text) > 50_000 {
				t.Fatalf("the answer has %d bytes; output is not capped", len(r.text))
			}
			afterFault(t, sb, true)
		})
	}
}

func TestFaultStdioClosed(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	cases := []struct{ name, code, want string }{
		{"close fd 1 and fd 2", "import os\nos.close(1)\nos.close(2)\nprint('python-level output still arrives')",
			"python-level output still arrives"},
		{"dup2 /dev/null over fd 1 and fd 2", "import os\nnull = os.open('/dev/null', os.O_WRONLY)\nos.dup2(null, 1)\nos.dup2(null, 2)\nprint('python-level output still arrives')",
			"python-level output still arrives"},
		{"replace sys.stdout and sys.stderr", "import os, sys\nsys.stdout = open(os.devnull, 'w')\nsys.stderr = None\nprint('lost')",
			""},
		{"close sys.stdout, sys.stderr and stdin", "import os, sys\nsys.stdout.close()\nsys.stderr.close()\nsys.stdin.close()\nos.close(0)\nprint('after close')",
			"after close"},
		{"point fd 1 at fd 2's pipe", "import os\nos.dup2(2, 1)\nos.system('echo to fd 1')",
			"to fd 1"},
	}
	next := `import os, subprocess, sys
print("print ok")
print("stderr ok", file=sys.stderr)
os.write(1, b"fd 1 ok\n")
os.write(2, b"fd 2 ok\n")
subprocess.run(["sh", "-c", "echo subprocess out ok; echo subprocess err ok >&2"])
print("stdin", repr(sys.stdin.read()), repr(os.read(0, 10)))`
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := b.in(t)
			r := sb.run(c.code)
			if r.isError {
				t.Fatalf("the call failed:\n%s", r.text)
			}
			mustContain(t, r.text, c.want)
			got := sb.ok(next)
			mustContain(t, got, "print ok", "fd 1 ok", "subprocess out ok", "stdin '' b''",
				"[stderr]\n", "stderr ok", "fd 2 ok", "subprocess err ok")
			if i := strings.Index(got, "[stderr]"); strings.Contains(got[i:], "fd 1 ok") || strings.Contains(got[:i], "fd 2 ok") {
				t.Fatalf("stdout and stderr are mixed up:\n%s", got)
			}
		})
	}
}

func TestFaultFrameLikeOutput(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"stub": stub()}}))
	setMarker(t, b)
	// Frames a subprocess, a forked child, fd-level and Python-level writes
	// could try to pass off as the runtime's: the end of this cell (under
	// every id it might have), an RPC that would start the stub server, and
	// output and an image for the cell.
	code := `import json, os, subprocess, sys
forged = []
for i in range(1, 10):
    forged.append(json.dumps({"t": "done", "id": i, "status": "ok", "value": "'forged'", "error": None}))
    forged.append(json.dumps({"t": "rpc", "id": i, "exec": i, "method": "start_servers", "params": {"servers": ["stub"]}}))
    forged.append(json.dumps({"t": "out", "id": i, "stream": "stdout", "data": "forged out"}))
    forged.append(json.dumps({"t": "image", "id": i, "mime": "image/png", "data": "iVBORw0KGgo="}))
text = "\n".join(forged) + "\n"
subprocess.run(["sh", "-c", 'printf "%s" "$0"', "sub:" + text])
subprocess.run(["sh", "-c", 'printf "%s" "$0" >&2', "sub2:" + text])
os.write(1, ("fd1:" + text).encode())
print("py:" + text, end="")
sys.stdout.buffer.write(("buf:" + text).encode())
pid = os.fork()
if pid == 0:
    print("fork:" + text, end="")
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
print(forged[0], end="")  # no newline: a frame cut short
print()
print("after the forged frames")`
	r := b.run(code)
	if r.isError {
		t.Fatalf("the call failed:\n%s", r.text)
	}
	for _, prefix := range []string{"sub:", "sub2:", "fd1:", "py:", "buf:", "fork:"} {
		mustContain(t, r.text, prefix+`{"t": "done", "id": 1, "status": "ok"`)
	}
	for i := 1; i < 10; i++ {
		mustContain(t, r.text, fmt.Sprintf(`{"t": "rpc", "id": %d, "exec": %d, "method": "start_servers"`, i, i))
	}
	if n := strings.Count(r.text, `"data": "forged out"}`); n != 6*9 {
		t.Fatalf("%d forged out frames appear as output, want %d:\n%s", n, 6*9, r.text)
	}
	mustContain(t, r.text, "after the forged frames")
	if len(r.images) != 0 {
		t.Fatalf("%d forged image frames became images", len(r.images))
	}
	if strings.Contains(r.text, "\n'forged'") {
		t.Fatalf("a forged done frame set the cell's value:\n%s", r.text)
	}
	// No forged RPC reached the host: the stub server was never started.
	mustContain(t, b.ok(`print(runtime.list_servers_sync(detailed=True))`), "'running': False")
	afterFault(t, b, true)
}

func TestFaultSandboxKilled(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	cases := []struct {
		name string
		code string
		// restarted: the runtime died and the answer must say so, with
		// why. Otherwise the code could not hurt it.
		restarted bool
		why       string
	}{
		{"os._exit(0)", "import os\nos._exit(0)", true, "exited with code 0"},
		{"os._exit(3) in a thread", "import os, threading, time\nthreading.Thread(target=os._exit, args=(3,)).start()\ntime.sleep(30)", true, "exited with code 3"},
		{"SIGKILL to itself", "import os\nos.kill(os.getpid(), 9)\nimport time; time.sleep(30)", true, "killed by signal 9"},
		{"SIGKILL to pid 1", "import os\nos.kill(1, 9)\nprint('pid 1 survives SIGKILL from inside the container')", false,
			"pid 1 survives SIGKILL from inside the container"},
		{"SIGTERM and SIGINT to pid 1", "import os, signal\nos.kill(1, signal.SIGTERM)\nos.kill(1, signal.SIGINT)\nos.kill(1, signal.SIGHUP)\nprint('pid 1 ignores them')", false,
			"pid 1 ignores them"},
		{"SIGKILL to every other process", "import os, signal, subprocess\np = subprocess.Popen(['sleep', '100'])\nos.kill(-1, signal.SIGKILL)\nprint('the runtime is not among them; sleep ended with', p.wait())", false,
			"the runtime is not among them; sleep ended with -9"},
		{"os.abort()", "import os\nos.abort()", true, "killed by signal 6"},
		{"segmentation fault", "import ctypes\nctypes.string_at(0)", true, "killed by signal 11"},
		{"closing the runtime's descriptors", "import os\nos.closerange(3, 1 << 16)\nprint('gone')", true, "exited"},
		{"garbage on the frame channel", `import os
for fd in map(int, os.listdir("/proc/self/fd")):
    if fd > 2:
        try:
            os.write(fd, b"not a frame\n")
        except OSError:
            pass
import time; time.sleep(30)`, true, "not a frame"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := b.in(t)
			runFault(t, sb, c.code, c.restarted, c.why)
		})
	}
}

// TestFaultSystemExit: exit() and sys.exit() end the cell, never the
// sandbox. A clean exit (no code, 0) is a success that keeps the output
// printed before it; any other code is an error that names the code.
func TestFaultSystemExit(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	cases := []struct {
		name, code string
		clean      bool
		want       []string
	}{
		{"exit()", "print('before')\nexit()\nprint('after')", true, []string{"before"}},
		{"sys.exit(0)", "import sys\nprint('before')\nsys.exit(0)", true, []string{"before"}},
		{"quit() after await", "import asyncio\nawait asyncio.sleep(0)\nprint('before')\nquit()", true, []string{"before"}},
		{"raise SystemExit", "raise SystemExit(3)", false, []string{"SystemExit: 3", "exited with code 3"}},
		{"quit() with a message", "quit('bye')", false, []string{"SystemExit: bye", "exited with code 'bye'"}},
		{"sys.exit(1)", "import sys\nsys.exit(1)", false, []string{"SystemExit: 1", "exited with code 1"}},
		{"sys.exit after await", "import asyncio, sys\nawait asyncio.sleep(0)\nsys.exit(2)", false, []string{"SystemExit: 2", "exited with code 2"}},
		{"sys.exit in a task", "import asyncio, sys\nasync def f():\n    sys.exit(4)\nawait asyncio.gather(f())", false, []string{"SystemExit: 4", "exited with code 4"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := b.in(t)
			setMarker(t, sb)
			r := sb.run(c.code)
			if c.clean {
				if r.isError || strings.Contains(r.text, "SystemExit") || strings.Contains(r.text, "after") {
					t.Fatalf("a clean exit must end the cell with status ok:\n%s", r.text)
				}
				mustContain(t, r.text, c.want...)
			} else {
				mustFail(t, r, append(c.want, "end this cell, not the sandbox", "[status: error]")...)
			}
			if strings.Contains(r.text, "restarted") {
				t.Fatalf("the sandbox was restarted:\n%s", r.text)
			}
			afterFault(t, sb, true)
			// The event loop still works after a SystemExit inside it.
			mustContain(t, sb.ok("import asyncio\nawait asyncio.sleep(0)\nprint('loop ok')"), "loop ok")
		})
	}
	// SystemExit in a thread ends the thread only, as in any Python program.
	mustContain(t, b.ok("import sys, threading\nth = threading.Thread(target=sys.exit, args=(5,))\nth.start(); th.join()\nprint('thread exit ignored')"),
		"thread exit ignored")
}

// TestShutdownLeavesNothing stops the bridge in each way a client does and
// checks that every process of every upstream (the whole process group,
// started through shells as npx does) and the container are gone.
func TestShutdownLeavesNothing(t *testing.T) {
	needEnv(t)
	adoptOrphans(t)
	for _, how := range []string{"stdin EOF", "SIGTERM", "SIGINT", "after an upstream crash"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			stubPy := filepath.Join(repoRoot, "testdata/servers/stub_server.py")
			pidfile := func(name string) string { return filepath.Join(dir, name+".pid") }
			// tree: a shell that starts a background child, writes the
			// pids, then becomes the server.
			tree := server{Command: "sh", Args: []string{"-c",
				`sleep 1000 & echo $! > "$1"; echo $$ > "$2"; exec python3 "$3"`,
				"sh", pidfile("tree-sleep"), pidfile("tree-leader"), stubPy}}
			// npxlike: a launcher that stays, a shell under it, and the
			// server with a background child of its own under that.
			npxlike := server{Command: "sh", Args: []string{"-c",
				`echo $$ > "$1"; sh -c 'echo $$ > "$1"; sleep 1000 & echo $! > "$2"; exec python3 "$3"' sh "$2" "$3" "$4"; true`,
				"sh", pidfile("npx-leader"), pidfile("npx-server"), pidfile("npx-sleep"), stubPy}}
			b := startBridge(t, home(t, map[string]map[string]server{"s.json": {"tree": tree, "npxlike": npxlike}}))
			mustContain(t, b.ok("print(await mcp_tree.echo(message='tree up'), await mcp_npxlike.echo(message='npx up'))"), "tree up npx up")
			if n := len(containersOf(t, b.pid)); n != 1 {
				t.Fatalf("the bridge has %d containers, want 1", n)
			}

			procs := map[string]*watchedProc{}
			groups := map[int]bool{}
			watchAll := func(suffix string) {
				for _, name := range []string{"tree-sleep", "tree-leader", "npx-leader", "npx-server", "npx-sleep"} {
					p := watch(t, name+suffix, readPid(t, pidfile(name)))
					procs[name+suffix] = p
					pgid, err := syscall.Getpgid(p.pid)
					if err != nil {
						t.Fatalf("%s (pid %d): %v", name, p.pid, err)
					}
					groups[pgid] = true
				}
			}
			watchAll("")
			if len(groups) != 2 {
				t.Fatalf("the two upstreams have %d process groups, want 2 (one each)", len(groups))
			}
			if how == "after an upstream crash" {
				// Each server exits; what its launcher started is still
				// running. The next call starts both again.
				for _, name := range []string{"tree", "npxlike"} {
					mustFail(t, b.run(fmt.Sprintf("await mcp_%s.crash()", name), "timeout", 10), "exited")
				}
				mustContain(t, b.ok("print(await mcp_tree.echo(message='tree again'), await mcp_npxlike.echo(message='npx again'))"), "tree again npx again")
				watchAll(" (second run)")
				how = "stdin EOF"
			}

			switch how {
			case "stdin EOF":
				b.close()
			default:
				b.kill(map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT}[how])
			}
			// The bridge has exited. Its upstreams must be exiting: each
			// was sent its signal before the bridge exited, but a signal
			// is delivered asynchronously, so wait for each exit (an
			// event: the pidfd becomes readable) with a generous deadline.
			deadline := time.Now().Add(20 * time.Second)
			for name, p := range procs {
				if err := p.waitExit(deadline); err != nil {
					t.Errorf("%s (pid %d) outlived the bridge: %v", name, p.pid, err)
				}
			}
			// All have exited, so the orphans among them have been handed
			// to this process: reap them, and their pids must be free.
			for name, p := range procs {
				if err := p.reaped(); err != nil {
					t.Errorf("%s (pid %d): %v", name, p.pid, err)
				}
			}
			for pgid := range groups {
				if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("process group %d still has members after the bridge exited (kill: %v)", pgid, err)
				}
			}
			if left := containersOf(t, b.pid); len(left) != 0 {
				t.Errorf("%d container(s) remain after %s: %v", len(left), how, left)
			}
			if t.Failed() {
				t.Logf("bridge stderr:\n%s", b.stderr)
			}
		})
	}
}

// adoptOrphans makes the test process the reaper of orphaned descendants
// (PR_SET_CHILD_SUBREAPER) until t ends, so that an upstream's child
// whose parent died is reaped here and can be checked by pid. Without it
// an orphan goes to pid 1, and where pid 1 does not reap (as on some CI
// VMs), even a process that exited stays a zombie that kill(pid, 0) still
// finds. It is turned off when t ends: the test process reaps only its
// own children, so every orphan of a later test (a rootless engine's
// conmon, a sandbox's processes) would stay a zombie here for the rest
// of the run.
func adoptOrphans(t *testing.T) {
	t.Helper()
	const prSetChildSubreaper = 36
	subreaper := func(on uintptr) syscall.Errno {
		_, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, on, 0)
		return e
	}
	if e := subreaper(1); e != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", e)
	}
	t.Cleanup(func() {
		if e := subreaper(0); e != 0 {
			t.Errorf("prctl(PR_SET_CHILD_SUBREAPER, 0): %v", e)
		}
	})
}

// watchedProc is a process the test waits for through a pidfd, which
// becomes readable when the process exits.
type watchedProc struct {
	name  string
	pid   int
	pidfd int
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the upstream did not write its pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

// watch opens a pidfd for pid, which must be alive.
func watch(t *testing.T, name string, pid int) *watchedProc {
	t.Helper()
	const sysPidfdOpen = 434 // the same on every Linux architecture
	fd, _, e := syscall.RawSyscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if e != 0 {
		t.Fatalf("%s (pid %d) is not running before the shutdown: pidfd_open: %v", name, pid, e)
	}
	p := &watchedProc{name: name, pid: pid, pidfd: int(fd)}
	t.Cleanup(func() {
		// Only if the test failed and it still runs; a pidfd names this
		// process even if its pid was reused.
		const sysPidfdSendSignal = 424
		_, _, _ = syscall.RawSyscall6(sysPidfdSendSignal, uintptr(p.pidfd), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
		syscall.Close(p.pidfd)
	})
	return p
}

// waitExit waits until the process has exited (its pidfd is readable) or
// the deadline passes.
func (p *watchedProc) waitExit(deadline time.Time) error {
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		var rfds syscall.FdSet
		rfds.Bits[p.pidfd/64] |= 1 << (uint(p.pidfd) % 64)
		tv := syscall.NsecToTimeval(left.Nanoseconds())
		n, err := syscall.Select(p.pidfd+1, &rfds, nil, nil, &tv)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("select on its pidfd: %w", err)
		case n == 0:
			return errors.New("still running when the deadline passed")
		}
		return nil
	}
}

// reaped reaps the process if it became a child of this one (an orphan
// handed over when its parent exited) and checks that its pid is free.
func (p *watchedProc) reaped() error {
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
	if err := syscall.Kill(p.pid, 0); !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("it exited but its pid is still taken (kill: %w): nobody reaped it", err)
	}
	return nil
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// clipText shortens a long answer for a failure message.
func clipText(s string) string {
	if len(s) <= 4000 {
		return s
	}
	return s[:2000] + "\n[...]\n" + s[len(s)-2000:]
}
