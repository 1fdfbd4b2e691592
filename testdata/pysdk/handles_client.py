# A real MCP client for the end-to-end tests, from the Python SDK, on
# protocol 2026-07-28 over streamable HTTP (no MCP session):
#
#   CODEBRIDGE_URL=http://127.0.0.1:PORT/mcp CODEBRIDGE_TOKEN=... python handles_client.py
#
# It calls run_python without a session (codebridge starts one and
# answers with its handle), then again with the handle, and prints one
# JSON object: {"protocol", "first", "handle" (from structured content),
# "second", "second_error"}.
import asyncio
import json
import os

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    headers = {"Authorization": "Bearer " + os.environ["CODEBRIDGE_TOKEN"]}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with Client(streamable_http_client(os.environ["CODEBRIDGE_URL"], http_client=http)) as client:
            first = await client.call_tool("run_python", {"code": "x = 41\nprint('set')"})
            handle = (first.structured_content or {}).get("session")
            second = await client.call_tool("run_python", {"code": "print(x + 1)", "session": handle})
            print(json.dumps({"protocol": client.protocol_version, "first": text(first), "handle": handle,
                              "second": text(second), "second_error": bool(second.is_error)}))


asyncio.run(main())
