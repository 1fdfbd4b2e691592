"""Upstream servers as Python objects: ``mcp_<alias>.<tool>(**kwargs)``.

:func:`install` takes the servers of the ``hello`` frame and builds one
:class:`Server` record and one :class:`ServerProxy` per server. A proxy has no
public attributes of its own: every public name is looked up among the
server's tools (fetched with the ``list_tools`` RPC on first use, then
cached until the host reports that the server's tools changed: see
:func:`forget`), so a tool named like a helper stays reachable. Each tool is an
``async`` function with a real signature and docstring (see ``_schema``) and
a ``.sync`` twin for blocking use; ``mcp_x.tool_sync`` is the same twin.
"""

import difflib
import sys

from mcp import _channel
from mcp._naming import assign
from mcp._results import MCPError, convert

__all__ = ["Server", "ServerProxy", "install", "servers", "find_server", "resolve_server",
           "forget"]

_servers = {}   # original name -> Server, in hello order
_aliases = {}   # alias -> Server


def servers():
    """The configured servers, in config order."""
    return list(_servers.values())


def find_server(name):
    """The Server for an original name, an alias or ``mcp_<alias>``."""
    if isinstance(name, ServerProxy):
        return name._ServerProxy__server
    server = _servers.get(name) or _aliases.get(name)
    if server is None and isinstance(name, str) and name.startswith("mcp_"):
        server = _aliases.get(name[4:])
    if server is None:
        known = ", ".join(_servers) or "none"
        raise MCPError(f"unknown MCP server {name!r}; configured servers: {known}")
    return server


def resolve_server(name):
    """The original server name for ``name`` (passed through if unknown, so
    the host can answer with its own message)."""
    try:
        return find_server(name).name
    except MCPError:
        return name


class Server:
    """One upstream server: its names and its cached tool list."""

    def __init__(self, name, alias, description):
        self.name = name
        self.alias = alias
        self.description = description or ""
        self.python = f"mcp_{alias}"
        self.module = f"mcp.servers.{alias}"
        self.proxy = ServerProxy(self)
        self.tools = None          # list of tool dicts, once fetched
        self.names = {}            # original tool name -> python name
        self._by_python = {}       # python name -> tool dict
        self._functions = {}       # python name -> function

    # ---- tool list -----------------------------------------------------

    def set_tools(self, tools):
        """Install a fresh tool list (drops functions built from the old one)."""
        tools = [t for t in tools or () if isinstance(t, dict) and isinstance(t.get("name"), str)]
        self.forget()
        self.tools = tools
        self.names = assign(t["name"] for t in tools)
        self._by_python = {self.names[t["name"]]: t for t in tools}

    def forget(self):
        """Drop the cached tool list and every function built from it (on
        the proxy and on ``mcp.servers.<alias>``); the next use fetches the
        list again. Functions the user kept in variables still work: they
        call the tool by its original name."""
        module = sys.modules.get(self.module)
        if module is not None:
            for pyname in self._by_python:
                module.__dict__.pop(pyname, None)
        self.tools = None
        self.names = {}
        self._by_python = {}
        self._functions = {}
        self.proxy.__dict__.clear()
        self.proxy.__dict__["_ServerProxy__server"] = self

    def fetch_tools(self, refresh=False):
        """The tool list (blocking RPC the first time)."""
        if self.tools is None or refresh:
            self.set_tools(_channel.get().call("list_tools", {"server": self.name}))
        return self.tools

    async def fetch_tools_async(self, refresh=False):
        """The tool list (awaitable RPC the first time)."""
        if self.tools is None or refresh:
            self.set_tools(await _channel.get().call_async("list_tools", {"server": self.name}))
        return self.tools

    def tool(self, name):
        """The tool dict for an original or python tool name, or None."""
        self.fetch_tools()
        pyname = self.names.get(name)
        if pyname is None and name in self._by_python:
            pyname = name
        return self._by_python.get(pyname) if pyname else None

    def python_name(self, tool_name):
        """``mcp_<alias>.<python tool name>`` for an original tool name."""
        pyname = self.names.get(tool_name)
        if pyname is None:
            pyname = assign([tool_name]).get(tool_name)
        return f"{self.python}.{pyname}"

    def function(self, pyname):
        """The proxy function for a python tool name, or None."""
        fn = self._functions.get(pyname)
        if fn is None:
            self.fetch_tools()
            tool = self._by_python.get(pyname)
            if tool is None:
                return None
            fn = self._functions[pyname] = _make_function(self, tool, pyname)
        return fn

    def missing(self, name):
        """The AttributeError message for a name that is not a tool."""
        names = list(self._by_python)
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        listing = ", ".join(names[:30]) + (" ..." if len(names) > 30 else "")
        return (f"MCP server {self.name!r} ({self.python}) has no tool {name!r}{hint} "
                f"Tools: {listing or 'none'}. Original names work with "
                f"call_tool({self.name!r}, 'tool name', {{...}}).")


def _make_function(server, tool, pyname):
    """Build the async tool function and its ``.sync`` twin."""
    from mcp._schema import ToolSpec  # inspect/typing: only once tools are used

    ref = f"{server.python}.{pyname}"
    spec = ToolSpec(server.name, ref, tool, pyname)
    server_name, tool_name = server.name, tool["name"]

    async def call(**kwargs):
        arguments, raw = spec.prepare(kwargs)
        result = await _channel.get().call_async(
            "call_tool", {"server": server_name, "tool": tool_name, "arguments": arguments})
        return convert(result, server_name, tool_name, raw)

    def sync(**kwargs):
        arguments, raw = spec.prepare(kwargs)
        result = _channel.get().call(
            "call_tool", {"server": server_name, "tool": tool_name, "arguments": arguments})
        return convert(result, server_name, tool_name, raw)

    for fn, qual in ((call, ref), (sync, ref + ".sync")):
        fn.__name__ = pyname
        fn.__qualname__ = qual
        fn.__module__ = server.module
        fn.__doc__ = spec.doc
        fn.__signature__ = spec.signature
        fn.server = server_name
        fn.tool_name = tool_name
        fn.schema = tool
    call.sync = sync
    return call


class ServerProxy:
    """An upstream MCP server. Its tools are attributes:

        await mcp_<alias>.<tool>(arg=...)     # async
        mcp_<alias>.<tool>.sync(arg=...)      # blocking (also <tool>_sync)
        help(mcp_<alias>.<tool>)              # signature and docs
        dir(mcp_<alias>)                      # the tool names

    Tools are fetched from the server on first use and cached.
    """

    def __init__(self, server):
        self.__server = server

    def __getattr__(self, name):
        if (name.startswith("__") and name.endswith("__")) or name == "_ServerProxy__server":
            raise AttributeError(name)
        server = self.__server
        fn = server.function(name)
        if fn is not None:
            self.__dict__[name] = fn
            return fn
        if name.endswith("_sync"):
            fn = server.function(name[:-5])
            if fn is not None:
                return fn.sync
        if name == "list_tools":        # the Python peer's proxy helpers
            return server.fetch_tools_async
        if name == "list_tools_sync":
            return server.fetch_tools
        raise AttributeError(server.missing(name))

    def __dir__(self):
        self.__server.fetch_tools()
        return sorted(self.__server._by_python)

    def __repr__(self):
        server = self.__server
        if server.tools is None:
            return f"<MCP server {server.name!r} as {server.python}; dir() lists its tools>"
        return f"<MCP server {server.name!r} as {server.python}: {len(server.tools)} tools>"


def forget(names):
    """Drop the cached tool lists of the servers called ``names`` (original
    names, from the exec frame's ``stale``: their tools changed upstream)."""
    for name in names if isinstance(names, list) else ():
        server = _servers.get(name) if isinstance(name, str) else None
        if server is not None:
            server.forget()


def install(hello_servers):
    """Create the Server records, proxies and ``mcp.servers.<alias>`` modules
    for the servers of the hello frame. Returns ``{mcp_<alias>: proxy}``."""
    from mcp import servers as servers_pkg

    _servers.clear()
    _aliases.clear()
    entries = [s for s in hello_servers or () if isinstance(s, dict) and isinstance(s.get("name"), str)]
    aliases = assign(s["name"] for s in entries)
    for entry in entries:
        name = entry["name"]
        if name in _servers:
            continue
        server = Server(name, aliases[name], entry.get("description"))
        _servers[name] = server
        _aliases[server.alias] = server
    servers_pkg._install(servers())
    return {s.python: s.proxy for s in _servers.values()}
