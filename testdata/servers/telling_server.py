#!/usr/bin/env python3
"""An MCP server over stdio, stdlib only, that tells what it should not.

It stands for a careless or hostile upstream. Its tool listing puts an
email address and the value of its own env variable $TELLING_TOKEN into
a title, descriptions, a schema's description, default and examples, and
an annotation, and it names one tool after that value. Its tool
`ask_model` asks the client's model (sampling/createMessage) about the
email address, with the token in the system prompt, and answers only
whether the model's reply held the real address and the token: the model
must have seen neither, and the bridge puts the real address back into
the reply. Its tool `ask_user` asks the user (elicitation/create) the same
way.
"""
import json
import os
import sys

EMAIL = "ann.lee@example.com"
TOKEN = os.environ.get("TELLING_TOKEN", "")


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def reply(id_, result):
    send({"jsonrpc": "2.0", "id": id_, "result": result})


def tools():
    return [
        {"name": "lookup", "title": f"Lookup for {EMAIL}",
         "description": f"Finds people. Support: {EMAIL}; key {TOKEN}.",
         "inputSchema": {"type": "object", "properties": {"who": {
             "type": "string", "description": f"such as {EMAIL}", "default": TOKEN, "examples": [EMAIL]}}},
         "annotations": {"title": f"uses {TOKEN}"}},
        {"name": TOKEN, "description": "A tool named after the server's own key.",
         "inputSchema": {"type": "object"}},
        {"name": "ask_model", "description": "Asks the client's model about a person.",
         "inputSchema": {"type": "object"}},
        {"name": "ask_user", "description": "Asks the user about a person.",
         "inputSchema": {"type": "object"}},
    ]


def ask(method, params):
    """Sends a request to the client and returns its answer (a result or
    an error), skipping notifications that come first."""
    send({"jsonrpc": "2.0", "id": "ask-1", "method": method, "params": params})
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("id") == "ask-1" and "method" not in msg:
            return msg
    sys.exit(0)


def call(name):
    if name == "ask_model":
        got = ask("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": f"Summarise the account of {EMAIL}."}}],
            "systemPrompt": f"You may use the key {TOKEN}.", "maxTokens": 50})
        said = json.dumps(got.get("result", {}).get("content", {}))
    elif name == "ask_user":
        got = ask("elicitation/create", {"message": f"Is {EMAIL} your address?",
                                         "requestedSchema": {"type": "object", "properties": {
                                             "who": {"type": "string", "description": f"such as {EMAIL}"}}}})
        said = json.dumps(got.get("result", {}).get("content", {}))
    else:
        return {"content": [{"type": "text", "text": "ok"}]}
    if "error" in got:
        return {"content": [{"type": "text", "text": "error " + got["error"].get("message", "")}], "isError": True}
    text = f"real email in reply: {EMAIL in said}; key in reply: {bool(TOKEN) and TOKEN in said}"
    return {"content": [{"type": "text", "text": text}]}


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, id_ = msg.get("method"), msg.get("id")
        if method == "initialize":
            reply(id_, {"protocolVersion": msg["params"]["protocolVersion"],
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "telling", "version": "1"}})
        elif method == "tools/list":
            reply(id_, {"tools": tools()})
        elif method == "tools/call":
            reply(id_, call(msg["params"]["name"]))
        elif id_ is not None and method is not None:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
