#!/usr/bin/env python3
"""A small MCP server over stdio, stdlib only, for codebridge's demo and tests.

It speaks only the classic handshake (`initialize`), like many older
servers: with --strict it exits on any method it does not know, the way
some servers die on the newer `server/discover` probe.

Tools: echo, add, fail (returns isError), sleep, big (a long text),
stats (structured content), crash (exits the process), grow (adds a tool
and sends notifications/tools/list_changed), warn (logs a warning with
notifications/message), wake (ends every sleep in progress).
--tool=NAME (repeatable) adds a tool called NAME, described by NAME too,
as grow would: for tests of how a hostile upstream's names are shown.
--describe=TOOL=TEXT gives TOOL the description TEXT: a tool whose
definition changes between runs.

With --ask-roots it is a server that needs roots whatever its client
declared: it asks roots/list once initialized, and answers no tool call
before the answer arrives (it writes the answer to stderr).
"""
import json
import os
import sys
import threading
import time

STRICT = "--strict" in sys.argv
ASK_ROOTS = "--ask-roots" in sys.argv
NAME = "stub"
for a in sys.argv[1:]:
    if a.startswith("--name="):
        NAME = a.split("=", 1)[1]

TOOLS = [
    {"name": "echo", "description": "Echo a message back.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string", "description": "text to echo"}}, "required": ["message"]}},
    {"name": "add", "description": "Add two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
    {"name": "fail", "description": "Always fails with the given message.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
    {"name": "sleep", "description": "Sleep for some seconds, then answer.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]}},
    {"name": "big", "description": "Return a text of `size` bytes.",
     "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}},
    {"name": "stats", "description": "Structured statistics of a list of numbers.",
     "inputSchema": {"type": "object", "properties": {"values": {"type": "array", "items": {"type": "number"}}}, "required": ["values"]},
     "outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}, "sum": {"type": "number"}}}},
    {"name": "crash", "description": "Exit the server process at once.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "warn", "description": "Log `message` as a warning (notifications/message), then answer.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
    {"name": "wake", "description": "End every sleep in progress: each answers 'woken'.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "grow", "description": "Add a tool called `name` (it answers with its name) and say the tool list changed.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
]
for a in sys.argv[1:]:  # --describe=TOOL=TEXT: a tool's description (its definition changes)
    if a.startswith("--describe="):
        tool, _, description = a.split("=", 1)[1].partition("=")
        for t in TOOLS:
            if t["name"] == tool:
                t["description"] = description
GROWN = set()  # tools added by grow
for a in sys.argv[1:]:
    if a.startswith("--tool="):
        GROWN.add(a.split("=", 1)[1])
        TOOLS.append({"name": a.split("=", 1)[1], "description": a.split("=", 1)[1],
                      "inputSchema": {"type": "object", "properties": {}}})


def text(s, is_error=False):
    r = {"content": [{"type": "text", "text": s}]}
    if is_error:
        r["isError"] = True
    return r


def call(name, args):
    if name == "echo":
        return text(str(args.get("message", "")))
    if name == "add":
        return text(json.dumps(args["a"] + args["b"]))
    if name == "fail":
        return text(args.get("message", "it failed"), is_error=True)
    if name == "sleep":
        time.sleep(float(args["seconds"]))
        return text("slept")
    if name == "big":
        return text("x" * int(args["size"]))
    if name == "stats":
        v = args["values"]
        s = {"count": len(v), "sum": sum(v)}
        return {"content": [{"type": "text", "text": json.dumps(s)}], "structuredContent": s}
    if name == "warn":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "warning", "logger": NAME, "data": str(args.get("message", ""))}})
        return text("warned")
    if name == "wake":
        sleepers = [i for i, ev in list(_cancelled.items()) if not ev.is_set()]
        for i in sleepers:
            _woken.add(i)
            _cancelled[i].set()
        return text(f"woke {len(sleepers)}")
    if name in GROWN:
        return text(f"{name} is here")
    if name == "crash":
        sys.stderr.write("stub: crashing as asked\n")
        sys.stderr.flush()
        sys.exit(3)
    return None


_write = threading.Lock()
_cancelled = {}  # request id -> threading.Event
_woken = set()  # request ids whose sleep the wake tool ended


def send(msg):
    with _write:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def reply(id_, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    send(msg)


def sleep_call(id_, seconds):
    """Sleep in the background so that a cancellation can arrive; record it
    in $STUB_EVENTS (one line per event) for tests to read."""
    ev = _cancelled.setdefault(id_, threading.Event())
    log_event(f"sleep-started {id_}")
    if ev.wait(seconds):
        if id_ in _woken:
            reply(id_, text("woken"))
            return
        log_event(f"sleep-cancelled {id_}")
        return
    reply(id_, text("slept"))


def grow(id_, name):
    """Add a tool, tell the client its tool list changed, then answer."""
    if not name:
        reply(id_, text("grow needs a name", is_error=True))
        return
    if name not in GROWN and not any(t["name"] == name for t in TOOLS):
        GROWN.add(name)
        TOOLS.append({"name": name, "description": f"Added by grow: answers {name!r}.",
                      "inputSchema": {"type": "object", "properties": {}}})
    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    reply(id_, text(f"added {name}"))


def log_event(line):
    path = os.environ.get("STUB_EVENTS")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


_held = []          # tool calls held until the roots answer (--ask-roots)
_roots_answered = not ASK_ROOTS


def main():
    global _roots_answered
    sys.stderr.write(f"stub server {NAME} starting\n")
    sys.stderr.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg.get("method") is None and msg.get("id") == "stub-roots":
            sys.stderr.write(f"stub: roots answer: {json.dumps(msg.get('result', msg.get('error')))}\n")
            sys.stderr.flush()
            _roots_answered = True
            for held in _held:
                handle(held)
            _held.clear()
            continue
        if msg.get("method") == "tools/call" and not _roots_answered:
            _held.append(msg)
            continue
        handle(msg)


def handle(msg):
    method, id_ = msg.get("method"), msg.get("id")
    if method == "notifications/initialized" and ASK_ROOTS:
        send({"jsonrpc": "2.0", "id": "stub-roots", "method": "roots/list"})
    elif method == "initialize":
        reply(id_, {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                    "serverInfo": {"name": NAME, "version": "1.0"}})
    elif method == "tools/list":
        reply(id_, {"tools": TOOLS})
    elif method == "tools/call" and msg["params"]["name"] == "sleep":
        args = msg["params"].get("arguments") or {}
        threading.Thread(target=sleep_call, args=(id_, float(args["seconds"])), daemon=True).start()
    elif method == "tools/call" and msg["params"]["name"] == "grow":
        grow(id_, str((msg["params"].get("arguments") or {}).get("name", "")))
    elif method == "tools/call":
        res = call(msg["params"]["name"], msg["params"].get("arguments") or {})
        if res is None:
            reply(id_, error={"code": -32602, "message": "unknown tool " + msg["params"]["name"]})
        else:
            reply(id_, res)
    elif method == "ping":
        reply(id_, {})
    elif method == "notifications/cancelled":
        rid = (msg.get("params") or {}).get("requestId")
        _cancelled.setdefault(rid, threading.Event()).set()
    elif method and method.startswith("notifications/"):
        return
    elif STRICT:
        sys.stderr.write(f"stub: unknown method {method!r}; exiting\n")
        sys.exit(1)
    elif id_ is not None:
        reply(id_, error={"code": -32601, "message": "method not found"})


if __name__ == "__main__":
    main()
