# A Python MCP SDK script that starts codebridge and runs one cell.
#   pip install mcp
#   python client.py
import asyncio
import os

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    # env: codebridge's settings (CODEBRIDGE_*) pass through; the SDK's
    # default environment would keep only HOME, PATH and the like.
    params = StdioServerParameters(command="codebridge", env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("run_python", {"code": "print(6 * 7)"})
            print(result.content[0].text)


asyncio.run(main())
