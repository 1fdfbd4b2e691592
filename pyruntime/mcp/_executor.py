"""Running cells: compile, execute on the main thread, report.

Every cell runs in one persistent globals dict (the ``__main__`` module), so
variables, imports and functions persist. Code is compiled with
``PyCF_ALLOW_TOP_LEVEL_AWAIT``; a cell that awaits runs on one persistent
asyncio event loop. When the last statement is an expression its value is the
cell's value (as ``repr``), like a notebook; when the host asks, a value
that is JSON data (see :func:`json_data`) is also sent as JSON.

The source is registered in :mod:`linecache` as ``<cell N>`` so tracebacks
show the user's lines; frames of the runtime itself are stripped from them.

A copy of the runtime forked by ``os.fork()`` in a cell runs the rest of the
cell and then exits, as a Python program would; it never goes back to the
runtime's loop, whose channel and locks belong to the parent.
"""

import ast
import linecache
import os
import signal
import sys
import traceback
import types
# The raw getsignal: signal.getsignal's enum lookup, after every cell,
# costs more than the rest of the check that uses it.
from _signal import getsignal as _getsignal

__all__ = ["Executor", "format_exception", "json_data"]

_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect
_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_CELL_PREFIX = "<cell "
_VALUE = "__codebridge_value__"
_EXIT_NOTE = ("exit() and sys.exit() end this cell, not the sandbox: "
              "the session and its variables are kept.")
JSON_MAX = 1 << 20   # a final value is sent as JSON up to about this many bytes
_JSON_DEPTH = 100
_INFINITIES = (float("inf"), float("-inf"))


def json_data(value, budget=JSON_MAX):
    """True when ``value`` is JSON data whose JSON takes about ``budget``
    bytes at most: a tree of dict (with str keys), list, str, int, finite
    float, bool and None, nested at most 100 deep (so no cycles). Exact
    types only: a tuple, a set or a subclass keeps its repr."""
    size = 0
    stack = [(value, 0)]
    try:
        while stack:
            v, depth = stack.pop()
            t = type(v)
            if t is str:
                size += len(v) + 2
            elif t is dict or t is list:
                if depth >= _JSON_DEPTH:
                    return False
                size += 2 + len(v)
                if t is list:
                    stack.extend((item, depth + 1) for item in v)
                    continue
                for k, item in v.items():
                    if type(k) is not str:
                        return False
                    size += len(k) + 3
                    stack.append((item, depth + 1))
            elif t is int:
                if v.bit_length() > 3000:   # beyond Python's int-to-str limit
                    return False
                size += v.bit_length() // 3 + 2
            elif t is float:
                if v != v or v in _INFINITIES:
                    return False
                size += 24
            elif v is None or t is bool:
                size += 5
            else:
                return False
            if size > budget:
                return False
    except RuntimeError:   # changed by a thread while being walked
        return False
    return True


def _is_cell(filename):
    return filename.startswith(_CELL_PREFIX)


def _clean(te, seen):
    """Strip runtime frames from a TracebackException and its chain.

    Frames before the first cell frame (the runtime, asyncio's
    run_until_complete) go; after it, frames of the runtime package go too.
    """
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        frames = list(te.stack)
        start = next((i for i, f in enumerate(frames) if _is_cell(f.filename)), len(frames))
        kept = [f for f in frames[start:] if not f.filename.startswith(_PKG_DIR)]
        te.stack = traceback.StackSummary.from_list(kept)
        for sub in getattr(te, "exceptions", None) or ():
            _clean(sub, seen)
        if te.__cause__ is not None:
            _clean(te.__cause__, seen)
        te = te.__context__


def _exit_code(code):
    """The exit status for ``SystemExit(code)``, as the interpreter does it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        os.write(2, (str(code) + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
    return 1


def format_exception(exc):
    """Traceback text of ``exc`` that shows only user code."""
    try:
        te = traceback.TracebackException.from_exception(exc)
        _clean(te, set())
        return "".join(te.format())
    except Exception:  # never fail while reporting a failure
        return "".join(traceback.format_exception_only(type(exc), exc))


class Executor:
    """Compiles and runs cells in one namespace."""

    def __init__(self, channel, namespace):
        self.channel = channel
        self.namespace = namespace
        self.loop = None
        self._asyncio = None
        self._pid = os.getpid()
        self._cell = None   # the running cell's file name
        self._task = None   # the running cell's task, when it awaits
        channel.locate = self.cell_line

    def cell_line(self):
        """The line of the running cell that makes a request now (the host
        shows the code around it when it asks the user): the innermost
        frame of the cell's code on the caller's stack; else, for a request
        made by a task the cell started (asyncio.gather), the line where
        the cell waits. 0 when neither is known."""
        name = self._cell
        if name is None:
            return 0
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == name:
                return frame.f_lineno
            frame = frame.f_back
        line = 0
        awaiting = self._task.get_coro() if self._task is not None else None
        while awaiting is not None:   # down the chain of awaits of the cell's task
            frame = getattr(awaiting, "cr_frame", None) or getattr(awaiting, "gi_frame", None)
            if frame is None:
                break
            if frame.f_code.co_filename == name:
                line = frame.f_lineno
            awaiting = getattr(awaiting, "cr_await", None) or getattr(awaiting, "gi_yieldfrom", None)
        return line

    # ---- compile -------------------------------------------------------

    @staticmethod
    def register_source(filename, code):
        """Make ``code`` visible to tracebacks and inspect under ``filename``."""
        if not code.endswith("\n"):
            code += "\n"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)

    @staticmethod
    def compile_cell(code, filename):
        """Return ``(body, last, is_async)``.

        A synchronous cell compiles to code for its statements (or None) and
        for a final expression (or None). A cell that awaits anywhere at top
        level compiles to one coroutine code object (``last`` is None) whose
        final expression, if any, is stored in ``_VALUE`` in the namespace.
        """
        tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST | _FLAGS)
        last_node = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        if last_node is not None:
            tree.body.pop()
        body = compile(tree, filename, "exec", _FLAGS) if tree.body else None
        last = compile(ast.Expression(last_node.value), filename, "eval", _FLAGS) if last_node else None
        if not any(c is not None and c.co_flags & _CO_COROUTINE for c in (body, last)):
            return body, last, False
        if last_node is not None:  # one coroutine for the whole cell
            store = ast.Assign(targets=[ast.Name(_VALUE, ast.Store())], value=last_node.value)
            tree.body.append(ast.copy_location(store, last_node))
            ast.fix_missing_locations(tree)
        return compile(tree, filename, "exec", _FLAGS), None, True

    # ---- run -----------------------------------------------------------

    def run(self, cell_id, code, want_json=False):
        """Run one cell; return ``(status, value, error, data)`` for the done
        frame. ``data`` is the final value itself when ``want_json`` is true
        and it is JSON data (the host asked to see it as TOON), else None."""
        filename = f"{_CELL_PREFIX}{cell_id}>"
        self.register_source(filename, code)
        channel = self.channel
        self._cell = filename
        try:
            try:
                body, last, is_async = self.compile_cell(code, filename)
                channel.armed = True
                if is_async:
                    self._run_async(eval(body, self.namespace))
                    value = self.namespace.pop(_VALUE, None)
                else:
                    if body is not None:
                        eval(body, self.namespace)
                    value = eval(last, self.namespace) if last is not None else None
                text = None if value is None else self._repr(value)  # interruptible too
            finally:
                channel.armed = False
                self.namespace.pop(_VALUE, None)
            self._end_if_copy(None)
            data = value if want_json and value is not None and json_data(value) else None
            return "ok", text, None, data
        except KeyboardInterrupt as exc:
            channel.armed = False
            self._end_if_copy(exc)
            return "interrupted", None, format_exception(exc), None
        except SystemExit as exc:
            channel.armed = False
            self._end_if_copy(exc)
            return self._exited(exc)
        except BaseException as exc:
            channel.armed = False
            self._end_if_copy(exc)
            return "error", None, format_exception(exc), None
        finally:
            self._cell = self._task = None
            if _getsignal(signal.SIGINT) is not channel.on_sigint:
                signal.signal(signal.SIGINT, channel.on_sigint)

    @staticmethod
    def _exited(exc: SystemExit) -> tuple:
        """The done fields for a cell that called exit() or sys.exit(): a
        clean exit (no code, 0, False) ends it with status ok; any other code
        is an error that names it. Either way the session is kept."""
        code = exc.code
        if code is None or (isinstance(code, int) and code == 0):
            return "ok", None, None, None
        return "error", None, (format_exception(exc) + f"The cell exited with code {code!r}. "
                               + _EXIT_NOTE + "\n"), None

    def _end_if_copy(self, exc: BaseException | None) -> None:
        """In a copy of the runtime made by os.fork() in a cell, the end of the
        cell is the end of the process: exit as a Python program would
        (SystemExit's code; 1, or 130 for KeyboardInterrupt, after printing
        the traceback to fd 2), without touching the runtime's channel,
        threads or locks. Returns at once in the runtime itself."""
        if os.getpid() == self._pid:
            return
        code = 0
        try:
            if isinstance(exc, SystemExit):
                code = _exit_code(exc.code)
            elif exc is not None:
                code = 130 if isinstance(exc, KeyboardInterrupt) else 1
                os.write(2, format_exception(exc).encode("utf-8", "replace"))
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        except BaseException:
            pass
        os._exit(code)

    def resume(self):
        """In a checkpoint that a rewind woke: this process is the runtime
        now, and a new event loop serves its cells (the old one's selector
        was shared with the process that went on)."""
        self._pid = os.getpid()
        self.loop = None

    @staticmethod
    def _repr(value):
        if isinstance(value, types.CoroutineType):
            value.close()  # no "never awaited" warning in a later cell
            return f"{value!r} (not run: put await before the call)"
        try:
            return repr(value)
        except Exception as exc:
            return f"<repr() failed: {type(exc).__name__}: {exc}>"

    def _get_loop(self):
        if self.loop is None or self.loop.is_closed():
            import asyncio
            self._asyncio = asyncio
            self.loop = asyncio.new_event_loop()
        return self.loop

    def _run_async(self, coro):
        """Run a top-level-await cell on the persistent loop. Tasks the cell
        started and left pending are cancelled when it ends."""
        loop = self._get_loop()
        asyncio = self._asyncio
        asyncio.set_event_loop(loop)
        before = asyncio.all_tasks(loop)
        task = self._task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        finally:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: no "never retrieved" noise later
            left = [t for t in asyncio.all_tasks(loop) - before if not t.done()]
            if left:
                for pending in left:
                    pending.cancel()
                try:
                    loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
                except BaseException:
                    pass
