//go:build linux

package e2e

import (
	"strings"
	"testing"
)

// Hostile code against the sandbox's own hardening (docs/SECURITY.md):
// the seccomp profile, the init's protection and the sized mounts.

// seccompProbe tries what a kernel exploit starts with, then what ordinary
// Python needs: threads, a subprocess and a multiprocessing pool.
const seccompProbe = `import ctypes, errno, multiprocessing, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    r = libc.syscall(*args)
    print(name, "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
r = libc.unshare(0x10000000)  # CLONE_NEWUSER
print("unshare(CLONE_NEWUSER)", "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
call("clone3", 435, 0, 0)
call("io_uring_setup", 425, 1, ctypes.create_string_buffer(120))
call("ptrace", 101, 0, 0, 0, 0)  # PTRACE_TRACEME
call("keyctl", 250, 0, 0, 0, 0)
call("bpf", 321, 0, 0, 0)
call("userfaultfd", 323, 0)
call("perf_event_open", 298, 0, 0, 0, 0, 0)
t = threading.Thread(target=print, args=("thread ok",)); t.start(); t.join()
print(subprocess.run(["sh", "-c", "echo subprocess ok"], capture_output=True, text=True).stdout.strip())
with multiprocessing.Pool(2) as pool:
    print("pool", pool.map(abs, [-1, -2]))
print("seccomp mode", [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")][0])`

func TestHostileSeccomp(t *testing.T) {
	needEnv(t)
	codebridgeSeccomp(t)
	b := startBridge(t, home(t, nil))
	out := b.ok(seccompProbe)
	mustContain(t, out,
		"unshare(CLONE_NEWUSER) EPERM", "clone3 ENOSYS", "io_uring_setup EPERM", "ptrace EPERM", "keyctl EPERM", "bpf EPERM",
		"userfaultfd EPERM", "perf_event_open EPERM",
		"thread ok", "subprocess ok", "pool [1, 2]", "seccomp mode 2")
}

// TestHostileDoctorShowsHardening checks that doctor reports, from inside a
// real sandbox, that the seccomp profile and the init's protection apply.
func TestHostileDoctorShowsHardening(t *testing.T) {
	needEnv(t)
	codebridgeSeccomp(t)
	out, errOut, code := cli(t, home(t, nil), "", nil, "doctor")
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, out, "ok    seccomp    codebridge's seccomp profile applies", "the init is out of reach")
}

// forgeInit writes to the init's stderr, the container's stderr that the
// host logs and reads the init's verdict on a crash from: 2 MiB of text,
// then a forged "out of memory" line, then the runtime kills itself.
const forgeInit = `import os, signal
try:
    with open("/proc/1/fd/2", "w") as f:
        for _ in range(2048):
            f.write("flood " * 170 + "\n")
        f.write("codebridge init: out of memory: the kernel killed the runtime\n")
    print("wrote to the init's stderr")
except OSError as e:
    print("refused:", type(e).__name__)
import sys; sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)`

func TestHostileInitStderr(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	setMarker(t, b)
	before := len(b.stderr.String())
	r := b.run(forgeInit)
	mustFail(t, r, restartWords...)
	if strings.Contains(r.text, "out of memory") {
		t.Fatalf("a line the code wrote was believed as the reason of the crash:\n%s", r.text)
	}
	mustContain(t, r.text, "refused: PermissionError", "killed by signal 9")
	if grown := len(b.stderr.String()) - before; grown > 256<<10 {
		t.Fatalf("the bridge's log grew by %d bytes from the sandbox", grown)
	}
	// ptrace of the init is refused twice: by seccomp and because it is
	// not dumpable (its /proc entries belong to root).
	mustContain(t, b.ok(`import os
print("init fds", "open" if os.access("/proc/1/fd", os.R_OK) else "closed")
print("init environ", "open" if os.access("/proc/1/environ", os.R_OK) else "closed")`), "init fds closed", "init environ closed")
	afterFault(t, b, false)
}

// mountsProbe lists every mount the sandbox's user can write to, with its
// type and whether it has a size.
// Device nodes (rootless Podman binds /dev/null and the like from the
// host), /proc files and mounts the user cannot even reach are not
// storage it can write, and are left out.
const mountsProbe = `import os, stat
for line in open("/proc/mounts"):
    dev, mnt, fs, opts = line.split()[:4]
    o = opts.split(",")
    try:
        if mnt.startswith("/proc/") or stat.S_ISCHR(os.stat(mnt).st_mode):
            continue
    except PermissionError:  # under a directory the user cannot enter (a Pod's termination log)
        continue
    if "rw" in o and os.access(mnt, os.W_OK):
        print("writable", mnt, fs, "sized" if any(x.startswith("size=") for x in o) else "unsized")`

func TestHostileMountsAreSized(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil))
	out := b.ok(mountsProbe)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "writable" {
			t.Fatalf("unexpected probe line %q in:\n%s", line, out)
		}
		switch {
		case f[2] == "tmpfs" && f[3] == "sized":
		case f[1] == "/dev/mqueue" && f[2] == "mqueue":
			// Bounded by the kernel's per-user RLIMIT_MSGQUEUE (800 KiB).
		default:
			t.Errorf("%s (%s) is writable and has no size", f[1], f[2])
		}
	}
	mustContain(t, out, "writable /tmp tmpfs sized", "writable /workspace tmpfs sized", "writable /dev/shm tmpfs sized")
	if strings.Contains(out, " /run ") {
		t.Errorf("/run is writable:\n%s", out)
	}
}

// TestTmpSizeSetting: --tmp-size (CODEBRIDGE_TMP_SIZE) sizes /tmp and an
// ephemeral /workspace, and writing past it fails in Python with ENOSPC
// while the sandbox goes on.
func TestTmpSizeSetting(t *testing.T) {
	needEnv(t)
	b := startBridge(t, home(t, nil), "CODEBRIDGE_TMP_SIZE=16m", "CODEBRIDGE_WORKSPACE=ephemeral")
	out := b.ok("import os\nfor d in ('/tmp', '/workspace'):\n    s = os.statvfs(d)\n    print(d, s.f_blocks * s.f_frsize // (1 << 20), 'MiB')")
	mustContain(t, out, "/tmp 16 MiB", "/workspace 16 MiB")
	out = b.ok("try:\n    open('/tmp/big', 'wb').write(b'x' * (32 << 20))\nexcept OSError as e:\n    print('full:', e.strerror)\nimport os\nos.remove('/tmp/big')\nprint('goes on')")
	mustContain(t, out, "full: No space left on device", "goes on")
}
