# A real MCP client for the end-to-end tests, from the Python SDK, that
# leaves an approval question unanswered (protocol 2026-07-28):
#
#   CODEBRIDGE_BIN=... python abandon_client.py CODE1 CODE2
#
# It calls run_python with CODE1 and takes the input requests it gets
# back without answering them, then calls run_python with CODE2 (no
# request state) and prints one JSON object: {"first": "input_required"
# or the first call's text, "protocol": ..., "second": the second call's
# text, "second_error": bool}.
import asyncio
import json
import os
import sys

from mcp import StdioServerParameters, types
from mcp.client.client import Client


async def never(context, params):  # offers elicitation; never asked directly on 2026-07-28
    raise RuntimeError("asked outside a call")


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main(first_code, second_code):
    params = StdioServerParameters(command=os.environ["CODEBRIDGE_BIN"], args=["serve"], env=dict(os.environ))
    async with Client(params, elicitation_callback=never) as client:
        session = client.session
        first = await session.call_tool("run_python", {"code": first_code}, allow_input_required=True)
        out = {"protocol": client.protocol_version}
        out["first"] = "input_required" if isinstance(first, types.InputRequiredResult) else text(first)
        second = await session.call_tool("run_python", {"code": second_code})
        out["second"], out["second_error"] = text(second), bool(second.is_error)
        print(json.dumps(out))


asyncio.run(main(sys.argv[1], sys.argv[2]))
