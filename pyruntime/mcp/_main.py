"""Entry point of the sandbox runtime: ``mcp._main.main()``.

Startup (see pyruntime/PROTOCOL.md):

1. move the frame descriptors (fd 0 in, fd 1 out) to private,
   non-inheritable fds; point fd 0 at /dev/null and fd 1 / fd 2 at pipes
   read by pump threads; replace sys.stdout/sys.stderr;
2. take the direct channel when the host offers it (a ``channel`` frame
   first: frames then travel over the bridge's Unix socket), read the
   ``hello`` frame, build the user namespace (``runtime``,
   ``call_tool``, ``display``, ``ToolError``, ``mcp_<alias>``...);
3. start the reader thread, send ``ready``;
4. run ``exec`` frames one at a time on the main thread, each ended by a
   ``done`` frame sent after all of the cell's output (first dropping the
   cached tool lists the frame names as stale); processes a cell
   leaves behind are stopped when it was interrupted or when they fill the
   process limit (see ``mcp._procs``).

Errors before frames work go to the original fd 2, which the host logs.
"""

import builtins
import os
import sys
import traceback
import types

from mcp._channel import Channel
from mcp._executor import Executor
from mcp._output import Output
from mcp._procs import Cells, track_forks
from mcp._rewind import MAX_CHECKPOINTS, Keeper

__all__ = ["main", "build_namespace", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = 2  # protocol.Version on the host; both sides check it


def _fatal(fd, message):
    try:
        os.write(fd, f"codebridge runtime: {message}\n".encode("utf-8", "replace"))
    finally:
        os._exit(1)


def _zip_cleanup():
    """Remove the runtime archive and its private directory (at EOF)."""
    archive = getattr(sys.modules["mcp"].__spec__.loader, "archive", None)
    if not archive or not archive.endswith(".zip"):
        return
    try:
        os.unlink(archive)
        folder = os.path.dirname(archive)
        if os.path.basename(folder).startswith(".codebridge"):
            os.rmdir(folder)
    except OSError:
        pass


def build_namespace(hello_servers, channel):
    """The ``__main__`` namespace shared by all cells."""
    from mcp import _proxy, runtime
    from mcp._results import BridgeError, MCPError, ToolError
    from mcp.display import display

    module = types.ModuleType("__main__")
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    ns = module.__dict__
    ns.update(runtime=runtime, call_tool=runtime.call_tool, display=display,
              ToolError=ToolError, BridgeError=BridgeError, MCPError=MCPError,
              mcp=sys.modules["mcp"])
    # BridgeError's kinds (PermissionDenied, ToolTimeout, ...), as mcp exports them.
    package = sys.modules["mcp"]
    ns.update({name: getattr(package, name) for name in package.__all__})
    ns.update(_proxy.install(hello_servers))
    from mcp._rewind import rewind
    ns["rewind"] = rewind        # undo cells (mcp._rewind)
    from mcp._fork import fork
    ns["fork"] = fork            # fork the session (mcp._fork)
    ns["help"] = _proxy.Help()   # an MCP tool's docs fetched afresh: what its calls returned so far
    # The Python peer's names: mcp_servers["original name"] is the proxy.
    ns["mcp_servers"] = {s.name: s.proxy for s in _proxy.servers()}
    _bind_toon(ns)
    from mcp import _skills
    _skills.install(ns)   # last: skills get the names above
    return ns


def _bind_toon(ns):
    """Bind ``toon`` if the ``mcp.toon`` module ships; it is imported on the
    first call (it pulls in dataclasses, decimal...: ~10 ms at startup)."""
    import importlib.util
    try:
        if importlib.util.find_spec("mcp.toon") is None:
            return
    except (ImportError, ValueError):
        return

    def toon(obj, **options):
        """Encode ``obj`` as TOON, a compact text form for JSON-like data
        (tables of records become one header and one line per row). Loaded on
        first use; see ``help(mcp.toon.toon)`` for the options."""
        from mcp.toon import toon as real
        if ns.get("toon") is toon:
            ns["toon"] = real
        return real(obj, **options)

    toon.__module__ = "mcp.toon"
    ns["toon"] = toon


def _serve(channel, output, executor, procs, keeper, frame):
    """Run one exec frame and send its done frame."""
    cell = frame.get("id")
    code = frame.get("code")
    channel.interrupted = None
    if frame.get("stale"):  # upstream tool lists that changed since the last cell
        from mcp import _proxy
        _proxy.forget(frame["stale"])
    keeper.before_cell()
    note = procs.begin() + keeper.take_note()
    output.begin(cell, frame.get("limit"))
    try:
        if note:
            output.stderr.write(note)
        if not isinstance(code, str):
            status, value, error, data = "error", None, "exec frame without code\n", None
        else:
            from mcp._packages import before_cell
            before_cell(output.stderr)  # configured packages the host had no wheels for at start
            status, value, error, data = executor.run(cell, code, frame.get("render") == "toon")
        note = procs.end(channel.interrupted == cell)
        if note:
            output.stderr.write(note)
        channel.hold()  # the last output and the done frame go out in one write (main() releases)
        output.finish()
    finally:
        channel.fail_pending(cell)
        spill = output.idle()
    if data is not None:  # the exec asked for TOON, and the value is JSON data
        value = _toon_text(data, value)
    done = {"t": "done", "id": cell, "status": status, "value": value, "error": error}
    if spill:
        done["spill"] = spill
    if keeper.asked is not None and status == "interrupted":
        keeper.before_cell()  # an interrupted cell's rewind is not carried out
    elif keeper.asked is not None:  # rewind(n): the host answers with a rewind frame
        done["rewind"] = keeper.asked
    if keeper.fork_asked and status == "interrupted":
        keeper.fork_asked = False    # an interrupted cell forks nothing
    elif keeper.fork_asked:          # fork(): a forked frame follows the done frame
        done["fork"] = True
    channel.send(done)


def _checkpoints(hello, channel):
    """How many checkpoints the hello asks the runtime to keep: its
    ``checkpoints`` (0: none), or MAX_CHECKPOINTS when it names none (an
    older host) or names something that is not a count."""
    n = hello.get("checkpoints", MAX_CHECKPOINTS)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        channel.log("warning", f"the host's hello asks for {n!r} checkpoints, not a count: keeping {MAX_CHECKPOINTS}")
        return MAX_CHECKPOINTS
    return n


def _pids(hello):
    """The process limit the hello names (``pids``: the host's --pids),
    or None when it names none or something that is not a count."""
    n = hello.get("pids")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _toon_text(data, fallback):
    """``data`` as TOON text, or ``fallback`` (its repr) if encoding fails."""
    try:
        from mcp.toon import toon
        return toon(data)
    except Exception:
        return fallback


def main(handoff=None, follow=None):
    """Run the runtime until the host closes the frame channel. ``handoff``
    is the write end of the init's hand-off pipe (see loader.py), which
    rewinds need; None: no checkpoints. ``follow`` is its read end when no
    init runs yet: this process becomes the init at its first rewind or
    fork."""
    diag = os.dup(2)
    try:
        in_fd, out_fd = os.dup(0), os.dup(1)          # non-inheritable
        channel = Channel(in_fd, out_fd).install()
        channel.on_exit = _zip_cleanup
        output = Output(channel)                       # fd 0 -> /dev/null, fd 1/2 -> pipes
        first = channel.read_frame()
        if first is not None and first.get("t") == "channel":
            channel.connect(first)                     # the direct channel, or why not
            first = channel.read_frame()
        if first is None:
            channel.shutdown()
        hello = first if first.get("t") == "hello" else {}
        if hello and hello.get("v") != PROTOCOL_VERSION:
            channel.log("error", f"the host speaks protocol version {hello.get('v')!r}, "
                                 f"this runtime {PROTOCOL_VERSION}")
        if hello.get("files"):  # skills, packages: there before the first cell
            from mcp._files import write_files
            for err in write_files(hello["files"]):
                channel.log("warning", f"a file from the host was not written: {err}")
        from mcp import _packages
        _packages.start(channel.log)  # configured packages; a kept workspace's packages on sys.path
        namespace = build_namespace(hello.get("servers"), channel)
        executor = Executor(channel, namespace)
        procs = Cells()
        channel.on_interrupt = procs.interrupted
        track_forks()
        keeper = Keeper(channel, output, executor, handoff, namespace, follow, _checkpoints(hello, channel),
                        _pids(hello))
        channel.on_exit = lambda: (keeper.close(), _zip_cleanup())
    except BaseException:
        _fatal(diag, "startup failed:\n" + traceback.format_exc())
    os.close(diag)
    output.start()
    channel.start_reader()
    ready = {"t": "ready", "v": PROTOCOL_VERSION, "python": sys.version.split()[0]}
    if hello.get("idle"):  # a detachable sandbox: it outlives its host (PROTOCOL.md)
        channel.detachable(hello["idle"], hello.get("resume", ""), ready)
    channel.send(ready)
    if first.get("t") != "hello":
        channel.log("warning", f"first frame was {first.get('t')!r}, not hello")
        channel.dispatch(first)
    keeper.take()  # the state before the first cell
    while True:
        frame = channel.cells.get()
        try:
            _serve(channel, output, executor, procs, keeper, frame)
        except BaseException as exc:  # a runtime bug (or a stray interrupt): keep serving
            try:
                channel.log("error", "runtime: " + "".join(traceback.format_exception(exc)))
                channel.send({"t": "done", "id": frame.get("id"), "status": "error",
                              "value": None, "error": f"codebridge runtime error: {exc!r}\n"})
            except BaseException:
                pass
        finally:
            try:
                channel.release()
            except BaseException:
                pass
            try:
                keeper.after_cell()  # in a checkpoint a rewind woke, this returns as the runtime
            except BaseException as exc:
                channel.log("error", f"checkpoint: {type(exc).__name__}: {exc}")
