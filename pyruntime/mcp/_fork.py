"""Forking a session: ``fork()`` in a cell makes, at the end of that cell,
a second runtime in the same container whose interpreter is a copy of
this one's (docs/rewind.md, "Fork").

The runtime forks itself as it forks a checkpoint (mcp._rewind), but the
child does not wait: it becomes a runtime at once. (A runtime that no
init follows yet, a Kubernetes Pod's before its first rewind, first hands
its channel to a fresh copy of itself and becomes that copy's init, as at
a first rewind: Keeper.init_first, on the host's ``handover`` frame; the
copy then forks.) Its channel is its own:
before the fork the runtime binds an abstract Unix socket named by the
SHA-256 of a fresh random key (the name a detachable runtime uses,
mcp._channel.resume_address), and the child accepts on it the host's
relay (an engine exec of relay.py) that proves itself with the key, as a
bridge adopting a detachable sandbox does; the ``forked`` frame, sent on
the parent's channel, gives the host the key. The child answers the relay
with a ``resumed`` frame and serves cells on that stream from then on; it
ends when that stream ends.

Its files: a container has one /workspace, and without a mount namespace
(seccomp refuses one) a fork cannot see other files there. The fork's
workspace is a copy of its parent's (up to ``WORKSPACE_BUDGET`` bytes)
under /workspace/.forks/<id>, and its working directory: relative paths
diverge, absolute /workspace paths are shared. Threads the code started
do not run in the fork, and files open at the fork share their positions
with the parent (the answer says so). The container's init follows every
runtime (the parent writes the child's pid on the hand-off pipe) and ends
the container when the last one ends.

Bounds: the fork is a process of the container, under its memory and pids
limits; a fork refused by either (or past ``PRESSURE`` of the memory
limit) answers why and leaves the session as it was.
"""

import hashlib
import os
import secrets
import shutil
import socket
import sys
import threading
import time

from mcp import _rewind

__all__ = ["fork", "FORKS", "ACCEPT_WAIT"]

FORKS = ".forks"        # /workspace/.forks/<id>: the forks' workspaces
ACCEPT_WAIT = 30        # seconds a new fork waits for its host's relay at most
PIDS_HEADROOM = 12      # pids a fork needs besides its checkpoints: its threads, the relay's


def fork():
    """Fork this session: after this cell ends, a new session starts whose
    interpreter is a copy of this one's (variables, imports, functions)
    and whose files are a copy of this workspace's, in a folder of its own
    (its working directory). The answer gives the new session's handle:
    pass it as run_python's ``session`` to run code there. This session
    goes on as it was."""
    keeper = _rewind._keeper
    if keeper is None:
        raise RuntimeError("fork() works only in the codebridge runtime")
    if keeper.asked is not None:
        raise RuntimeError("this cell already called rewind(): fork in a cell of its own")
    keeper.fork_asked = True


def _size(root, skip):
    """Bytes of the regular files under ``root``, the top-level names in
    ``skip`` left out."""
    total = 0
    for rel, kind, n, *_ in _rewind._walk(root):
        if rel.split(os.sep, 1)[0] in skip:
            continue
        total += n if kind == "f" else 0
    return total


def copy_workspace(src, dst, budget=_rewind.WORKSPACE_BUDGET):
    """Copy ``src`` into the new folder ``dst``, leaving out the private
    folder and the forks' folder; returns what the answer says of it."""
    skip = {_rewind.PRIVATE, FORKS}
    os.makedirs(dst, 0o700)
    size = _size(src, skip)
    if size > budget:
        return {"copied": False, "reason": f"the workspace held more than the {budget >> 20} MiB a fork copies"}
    try:
        for name in os.listdir(src):
            if name in skip:
                continue
            path = os.path.join(src, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.copytree(path, os.path.join(dst, name), symlinks=True)
            else:
                shutil.copy2(path, os.path.join(dst, name), follow_symlinks=False)
    except OSError as exc:
        return {"copied": False, "reason": f"its files could not be copied ({exc.strerror or exc})"}
    return {"copied": True, "bytes": size}


def pids_use(limit=None):
    """``(used, limit)`` processes and threads of the container's pids
    cgroup, or None. When the cgroup shows no limit and the host named
    one (``limit``: a Kubernetes Pod's limit is on the Pod's cgroup, above
    the container's, where the sandbox cannot read it), the tasks this
    sandbox can see count against that."""
    use = _rewind.cgroup_use((("/sys/fs/cgroup/pids.current", "/sys/fs/cgroup/pids.max"),
                              ("/sys/fs/cgroup/pids/pids.current", "/sys/fs/cgroup/pids/pids.max")))
    if use is None and limit:
        return tasks(), limit
    return use


def tasks(proc="/proc"):
    """Processes and threads under ``proc`` (this pid namespace's)."""
    n = 0
    for name in os.listdir(proc):
        if name.isdigit():
            try:
                n += len(os.listdir(os.path.join(proc, name, "task")))
            except OSError:
                pass  # ended meanwhile
    return n


def why_not(keeper):
    """Why this runtime cannot fork now, or ''."""
    if keeper.handoff is None:
        return ("fork needs the sandbox's init to follow a second runtime, and this sandbox has none "
                "(a runtime started without the loader's init)")
    pids = pids_use(keeper.pids)
    need = keeper.limit + PIDS_HEADROOM
    if pids is not None and pids[1] - pids[0] < need:
        return (f"the sandbox has {pids[0]} of its {pids[1]} processes and threads in use, and a fork needs about "
                f"{need} more (its threads, its checkpoints, the relay that carries its channel): end a fork you no "
                "longer need (runtime.end_session), or start the bridge with a higher --pids (on Kubernetes, "
                "raise the kubelet's podPidsLimit)")
    use = _rewind.memory_use()
    if use is not None and use[0] > _rewind.PRESSURE * use[1]:
        return (f"the sandbox uses {use[0] >> 20} of its {use[1] >> 20} MiB of memory: a fork would share what is "
                "left (free memory, or end other forks, and try again)")
    return ""


def fork_out(keeper):
    """At the end of a cell that called fork(), in the main thread: fork
    the new runtime and send the ``forked`` frame. In the child, this
    returns as the new session's runtime."""
    keeper.fork_asked = False
    channel = keeper.channel
    why = why_not(keeper)
    if not why and keeper.follow is not None:  # no init yet: in the copy that takes over, this is ''
        why = keeper.init_first()
    if why:
        channel.send({"t": "forked", "ok": False, "error": why})
        return
    fid = secrets.token_hex(6)
    key = secrets.token_urlsafe(32)
    key_hash = hashlib.sha256(key.encode()).hexdigest()
    home = os.path.join(_rewind.WORKSPACE, FORKS, fid)
    try:
        files = copy_workspace(keeper.root, home)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(_channel_address(key_hash))
        listener.listen(4)
    except OSError as exc:
        shutil.rmtree(home, ignore_errors=True)
        channel.send({"t": "forked", "ok": False, "error": f"the fork's workspace or socket could not be made: {exc}"})
        return
    threads = [t.name for t in threading.enumerate()
               if t is not threading.main_thread() and not t.name.startswith("codebridge-")]
    pid = _fork(keeper)
    if pid == 0:
        try:
            _become_fork(keeper, listener, key_hash, home)
        except BaseException:  # no thread at the pids limit...: end, so that no host waits for this fork
            os._exit(1)
        return
    listener.close()
    if pid < 0:
        shutil.rmtree(home, ignore_errors=True)
        channel.send({"t": "forked", "ok": False, "error": keeper.fork_error})
        return
    try:
        os.write(keeper.handoff, b"%d\n" % pid)
    except OSError:
        pass
    from mcp import _procs
    _procs.spared.add(pid)
    channel.send({"t": "forked", "ok": True, "key": key, "pid": pid, "dir": home, "files": files,
                  "threads": threads[:_rewind.MAX_NAMES]})


def _channel_address(key_hash):
    from mcp._channel import resume_address
    return resume_address(key_hash)


def _fork(keeper):
    """posix.fork with the runtime's locks held (as a checkpoint's fork):
    the child's pid, 0 in the child, -1 when the kernel refused."""
    try:
        return keeper.fork_held()
    except OSError as exc:
        keeper.fork_error = (f"the kernel refused the fork ({exc.strerror}): the sandbox is at its process "
                             "or memory limit (forks, checkpoints and the code's processes share it); "
                             "end a fork you no longer need, or start the bridge with more --pids or --memory")
        return -1


def _become_fork(keeper, listener, key_hash, home):
    """In the child: leave the parent's channel, checkpoints and output
    pipes, move to the fork's folder, wait for the host's relay and
    serve it."""
    channel, output = keeper.channel, keeper.output
    _leave_parent(keeper)
    os.chdir(home)
    keeper.root = home
    for pump in output.pumps:
        pump.repipe()
    conn = _accept(listener, key_hash)
    listener.close()
    if conn is None:
        os._exit(0)  # no host came: the fork ends, and its folder with the parent's
    in_fd = os.dup(conn.fileno())
    channel._out_fd = os.dup(conn.fileno())
    conn.close()
    channel._in = open(in_fd, "rb", buffering=0)
    channel.resume(b"", output, keeper.executor)
    channel.send({"t": "resumed", "v": _protocol_version(), "python": sys.version.split()[0],
                  "last": 0, "lost": 0, "cell": None})


def _leave_parent(keeper):
    """Drop what belongs to the parent runtime: its channel's descriptors
    (pointed at /dev/null, so that nothing reuses their numbers while the
    old reader object lives), a detachable parent's resume socket, and
    its checkpoints (theirs to wake, not this process's)."""
    channel = keeper.channel
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (channel._in.fileno(), channel._held_fd):
        if fd >= 0:
            os.dup2(null, fd, inheritable=False)
    os.close(null)
    try:
        os.close(channel._out_fd)
    except OSError:
        pass
    channel._out_fd, channel._held_fd = -1, -1
    channel._dropping = False
    if channel._listener is not None:
        channel._listener.close()
        channel._listener = None
    channel.kept = None
    for point in keeper.points:
        try:
            os.close(point.wfd)
        except OSError:
            pass
    from mcp import _procs
    _procs.spared.difference_update(p.pid for p in keeper.points)
    keeper.points, keeper.dying, keeper.dropped = [], [], {}
    keeper.cells = 0
    import tempfile
    keeper.store = tempfile.mkdtemp(prefix=".codebridge-checkpoints-", dir="/tmp")


def _accept(listener, key_hash):
    """The first connection that proves the key, or None after
    ``ACCEPT_WAIT`` seconds."""
    import hmac
    import json
    deadline = time.monotonic() + ACCEPT_WAIT
    while (left := deadline - time.monotonic()) > 0:
        listener.settimeout(left)
        try:
            conn, _ = listener.accept()
        except OSError:
            return None
        try:
            conn.settimeout(10)
            line = _readline(conn)
            first = json.loads(line or b"null")
            key = first.get("key") if isinstance(first, dict) and first.get("t") == "resume" else None
            if isinstance(key, str) and hmac.compare_digest(hashlib.sha256(key.encode()).hexdigest(), key_hash):
                conn.settimeout(None)
                return conn
        except (OSError, ValueError, RecursionError):
            pass
        conn.close()
    return None


def _readline(conn, limit=4096):
    """One line from ``conn``, byte by byte: nothing after it is read (the
    channel's reader takes the rest)."""
    buf = bytearray()
    while len(buf) < limit:
        b = conn.recv(1)
        if not b or b == b"\n":
            break
        buf += b
    return bytes(buf)


def _protocol_version():
    from mcp._main import PROTOCOL_VERSION
    return PROTOCOL_VERSION
