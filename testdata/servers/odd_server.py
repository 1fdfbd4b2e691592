#!/usr/bin/env python3
"""An MCP server whose results are odd on purpose, for codebridge's tests:
an unknown content type, NUL bytes and unpaired surrogates in text,
binary blobs, resource links and embedded resources. Stdlib only."""
import base64
import json
import os
import sys

RESULTS = {
    "unknown_type": {"content": [{"type": "hologram", "data": "???"}, {"type": "text", "text": "after"}]},
    "nul_text": {"content": [{"type": "text", "text": "a\u0000b"}]},
    "surrogate_text": {"content": [{"type": "text", "text": "bad \ud800 pair"}]},
    "blob": {"content": [{"type": "resource", "resource": {
        "uri": "file:///blob.bin", "mimeType": "application/octet-stream",
        "blob": base64.b64encode(os.urandom(4096)).decode()}}]},
    "links": {"content": [
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"},
        {"type": "resource", "resource": {"uri": "file:///b.txt", "mimeType": "text/plain", "text": "embedded"}}]},
    "empty": {"content": []},
}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, id_ = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "odd", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": [
            {"name": n, "description": "odd result: " + n, "inputSchema": {"type": "object"}} for n in RESULTS]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": id_, "result": RESULTS[msg["params"]["name"]]})
    elif id_ is not None:
        send({"jsonrpc": "2.0", "id": id_, "result": {}})
