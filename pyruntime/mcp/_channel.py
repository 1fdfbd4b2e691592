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
  ``on_interrupt``, for the cell's processes), and exits the process at EOF;
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
from collections.abc import Callable, Iterable

from mcp._results import BridgeError, bridge_error

__all__ = ["Channel", "get"]

# At most this many RPCs wait for their answers at once (the host's
# sandbox.MaxInFlight, which refuses more). request() waits for a free slot,
# so that a cell that gathers thousands of calls never makes the host stop
# reading its frames.
MAX_IN_FLIGHT = 64

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
        self._graveyard = []          # readers replaced after a fork: never closed (their lock may be held)

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
        self.send_bytes(encode(frame))

    def send_many(self, frames: Iterable[dict]) -> None:
        """Send frames from an iterable as one critical section."""
        self._write(frames, many=True)

    def send_bytes(self, data: bytes) -> None:
        """Send one already encoded frame."""
        self._write(data, many=False)

    def _write(self, what, many):
        entered = self.enter_critical()
        try:
            with self._write_lock:
                self._write_frames(what, many)
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

    def _write_frames(self, what, many):
        put = self._write_all if self._held is None else self._hold_bytes
        if not many:
            put(what)
            return
        for frame in what:
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
            if exc.errno in (errno.EPIPE, errno.EBADF):
                self.shutdown()  # the host is gone: nothing can work any more
            raise

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
        """Start the reader thread."""
        threading.Thread(target=self._reader_loop, name="codebridge-reader",
                         daemon=True).start()

    def _reader_loop(self):
        while True:
            try:
                line = self._in.readline()
            except OSError:
                line = b""
            if not line:
                self.shutdown()
            try:
                frame = json.loads(line)
            except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, too deep
                self._unreadable(line, exc)
                continue
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
        elif kind == "get":  # the host reads a workspace file (resources/read)
            import threading
            from mcp._files import read_file
            threading.Thread(target=lambda: self.send(read_file(frame)), daemon=True).start()
        else:
            self.log("debug", f"unknown frame type {kind!r} ignored")

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
        for fd in (self._out_fd, self._in.fileno(), self._held_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._out_fd = -1
        self.exec_id = None


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
