# codebridge runtime bootstrap, run as `python3 -I -u -c <this file>`.
# As the container's pid 1 it first forks: the parent stays behind as a
# minimal init (it reaps orphaned processes, and exits as the runtime did),
# the child goes on as the runtime. The runtime reads a 16-byte decimal length
# and that many bytes of zip archive (the `mcp` package) from fd 0 without
# read-ahead, writes the archive to a fresh private directory under /tmp,
# imports it and hands over to mcp._main.main().
import os, sys


def _oom_kills():
    """How many processes the container's memory cgroup killed (v2 or v1)."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            pass
    return None


def _undumpable():
    """Make this process non-dumpable. User code runs as the same uid, and
    could otherwise open /proc/1/fd/2 (the container's stderr, which only
    this init writes to once the runtime runs: the host believes its lines)
    or trace it. Without ctypes, say so on stderr: the host logs it."""
    try:
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except (ImportError, OSError, AttributeError) as e:
        os.write(2, f"codebridge init: cannot make the init non-dumpable: {e}\n".encode())


def _init(runtime):
    """Pid 1 of the container: reap every process that ends up here until the
    runtime exits, then exit as it did (128 + signal when it was killed)."""
    import signal
    # Pid 1 ignores every signal it has no handler for, even SIGKILL, when
    # it comes from inside the container: user code cannot kill this process.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.close(0)  # the frame channel belongs to the runtime
    os.close(1)
    _undumpable()
    kills = _oom_kills()
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(70)
        if pid == runtime:
            break
    if not os.WIFSIGNALED(status):
        os._exit(os.WEXITSTATUS(status))
    sig = os.WTERMSIG(status)
    if sig == signal.SIGKILL:  # the host reads these lines (sandbox/engine/exited.go)
        after = _oom_kills()
        if after is not None and after > (kills or 0):
            os.write(2, b"codebridge init: out of memory: the kernel killed the runtime\n")
        elif after is not None:
            os.write(2, b"codebridge init: not out of memory: the runtime was sent SIGKILL\n")
    os._exit(128 + sig)


def _read(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            os.write(2, b"codebridge loader: stdin closed during bootstrap\n")
            os._exit(1)
        buf += chunk
    return bytes(buf)


if os.getpid() == 1:
    try:
        _child = os.fork()
    except OSError:
        _child = 0  # no init then: run the runtime as pid 1
    if _child:
        _init(_child)
    try:  # when memory runs out, the kernel kills user code, never the init
        with open("/proc/self/oom_score_adj", "w") as _f:
            _f.write("1000")
    except OSError:
        pass

import tempfile
_size = int(_read(16).decode("ascii").strip())
# The working directory is the /workspace tmpfs. It is not the container's
# WorkingDir because Docker then resets the tmpfs mode to 0755 (root's).
try:
    os.chdir("/workspace")
except OSError:
    pass
_dir = tempfile.mkdtemp(prefix=".codebridge-", dir="/tmp")
_path = os.path.join(_dir, "runtime.zip")
with open(_path, "wb") as _f:
    _f.write(_read(_size))
sys.path.insert(0, _path)
import mcp._main
mcp._main.main()
