"""Capture of everything a cell writes to stdout and stderr.

Two paths lead to ``out`` frames:

* Python-level writes (``print``, ``sys.stdout.write``, tracebacks, warnings)
  go to :class:`StreamWriter` objects installed as ``sys.stdout`` and
  ``sys.stderr``. They share one ordered buffer (:class:`TextOutput`) that is
  sent when flushed, at cell end, when more than 64 KiB is buffered, or at a
  write that comes more than 100 ms after the last flush.
* fd-level writes (C code, subprocesses, ``os.write(1, ...)``) go into pipes
  that replaced fd 1 and fd 2; a :class:`FdPump` thread per pipe turns them
  into frames. The pump holds its lock while it reads and sends, so the main
  thread can drain a pipe deterministically at cell end.

Order: before a Python-level write is buffered, whatever the pipes already
hold is sent (one ``poll`` with timeout 0), and a pump sends the buffered text
before the fd data it read; so ``print("a"); os.system("echo b");
print("c")`` arrives as a, b, c.

Bytes that are not UTF-8 become U+FFFD; incremental decoders keep multi-byte
characters that are split across reads. Output that arrives between cells
(from threads or background processes) is kept, up to 1 MiB per path, and
sent at the start of the next cell.

While a cell runs, a flusher thread sends Python-level output that waited
more than 100 ms, so a line printed before a long sleep reaches the host
(and the agent's progress messages) at once.

Every out frame of a cell also passes through :class:`Spill`, which counts
the characters of each stream. The host shows at most ``limit`` characters
of a stream (the exec frame's budget); once a stream passes it, the
stream's complete output of the cell goes to a file in the workspace, whose
path the done frame reports.
"""

import codecs
import errno
import fcntl
import io
import os
import select
import sys
import termios
import threading
from time import monotonic, sleep

__all__ = ["Output", "StreamWriter", "Spill"]

CHUNK = 1 << 20            # characters per out frame, at most
FLUSH_SIZE = 64 * 1024     # flush when more is buffered
FLUSH_AGE = 0.1            # flush at a write this long after the last flush
PENDING_CAP = 1 << 20      # output kept between cells, per path
SPILL_DIR = "/workspace/.codebridge/output"  # where output over the budget goes
SPILL_MAX = 32 << 20       # bytes one spill file holds at most


def _utf8_decoder():
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


def _out_frames(cell, stream, text):
    """Yield out frames for ``text``, at most CHUNK characters each."""
    for start in range(0, len(text), CHUNK):
        yield {"t": "out", "id": cell, "stream": stream, "data": text[start:start + CHUNK]}


class TextOutput:
    """The ordered buffer behind sys.stdout and sys.stderr."""

    def __init__(self, channel, spill):
        self.channel = channel
        self.spill = spill
        self.lock = threading.Lock()
        self._wake = threading.Event()
        self._parts = []        # [(stream, text)] in write order
        self._size = 0
        self._last = monotonic()
        self._dropped = 0
        self._pumps = ()
        self._poller = None

    def attach(self, pumps):
        """Keep fd-level and Python-level output in order: every write first
        sends what the fd pipes hold (so ``print(); os.system(); print()``
        arrives as written)."""
        self._pumps = pumps
        self._poller = select.poll()
        for pump in pumps:
            self._poller.register(pump.read_end, select.POLLIN)

    def write(self, stream, text):
        """Buffer ``text`` for ``stream``; return its length."""
        n = len(text)
        if not n:
            return n
        entered = self.channel.enter_critical()  # never leave a lock held
        try:
            if self._pumps:
                out, err = self._pumps
                with out.lock, err.lock:  # no pump is between reading and sending
                    if self._poller.poll(0):
                        out.catch_up_locked()
                        err.catch_up_locked()
                    self._append(stream, text, n)
            else:
                self._append(stream, text, n)
        finally:
            self.channel.leave_critical(entered)
        return n

    def _append(self, stream, text, n):
        with self.lock:
            self._parts.append((stream, text))
            self._size += n
            if self._size > FLUSH_SIZE or monotonic() - self._last > FLUSH_AGE:
                self._flush_locked()

    def flush(self):
        """Send everything buffered (kept for later when no cell runs)."""
        entered = self.channel.enter_critical()
        try:
            with self.lock:
                self._flush_locked()
        finally:
            self.channel.leave_critical(entered)

    def reset_clock(self):
        """Start the 100 ms flush clock afresh (at cell start)."""
        self._last = monotonic()

    def start_flusher(self):
        """Start the thread that sends output waiting too long in a cell."""
        threading.Thread(target=self._flush_loop, name="codebridge-flush", daemon=True).start()

    def wake_flusher(self):
        """A cell started: the flusher watches it until it ends."""
        self._wake.set()

    def _flush_loop(self):
        while True:
            self._wake.wait()
            self._wake.clear()
            while self.channel.exec_id is not None:
                sleep(FLUSH_AGE)
                if self._parts and monotonic() - self._last >= FLUSH_AGE:
                    try:
                        self.flush()
                    except Exception as exc:  # keep watching whatever happens
                        self.channel.log("error", f"flusher: {type(exc).__name__}: {exc}")

    def _flush_locked(self):
        self._last = monotonic()
        if not self._parts:
            return
        cell = self.channel.exec_id
        if cell is None:
            self._trim_locked()
            return
        parts, self._parts, self._size = self._parts, [], 0
        if self._dropped:
            parts.insert(0, ("stderr", f"[codebridge: {self._dropped} characters written "
                                       "between cells were dropped]\n"))
            self._dropped = 0
        groups = []
        for stream, text in parts:
            if groups and groups[-1][0] == stream:
                groups[-1][1].append(text)
            else:
                groups.append((stream, [text]))
        if len(groups) == 1:
            stream, text = groups[0][0], "".join(groups[0][1])
            self.spill.add(stream, text)
            if len(text) <= CHUNK:
                self.channel.send({"t": "out", "id": cell, "stream": stream, "data": text})
                return
            self.channel.send_many(_out_frames(cell, stream, text))
            return
        joined = [(stream, "".join(texts)) for stream, texts in groups]
        for stream, text in joined:
            self.spill.add(stream, text)
        self.channel.send_many(frame for stream, text in joined
                               for frame in _out_frames(cell, stream, text))

    def _trim_locked(self):
        while self._size > PENDING_CAP and self._parts:
            _, text = self._parts.pop(0)
            self._size -= len(text)
            self._dropped += len(text)


class _StreamSpill:
    """What one stream of the running cell printed, for :class:`Spill`."""

    __slots__ = ("lock", "count", "kept", "fd", "path", "room", "saved", "error")

    def __init__(self):
        self.lock = threading.Lock()
        self.count = 0          # characters sent so far
        self.kept = []          # the texts, until the count passes the budget
        self.fd = None          # the open spill file
        self.path = None
        self.room = 0           # bytes the file may still take
        self.saved = 0          # characters written to the file
        self.error = None       # why the file is missing or incomplete


class Spill:
    """Saves a stream's complete output of a cell once it passes the budget.

    :meth:`add` sees the text of every out frame of the running cell. Up to
    ``limit`` characters a stream's text is only kept in memory, so a cell
    that prints little does no file work. The text that passes the budget
    creates ``SPILL_DIR/cell-<id>-<stream>.txt`` holding everything so far;
    later text is appended. A file takes at most ``SPILL_MAX`` bytes and half
    the free space of the workspace; a file that cannot be written is
    reported in the done frame, never raised into the cell.
    """

    def __init__(self, folder=None):
        self._folder = folder   # None: SPILL_DIR (a parameter for tests)
        self._cell = None
        self._limit = 0
        self._streams = {}

    def begin(self, cell, limit):
        """Start counting for ``cell``; no ``limit`` (0, None) spills nothing."""
        self._cell = cell
        self._limit = limit if type(limit) is int and limit > 0 else 0
        self._streams = {"stdout": _StreamSpill(), "stderr": _StreamSpill()} if self._limit else {}

    def add(self, stream, text):
        """Account for ``text`` sent on ``stream`` as output of the cell."""
        s = self._streams.get(stream)
        if s is None:
            return
        with s.lock:
            s.count += len(text)
            if s.kept is not None:
                if s.count <= self._limit:
                    s.kept.append(text)
                    return
                s.kept.append(text)
                text = "".join(s.kept)
                s.kept = None
                self._open(s, stream)
            if s.fd is not None:
                self._write(s, text)

    def end(self):
        """Close the files; return ``{stream: {path?, chars, error?}}`` for
        the streams that passed the budget, or None when none did."""
        report = {}
        for stream, s in self._streams.items():
            with s.lock:
                if s.kept is not None:
                    continue
                self._close(s)
                entry = {"chars": s.saved}
                if s.path is not None:
                    entry["path"] = s.path
                if s.error is not None:
                    entry["error"] = s.error
                report[stream] = entry
        self._streams = {}
        return report or None

    def _open(self, s, stream):
        folder = self._folder or SPILL_DIR
        base = os.path.join(folder, f"cell-{self._cell}-{stream}")
        try:
            os.makedirs(folder, exist_ok=True)
            for n in range(1, 100):  # a file of that name is the user's: keep it
                path = base + (".txt" if n == 1 else f"-{n}.txt")
                try:
                    s.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                except FileExistsError:
                    continue
                s.path = path
                break
            else:
                raise FileExistsError(errno.EEXIST, "files of that name exist", base + ".txt")
        except OSError as exc:
            s.error = f"could not create a file for it in {folder}: {_reason(exc)}"
            return
        try:
            st = os.statvfs(folder)
            s.room = min(SPILL_MAX, st.f_bavail * st.f_frsize // 2)
        except OSError:
            s.room = SPILL_MAX

    def _write(self, s, text):
        data = text.encode("utf-8", "replace")
        full = len(data) > s.room
        if full:
            text = data[:s.room].decode("utf-8", "ignore")  # whole characters only
            data = text.encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(s.fd, view):]
        except OSError as exc:
            s.error = f"writing the file failed: {_reason(exc)}"
            self._close(s)
            return
        s.saved += len(text)
        s.room -= len(data)
        if full:
            s.error = (f"a spill file holds at most {_size(SPILL_MAX)} and half the "
                       "workspace's free space")
            self._close(s)

    @staticmethod
    def _close(s):
        if s.fd is not None:
            try:
                os.close(s.fd)
            except OSError:
                pass
            s.fd = None


def _size(n):
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def _reason(exc):
    if exc.errno == errno.ENOSPC:
        return "the workspace is full (delete files in /workspace to make room)"
    return exc.strerror or str(exc)


class _BinaryWriter(io.BufferedIOBase):
    """``sys.stdout.buffer``: bytes are decoded as UTF-8 (U+FFFD for bad bytes)."""

    def __init__(self, text_writer):
        super().__init__()
        self._text = text_writer
        self._decoder = _utf8_decoder()

    def write(self, data):
        data = bytes(data)
        self._text.write(self._decoder.decode(data))
        return len(data)

    def flush(self):
        self._text.flush()

    def fileno(self):
        return self._text.fileno()

    def writable(self):
        return True

    def close(self):
        self.flush()

    @property
    def closed(self):
        return False


class StreamWriter(io.TextIOBase):
    """A text stream whose writes become ``out`` frames of the running cell."""

    encoding = "utf-8"
    errors = "strict"
    newlines = None
    line_buffering = False
    mode = "w"

    def __init__(self, output, stream, fd):
        super().__init__()
        self._output = output
        self._stream = stream
        self._fd = fd
        self.name = f"<{stream}>"
        self.buffer = _BinaryWriter(self)

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        return self._output.write(self._stream, text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._output.flush()

    def reconfigure(self, **options):
        """Accepted and ignored: output is always UTF-8 text frames."""

    def close(self):
        """Closing the sandbox's stdout only flushes it."""
        self.flush()

    @property
    def closed(self):
        return False

    def fileno(self):
        return self._fd

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def seekable(self):
        return False

    def __repr__(self):
        return f"<codebridge {self._stream}>"


class FdPump:
    """Moves what is written to fd 1 or fd 2 into out frames.

    fd ``fd`` is replaced by the write end of a pipe; the read end is private
    and non-blocking. A private duplicate of the write end is kept so that the
    pipe never reports EOF and fd ``fd`` can be restored if user code closes
    or replaces it.
    """

    def __init__(self, channel, text, stream, fd):
        self.channel = channel
        self.text = text
        self.spill = text.spill
        self.stream = stream
        self.fd = fd
        self.lock = threading.Lock()
        self._decoder = _utf8_decoder()
        self._pending = []
        self._pending_size = 0
        self._dropped = 0
        read_end, self._write_end = os.pipe()   # both non-inheritable
        try:
            fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
        os.set_blocking(read_end, False)
        self.read_end = self._read_end = read_end
        os.dup2(self._write_end, fd)            # inheritable, as fd 1/2 must be
        st = os.fstat(self._write_end)
        self._identity = (st.st_dev, st.st_ino)

    def repipe(self):
        """In a fork (mcp._fork): a pipe of its own for fd ``fd``; the old
        one is the parent's, whose pump reads it."""
        for old in (self._read_end, self._write_end):
            try:
                os.close(old)
            except OSError:
                pass
        read_end, self._write_end = os.pipe()
        os.set_blocking(read_end, False)
        self.read_end = self._read_end = read_end
        os.dup2(self._write_end, self.fd)
        st = os.fstat(self._write_end)
        self._identity = (st.st_dev, st.st_ino)

    def start(self):
        threading.Thread(target=self._loop, name=f"codebridge-{self.stream}",
                         daemon=True).start()

    def _loop(self):
        poller = select.poll()
        poller.register(self._read_end, select.POLLIN)
        while True:
            try:
                poller.poll()
                with self.lock:  # one read per turn: drain() can always get in
                    self._read_once(CHUNK)
            except Exception as exc:  # keep pumping whatever happens
                self.channel.log("error", f"{self.stream} pump: {type(exc).__name__}: {exc}")

    def _read_once(self, size):
        """Read and send at most ``size`` bytes; return how many were read."""
        while True:
            try:
                data = os.read(self._read_end, size)
            except BlockingIOError:
                return 0
            except InterruptedError:
                continue
            self._emit(self._decoder.decode(data))
            return len(data)

    def catch_up_locked(self):
        """Send exactly what the pipe holds now (FIONREAD), lock held. A
        process that keeps writing cannot hold the caller."""
        buf = bytearray(4)
        fcntl.ioctl(self._read_end, termios.FIONREAD, buf, True)
        available = int.from_bytes(buf, sys.byteorder)
        while available > 0:
            n = self._read_once(min(available, CHUNK))
            if not n:
                break
            available -= n

    def drain(self):
        """Send everything written to the fd so far (called at cell end); a
        pump that already read data sent it before releasing the lock."""
        with self.lock:
            self.catch_up_locked()
            self._emit(self._decoder.decode(b"", True))

    def _emit(self, text):
        if not text:
            return
        self.text.flush()  # Python-level output written earlier goes first
        cell = self.channel.exec_id
        if cell is None:
            self._pending.append(text)
            self._pending_size += len(text)
            while self._pending_size > PENDING_CAP and len(self._pending) > 1:
                dropped = self._pending.pop(0)
                self._pending_size -= len(dropped)
                self._dropped += len(dropped)
            return
        self._send(cell, text)

    def _send(self, cell, text):
        self.spill.add(self.stream, text)
        if len(text) <= CHUNK:
            self.channel.send({"t": "out", "id": cell, "stream": self.stream, "data": text})
        else:
            self.channel.send_many(_out_frames(cell, self.stream, text))

    def send_pending_locked(self, cell):
        """Send output kept between cells as part of ``cell`` (lock held)."""
        if self._dropped:
            self._pending.insert(0, f"[codebridge: {self._dropped} characters written "
                                    "between cells were dropped]\n")
            self._dropped = 0
        if self._pending:
            text = "".join(self._pending)
            self._pending, self._pending_size = [], 0
            self._send(cell, text)

    def restore(self):
        """Point fd ``fd`` back at the pipe if user code closed or replaced it."""
        try:
            st = os.fstat(self.fd)
            if (st.st_dev, st.st_ino) == self._identity:
                return
        except OSError:
            pass
        os.dup2(self._write_end, self.fd)


class Output:
    """Owns fd 0-2 and sys.std* for the runtime; brackets every cell."""

    def __init__(self, channel):
        self.channel = channel
        self.spill = Spill()
        self.text = TextOutput(channel, self.spill)
        self._keep = (sys.stdin, sys.stdout, sys.stderr)  # the originals
        self._null = os.open(os.devnull, os.O_RDWR)       # private, non-inheritable
        os.dup2(self._null, 0)
        st = os.fstat(self._null)
        self._null_identity = (st.st_dev, st.st_ino)
        self.pumps = (FdPump(channel, self.text, "stdout", 1),
                      FdPump(channel, self.text, "stderr", 2))
        self.text.attach(self.pumps)
        self.stdout = StreamWriter(self.text, "stdout", 1)
        self.stderr = StreamWriter(self.text, "stderr", 2)
        self.stdin = open(os.devnull, "r", encoding="utf-8")
        self._install_streams()
        channel.flush_output = self.text.flush
        os.register_at_fork(after_in_child=self._after_fork_child)

    def _install_streams(self):
        sys.stdout = sys.__stdout__ = self.stdout
        sys.stderr = sys.__stderr__ = self.stderr
        if self.stdin.closed:
            self.stdin = open(os.devnull, "r", encoding="utf-8")
        sys.stdin = sys.__stdin__ = self.stdin

    def start(self):
        for pump in self.pumps:
            pump.start()
        self.text.start_flusher()

    def begin(self, cell, limit=None):
        """Start capturing for ``cell``: repair fds and streams, then send
        what was written between cells. ``limit`` is the host's budget in
        characters per stream, past which a stream is saved to a file."""
        self._restore_fds()
        if sys.stdout is not self.stdout or sys.stderr is not self.stderr or self.stdin.closed:
            self._install_streams()
        out, err = self.pumps
        with out.lock, err.lock:
            with self.text.lock:
                self.channel.exec_id = cell
                self.spill.begin(cell, limit)
                self.text.reset_clock()
                self.text._flush_locked()
            out.send_pending_locked(cell)
            err.send_pending_locked(cell)
        self.text.wake_flusher()

    def finish(self):
        """Send all output of the cell: buffered text, then the fd pipes."""
        self.text.flush()
        for pump in self.pumps:
            pump.drain()

    def idle(self):
        """No cell runs any more: later output waits for the next cell.
        Returns the spill report for the done frame (see :meth:`Spill.end`)."""
        out, err = self.pumps
        with out.lock, err.lock, self.text.lock:
            self.channel.exec_id = None
            return self.spill.end()

    def _restore_fds(self):
        try:
            st = os.fstat(0)
            ok = (st.st_dev, st.st_ino) == self._null_identity
        except OSError:
            ok = False
        if not ok:
            os.dup2(self._null, 0)
        for pump in self.pumps:
            pump.restore()

    def resume(self):
        """In a checkpoint that a rewind woke: the pump and flusher threads
        again; output kept between cells at the fork is stale."""
        for pump in self.pumps:
            pump._pending, pump._pending_size, pump._dropped = [], 0, 0
        self.text._parts, self.text._size, self.text._dropped = [], 0, 0
        self.text._wake = threading.Event()
        self.start()

    def _after_fork_child(self):
        """A forked child writes plain text to fd 1 / fd 2 (read by our pumps
        in the parent), never frames. A checkpoint (mcp._rewind) keeps the
        runtime's streams: it may become the runtime."""
        from mcp import _rewind
        if _rewind.forking:
            return
        try:
            sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", errors="replace",
                                               buffering=1, closefd=False)
            sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="replace",
                                               buffering=1, closefd=False)
        except OSError:
            pass
