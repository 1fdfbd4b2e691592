#!/usr/bin/env python3
"""An MCP server over stdio, stdlib only, that logs its token when it fails.

It stands for a server that writes its credentials to stderr on a failed
login. With --fail-at-start it does so and exits before the handshake;
otherwise it starts, and its one tool, `login`, does so and exits. The
token comes from $LEAKY_TOKEN.
"""
import json
import os
import sys


def leak_and_exit():
    sys.stderr.write(f"login failed: token {os.environ.get('LEAKY_TOKEN', '')} was refused\n")
    sys.stderr.flush()
    sys.exit(1)


def reply(id_, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}) + "\n")
    sys.stdout.flush()


def main():
    if "--fail-at-start" in sys.argv:
        leak_and_exit()
    for line in sys.stdin:
        msg = json.loads(line)
        method, id_ = msg.get("method"), msg.get("id")
        if method == "initialize":
            reply(id_, {"protocolVersion": msg["params"]["protocolVersion"],
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "leaky", "version": "1"}})
        elif method == "tools/list":
            reply(id_, {"tools": [{"name": "login", "description": "Log in (and fail).",
                                   "inputSchema": {"type": "object", "properties": {}}}]})
        elif method == "tools/call":
            leak_and_exit()
        elif id_ is not None:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "method not found"}}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
