# codebridge runtime bootstrap, run as `python3 -I -u -c <this file>`.
# As the container's pid 1 it first forks: the parent stays behind as a
# minimal init (it reaps orphaned processes, and exits as the runtime did),
# the child goes on as the runtime. A rewind replaces the runtime by one of
# its checkpoints (mcp._rewind): the runtime writes the checkpoint's pid to
# the init's hand-off pipe before it exits, and the init follows it. A
# fork (mcp._fork) writes its new runtime's pid there too: the init follows
# every pid written, and ends the container when the last one has ended.
# A process that is not pid 1 (the Kubernetes engine starts the runtime in
# its Pod through pods/exec; the runtime's tests) gets the same init with
# CODEBRIDGE_INIT=subreaper, but only when it needs one: it goes on as the
# runtime itself, and its first rewind (or its first fork) makes the
# process a child subreaper as it hands the channel over (orphans then come
# to it, not to pid 1, even before what follows) and, once the checkpoint
# answered (or a fresh copy took the channel), executes this file again as
# `... -c <this file> --follow PID FD` (mcp._rewind): the process the engine waits for becomes the init of
# the checkpoint (or copy) PID, reading the hand-off pipe FD. Until then code cannot
# end that process with kill(-1), as it could a separate init (which, not
# being pid 1, has no protection from the sandbox's own user). Such an
# init kills what is left of its descendants before it exits (a
# container's pid 1 leaves that to the kernel).
# The runtime reads a 16-byte decimal length
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


def _handed_to(handoff):
    """The pids written on the hand-off pipe since the last read: runtimes
    the init follows from now on (a rewind's checkpoint, a fork)."""
    data = b""
    while True:
        try:
            chunk = os.read(handoff, 4096)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    pids = set()
    for word in data.split():
        try:
            pids.add(int(word))
        except ValueError:
            pass
    return pids


def _exists(pid):
    """Whether ``pid`` is still a process (a zombie not reaped yet is)."""
    return os.path.exists(f"/proc/{pid}")


def _children(me):
    """Pids of the processes whose parent is ``me`` (bytes), from /proc."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2:].split()
        if len(fields) > 1 and fields[1] == me:
            pids.append(int(name))
    return pids


def _end_descendants():
    """A subreaper init's last act: kill its children (the runtime's
    checkpoints and whatever processes the code left), and the orphans that
    come to it as those die, until none is left, so that none outlives the
    sandbox's runtime."""
    import signal
    me = str(os.getpid()).encode()
    while True:
        for pid in _children(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.wait()
        except ChildProcessError:
            return


def _init(runtime, handoff):
    """Pid 1 of the container (or a subreaper): reap every process that
    ends up here until the runtime exits, then exit as it did (128 + signal
    when it was killed). When the runtime handed over to a checkpoint first
    (a rewind), that process is the runtime from then on."""
    import signal
    # Pid 1 ignores every signal it has no handler for, even SIGKILL, when
    # it comes from inside the container: user code cannot kill this process.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.close(0)  # the frame channel belongs to the runtime
    os.close(1)
    _undumpable()
    kills = _oom_kills()
    os.set_blocking(handoff, False)
    runtimes, status = {runtime}, 0
    while runtimes:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(70)
        runtimes |= _handed_to(handoff)
        runtimes.discard(pid)
        # A runtime its parent runtime reaped (a fork that ended first)
        # never comes to this process's wait.
        runtimes = {r for r in runtimes if _exists(r)}
    if os.getpid() != 1:
        _end_descendants()
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


if sys.argv[1:2] == ["--follow"]:  # a runtime's first rewind or fork (see the top); a subreaper already
    _init(int(sys.argv[2]), int(sys.argv[3]))

_handoff = _follow = None
# Taken out of the environment: no process the code starts inherits it.
if os.environ.pop("CODEBRIDGE_INIT", "") == "subreaper" and os.getpid() != 1:
    _follow, _handoff = os.pipe()  # the init's end waits here until a rewind needs it
elif os.getpid() == 1:
    _hr, _hw = os.pipe()
    try:
        _child = os.fork()
    except OSError:
        _child = 0  # no init then: run the runtime as pid 1
        os.close(_hr)
        os.close(_hw)
        _hw = None
    if _child:
        os.close(_hw)
        _init(_child, _hr)
    elif _hw is not None:
        os.close(_hr)
        _handoff = _hw
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
mcp._main.main(handoff=_handoff, follow=_follow)
