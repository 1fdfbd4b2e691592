"""One module per configured MCP server: ``mcp.servers.<alias>``.

    from mcp.servers.everything import echo
    result = await echo(message="hi")

A server module's attributes are the server's tools (the same functions as
``mcp_<alias>.<tool>``), fetched on first use. ``dir()`` and
``from mcp.servers.<alias> import *`` list them.
"""

import sys
import types

from mcp._naming import is_dunder
from mcp._proxy import PendingTool

__all__ = []


def _server_module(server):
    module = types.ModuleType(server.module, f"Tools of the MCP server {server.name!r}"
                              + (f": {server.description}" if server.description else "."))

    def __getattr__(name):
        if name == "__all__":   # a tool whose name is special stays reachable by call_tool
            return [n for n in server.python_names() if not is_dunder(n)]
        if is_dunder(name):
            raise AttributeError(f"module {server.module!r} has no attribute {name!r}")
        value = server.attribute(name)
        if not isinstance(value, PendingTool):  # a stand-in is not the tool yet
            setattr(module, name, value)        # Server.forget() drops it again
        return value

    def __dir__():
        return server.python_names()

    module.__getattr__ = __getattr__
    module.__dir__ = __dir__
    module.__server__ = server.name
    return module


def _install(servers):
    """Register ``mcp.servers.<alias>`` for each server (called at hello)."""
    package = sys.modules[__name__]
    for name in list(__all__):
        sys.modules.pop(f"{__name__}.{name}", None)
        package.__dict__.pop(name, None)
    __all__.clear()
    for server in servers:
        module = _server_module(server)
        sys.modules[server.module] = module
        setattr(package, server.alias, module)
        __all__.append(server.alias)
