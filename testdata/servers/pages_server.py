#!/usr/bin/env python3
"""An MCP server over stdio, stdlib only, whose lists come in pages.

It has five resources (res://item/0 .. 4) and five prompts, listed two per
page with a nextCursor; reading a resource gives "item N". It stands for the
servers with long lists that a client must page through.
"""
import json
import sys

PAGE = 2
RESOURCES = [{"uri": f"res://item/{i}", "name": f"item-{i}", "mimeType": "text/plain"} for i in range(5)]
PROMPTS = [{"name": f"prompt-{i}", "description": f"Prompt number {i}"} for i in range(5)]


def reply(id_, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def page(items, key, params):
    start = int((params or {}).get("cursor") or 0)
    result = {key: items[start:start + PAGE]}
    if start + PAGE < len(items):
        result["nextCursor"] = str(start + PAGE)
    return result


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, id_, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if id_ is None:
            continue
        if method == "initialize":
            reply(id_, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                        "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                        "serverInfo": {"name": "pages", "version": "1"}})
        elif method == "tools/list":
            reply(id_, {"tools": []})
        elif method == "resources/list":
            reply(id_, page(RESOURCES, "resources", params))
        elif method == "prompts/list":
            reply(id_, page(PROMPTS, "prompts", params))
        elif method == "resources/read":
            uri = params.get("uri", "")
            if not uri.startswith("res://item/"):
                reply(id_, error={"code": -32002, "message": f"Resource not found: {uri}"})
            else:
                reply(id_, {"contents": [{"uri": uri, "mimeType": "text/plain",
                                          "text": "item " + uri.rsplit("/", 1)[1]}]})
        elif method == "ping":
            reply(id_, {})
        else:
            reply(id_, error={"code": -32601, "message": f"Method not found: {method}"})


if __name__ == "__main__":
    main()
