"""The frame channel to the host: frame writer, reader thread and RPC futures.

Frames are JSON objects, one per line (see pyruntime/PROTOCOL.md). The channel
owns two private, non-inheritable descriptors: ``in_fd`` (frames from the
host) and ``out_fd`` (frames to the host). Nothing else writes to ``out_fd``.
They start as copies of stdin and stdout; when the host offers the direct
channel (:meth:`Channel.connect`) both become the bridge's Unix socket.

Threads:

* the main thread runs cells and sends most frames;
* the reader thread (:meth:`Channel.start_reader`) reads every frame from the
  host for the whole life of the process: it queues ``exec`` frames for the
  main thread, resolves RPC futures from ``result`` frames, turns
  ``interrupt`` frames into SIGINT for the main thread (and, through
  ``on_interrupt``, for the cell's processes), and exits the process at EOF
  (a detachable sandbox instead waits for a host to take over the channel:
  :meth:`Channel.detachable`);
* the output pump threads send ``out`` frames.

A frame write on the main thread is a critical section: a KeyboardInterrupt
that arrives in the middle is deferred until the frame is complete, so a
frame is never cut short (the output module uses the same sections so that
no lock is left held).
"""

from __future__ import annotations  # annotations stay text: no typing import at startup

import errno
import io
import itertools
import json
import os
import queue
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable

from mcp._results import BridgeError, bridge_error

__all__ = ["Channel", "get"]

# At most this many RPCs wait for their answers at once (the host's
# sandbox.MaxInFlight, which refuses more). request() waits for a free slot,
# so that a cell that gathers thousands of calls never makes the host stop
# reading its frames.
MAX_IN_FLIGHT = 64

# A detachable sandbox keeps at most this many characters of each stream of
# its last cell for a host that resumes the channel (the rest is counted).
KEEP_MAX = 1 << 16

# Channel.hold() keeps at most this many bytes of frames before it writes them.
HOLD_MAX = 1 << 16

# The requests that pass the host's gate (PROTOCOL.md): those a cell sends
# in one loop turn are marked as one batch, which the host asks the user
# about once. Only these: the host counts a batch's members at its gate.
GATED = frozenset(("call_tool", "read_resource", "get_prompt"))

_channel: Channel | None = None  # the process's Channel, set by Channel.install()
_Future = None   # concurrent.futures.Future, imported on the first RPC

# The start of a result frame as the host writes it (sandbox/frame.go), for
# the id of a result that cannot be decoded.
_RESULT_ID = re.compile(rb'\s*\{"t":\s*"result",\s*"id":\s*(\d+)')


def resume_address(key_hash: str) -> bytes:
    """The abstract Unix socket a detachable runtime waits on for a new host
    (in the sandbox's network namespace; the key's hash names it, so that
    runtimes that share a namespace, as in the runtime's tests, do not
    meet)."""
    return b"\0codebridge-resume-" + key_hash[:32].encode("ascii")


def get() -> Channel:
    """Return the process's channel (raises BridgeError outside the runtime)."""
    if _channel is None:
        raise BridgeError("the codebridge runtime is not running in this process")
    return _channel


def encode(frame: dict) -> bytes:
    """Encode a frame as one UTF-8 JSON line (bytes). Raises TypeError or
    ValueError for a value JSON cannot carry (NaN and infinities too: the
    host's decoder would refuse the line and break the channel)."""
    text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates become U+FFFD
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return (text + "\n").encode("utf-8", "replace")


class Channel:
    """Frames in and out, cell state, interrupts and RPCs."""

    def __init__(self, in_fd: int, out_fd: int):
        self._in = open(in_fd, "rb", buffering=1 << 16)
        self._out_fd = out_fd
        self._held_fd = -1  # stdout's descriptor, kept once frames use the socket
        self._write_lock = threading.Lock()
        self._settler = None          # settles awaited requests on their loop (_Settler)
        self._held = None             # frames kept by hold() until release(); None: not holding
        self._held_size = 0
        self._main_ident = threading.main_thread().ident
        self._pid = os.getpid()
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple] = {}  # rpc id -> (future, cell id)
        self._slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)  # one per entry of _pending
        self.cells = queue.SimpleQueue()  # exec frames for the main thread
        self.exec_id = None           # id of the running cell, None between cells
        self.armed = False            # True while user code of a cell runs
        self._critical = 0            # >0 in a critical section of the main thread
        self._interrupt_deferred = False
        self._interrupt_for = None    # cell an interrupt frame was sent for
        self.flush_output: Callable[[], None] = lambda: None  # set by the output module
        self.on_exit: Callable[[], None] = lambda: None       # cleanup before exiting at EOF
        self.interrupted = None           # the cell the host interrupted, if any
        self.on_interrupt: Callable[[], None] = lambda: None  # reader thread, after an interrupt frame
        # The line of the running cell that makes a request (0: unknown);
        # set by the executor.
        self.locate: Callable[[], int] = lambda: 0
        self._outbox = None           # the requests of this loop turn (_Outbox)
        self._batches = itertools.count(1)
        self.kept = None              # the last cell's frames, when detachable (_Kept)
        self._swap = None             # held while a host takes over the channel
        self._listener = None         # the resume socket, when detachable
        self._dropping = False        # frames go to /dev/null: no host holds the channel
        self._graveyard = []          # readers replaced after a fork: never closed (their lock may be held)
        self._standby = {}            # reader -> out fd of each channel another host took over
        self._got_from = {}           # reader -> the largest exec id read from it (detachable)

    def install(self) -> Channel:
        """Make this the process's channel and take over SIGINT."""
        global _channel
        _channel = self
        signal.signal(signal.SIGINT, self.on_sigint)
        os.register_at_fork(after_in_child=self._after_fork_child)
        return self

    # ---- writing -------------------------------------------------------

    def send(self, frame: dict) -> None:
        """Send one frame (a dict)."""
        self._write(encode(frame), many=False, frame=frame)

    def send_many(self, frames: Iterable[dict]) -> None:
        """Send frames from an iterable as one critical section."""
        self._write(frames, many=True)

    def send_bytes(self, data: bytes) -> None:
        """Send one already encoded frame."""
        self._write(data, many=False)

    def _write(self, what, many, frame=None):
        entered = self.enter_critical()
        try:
            with self._write_lock:
                self._write_frames(what, many, frame)
        finally:
            self.leave_critical(entered)

    def enter_critical(self) -> bool:
        """Defer KeyboardInterrupt on the main thread until leave_critical():
        used around frame writes and output bookkeeping that hold locks.
        Returns a token for leave_critical()."""
        if threading.get_ident() != self._main_ident:
            return False
        self._critical += 1
        return True

    def leave_critical(self, entered: bool) -> None:
        """End a critical section; raise a KeyboardInterrupt deferred in it."""
        if not entered:
            return
        self._critical -= 1
        if self._interrupt_deferred and not self._critical:
            self._interrupt_deferred = False
            if self.armed:
                raise KeyboardInterrupt

    def _write_frames(self, what, many, frame=None):
        put = self._write_all if self._held is None else self._hold_bytes
        kept = self.kept
        if not many:
            if kept is not None and frame is not None:
                kept.record(frame)
            put(what)
            return
        for frame in what:
            if kept is not None:
                kept.record(frame)
            put(encode(frame))

    # ---- held frames ---------------------------------------------------

    def hold(self) -> None:
        """Keep the frames sent from now on (by any thread, in order) until
        :meth:`release`, which writes them at once: a cell's last output and
        its done frame then cost the host one read, not one each. Past
        ``HOLD_MAX`` bytes what is kept goes out at once."""
        with self._write_lock:
            if self._held is None:
                self._held, self._held_size = [], 0

    def release(self) -> None:
        """Write the frames kept since :meth:`hold`, in one write."""
        entered = self.enter_critical()
        try:
            with self._write_lock:
                held, self._held = self._held, None
                if held:
                    self._write_all(b"".join(held))
        finally:
            self.leave_critical(entered)

    def _hold_bytes(self, data: bytes) -> None:
        self._held.append(data)
        self._held_size += len(data)
        if self._held_size > HOLD_MAX:
            held, self._held, self._held_size = self._held, [], 0
            self._write_all(b"".join(held))

    def _write_all(self, data):
        fd = self._out_fd
        try:
            n = os.write(fd, data)
            if n < len(data):
                view = memoryview(data)[n:]
                while view:
                    view = view[os.write(fd, view):]
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.EBADF):
                raise
            if self.kept is None:
                self.shutdown()  # the host is gone: nothing can work any more
            self._drop_output(fd)  # a detachable sandbox waits for the next host

    def log(self, level: str, msg: object) -> None:
        """Send a diagnostic for the host's log."""
        try:
            self.send({"t": "log", "level": level, "msg": str(msg)})
        except Exception:
            pass

    # ---- the direct channel --------------------------------------------

    def connect(self, offer: dict) -> None:
        """Take the direct channel the host offers (its first frame, ``channel``:
        ``path`` of its Unix socket, ``secret``): connect, send the secret as
        the socket's first line, and move both directions to the socket
        (stdin's descriptor is closed; stdout's is kept, unused). When that fails, say why
        in a ``channel`` frame on the current channel, and keep it."""
        import socket
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(offer["path"])
                sock.sendall(encode({"t": "connect", "secret": offer["secret"]}))
            except BaseException:
                sock.close()
                raise
        except Exception as exc:  # no socket there, refused, a malformed offer
            self.send({"t": "channel", "error": f"{type(exc).__name__}: {exc}"})
            return
        fd = sock.detach()  # blocking, non-inheritable
        old_in = self._in
        # stdout stays open, unused: its end would tell the host that the
        # runtime is gone, possibly before the host took the socket.
        self._held_fd = self._out_fd
        self._in = open(fd, "rb", buffering=1 << 16)
        self._out_fd = os.dup(fd)
        old_in.close()

    # ---- interrupts ----------------------------------------------------

    def on_sigint(self, signum, frame):
        """SIGINT handler: KeyboardInterrupt only while user code runs, and
        never in the middle of a frame write."""
        target, self._interrupt_for = self._interrupt_for, None
        if not self.armed or target not in (None, self.exec_id):
            return
        if self._critical:
            self._interrupt_deferred = True
            return
        raise KeyboardInterrupt

    def _interrupt(self, cell_id):
        """Reader thread: SIGINT to the main thread if cell ``cell_id`` runs.
        A signal that lands after the cell ended (or in the next cell) is
        ignored by on_sigint."""
        cell = self.exec_id
        if self.armed and cell is not None and cell_id in (None, cell):
            self._interrupt_for = cell
            self.interrupted = cell
            signal.pthread_kill(self._main_ident, signal.SIGINT)
            self.on_interrupt()

    # ---- reading -------------------------------------------------------

    def read_frame(self) -> dict | None:
        """Read one frame synchronously; None at EOF. Used before the reader
        thread starts (for ``hello``)."""
        while True:
            line = self._in.readline()
            if not line:
                return None
            if line.strip():
                return json.loads(line)

    def start_reader(self):
        """Start the reader thread (of the current channel)."""
        threading.Thread(target=self._reader_loop, args=(self._in,), name="codebridge-reader",
                         daemon=True).start()

    def _reader_loop(self, source):
        while True:
            try:
                line = source.readline()
            except (OSError, ValueError):  # ValueError: closed by a host that took over
                line = b""
            if source is not self._in:  # a host took over the channel: this stream waits
                if self._standby_line(source, line):
                    continue
                return
            if not line:
                if self.kept is None:
                    self.shutdown()
                self._host_gone(source)
                return
            if self.kept is not None:
                self.kept.heard = time.monotonic()
            try:
                frame = json.loads(line)
            except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, too deep
                self._unreadable(line, exc)
                continue
            if self.kept is not None and isinstance(frame, dict) and frame.get("t") == "exec" \
                    and isinstance(frame.get("id"), int):
                self._got_from[source] = max(self._got_from.get(source, 0), frame["id"])
            try:
                self.dispatch(frame)
            except Exception as exc:  # never let the reader thread die
                self.log("error", f"reader: {type(exc).__name__}: {exc}")

    def _unreadable(self, line: bytes, exc: BaseException) -> None:
        """A line from the host that is not JSON. When it is the answer to an
        RPC (its id is at the start of the line), that RPC fails at once
        instead of waiting for its time limit; anything else is logged."""
        if not line.strip():
            return
        reason = f"{type(exc).__name__}: {str(exc)[:200]}"
        match = _RESULT_ID.match(line[:128])
        entry = self._take(int(match.group(1))) if match else None
        if entry is None:
            self.log("warning", f"unreadable frame ignored ({reason}): {line[:200]!r}")
            return
        self.log("warning", f"unreadable result for RPC {match.group(1)} ({reason})")
        _fail(entry[0], BridgeError(
            f"the host's answer to this call could not be decoded ({reason}); "
            "the call did not return a value: retry it, or ask for a smaller or simpler result"))

    def dispatch(self, frame: object) -> None:
        """Handle one frame from the host."""
        if not isinstance(frame, dict):
            self.log("warning", "frame is not an object; ignored")
            return
        kind = frame.get("t")
        if kind == "exec":
            if self.kept is not None and isinstance(frame.get("id"), int):
                self.kept.last = max(self.kept.last, frame["id"])
            self.cells.put(frame)
        elif kind == "result":
            self._resolve(frame)
        elif kind == "interrupt":
            self._interrupt(frame.get("id"))
        elif kind == "put":
            from mcp._files import write_files
            errors = write_files(frame.get("files"))
            stored = {"t": "stored", "id": frame.get("id")}
            if errors:
                stored["error"] = "; ".join(errors)
            self.send(stored)
        elif kind == "rewind":  # after the cell that asked (mcp._rewind): may not return
            from mcp import _rewind
            if _rewind._keeper is None:
                self.send({"t": "rewound", "ok": False, "error": "this runtime keeps no checkpoints"})
            else:
                _rewind._keeper.hand_over(frame)
        elif kind == "handover":  # a first fork with no init yet (mcp._rewind): may not return
            from mcp import _rewind
            if _rewind._keeper is not None:
                _rewind._keeper.hand_init()
        elif kind == "end":  # the host ends this runtime, not the container its forks use (mcp._fork)
            self.shutdown()
        elif kind == "get":  # the host reads a workspace file (resources/read)
            import threading
            from mcp._files import read_file
            threading.Thread(target=lambda: self.send(read_file(frame)), daemon=True).start()
        else:
            self.log("debug", f"unknown frame type {kind!r} ignored")

    # ---- a detachable sandbox (PROTOCOL.md, "Resuming the channel") -----

    def detachable(self, idle: float, key_hash: str, ready: dict) -> None:
        """Make this sandbox one that outlives its host. The runtime listens
        on the abstract Unix socket ``resume_address(key_hash)`` in the
        sandbox's own network namespace, bound now, before any code runs,
        so that no code can take the name; a new host reaches it through a
        relay it runs in the sandbox (``mcp/_relay.py``) and proves itself
        with the key whose SHA-256 is ``key_hash``. When the channel ends,
        the runtime keeps its interpreter, drops what it writes, and waits
        for the next host; it keeps the last cell's frames for it
        (:meth:`resume`) and ends once ``idle`` seconds pass with no frame
        from a host and no cell's end (:meth:`_watch`). ``ready`` is the
        ready frame, whose fields the ``resumed`` frame repeats."""
        import socket
        self.kept = _Kept(idle, key_hash, ready)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(resume_address(key_hash))
        self._listener.listen(4)
        self._detached_threads()

    def _detached_threads(self) -> None:
        """Start the threads of a detachable runtime: the resume socket's
        acceptor and the idle deadline's watch (again in a checkpoint that a
        rewind woke: threads do not survive a fork)."""
        self._swap = threading.Lock()
        threading.Thread(target=self._accept_loop, args=(self._listener,), name="codebridge-resume",
                         daemon=True).start()
        threading.Thread(target=self._watch, name="codebridge-idle", daemon=True).start()

    def _watch(self) -> None:
        kept = self.kept
        while True:
            left = kept.idle - (time.monotonic() - max(kept.heard, kept.ended))
            if left <= 0:
                self.log("warning", f"no host for {kept.idle:g}s: the detached sandbox ends")
                self.shutdown()
            time.sleep(left)

    def _host_gone(self, source) -> None:
        """The host's stream ended: drop what the runtime writes until a
        host resumes the channel."""
        with self._swap:
            if source is self._in:
                with self._write_lock:
                    self._drop_output(self._out_fd)
        try:
            source.close()  # a relay's socket closes, and the relay ends
        except OSError:
            pass

    def _drop_output(self, fd: int) -> None:
        """Write the frames sent to ``fd`` from now on to /dev/null (the
        write lock held): a host that is gone reads nothing, and a pipe no
        one reads would stop the runtime."""
        if fd != self._out_fd or self._dropping:
            return
        self._dropping = True
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        os.dup2(null, fd, inheritable=False)
        os.close(null)

    def _accept_loop(self, listener) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._take_over, args=(conn,), daemon=True).start()

    def _take_over(self, conn) -> None:
        """A relay connected: its first line must be ``{"t":"resume","key":K}``
        with the key of this sandbox; then its connection is the channel in
        both directions, and the runtime says where it was."""
        try:
            conn.settimeout(10)
            reader = conn.makefile("rb", buffering=1 << 16)
            proved = self._proves_key(reader.readline(4096))
            conn.settimeout(None)
        except OSError:
            proved = False
        if not proved:
            conn.close()
            return
        out = os.dup(conn.fileno())
        conn.close()  # the socket closes with the reader's file (makefile keeps it open)
        self._switch(reader, out, new_reader=True)

    def _switch(self, reader, out: int, new_reader: bool) -> None:
        """Make ``reader`` and ``out`` the channel (a relay's connection),
        and say where the runtime is. The channel it replaces is told so
        (a ``moved`` frame) and waits, read by its own reader thread, for
        its host to take it back (:meth:`_standby_line`); one whose host is
        gone is closed."""
        with self._swap:
            self.kept.heard = time.monotonic()
            old_in = self._in
            self._in = reader
            with self._write_lock:
                old, gone = self._out_fd, self._dropping
                self._out_fd, self._dropping = out, False
                self._standby.pop(reader, None)
                if old >= 0 and not gone:
                    _tell_moved(old)
                    self._standby[old_in] = old
                elif old >= 0:
                    os.close(old)
            if new_reader:
                self.start_reader()
            self._forget_checkpoints()
            self._announce(self._got_from.get(reader, 0))

    def _standby_line(self, source, line: bytes) -> bool:
        """Reader thread of a channel another host took over: a ``resume``
        line with the key takes the channel back to it, at once, with no
        new relay; any other line is dropped unread (a cell its host sent
        before it learnt of the move never runs). False once its stream
        ended, which closes it."""
        with self._swap:
            out = self._standby.get(source)
            if not line or out is None:
                self._close_standby(source)
                return False
        if self._proves_key(line):
            self._switch(source, out, new_reader=False)
        return True

    def _close_standby(self, source) -> None:
        """Close a waiting channel (``_swap`` held)."""
        out = self._standby.pop(source, None)
        self._got_from.pop(source, None)
        if out is not None:
            os.close(out)
        try:
            source.close()
        except OSError:
            pass

    def _proves_key(self, line: bytes) -> bool:
        """Whether ``line`` is a ``resume`` frame with this sandbox's key
        (compared by hash, in constant time)."""
        import hashlib
        import hmac
        try:
            first = json.loads(line)
        except (ValueError, RecursionError):
            return False
        key = first.get("key") if isinstance(first, dict) and first.get("t") == "resume" else None
        return isinstance(key, str) and hmac.compare_digest(
            hashlib.sha256(key.encode()).hexdigest(), self.kept.key_hash)

    def _drop_standby(self) -> None:
        """In a forked copy (a checkpoint woken, a fork, a subprocess): the
        waiting channels are the runtime's it was copied from; close their
        descriptors, never their readers (a lock may be held)."""
        for source, out in list(self._standby.items()):
            self._graveyard.append(source)
            for fd in (out, source.fileno()):
                try:
                    os.close(fd)
                except (OSError, ValueError):
                    pass
        self._standby, self._got_from = {}, {}

    def _forget_checkpoints(self) -> None:
        """Drop the rewind's checkpoints (mcp._rewind): each holds the
        previous host's channel, which a rewind would hand back. The next
        cell's end takes one on this channel."""
        from mcp import _rewind
        keeper = _rewind._keeper
        if keeper is None:
            return
        with keeper.lock:
            for point in list(keeper.points):
                keeper._drop(point, "a new bridge took over the session (the checkpoint held the old one's channel)")

    def _announce(self, yours: int) -> None:
        """Say where the runtime is, in a ``resumed`` frame, to the host
        that took over: the running cell with its output so far, or the last
        cell with its done frame (kept until the next exec); then fail the
        requests the previous host never answered (it may have acted on
        them: the code learns so). The ``resumed`` frame is the new host's
        first: frames held for one write are dropped (it counts them).
        ``yours`` is the largest exec id read from the channel taken (0: a
        new one): a host taking its own channel back learns whether the
        runtime got its last cell before the other host took over."""
        kept = self.kept
        try:
            self.flush_output()  # text the running cell printed so far counts
        except Exception as exc:
            self.log("error", f"resume: flushing output: {type(exc).__name__}: {exc}")
        lost = list(self._pending)  # sent to the previous host, which never answered
        entered = self.enter_critical()
        try:
            with self._write_lock:
                if self._held:  # counted in the resumed frame, written to nobody yet
                    self._held, self._held_size = [], 0
                self._write_all(encode(kept.resumed(self.exec_id, lost, yours)))
        finally:
            self.leave_critical(entered)
        for rid in lost:  # after the resumed frame: what the cell does next is the new host's
            entry = self._take(rid)
            if entry is not None:
                _fail(entry[0], BridgeError(
                    "the bridge that was to answer this call went away, and another took over "
                    "the session: whether the call ran is unknown; check before you retry it"))

    def shutdown(self) -> None:
        """End the process: the host closed the channel, or is gone. Runs
        ``on_exit`` first (in the runtime itself, not in a forked copy)."""
        try:
            if os.getpid() == self._pid:
                self.on_exit()
        finally:
            os._exit(0)

    # ---- RPC -----------------------------------------------------------

    def request(self, method: str, params: dict):
        """Send an ``rpc`` frame; return a concurrent.futures.Future that the
        reader thread resolves with the value (or a BridgeError)."""
        global _Future
        if _Future is None:
            from concurrent.futures import Future as _Future
        return self._request(method, params, _Future)

    def request_async(self, method: str, params: dict):
        """Send an ``rpc`` frame from a coroutine; return an asyncio future
        of the running loop that the reader thread resolves (through the
        loop) with the value, or a BridgeError. Cheaper than wrapping
        :meth:`request`'s future: no thread-safe future in between.

        The frame goes out at the end of this turn of the loop, with every
        other request made in it (asyncio.gather starts its calls in one
        turn), in one write; several gated requests among them carry the
        same ``batch`` id and their number (``size``), so that the host
        asks the user about them once."""
        import asyncio
        loop = asyncio.get_running_loop()
        settler = self._settler
        if settler is None or settler.loop is not loop:
            settler = self._settler = _Settler(loop)
        rid, cell, data = self._frame(method, params)
        future = _LoopFuture(settler)
        outbox = self._outbox
        if outbox is None or outbox.loop is not loop:
            outbox = self._outbox = _Outbox(self, loop)
        outbox.add((rid, cell, data, method in GATED, future))
        return future.future

    def _frame(self, method: str, params: dict) -> tuple:
        """The id, cell and encoded ``rpc`` frame of a request of the
        running cell, with the line of the cell that makes it."""
        cell = self.exec_id
        if cell is None:
            raise BridgeError(f"{method}: MCP calls work only while a cell runs "
                              "(not from a thread that outlived its cell)")
        rid = next(self._ids)
        frame = {"t": "rpc", "id": rid, "exec": cell, "method": method, "params": params}
        line = 0
        if method in GATED:  # only an approval's question shows it: no stack walk for the rest
            try:
                line = self.locate()
            except Exception:  # never fail a call for its line
                line = 0
        if line:
            frame["line"] = line
        if self.kept is not None and method in GATED:
            self.kept.ledger.sent(rid, cell, method, params)
        try:
            return rid, cell, encode(frame)
        except (TypeError, ValueError, RecursionError) as exc:
            raise _not_json(method, params, exc) from None

    def _request(self, method: str, params: dict, new_future):
        rid, cell, data = self._frame(method, params)
        future = new_future()
        self._slots.acquire()  # a KeyboardInterrupt may end the wait
        self._pending[rid] = (future, cell)
        try:
            self.send_bytes(data)
        except BaseException:
            self._take(rid)
            raise
        return future

    def send_together(self, requests: list) -> None:
        """Send the requests of one loop turn (``(rid, cell, data, gated,
        future)``): those that get a slot at once go in one write, the
        gated ones among them marked as one batch when there are several;
        the rest follow one by one as slots free up. A request that could
        not be sent fails."""
        ready = []
        for request in requests:
            if not self._slots.acquire(blocking=False):
                break
            ready.append(request)
        gated = sum(1 for r in ready if r[3])
        if gated > 1:
            mark = b',"batch":%d,"size":%d}\n' % (next(self._batches), gated)
            ready = [(rid, cell, data[:-2] + mark if g else data, g, f) for rid, cell, data, g, f in ready]
        for rid, cell, _, _, future in ready:
            self._pending[rid] = (future, cell)
        sent = 0
        try:
            if ready:
                self.send_bytes(b"".join(r[2] for r in ready))
            sent = len(ready)
            for rid, cell, data, _, future in requests[sent:]:
                self._slots.acquire()  # a KeyboardInterrupt may end the wait
                self._pending[rid] = (future, cell)
                self.send_bytes(data)
                sent += 1
        except BaseException as exc:  # not sent: each fails, and frees its slot
            error = exc if isinstance(exc, Exception) else BridgeError(
                "the call was not sent: the cell was interrupted")
            for rid, _, _, _, future in requests[sent:]:
                self._take(rid)
                _fail(future, error)
            if not isinstance(exc, Exception):
                raise

    def _take(self, rid: int):
        """Remove RPC ``rid`` from the waiting ones and free its slot; its
        (future, cell) entry, or None when it was not waiting."""
        entry = self._pending.pop(rid, None)
        if entry is not None:
            self._slots.release()
        return entry

    def call(self, method: str, params: dict) -> object:
        """Blocking RPC: the value, or raises BridgeError."""
        return self.request(method, params).result()

    async def call_async(self, method: str, params: dict) -> object:
        """Awaitable RPC: the value, or raises BridgeError."""
        return await self.request_async(method, params)

    def _resolve(self, frame: dict) -> None:
        rid = frame.get("id")
        entry = self._take(rid) if isinstance(rid, int) else None
        if entry is None:
            return
        if self.kept is not None:
            self.kept.ledger.answered(rid, frame)
        future = entry[0]
        if future.done():
            return
        if frame.get("ok"):
            outcome, value = future.set_result, frame.get("value")
        else:
            value = bridge_error(frame.get("error"))  # the class of its kind
            outcome = future.set_exception
        try:
            outcome(value)
        except Exception:  # cancelled meanwhile
            pass

    def fail_pending(self, cell: object) -> None:
        """Fail the RPCs of ``cell`` still waiting when it ends."""
        for rid, (future, owner) in list(self._pending.items()):
            if owner != cell or self._take(rid) is None:
                continue
            _fail(future, BridgeError("the cell ended before the host answered this call"))

    # ---- rewind (mcp._rewind) ------------------------------------------

    def read_ahead(self) -> bytes:
        """Reader thread, handing the channel over: the bytes it read from
        the host that no frame took yet, without reading more."""
        fd = self._in.fileno()
        os.set_blocking(fd, False)
        try:
            data = self._in.peek()
            return self._in.read(len(data)) if data else b""
        finally:
            os.set_blocking(fd, True)

    def unread(self, data: bytes) -> None:
        """Reader thread: a handover failed; read ``data`` again first."""
        if data:
            self._graveyard.append(self._in)
            self._in = io.BufferedReader(_Prefixed(data, self._in.fileno()), 1 << 16)

    def resume(self, leftover: bytes, output, executor) -> None:
        """In a checkpoint that a rewind woke: become the runtime's channel
        again. The reader starts afresh with the bytes the last runtime had
        read ahead; what was queued or pending at the fork is gone."""
        self._drop_standby()
        self._graveyard.append(self._in)  # its lock belongs to a reader thread that is not here
        fd = self._in.fileno()
        raw = _Prefixed(leftover, fd) if leftover else open(fd, "rb", buffering=0, closefd=False)
        self._in = io.BufferedReader(raw, 1 << 16)
        self._pid = os.getpid()
        self.cells = queue.SimpleQueue()
        self._pending.clear()
        self._slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self._settler = self._outbox = None
        self.exec_id = self.interrupted = self._interrupt_for = None
        self.armed = False
        signal.signal(signal.SIGINT, self.on_sigint)
        output.resume()
        executor.resume()
        self.start_reader()
        if self.kept is not None:  # a detachable runtime (above): its threads again
            self.kept.heard = time.monotonic()
            self._detached_threads()

    # ---- fork ----------------------------------------------------------

    def _after_fork_child(self) -> None:
        """In a forked child (multiprocessing), never touch the frame fds:
        the child's output goes through fd 1 / fd 2 like a subprocess's.
        A checkpoint (mcp._rewind) keeps them: it may become the runtime."""
        from mcp import _rewind
        if _rewind.forking:
            return
        global _channel
        _channel = None
        self._drop_standby()
        for fd in (self._out_fd, self._in.fileno(), self._held_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._out_fd = -1
        self.exec_id = None


_MOVED = b'{"t":"moved"}\n'


def _tell_moved(fd: int) -> None:
    """Tell the host of the channel ``fd`` that another host took it over,
    with a ``moved`` frame (PROTOCOL.md, "Resuming the channel"), so that
    it stops sending cells no one will read instead of waiting out their
    time limit. Best effort, and never blocking: a host that is gone or
    does not read simply misses it (the write lock is held)."""
    try:
        was = os.get_blocking(fd)
        os.set_blocking(fd, False)
    except OSError:
        return
    try:
        os.write(fd, _MOVED)
    except OSError:
        pass
    finally:
        try:
            os.set_blocking(fd, was)
        except OSError:
            pass


class _Kept:
    """What a detachable sandbox keeps for a host that resumes the channel:
    the frames of its last cell (its output up to ``KEEP_MAX`` characters a
    stream, and its done frame), the largest exec id it got, and when it
    last heard from a host and last ended a cell. Written under the
    channel's write lock."""

    __slots__ = ("idle", "key_hash", "ready", "last", "heard", "ended", "cell", "out", "size",
                 "dropped", "done", "ledger")

    def __init__(self, idle: float, key_hash: str, ready: dict):
        self.idle = float(idle)
        self.key_hash = key_hash
        self.ready = ready
        self.last = 0
        self.heard = self.ended = time.monotonic()
        self.cell = None
        self.out = {"stdout": [], "stderr": []}
        self.size = {"stdout": 0, "stderr": 0}
        self.dropped = 0
        self.done = None
        self.ledger = _Ledger()

    def record(self, frame: dict) -> None:
        """Keep ``frame`` when it is a cell's output or end. A frame of a
        later cell starts the record anew; one of an earlier cell (a thread
        that outlived it) is not kept."""
        kind = frame.get("t")
        if kind not in ("out", "done"):
            return
        cell = frame.get("id")
        if not isinstance(cell, int) or (self.cell is not None and cell < self.cell):
            return
        if cell != self.cell:
            self.cell, self.done, self.dropped = cell, None, 0
            self.out = {"stdout": [], "stderr": []}
            self.size = {"stdout": 0, "stderr": 0}
        if kind == "done":
            self.done = frame
            self.ended = time.monotonic()
            return
        stream, data = frame.get("stream"), frame.get("data")
        if stream not in self.out or not isinstance(data, str):
            return
        room = max(0, KEEP_MAX - self.size[stream])
        if room:
            self.out[stream].append(data[:room])
            self.size[stream] += min(room, len(data))
        self.dropped += max(0, len(data) - room)

    def resumed(self, running, lost: list, yours: int = 0) -> dict:
        """The ``resumed`` frame: ``running`` is the cell that runs now, or
        None; ``lost`` the ids of the requests the previous host never
        answered; ``yours`` the largest exec id read from the channel
        taken."""
        frame = {"t": "resumed", "v": self.ready.get("v"), "python": self.ready.get("python"),
                 "last": self.last, "yours": yours, "lost": len(lost), "cell": None, "calls": None}
        cell = running if running is not None else self.cell
        frame["calls"] = self.ledger.of(cell, lost)
        if cell is None:
            return frame
        mine = cell == self.cell
        frame["cell"] = {
            "id": cell, "running": running is not None,
            "stdout": "".join(self.out["stdout"]) if mine else "",
            "stderr": "".join(self.out["stderr"]) if mine else "",
            "dropped": self.dropped if mine else 0,
            "done": ({k: v for k, v in self.done.items() if k != "t"}
                     if mine and running is None and self.done else None),
        }
        return frame


class _Ledger:
    """The gated requests of a detachable runtime's last cell (tool calls,
    resource reads, prompts) and how each ended, as the bridge's ledger
    has them (``runtime.calls()``): kept in the sandbox so that a bridge
    that takes the session over after the one that served the cell died
    can say what the cell did outside (the ``resumed`` frame's ``calls``).
    The last ``LAST`` are listed; the states of the ones before are
    counted."""

    LAST = 20
    KINDS = {"call_tool": ("tool", "tool"), "read_resource": ("resource", "uri"), "get_prompt": ("prompt", "name")}

    def __init__(self):
        self._lock = threading.Lock()
        self.cell = None
        self.total = 0
        self.calls = []
        self.earlier = {}
        self.inflight = {}

    def sent(self, rid: int, cell: int, method: str, params: dict) -> None:
        kind, field = self.KINDS[method]
        entry = {"seq": 0, "kind": kind, "server": str(params.get("server", ""))[:200],
                 "tool": str(params.get(field, ""))[:200], "state": "running", "duration_ms": 0}
        with self._lock:
            if cell != self.cell:
                self.cell, self.total, self.calls, self.earlier, self.inflight = cell, 0, [], {}, {}
            self.total += 1
            entry["seq"] = self.total
            self.calls.append(entry)
            self.inflight[rid] = (entry, time.monotonic())
            if len(self.calls) > self.LAST:
                gone = self.calls.pop(0)
                self.earlier[gone["state"]] = self.earlier.get(gone["state"], 0) + 1

    def answered(self, rid: int, frame: dict) -> None:
        with self._lock:
            entry, began = self.inflight.pop(rid, (None, 0))
            if entry is None:
                return
            entry["duration_ms"] = round((time.monotonic() - began) * 1000, 3)
            if frame.get("ok"):
                value = frame.get("value")
                entry["state"] = "tool_error" if isinstance(value, dict) and value.get("isError") else "ok"
                return
            error = frame.get("error")
            kind = error.get("kind") if isinstance(error, dict) else None
            entry["state"] = "denied" if kind in ("denied", "declined", "unknown_tool", "invalid_arguments") else "error"
            entry["error_kind"] = str(kind or "internal")[:40]

    def of(self, cell, lost) -> dict | None:
        """The ledger of ``cell`` (None when it made no gated request);
        the requests in ``lost``, which the previous host never answered,
        are ``cancelled``: whether they ran is unknown."""
        with self._lock:
            if cell is None or cell != self.cell:
                return None
            for rid in lost:
                entry = self.inflight.get(rid, (None, 0))[0]
                if entry is not None:
                    entry["state"] = "cancelled"
            return {"total": self.total, "calls": [dict(c) for c in self.calls], "earlier": dict(self.earlier)}


class _Prefixed(io.RawIOBase):
    """The channel's descriptor, with bytes read ahead before it."""

    def __init__(self, prefix: bytes, fd: int):
        self._prefix = memoryview(bytes(prefix))
        self._fd = fd

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:  # the descriptor belongs to the channel
        pass

    def readinto(self, b) -> int:
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        return os.readv(self._fd, [b])


class _Outbox:
    """The requests coroutines make in one turn of an event loop: the first
    schedules :meth:`flush` for the end of the turn (``call_soon`` runs after
    every callback that was ready when the turn began, e.g. every task that
    asyncio.gather started), which sends them together."""

    __slots__ = ("channel", "loop", "_requests")

    def __init__(self, channel: Channel, loop):
        self.channel = channel
        self.loop = loop
        self._requests = []

    def add(self, request: tuple) -> None:
        self._requests.append(request)
        if len(self._requests) == 1:
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        requests, self._requests = self._requests, []
        if requests:
            self.channel.send_together(requests)


class _Settler:
    """Settles awaited requests' futures on their event loop, from the
    reader thread: answers that come while the loop has not run the last
    batch yet join it, so a burst of answers (gathered calls) wakes the
    loop once, not once each (each wake is a write to the loop's
    self-pipe). A loop that closed meanwhile has nobody waiting: the
    answers are dropped."""

    def __init__(self, loop):
        self.loop = loop
        self._lock = threading.Lock()
        self._waiting = []  # callables, in the order the answers came

    def add(self, settle: Callable[[], None]) -> None:
        with self._lock:
            self._waiting.append(settle)
            if len(self._waiting) > 1:
                return  # the loop runs them with the first
        try:
            self.loop.call_soon_threadsafe(self._run)
        except RuntimeError:  # the loop is closed
            with self._lock:
                self._waiting.clear()

    def _run(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for settle in waiting:
            settle()


class _LoopFuture:
    """An asyncio future as the reader thread settles it: like a
    concurrent.futures.Future (``done``, ``set_result``, ``set_exception``),
    callable from any thread; each settles the asyncio future on its loop
    (through the loop's :class:`_Settler`), unless it is done by then
    (cancelled)."""

    __slots__ = ("settler", "future")

    def __init__(self, settler: _Settler):
        self.settler = settler
        self.future = settler.loop.create_future()

    def done(self) -> bool:
        return self.future.done()

    def set_result(self, value) -> None:
        self._settle(self.future.set_result, value)

    def set_exception(self, error) -> None:
        self._settle(self.future.set_exception, error)

    def _settle(self, how, value) -> None:
        future = self.future

        def settle():
            if not future.done():
                how(value)
        self.settler.add(settle)


def _fail(future, error: BaseException) -> None:
    """Fail an RPC's future unless it is already done (or cancelled)."""
    if not future.done():
        try:
            future.set_exception(error)
        except Exception:  # finished meanwhile
            pass


def _not_json(method: str, params: dict, exc: BaseException) -> BaseException:
    """The error for RPC params JSON cannot carry, naming the value (e.g.
    ``argument 'x'``) so the code can be fixed; the channel stays intact."""
    where = "its parameters"
    if isinstance(params, dict) and isinstance(params.get("arguments"), dict):
        for key, value in params["arguments"].items():
            try:
                json.dumps({key: value}, allow_nan=False)
            except (TypeError, ValueError, RecursionError):
                where = f"argument {key!r}"
                break
    kind = ValueError if isinstance(exc, ValueError) else TypeError
    return kind(f"{method}: {where} cannot be sent as JSON ({exc}); "
                "send str, int, finite float, bool, None, and lists and dicts of those")
