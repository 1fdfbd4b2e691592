"""The codebridge sandbox runtime: every configured MCP server as Python.

In a cell:

    await mcp_<server>.<tool>(arg=...)           # or .sync(arg=...)
    from mcp.servers.<server> import <tool>
    await call_tool("server", "tool", {...})     # original names
    from mcp import runtime                       # discovery helpers

``print(runtime.capability_summary())`` prints a one-page manual. The
runtime's entry point is ``mcp._main.main()`` (see pyruntime/PROTOCOL.md).
"""

from mcp._results import (BridgeError, InvalidArguments, MCPError, PackageError,
                          PermissionDenied, ServerUnavailable, ToolError, ToolTimeout,
                          UnknownTool, UpstreamError)

__all__ = ["BridgeError", "MCPError", "ToolError", "PermissionDenied", "ToolTimeout",
           "UnknownTool", "InvalidArguments", "UpstreamError", "ServerUnavailable",
           "PackageError"]
