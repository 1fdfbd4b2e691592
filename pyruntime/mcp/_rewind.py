"""Checkpoints of the interpreter and of /workspace, and rewinding to one.

After every cell (and once before the first) the runtime forks itself: the
child is the checkpoint, a copy-on-write image of the interpreter as it is
between cells. It does nothing but wait on a pipe. A rewind (``rewind(n)``
in a cell, carried out by the host right after that cell's done frame, see
PROTOCOL.md) wakes the checkpoint taken before the n-th cell back: the
reader thread of the current runtime, which is not reading the channel
while it handles the ``rewind`` frame, hands the checkpoint whatever bytes
of the channel it had read ahead, tells the container's init (pid 1) which
process is the runtime now, and exits. The checkpoint starts its threads
again (reader, output pumps), puts /workspace back as it was, answers
``rewound``, and goes on as the runtime, from the point where it was
forked: the end of a cell.

What a checkpoint keeps: everything the interpreter holds (variables,
imports, functions, the random module's state). What it cannot keep:
threads (a fork copies only the thread that forks: threads that were
running are not running after a rewind, and the answer names them), and
the position of files opened before the checkpoint (the descriptors are
shared with the process that went on; a rewind does not move them back).
/workspace files are copied into a private folder under /tmp (a tmpfs:
memory) after each cell, only those whose size or modification time
changed since the last copy (the others are hard links to it), up to
``WORKSPACE_BUDGET`` bytes of workspace; beyond it the checkpoint keeps no
files, and a rewind to it says so. ``/workspace/.codebridge`` (output spill
files, installed packages) is never copied.

Bounds: at most ``MAX_CHECKPOINTS`` are kept (the oldest is dropped first),
or as many as the host's hello says (``checkpoints``; 0: none are taken,
and rewind says checkpoints are off);
when the sandbox's memory use passes ``PRESSURE`` of its limit the oldest
are dropped until it does not, with a note in the next cell's output.
Checkpoints are processes of the container: they count against its memory
and process limits, are killed when dropped, and end with the container.
The kernel's out-of-memory killer takes a checkpoint before the runtime
(their oom_score_adj is higher); a rewind to a checkpoint that is gone
fails and leaves the session as it was.
"""

import json
import os
import posix
import shutil
import signal
import stat
import sys
import tempfile
import threading

__all__ = ["Keeper", "MAX_CHECKPOINTS", "WORKSPACE_BUDGET", "forking", "rewind"]

MAX_CHECKPOINTS = 8            # checkpoints kept at most when the hello names no number (sandbox.DefaultCheckpoints)
WORKSPACE_BUDGET = 16 << 20    # bytes of /workspace a checkpoint copies at most
PRESSURE = 0.8                 # share of the memory limit past which the oldest are dropped
OOM_RUNTIME, OOM_CHECKPOINT = 500, 1000  # the kernel kills checkpoints first
HANDOVER_WAIT = 10             # seconds the last runtime waits for the checkpoint's answer at most
WORKSPACE = os.environ.get("CODEBRIDGE_TEST_WORKSPACE", "/workspace")  # tests: a folder of their own
PRIVATE = ".codebridge"        # /workspace/.codebridge: never copied nor restored
FORKS = ".forks"               # /workspace/.forks: the forks' own workspaces (mcp._fork), never copied nor restored
MAX_NAMES = 30                 # names the rewound frame lists at most

forking = False   # True while a checkpoint is forked: the runtime's atfork hooks stand aside
_keeper = None    # the process's Keeper


def rewind(n=1):
    """Undo the last ``n`` cells before this one (and this one): after this
    cell ends, the interpreter (variables, imports, functions) and the
    /workspace files are put back as they were before those cells ran. Tool
    calls those cells made are not undone: the answer lists them. Call it
    alone in a cell; what else the cell does is undone too."""
    if _keeper is None:
        raise RuntimeError("rewind() works only in the codebridge runtime")
    _keeper.ask(n)


class Snapshot:
    """The /workspace files of one checkpoint: ``files`` maps a path
    relative to /workspace to ``(kind, size, mtime_ns, mode, link)``;
    ``folder`` holds the copies. ``reason`` says why no files were kept."""

    __slots__ = ("folder", "files", "size", "reason")

    def __init__(self, folder=None, files=None, size=0, reason=""):
        self.folder, self.files, self.size, self.reason = folder, files or {}, size, reason


class Checkpoint:
    """One waiting copy of the runtime: ``at`` is how many cells had run."""

    __slots__ = ("pid", "start", "wfd", "at", "snap", "threads")

    def __init__(self, pid, start, wfd, at, snap, threads):
        self.pid, self.start, self.wfd, self.at, self.snap, self.threads = pid, start, wfd, at, snap, threads


def _cells(n):
    return f"{n} cell" if n == 1 else f"{n} cells"


def _start_tick(pid):
    """``(state, start tick)`` of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2:].split()
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _alive(point):
    st = _start_tick(point.pid)
    return st is not None and st[0] not in (b"Z", b"X") and st[1] == point.start


def _oom_adj(value):
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(str(value))
    except OSError:
        pass


def cgroup_use(paths):
    """``(used, limit)`` from the first pair of cgroup files in ``paths``
    (v2, then v1) that reads, or None when none does or there is no limit
    ("max", or v1's huge number)."""
    for cur, top in paths:
        try:
            with open(cur) as f:
                used = int(f.read())
            with open(top) as f:
                limit = f.read().strip()
        except (OSError, ValueError):
            continue
        if not limit.isdigit() or int(limit) >= 1 << 60:
            return None
        return used, int(limit)
    return None


def memory_use():
    """``(used, limit)`` bytes of the container's memory cgroup, or None."""
    return cgroup_use((("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.max"),
                       ("/sys/fs/cgroup/memory/memory.usage_in_bytes",
                        "/sys/fs/cgroup/memory/memory.limit_in_bytes")))


def _walk(root):
    """Yield ``(rel, kind, size, mtime_ns, mode, link)`` under ``root``,
    parents before children, without following symlinks; the private
    folder is left out."""
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel) if rel else root))
        except OSError:
            continue
        for e in entries:
            path = os.path.join(rel, e.name) if rel else e.name
            if path in (PRIVATE, FORKS):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                yield path, "d", 0, 0, stat.S_IMODE(st.st_mode), None
                stack.append(path)
            elif stat.S_ISLNK(st.st_mode):
                yield path, "l", 0, 0, 0, os.readlink(e.path)
            elif stat.S_ISREG(st.st_mode):
                yield path, "f", st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode), None


def snapshot(store, seq, prev, root=WORKSPACE, budget=WORKSPACE_BUDGET):
    """Copy what changed in ``root`` since ``prev`` (a Snapshot, or None)
    into a new folder of ``store``; unchanged files are hard links to
    ``prev``'s copies, and an unchanged workspace shares ``prev`` itself."""
    files, size = {}, 0
    for rel, kind, n, mtime, mode, link in _walk(root):
        size += n
        if size > budget:
            return Snapshot(reason=f"/workspace held more than the {budget >> 20} MiB a checkpoint copies")
        files[rel] = (kind, n, mtime, mode, link)
    if prev is not None and prev.folder is not None and prev.files == files:
        return prev
    folder = os.path.join(store, str(seq))
    try:
        os.mkdir(folder, 0o700)
        for rel, meta in files.items():
            if meta[0] != "f":
                continue
            dst = os.path.join(folder, rel)
            os.makedirs(os.path.dirname(dst), 0o700, exist_ok=True)
            if prev is not None and prev.folder is not None and prev.files.get(rel) == meta:
                os.link(os.path.join(prev.folder, rel), dst)
            else:
                shutil.copyfile(os.path.join(root, rel), dst, follow_symlinks=False)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return Snapshot(reason=f"its files could not be copied ({exc.strerror or exc})")
    return Snapshot(folder, files, size)


def restore(snap, root=WORKSPACE):
    """Make ``root`` hold what ``snap`` recorded: files that changed are
    copied back, files it did not have are removed. Returns ``(copied,
    removed)``."""
    live = {rel: (kind, n, mtime, mode, link) for rel, kind, n, mtime, mode, link in _walk(root)}
    removed = 0
    for rel in sorted(live, reverse=True):   # children before their folders
        if snap.files.get(rel, ("",))[0] == live[rel][0]:
            continue
        path = os.path.join(root, rel)
        try:
            if live[rel][0] == "d":
                shutil.rmtree(path)
            else:
                os.unlink(path)
                removed += 1
        except FileNotFoundError:
            pass
    copied = 0
    for rel, meta in sorted(snap.files.items()):   # folders before their files
        path = os.path.join(root, rel)
        kind, _, mtime, mode, link = meta
        if kind == "d":
            os.makedirs(path, exist_ok=True)
            os.chmod(path, mode)
        elif kind == "l":
            if live.get(rel) != meta:
                _unlink(path)
                os.symlink(link, path)
        elif live.get(rel) != meta:
            tmp = f"{path}.codebridge-rewind.tmp"
            shutil.copyfile(os.path.join(snap.folder, rel), tmp)
            os.chmod(tmp, mode)
            os.utime(tmp, ns=(mtime, mtime))
            os.replace(tmp, path)
            copied += 1
    return copied, removed


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class Keeper:
    """The checkpoints of this runtime and the rewinds to them.

    ``channel``, ``output`` and ``executor`` are the runtime's; ``pids``
    the process limit the host's hello names (or None); ``handoff``
    is the write end of the init's pipe (None: no init follows a rewind, so
    there are no checkpoints); ``follow`` is its read end when no init runs
    yet (a runtime that is not pid 1, as in a Kubernetes Pod): this process
    then becomes the init at its first rewind or fork, running the loader
    again (see loader.py)."""

    def __init__(self, channel, output, executor, handoff, namespace, follow=None, limit=MAX_CHECKPOINTS, pids=None):
        global _keeper
        _keeper = self
        self.channel, self.output, self.executor = channel, output, executor
        self.handoff = handoff
        self.limit = limit      # checkpoints kept at most; 0: none are taken (the host's choice)
        self.pids = pids        # the host's process limit (its hello's pids), or None: see mcp._fork.pids_use
        self.enabled = handoff is not None and limit > 0
        self.follow = follow
        self.argv = tuple(sys.orig_argv)  # the loader's command line, for the init it becomes
        self.points = []        # oldest first
        self.dying = []         # pids of dropped checkpoints not reaped yet
        self.cells = 0          # cells run in this line of the interpreter
        self.dropped = {}       # at -> why its checkpoint was dropped
        self.asked = None       # rewind(n) of the running (or last) cell
        self.target = None      # the cells run at the checkpoint it asked for
        self.resumed = False    # True in a checkpoint that just became the runtime
        self.notes = []         # for the next cell's stderr
        self.mine = None        # (snap, threads) of the checkpoint this process is
        self.lock = threading.Lock()
        self.namespace = namespace
        self.baseline = frozenset(namespace)
        self.root = WORKSPACE   # this runtime's workspace: /workspace, or a fork's folder (mcp._fork)
        self.fork_asked = False  # fork() in the running (or last) cell
        self.fork_error = ""
        self.store = tempfile.mkdtemp(prefix=".codebridge-checkpoints-", dir="/tmp") if self.enabled else None
        self.seq = 0
        self.heir = None        # (pid, wake fd) of the copy a first fork hands the channel to (init_first)
        self.heir_error = ""    # why the reader thread could not hand the channel to it
        self.handed = threading.Event()  # set by the reader thread when that handover failed
        if self.enabled:
            _oom_adj(OOM_RUNTIME)

    # ---- in a cell ---------------------------------------------------

    def ask(self, n):
        """rewind(n): check that it can be done, and ask for it at the end
        of the cell (the answer says what it restored)."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"rewind(n) takes a number of cells, 1 or more, not {n!r}")
        if self.fork_asked:
            raise RuntimeError("this cell already called fork(): rewind in a cell of its own")
        self._why_not(self.cells - n)
        self.asked = n
        self.target = self.cells - n

    def _why_not(self, at):
        """Raise a RuntimeError saying why the state after ``at`` cells
        cannot be had back, or return its checkpoint."""
        if self.limit <= 0:
            raise RuntimeError("checkpoints are off in this sandbox (the bridge runs with --checkpoints 0 or "
                               "CODEBRIDGE_CHECKPOINTS=0), so no cell can be rewound: to rewind, start the bridge "
                               "with --checkpoints N (N of 1 or more; unset, 8 are kept)")
        if not self.enabled:
            raise RuntimeError("this sandbox keeps no checkpoints (no init to hand the session over)")
        if at < 0:
            raise RuntimeError(
                f"only {_cells(self.cells)} lie behind this one in this sandbox "
                "(a new sandbox, or one that replaced a sandbox that ended, starts with none; a rewind "
                "removes the cells it undid): the checkpoints of earlier cells are gone")
        for point in self.points:
            if point.at == at:
                if not _alive(point):
                    self._drop(point, "it was killed (out of memory, most likely)")
                    break
                return point
        why = self.dropped.get(at, f"at most {self.limit} are kept")
        raise RuntimeError(f"the checkpoint before that cell is gone: {why}; "
                           f"the earliest cell that can be rewound to is {self._earliest()}")

    def _earliest(self):
        live = [p for p in self.points if p.at < self.cells]
        return f"{_cells(self.cells - live[0].at)} back" if live else "none (no cell can be undone now)"

    def take_note(self):
        """Notes for the cell that begins (checkpoints dropped for memory)."""
        notes, self.notes = self.notes, []
        return "".join(notes)

    # ---- between cells: making a checkpoint --------------------------

    def before_cell(self):
        """A cell begins: a rewind or fork asked by the last one is over."""
        self.asked = self.target = None
        self.fork_asked = False

    def after_cell(self):
        """A cell ended (done sent): count it and take a checkpoint, unless
        it asked for a rewind (the host carries it out next)."""
        with self.lock:
            self.cells += 1
        if self.fork_asked:  # in the fork, this returns as its runtime (mcp._fork)
            from mcp import _fork
            _fork.fork_out(self)
        if self.asked is None:
            self.take()

    def take(self):
        """Fork a checkpoint of the interpreter as it is now. In a
        checkpoint that a rewind woke, this returns after taking a
        checkpoint of the state it restored."""
        if not self.enabled:
            return
        while True:
            with self.lock:
                self._bound()
                prev = self.points[-1].snap if self.points else None
                self.seq += 1
                snap = snapshot(self.store, self.seq, prev, self.root)
                threads = [t.name for t in threading.enumerate()
                           if t is not threading.main_thread() and not t.name.startswith("codebridge-")]
                self.mine = (snap, threads)
                point = self._fork(snap, threads)
                if point is not None:
                    self.points.append(point)
                # The oldest goes after the fork: its teardown (as long as
                # the fork, and on the same pages) then runs beside the next
                # cell, not beside the fork the next cell waits for.
                while len(self.points) > self.limit:
                    self._drop(self.points[0], f"at most {self.limit} are kept")
                if not self.resumed:
                    return
                self.resumed = False

    def _bound(self):
        """Drop checkpoints that died, and the oldest while memory is short."""
        self._reap()
        for point in list(self.points):
            if not _alive(point):
                self._drop(point, "it was killed (out of memory, most likely)")
        use = memory_use()
        while self.points and use is not None and use[0] > PRESSURE * use[1]:
            point = self.points[0]
            why = f"the sandbox used {use[0] >> 20} of its {use[1] >> 20} MiB of memory"
            self._drop(point, why)
            back = max(0, self.cells - self.points[0].at) if self.points else 0
            self.notes.append(f"[codebridge: dropped the oldest checkpoint ({why}); rewind() can undo "
                              f"{_cells(back)} now]\n")
            use = memory_use()

    def _drop(self, point, why):
        self.points.remove(point)
        self.dropped[point.at] = why
        while len(self.dropped) > 4 * max(self.limit, 1):
            del self.dropped[min(self.dropped)]
        if _alive(point):
            try:
                os.kill(point.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.close(point.wfd)
        except OSError:
            pass
        self.dying.append(point.pid)  # reaped later: its memory goes in the kernel's time, not the cell's
        from mcp import _procs
        _procs.spared.discard(point.pid)
        self._clean_store()

    def _reap(self):
        """Reap the dropped checkpoints that ended (children of this process
        until a rewind hands them to the init, which reaps them then)."""
        for pid in list(self.dying):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.dying.remove(pid)

    def _clean_store(self, extra=()):
        """Remove snapshot folders no kept checkpoint refers to."""
        keep = {p.snap.folder for p in self.points if p.snap.folder} | set(extra)
        if self.mine and self.mine[0].folder:
            keep.add(self.mine[0].folder)
        try:
            names = os.listdir(self.store)
        except OSError:
            return
        for name in names:
            path = os.path.join(self.store, name)
            if path not in keep:
                shutil.rmtree(path, ignore_errors=True)

    def _fork(self, snap, threads):
        """Fork the checkpoint; in the parent, return it (None when the fork
        failed). The child waits, and returns from here only as the new
        runtime after a rewind to it."""
        r, w = os.pipe()
        rstate = _random_state()
        try:
            pid = self.fork_held()
        except OSError as exc:
            pid = -1
            self.notes.append(f"[codebridge: no checkpoint after this cell: {exc.strerror}]\n")
        if pid == 0:
            os.close(w)
            self._wait(r, rstate)
            return None
        os.close(r)
        if pid < 0:
            os.close(w)
            return None
        st = _start_tick(pid)
        from mcp import _procs
        _procs.spared.add(pid)
        return Checkpoint(pid, st[1] if st else -1, w, self.cells, snap, threads)

    def fork_held(self):
        """posix.fork with the locks other threads take held across it, so
        that the copy never holds one that nobody will release, and the
        runtime's atfork hooks standing aside (``forking``): the child's
        pid, 0 in the child. OSError when the kernel refused."""
        global forking
        locks = self._locks()
        for lock in locks:
            lock.acquire()
        forking = True
        try:
            return posix.fork()
        finally:
            forking = False
            for lock in reversed(locks):
                lock.release()

    def _locks(self):
        """Locks other threads take: held across the fork, so the copy never
        holds one that nobody will release."""
        ch, out = self.channel, self.output
        return [out.text.lock, *(p.lock for p in out.pumps), ch._write_lock]

    def close(self):
        """The runtime ends: its checkpoints end with it (in a container
        they would anyway, with its init; not so for a runtime that is not
        in one of its own), and it waits for those that are its children,
        which no init may be left to reap."""
        killed = list(self.dying)
        for point in self.points:
            if _alive(point):
                try:
                    os.kill(point.pid, signal.SIGKILL)
                    killed.append(point.pid)
                except OSError:
                    pass
        for pid in killed:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # the init's child since a rewind: it reaps it
                pass
        if self.store:
            shutil.rmtree(self.store, ignore_errors=True)

    # ---- in the checkpoint -------------------------------------------

    def _wait(self, r, rstate):
        """The checkpoint: wait until a rewind wakes it (then return, as the
        runtime) or the pipe closes (then exit)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _oom_adj(OOM_CHECKPOINT)
        data = _read_message(r)
        if data is None:
            os._exit(0)
        header, leftover = data
        try:
            self._resume(header, leftover, rstate)
        finally:
            os.close(r)  # the last runtime waits for this (POLLERR on its end) before it exits

    def _resume(self, header, leftover, rstate):
        """Become the runtime: threads, channel, workspace, then answer."""
        _oom_adj(OOM_RUNTIME)
        if self.follow is not None:  # the runtime it was forked from is the init now
            os.close(self.follow)
            self.follow = None
        if rstate is not None:
            sys.modules["random"].setstate(rstate)
        keep = set(header.get("keep", ()))
        self.points = [p for p in self.points if p.pid in keep]
        self.dying = []  # the last runtime's children, not this process's: the init reaps them
        from mcp import _procs
        _procs.spared.intersection_update(keep)
        self.channel.resume(leftover, self.output, self.executor)
        answer = {"t": "rewound", "ok": True, "cells": header.get("n", 0)}
        snap, threads = self.mine
        answer["workspace"] = self._restore(snap)
        if threads:
            answer["threads"] = threads[:MAX_NAMES]
        answer.update(self._contents())
        self.channel.send(answer)
        self.asked = self.target = None
        self.resumed = True
        self._clean_store()

    def _restore(self, snap):
        if snap.folder is None:
            return {"kept": False, "reason": snap.reason}
        try:
            copied, removed = restore(snap, self.root)
        except OSError as exc:
            return {"kept": True, "error": f"{exc.strerror or exc}: {getattr(exc, 'filename', '')}"}
        return {"kept": True, "files": sum(1 for m in snap.files.values() if m[0] == "f"),
                "copied": copied, "removed": removed}

    def _contents(self):
        """The user's names and imported modules, as restored."""
        names, modules = [], []
        for name, value in list(self.namespace.items()):
            if name.startswith("_") or name in self.baseline:
                continue
            (modules if type(value).__name__ == "module" else names).append(name)
        return {"names": sorted(names)[:MAX_NAMES], "modules": sorted(modules)[:MAX_NAMES],
                "more": max(0, len(names) - MAX_NAMES) + max(0, len(modules) - MAX_NAMES)}

    # ---- a first fork with no init yet (mcp._fork) ------------------

    def init_first(self):
        """Main thread, at the end of a cell that called fork() in a
        runtime that no init follows yet (``follow`` set: a Kubernetes
        Pod's before its first rewind): fork a fresh copy of this runtime,
        which waits as a checkpoint does, and ask the host for a
        ``handover`` frame; the reader thread then hands the channel to
        the copy and this process becomes its init (``hand_init``), as at
        a first rewind. Returns '' in the copy, the runtime from then on,
        with its interpreter as it was (the random module's state
        included); in this process, why it could not be done (the session
        goes on as it was)."""
        r, w = os.pipe()
        rstate = _random_state()
        try:
            pid = self.fork_held()
        except OSError as exc:
            os.close(r)
            os.close(w)
            return (f"the kernel refused the fork that makes this sandbox's init ({exc.strerror}): the sandbox is "
                    "at its process or memory limit; end a fork you no longer need, or start the bridge with "
                    "more --pids or --memory")
        if pid == 0:
            os.close(w)
            return self._await_handover(r, rstate)
        os.close(r)
        with self.lock:
            self.heir, self.heir_error = (pid, w), ""
        self.handed.clear()
        self.channel.send({"t": "forked", "ok": False, "handover": True})
        self.handed.wait(HANDOVER_WAIT)
        with self.lock:  # held by the reader thread until it replaced this process, or failed
            heir, self.heir = self.heir, None
            why = self.heir_error or "the host sent no handover frame: nothing changed"
        if heir is not None:
            _end_copy(*heir)
        return why

    def _await_handover(self, r, rstate):
        """The copy init_first forked: wait for the channel (then return ''
        as the runtime, the init following it) or for the end of the
        wake pipe (then exit)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        data = _read_message(r)
        if data is None:
            os._exit(0)
        try:
            os.close(self.follow)  # the process it was forked from is the init now
            self.follow = None
            if rstate is not None:
                sys.modules["random"].setstate(rstate)
            self.dying = []  # the init's children now: it reaps them
            self.channel.resume(data[1], self.output, self.executor)
        except BaseException:  # no thread at the pids limit...: the runtime ends, and the host sees it end
            os._exit(1)
        finally:
            os.close(r)  # the process it was forked from waits for this before it becomes the init
        return ""

    def hand_init(self):
        """Reader thread, on the host's ``handover`` frame: hand the channel
        (with the bytes read ahead) to the copy init_first forked, wait
        for it to take it, and become its init; or say why not and go on
        as before."""
        with self.lock:
            heir, self.heir = self.heir, None
            if heir is None:
                self.channel.log("warning", "a handover frame that no fork() asked for: ignored")
                return
            pid, wfd = heir
            leftover = self.channel.read_ahead()
            _subreaper(True)
            try:
                _write_message(wfd, json.dumps({"handover": True}).encode(), leftover)
            except OSError as exc:
                _subreaper(False)
                self.channel.unread(leftover)
                _end_copy(pid, wfd)
                self.heir_error = f"the runtime's copy could not be woken ({exc.strerror}): nothing changed"
                self.handed.set()
                return
            _wait_closed(wfd, HANDOVER_WAIT)
            _become_init(self.argv, pid, self.follow)
            os._exit(0)

    # ---- the rewind, in the reader thread of the current runtime -----

    def hand_over(self, frame):
        """Handle a ``rewind`` frame: wake the checkpoint and exit, or
        answer why not and go on as before."""
        n = frame.get("n")
        with self.lock:
            try:
                if n != self.asked or self.target is None:
                    raise RuntimeError(f"a rewind of {n!r} cells that the last cell did not ask for")
                point = self._why_not(self.target)
            except RuntimeError as exc:
                self.channel.send({"t": "rewound", "ok": False, "cells": n, "error": str(exc)})
                return
            older = [p.pid for p in self.points if p.at < point.at]
            leftover = self.channel.read_ahead()
            header = json.dumps({"n": n, "keep": older}).encode()
            if self.follow is not None:
                _subreaper(True)
            try:
                _write_message(point.wfd, header, leftover)
            except OSError as exc:
                if self.follow is not None:
                    _subreaper(False)
                self.channel.unread(leftover)
                self._drop(point, f"it could not be woken ({exc.strerror})")
                self.channel.send({"t": "rewound", "ok": False, "cells": n,
                                   "error": f"the checkpoint could not be woken ({exc.strerror}); nothing changed"})
                return
            if self.follow is None:
                try:
                    os.write(self.handoff, b"%d\n" % point.pid)
                except OSError:
                    pass
            _wait_closed(point.wfd, HANDOVER_WAIT)
            for p in self.points:
                if p.at > point.at and _alive(p):
                    try:
                        os.kill(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
            if self.follow is not None:
                _become_init(self.argv, point.pid, self.follow)
            os._exit(0)


def _random_state():
    """The random module's state, when it is loaded: a fork reseeds it in
    the child, and a copy of the interpreter puts it back."""
    return sys.modules["random"].getstate() if "random" in sys.modules else None


def _end_copy(pid, wfd):
    """End a waiting copy of the runtime that will not be woken: close its
    wake pipe (it exits at its end) and reap it."""
    try:
        os.close(wfd)
        os.waitpid(pid, 0)
    except OSError:
        pass


def _subreaper(on):
    """Make this process a child subreaper (PR_SET_CHILD_SUBREAPER, kept
    across execve), or no longer one. A runtime that hands its channel to
    a checkpoint or a copy becomes one before the hand-over: from the
    moment the new runtime answers, the orphans of its processes must come
    to this process (the init it becomes), not to the container's pid 1,
    even while this process has not yet executed the init."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1 if on else 0, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass  # orphans go to pid 1 then, which reaps them


def _become_init(argv, pid, follow):
    """Replace this process (the one the engine waits for), a child
    subreaper already, by the loader's init following runtime ``pid`` and
    reading the hand-off pipe ``follow``: its memory goes back to the
    kernel, its pid and its children stay. Its standard streams point at /dev/null (the runtime's
    fd 1 and 2 are pipes the new runtime reads as the code's output)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.set_inheritable(follow, True)
    try:
        os.execv(sys.executable, [*argv, "--follow", str(pid), str(follow)])
    except OSError:
        pass  # the caller exits: the engine then sees the sandbox end


def _wait_closed(fd, timeout):
    """Wait until the reader of pipe ``fd`` closed it (the checkpoint has
    answered), at most ``timeout`` seconds: this process's memory and the
    dropped checkpoints' then go back to the kernel after the answer, not
    while the checkpoint makes it."""
    import select
    poller = select.poll()
    poller.register(fd, select.POLLERR)
    try:
        poller.poll(timeout * 1000)
    except InterruptedError:
        pass


def _write_message(fd, header, leftover):
    data = b"%d %d\n" % (len(header), len(leftover)) + header + leftover
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_message(fd):
    """``(header dict, leftover bytes)`` from the wake pipe, or None at EOF."""
    buf = bytearray()
    while b"\n" not in buf:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        if not chunk:
            return None
        buf += chunk
    line, _, rest = bytes(buf).partition(b"\n")
    hlen, llen = (int(x) for x in line.split())
    while len(rest) < hlen + llen:
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        rest += chunk
    return json.loads(rest[:hlen]), rest[hlen:hlen + llen]
