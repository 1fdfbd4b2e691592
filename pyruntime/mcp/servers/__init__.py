"""One module per configured MCP server: ``mcp.servers.<alias>``.

    from mcp.servers.everything import echo
    result = await echo(message="hi")

A server module's attributes are the server's tools (the same functions as
``mcp_<alias>.<tool>``), fetched on first use. ``dir()`` and
``from mcp.servers.<alias> import *`` list them.
"""

import sys
import types

__all__ = []


def _server_module(server):
    module = types.ModuleType(server.module, f"Tools of the MCP server {server.name!r}"
                              + (f": {server.description}" if server.description else "."))
    proxy = server.proxy

    def __getattr__(name):
        if name == "__all__":
            server.fetch_tools()
            return sorted(server._by_python)
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {server.module!r} has no attribute {name!r}")
        value = getattr(proxy, name)
        setattr(module, name, value)
        return value

    def __dir__():
        server.fetch_tools()
        return sorted(server._by_python)

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
