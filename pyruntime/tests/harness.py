"""A test host for the sandbox runtime.

:class:`Runtime` plays the Go host: it builds the ``mcp`` zip in memory,
starts ``python3 -I -u -c <loader.py>`` with pipes, writes the 16-byte header,
the zip and a ``hello`` frame, waits for ``ready``, sends ``exec`` frames and
answers ``rpc`` frames from :class:`FakeUpstream`, a canned upstream with a
few tools and schemas.
"""

import base64
import io
import json
import os
import queue
import shlex
import subprocess
import sys
import threading
import time
import unittest
import zipfile
from pathlib import Path
from unittest import mock

RUNTIME_DIR = Path(__file__).resolve().parent.parent
LOADER = (RUNTIME_DIR / "loader.py").read_text()
from mcp._main import PROTOCOL_VERSION  # noqa: E402  (the runtime's own number)

PYTHON = os.environ.get("CODEBRIDGE_TEST_PYTHON", sys.executable or "python3")
# To drive runtimes in containers from the host, set e.g.
#   CODEBRIDGE_TEST_COMMAND="podman run --rm -i --network none ... IMAGE python3 -I -u -c"
# (the loader text is appended as the last argument).
COMMAND = os.environ.get("CODEBRIDGE_TEST_COMMAND")

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def build_zip():
    """The runtime archive, as the host embeds it: mcp/**.py and MANUAL.txt."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(p for p in (RUNTIME_DIR / "mcp").rglob("*") if p.suffix in (".py", ".txt")):
            if "__pycache__" in path.parts:
                continue
            zf.write(path, "mcp/" + path.relative_to(RUNTIME_DIR / "mcp").as_posix())
    return buf.getvalue()


SERVERS = [
    {"name": "everything", "description": "Reference test server"},
    {"name": "my-server.v2", "description": "Awkward names"},
]

ADDRESS_SCHEMA = {
    "type": "object",
    "properties": {
        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast",
                 "description": "How hard to try."},
        "count": {"type": "integer", "description": "How many times."},
        "address": {"$ref": "#/$defs/Address", "description": "Where to send it."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "user-id": {"type": ["string", "null"], "description": "The user."},
        "class": {"type": "string"},
        "raw": {"type": "boolean", "description": "A tool argument named raw."},
    },
    "required": ["address"],
    "additionalProperties": False,
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {
                "street": {"type": "string", "description": "Street and number."},
                "city": {"type": "string"},
            },
            "required": ["street"],
        },
    },
}

TOOLS = {
    "everything": [
        {"name": "echo", "description": "Echoes back the input.\nSecond line.",
         "inputSchema": {"type": "object", "properties": {
             "message": {"type": "string", "description": "Message to echo"}},
             "required": ["message"]}},
        {"name": "add", "description": "Adds two numbers.",
         "inputSchema": {"type": "object", "properties": {
             "a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
         "outputSchema": {"type": "object", "properties": {
             "sum": {"type": "number", "description": "a + b"}}, "required": ["sum"]}},
        {"name": "get_image", "description": "Returns a tiny PNG.",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "fail", "description": "Always fails.",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "configure", "description": "Has every kind of parameter.",
         "inputSchema": ADDRESS_SCHEMA},
        {"name": "resources", "description": "Returns resources.",
         "inputSchema": {"type": "object"}},
        {"name": "big", "description": "Returns `size` characters.",
         "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    ],
    "my-server.v2": [
        {"name": n, "description": f"Tool {n}", "inputSchema": {"type": "object"}}
        for n in ["get-item", "get.item", "get item", "class", "2fa", "list_tools", "café", "get_item"]
    ],
}


def text(t):
    return {"content": [{"type": "text", "text": t}]}


class FakeUpstream:
    """Answers the runtime's RPCs like the host would."""

    def __init__(self):
        self.calls = []

    def handle(self, method, params):
        """Return (ok, value_or_error)."""
        if method == "list_servers":
            return True, [dict(s, running=s["name"] == "everything") for s in SERVERS]
        if method == "start_servers":
            return True, [{"name": n, "ok": n in TOOLS} for n in params["servers"]]
        if method == "list_tools":
            if params["server"] not in TOOLS:
                return False, {"type": "unknown_server",
                               "message": f"unknown server {params['server']!r}"}
            return True, TOOLS[params["server"]]
        if method == "search_tools" and params["query"].startswith("cut "):
            return True, [{"note": "the query was cut to its first and last 32 words"},
                          {"server": "everything", "tool": "echo", "score": 10, "description": "Echoes back the input."}]
        if method == "search_tools" and params["query"] == "stale":
            return True, [{"server": "my-server.v2", "tool": "get.item", "score": 5, "description": "Tool get.item",
                           "stale": "listed before the server's entry changed"}]
        if method == "search_tools":
            hits = [{"server": "everything", "tool": "echo", "score": 10,
                     "description": TOOLS["everything"][0]["description"],
                     "inputSchema": TOOLS["everything"][0]["inputSchema"]},
                    {"server": "my-server.v2", "tool": "get.item", "score": 5,
                     "description": "Tool get.item"}]
            hits = hits[:params["limit"]]
            if params["detail"] != "full":
                for h in hits:
                    h.pop("inputSchema", None)
            return True, hits + [{"server": "broken", "unavailable": "failed to start"}]
        if method == "call_tool":
            self.calls.append(params)
            return self.call(params["server"], params["tool"], params["arguments"])
        return False, {"type": "unknown_method", "message": f"unknown method {method}"}

    def call(self, server, tool, args):
        if server not in TOOLS:
            return False, {"type": "unknown_server",
                           "message": f"unknown server {server!r}; start it or check the name"}
        if server == "my-server.v2":
            return True, text(f"called {tool}")
        if tool == "echo":
            return True, text(args.get("message", ""))
        if tool == "add":
            s = args["a"] + args["b"]
            return True, {"content": [{"type": "text", "text": json.dumps({"sum": s})}],
                          "structuredContent": {"sum": s}}
        if tool == "get_image":
            return True, {"content": [
                {"type": "text", "text": "a picture"},
                {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}]}
        if tool == "fail":
            return True, {"content": [{"type": "text", "text": "boom: bad input"}], "isError": True}
        if tool == "configure":
            return True, {"content": [], "structuredContent": {"got": args}}
        if tool == "resources":
            return True, {"content": [
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain",
                                                  "text": "hello"}},
                {"type": "resource_link", "uri": "file:///b.txt", "name": "b.txt"}]}
        if tool == "big":
            return True, text("y" * args["size"])
        return False, {"type": "unknown_tool", "message": f"unknown tool {tool!r}"}


class Cell:
    """What one exec produced."""

    def __init__(self, cell_id):
        self.id = cell_id
        self.frames = []
        self.done = None
        self.event = threading.Event()

    @property
    def status(self):
        return self.done["status"]

    @property
    def value(self):
        return self.done["value"]

    @property
    def error(self):
        return self.done["error"]

    def output(self, stream):
        return "".join(f["data"] for f in self.frames if f["t"] == "out" and f["stream"] == stream)

    @property
    def stdout(self):
        return self.output("stdout")

    @property
    def stderr(self):
        return self.output("stderr")

    @property
    def images(self):
        return [f for f in self.frames if f["t"] == "image"]

    def __repr__(self):
        return (f"<Cell {self.id} done={self.done} stdout={self.stdout[:300]!r} "
                f"stderr={self.stderr[:300]!r}>")


class Runtime:
    """One runtime process driven like the host drives it."""

    def __init__(self, command=None, servers=SERVERS, upstream=None, hello=None):
        self.upstream = upstream or FakeUpstream()
        if command is None:
            command = shlex.split(COMMAND) + [LOADER] if COMMAND else [PYTHON, "-I", "-u", "-c", LOADER]
        self.command = command
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        self._write_lock = threading.Lock()
        self._cells = {}
        self._next_id = 1
        self.logs = []
        self.rpcs = []
        self.stray = []             # frames for no known cell
        self.rewounds = queue.Queue()  # rewound frames (answers to rewind frames)
        self.forkeds = queue.Queue()   # forked frames (after a cell that called fork())
        self.late = []              # frames that came after their cell's done
        self.hold = None            # predicate: keep an rpc unanswered
        self.held = []
        self._held_cond = threading.Condition()
        self.ready = None
        self._ready = threading.Event()
        self.stderr_chunks = []
        self._stdout = io.BufferedReader(self.proc.stdout, 1 << 16)
        self._threads = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for thread in self._threads:
            thread.start()
        archive = build_zip()
        self.write(b"%16d" % len(archive) + archive)
        self.send({"t": "hello", "v": PROTOCOL_VERSION, "servers": servers, **(hello or {})})
        if not self._ready.wait(30):
            raise RuntimeError(f"runtime not ready; stderr: {self.stderr_text()}")

    # ---- plumbing ------------------------------------------------------

    def write(self, data):
        with self._write_lock:
            self.proc.stdin.write(data)

    def send(self, frame):
        self.write((json.dumps(frame) + "\n").encode())

    def stderr_text(self):
        return b"".join(self.stderr_chunks).decode(errors="replace")

    def _read_stderr(self):
        for chunk in iter(lambda: self.proc.stderr.read(65536), b""):
            self.stderr_chunks.append(chunk)

    def _read_stdout(self):
        for line in self._stdout:
            frame = json.loads(line)
            kind = frame.get("t")
            if kind == "ready":
                self.ready = frame
                self._ready.set()
            elif kind == "log":
                self.logs.append(frame)
            elif kind == "rewound":
                self.rewounds.put(frame)
            elif kind == "forked":
                self.forkeds.put(frame)
            elif kind == "rpc":
                self.rpcs.append(frame)
                if self.hold is not None and self.hold(frame):
                    with self._held_cond:
                        self.held.append(frame)
                        self._held_cond.notify_all()
                else:
                    self.answer(frame)
            else:
                cell = self._cells.get(frame.get("id"))
                if cell is None:
                    self.stray.append(frame)
                    continue
                if cell.done is not None:
                    self.late.append(frame)  # a frame after its cell's done: a bug
                cell.frames.append(frame)
                if kind == "done":
                    cell.done = frame
                    cell.event.set()

    def answer(self, rpc):
        ok, value = self.upstream.handle(rpc["method"], rpc["params"])
        frame = {"t": "result", "id": rpc["id"], "ok": ok}
        frame["value" if ok else "error"] = value
        self.send(frame)

    def wait_held(self, n, timeout=10):
        with self._held_cond:
            if not self._held_cond.wait_for(lambda: len(self.held) >= n, timeout):
                raise AssertionError(f"only {len(self.held)} rpcs held, wanted {n}")

    # ---- cells ---------------------------------------------------------

    def start(self, code, **fields):
        """Send an exec frame; ``fields`` are its optional fields (limit, json, stale)."""
        cell = Cell(self._next_id)
        self._next_id += 1
        self._cells[cell.id] = cell
        self.send({"t": "exec", "id": cell.id, "code": code, **fields})
        return cell

    def wait(self, cell, timeout=60):
        if not cell.event.wait(timeout):
            raise AssertionError(f"cell {cell.id} did not finish: {cell!r}; "
                                 f"stderr: {self.stderr_text()}")
        return cell

    def run(self, code, timeout=60, **fields):
        return self.wait(self.start(code, **fields), timeout)

    def wait_output(self, cell, needle, timeout=10):
        deadline = time.monotonic() + timeout
        while needle not in cell.stdout:
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} never printed: {cell!r}")
            time.sleep(0.01)

    def wait_file(self, path, timeout=10):
        """Wait until code in the runtime has created ``path``: the sign that
        something it does between cells has happened. (The host and the
        runtime share the file system unless CODEBRIDGE_TEST_COMMAND puts the
        runtime in a container of its own.)"""
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} was never created")
            time.sleep(0.01)

    def wait_exec(self, pid, needle, timeout=30):
        """Wait until process ``pid`` runs a command line holding ``needle``
        (bytes): a runtime that handed its channel over executes the init
        in its place after the new runtime took the channel, so the new
        runtime can answer before that exec is done."""
        deadline = time.monotonic() + timeout
        while True:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if needle in fh.read():
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"process {pid} never ran a command line with {needle!r}")
            time.sleep(0.01)

    def interrupt(self, cell):
        self.send({"t": "interrupt", "id": cell.id})

    def close(self, timeout=10):
        """Close the frame channel (EOF) and return the exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            self._threads_done(timeout)
            self._stdout.close()
            self.proc.stderr.close()

    def _threads_done(self, timeout):
        for thread in self._threads:
            thread.join(timeout)


class RuntimeTestCase(unittest.TestCase):
    """Tests that share one runtime per class. At the end no frame may have
    come after its cell's ``done``, nor for a cell that was never sent."""

    @classmethod
    def setUpClass(cls):
        cls.rt = Runtime()

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()
        assert not cls.rt.late, f"frames after done: {cls.rt.late[:3]}"
        assert not cls.rt.stray, f"frames for unknown cells: {cls.rt.stray[:3]}"

    def run_ok(self, code, **fields):
        """Run a cell that must succeed; return it."""
        cell = self.rt.run(code, **fields)
        self.assertEqual(cell.status, "ok", cell)
        return cell


def runtime_with_init(workspace, hello=None):
    """A Runtime as in a Kubernetes Pod: the loader makes no init until a
    first rewind or fork makes the runtime a subreaper init (CODEBRIDGE_INIT);
    its /workspace is the folder ``workspace``. The caller closes it."""
    with mock.patch.dict(os.environ, CODEBRIDGE_INIT="subreaper", CODEBRIDGE_TEST_WORKSPACE=workspace):
        return Runtime(hello=hello)
