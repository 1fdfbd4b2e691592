"""Processes a cell leaves behind.

A cell may start processes (subprocess, os.fork, multiprocessing, a shell's
background jobs). Most are the user's business, but two kinds would leave
the sandbox unusable until it is restarted:

* the processes of a cell the host interrupted (a timeout, a cancelled
  call): the interrupt reaches them as SIGINT, as Ctrl-C reaches a
  terminal's foreground job, and the ones still running when the cell ends
  are killed;
* processes that fill the container's process limit (a fork bomb): when
  the limit refused a fork during a cell or between two cells, the
  processes started since the previous cell began (the bomb's, whether
  this cell or the one before started it) are killed, so that the next code
  can start threads and processes again.

Processes are told apart by their start time (``/proc/<pid>/stat``, clock
ticks since boot), compared with the time a cell began. The container's
init (pid 1) and the runtime itself are never killed; other processes are
frozen for the moment it takes to find and kill those (see
:func:`stop_since`), so a process the code stopped itself is continued.

Zombies cost a pid each too. The init reaps orphans; the runtime's own
children are waited for by whoever started them (subprocess,
multiprocessing), except forked copies of the runtime (``os.fork()`` in a
cell) that nobody waits for: :func:`track_forks` records them, and after a
cell that was interrupted or hit the limit the ones that ended are reaped.
"""

import functools
import os
import signal
import sys
import time

__all__ = ["Cells", "KeptFile", "limit", "now", "refused", "signal_since", "stop_since", "sweep", "track_forks"]

_TCK = os.sysconf("SC_CLK_TCK")
_ROUNDS = 20    # sweeps at most, for children still being forked
_copies = set()  # pids of forked copies of the runtime not known to be reaped
spared = set()   # pids of the runtime's checkpoints (mcp._rewind): never signalled, but continued


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return None




def _own_container():
    """Whether this runtime has the container to itself: it is pid 1, or
    the child of the loader's init (pid 1 running the same command line),
    or the Kubernetes engine started it in a Pod whose processes are its
    own but for the Pod's init (pid 1, which kill(-1) passes over): the
    engine says so in CODEBRIDGE_OWN_PIDS before this module is imported,
    and it is removed from the environment here, so no process the code
    starts inherits it. Only then may it signal processes it did not
    start: in a test on a host, a process listing shows the host's
    processes, and kill(-1) would reach every one of them."""
    if os.environ.pop("CODEBRIDGE_OWN_PIDS", None) == "1" or os.getpid() == 1:
        return True
    own = _cmdline("self")
    return os.getppid() == 1 and own is not None and _cmdline(1) == own


_CONTAINED = _own_container()


def now():
    """The current time in clock ticks since boot, as /proc reports start times."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _TCK)


def track_forks():
    """Make ``os.fork`` and ``os.forkpty`` record the forked copies of the
    runtime they create, so that :func:`reap_copies` can find them."""
    def tracked(real):
        @functools.wraps(real)
        def wrapper(*args):
            result = real(*args)
            pid = result[0] if isinstance(result, tuple) else result
            if pid > 0:
                if len(_copies) >= 4096:
                    _prune_copies()
                _copies.add(pid)
            return result
        return wrapper
    os.fork = tracked(os.fork)
    os.forkpty = tracked(os.forkpty)


def _prune_copies():
    """Forget copies that are no longer this process's children."""
    me = str(os.getpid()).encode()
    for pid in list(_copies):
        stat = _stat(pid)
        if stat is None or stat[1] != me:
            _copies.discard(pid)


def _multiprocessing_children():
    """Pids multiprocessing waits for itself: never reap those."""
    process = sys.modules.get("multiprocessing.process")
    if process is None:
        return set()
    pids = set()
    for child in list(getattr(process, "_children", ())):
        popen = getattr(child, "_popen", None)
        if popen is not None and getattr(popen, "pid", None):
            pids.add(popen.pid)
    return pids


def reap_copies(killed=()):
    """Reap the forked copies of the runtime that ended (waiting for those
    in ``killed``, which are about to), except multiprocessing's."""
    keep = _multiprocessing_children()
    for pid in list(_copies):
        if pid in keep:
            continue
        try:
            done, _ = os.waitpid(pid, 0 if pid in killed else os.WNOHANG)
        except ChildProcessError:  # reaped by the code itself
            done = pid
        if done:
            _copies.discard(pid)


def _stat(pid):
    """``(state, ppid, start)`` of a process from /proc, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2:].split()
        return fields[0], fields[1], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _processes():
    """Yield ``(pid, start)`` of the container's live processes, except
    pid 1 and this one."""
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == 1 or pid == me:
            continue
        stat = _stat(pid)
        if stat is not None and stat[0] not in (b"Z", b"X"):
            yield pid, stat[2]


def signal_since(since, sig):
    """Send ``sig`` to every process started since tick ``since``; return
    how many were signalled."""
    if not _CONTAINED:
        return 0
    n = 0
    for pid, start in list(_processes()):
        if start >= since and pid not in spared:
            try:
                os.kill(pid, sig)
                n += 1
            except OSError:
                pass
    return n


def stop_since(since):
    """Kill every process started since tick ``since``, and reap the
    runtime's forked copies. Returns how many were killed.

    Every other process of the container is frozen first with one
    kill(-1, SIGSTOP): the kernel delivers it to a child being forked at
    that moment too, so a fork bomb cannot add processes while they are
    found and killed, nor take the CPU from this sweep. The older processes
    are then continued (see :func:`sweep`)."""
    if not _CONTAINED:
        return 0
    try:
        os.kill(-1, signal.SIGSTOP)
    except ProcessLookupError:  # no other process
        reap_copies()
        return 0
    killed = sweep(since, _processes, os.kill)
    reap_copies(killed)
    return len(killed)


def sweep(since, processes, kill):
    """Kill (``kill(pid, SIGKILL)``) the processes ``processes()`` lists
    (``(pid, start tick)`` pairs) that started since tick ``since``, and
    continue (SIGCONT) the older ones, which the caller froze. A child still
    being created when the list is read shows up in the next reading: the
    sweeps go on until one finds nothing new (at most ``_ROUNDS``). Returns
    the set of killed pids."""
    killed, older = set(), None
    for _ in range(_ROUNDS):
        found = list(processes())
        if older is None:
            older = [pid for pid, start in found if start < since or pid in spared]
        new = [pid for pid, start in found if start >= since and pid not in killed and pid not in spared]
        if not new:
            break
        for pid in new:
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
            killed.add(pid)
    for pid in older or ():
        try:
            kill(pid, signal.SIGCONT)
        except OSError:
            pass
    return killed


def _pids_dir():
    for folder in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
        if os.path.exists(folder + "/pids.events"):
            return folder
    return None


class KeptFile:
    """A small file read again and again, kept open: ``read`` is a pread of
    its start. Opening a cgroup file costs about ten times reading it, and
    ``pids.events`` is read at every cell's start and end. When the code
    closed the descriptor, or another file took its number, the file is
    opened again (the other file is left alone)."""

    def __init__(self, path):
        self.path = path
        self._fd = -1
        self._identity = None

    def read(self, size=4096):
        """The first ``size`` bytes of the file. Raises OSError."""
        if self._fd < 0 or not self._same():
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            st = os.fstat(self._fd)
            self._identity = (st.st_dev, st.st_ino)
        return os.pread(self._fd, size, 0)

    def _same(self):
        try:
            st = os.fstat(self._fd)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._identity


_PIDS = _pids_dir()
_EVENTS = KeptFile(_PIDS + "/pids.events") if _PIDS else None


def refused(events=None):
    """How many forks the container's process limit refused so far (the
    pids cgroup's ``max`` event count, from ``events``, a :class:`KeptFile`),
    or None when it cannot be read."""
    events = events or _EVENTS
    if events is None:
        return None
    try:
        for line in events.read().splitlines():
            key, _, value = line.partition(b" ")
            if key == b"max":
                return int(value)
    except (OSError, ValueError):
        pass
    return None


def limit():
    """The container's process limit, as text ("128"), or "its limit"."""
    try:
        with open(_PIDS + "/pids.max") as f:
            return f.read().strip()
    except (OSError, TypeError):
        return "its limit"


def _in_use():
    """How many tasks (processes and threads) the pids cgroup counts now."""
    try:
        with open(_PIDS + "/pids.current") as f:
            return int(f.read())
    except (OSError, TypeError, ValueError):
        return None


def _threads_note():
    """A note for when this process's own threads hold most of the process
    limit: nothing here can stop a Python thread, so say what the code can do."""
    used, cap = _in_use(), limit()
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        return ""
    if used is None or not cap.isdigit() or used < int(cap) * 0.9 or threads < int(cap) // 2:
        return ""
    return (f"[codebridge: {threads} threads of this Python session hold the sandbox's process limit "
            f"({used} of {cap} in use), so no thread or process can start; threads cannot be stopped "
            f"from outside: let them finish, or restart the sandbox with os._exit(0) "
            f"(variables, imports and files are lost)]\n")


class Cells:
    """The processes side of the cells: when each began, and what to stop.
    Outside a container of its own (the runtime's tests) it does nothing;
    ``enabled``, ``refused`` (the pids cgroup's refusal count) and ``stop``
    (:func:`stop_since`) are parameters so that tests can drive it."""

    def __init__(self, enabled=None, refused=refused, stop=None, interrupt=None):
        self.enabled = _CONTAINED if enabled is None else enabled
        self._count = refused
        self._stop = stop or stop_since
        self._interrupt = interrupt or (lambda since: signal_since(since, signal.SIGINT))
        self.started = now()   # the running (or last) cell's start
        self.previous = self.started
        self._refused = refused() if self.enabled else None
        self._killed = 0       # killed at the interrupt, reported at the end

    def _limit_hit(self):
        """Whether the process limit refused a fork since the last check."""
        count = self._count()
        hit = count is not None and self._refused is not None and count > self._refused
        self._refused = count
        return hit

    def begin(self):
        """A cell begins. When the process limit refused forks since the
        previous cell ended (a fork bomb it left running), the processes
        started since the previous cell began are killed. Returns a note
        for the cell's stderr saying so, or ""."""
        self.previous, self.started = self.started, now()
        self._killed = 0
        if not self.enabled or not self._limit_hit():
            return ""
        n = self._stop(self.previous)
        if not n:
            return ""
        return (f"[codebridge: processes left by the previous cell filled the sandbox's process limit "
                f"({limit()}); killed {n} processes it started]\n")

    def interrupted(self):
        """The host interrupted the running cell (reader thread). Its
        processes get SIGINT, as Ctrl-C gives a terminal's job. But when the
        process limit refused forks during the cell (a fork bomb), they are
        killed at once: a hundred busy processes share the CPU with this
        runtime, and on a loaded machine would starve it past the host's
        grace, which costs the session."""
        if not self.enabled:
            return
        if self._limit_hit():
            self._killed += self._stop(self.started)
        else:
            self._interrupt(self.started)

    def end(self, interrupted):
        """A cell ends. Kills what it left running when it was interrupted;
        when it hit the process limit, kills what was started since the
        previous cell began (a fork bomb that cell left in the background
        may be what filled it). Returns a note saying so, or ""."""
        if not self.enabled:
            return ""
        hit = self._limit_hit()
        if interrupted:
            n = self._killed + self._stop(self.started)
            return f"[codebridge: killed {n} processes the interrupted cell left running]\n" if n else ""
        if not hit:
            return ""
        n = self._stop(self.previous)
        note = ""
        if n:
            note = (f"[codebridge: the sandbox hit its process limit ({limit()}) during the cell; "
                    f"killed {n} processes started since the previous cell began]\n")
        return note + _threads_note()
