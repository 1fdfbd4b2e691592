#!/usr/bin/env python3
"""An MCP server over stdio, stdlib only, that is careless the way real
servers can be, for codebridge's policy tests.

- It matches tool names loosely: case is ignored, so a call to
  "DELETE_ALL" runs delete_all.
- One tool name holds a slash: "fs/delete".
- It parses arguments with json.loads, so of a name given twice the last
  wins.

Tools: echo, delete_all, fs/delete (say what they would have deleted), and
rm (destructive; answers with the arguments it acted on, each long string
given by its size).
"""
import json
import sys

OBJ = {"type": "object"}
TOOLS = [
    {"name": "echo", "description": "Echo a message back.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "delete_all", "description": "Delete everything.", "inputSchema": OBJ,
     "annotations": {"destructiveHint": True}},
    {"name": "fs/delete", "description": "Delete a file.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
     "annotations": {"destructiveHint": True}},
    {"name": "rm", "description": "Remove a path; say why in note.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "note": {"type": "string"}},
                     "required": ["path"]},
     "annotations": {"destructiveHint": True}},
]


def text(s):
    return {"content": [{"type": "text", "text": s}]}


def call(name, args):
    name = name.lower()  # the carelessness under test
    if name == "echo":
        return text(str(args.get("message", "")))
    if name == "delete_all":
        return text("deleted everything")
    if name == "fs/delete":
        return text("deleted " + str(args.get("path")))
    if name == "rm":
        shown = {k: (v if not isinstance(v, str) or len(v) < 40 else f"<{len(v)} bytes>") for k, v in args.items()}
        return text("rm acted on " + json.dumps(shown, sort_keys=True))
    return None


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, id_ = msg.get("method"), msg.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": id_, "result": {
                "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "loose", "version": "1.0"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": id_, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            res = call(msg["params"]["name"], msg["params"].get("arguments") or {})
            if res is None:
                send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": "unknown tool"}})
            else:
                send({"jsonrpc": "2.0", "id": id_, "result": res})
        elif id_ is not None:
            send({"jsonrpc": "2.0", "id": id_, "result": {}})


if __name__ == "__main__":
    main()
