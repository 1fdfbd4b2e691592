"""Upstream servers as Python objects: ``mcp_<alias>.<tool>(**kwargs)``.

:func:`install` takes the servers of the ``hello`` frame and builds one
:class:`Server` record and one :class:`ServerProxy` per server. A proxy has no
public attributes of its own: every public name is looked up among the
server's tools (fetched with the ``list_tools`` RPC on first use, then
cached until the host reports that the server's tools changed: see
:func:`forget`), so a tool named like a helper stays reachable. Each tool is an
``async`` function with a real signature and docstring (see ``_schema``) and
a ``.sync`` twin for blocking use (both from one definition, see ``_twin``);
``mcp_x.tool_sync`` is the same twin. Inside an event loop, a tool looked up
before the list is cached is a :class:`PendingTool`, so that the lookup never
blocks other tasks.
"""

from __future__ import annotations  # annotations stay text: no typing import at startup

import difflib
import sys
from collections.abc import Callable

from mcp._naming import assign, is_dunder
from mcp._results import BridgeError, MCPError, PermissionDenied, convert
from mcp._twin import Plan, twin

__all__ = ["Server", "ServerProxy", "PendingTool", "ToolDenied", "install", "servers",
           "find_server", "resolve_server", "forget", "refreshed", "Help"]

_servers: dict[str, Server] = {}   # original name -> Server, in hello order
_aliases: dict[str, Server] = {}   # alias -> Server


def servers() -> list[Server]:
    """The configured servers, in config order."""
    return list(_servers.values())


def find_server(name: object) -> Server:
    """The Server for an original name, an alias, ``mcp_<alias>`` or a proxy."""
    if isinstance(name, ServerProxy):
        server = next((s for s in _servers.values() if s.proxy is name), None)
    else:
        server = _servers.get(name) or _aliases.get(name)
        if server is None and isinstance(name, str) and name.startswith("mcp_"):
            server = _aliases.get(name[4:])
    if server is None:
        known = ", ".join(_servers) or "none"
        raise MCPError(f"unknown MCP server {name!r}; configured servers: {known}")
    return server


def resolve_server(name: object) -> object:
    """The original server name for ``name`` (passed through if unknown, so
    the host can answer with its own message)."""
    try:
        return find_server(name).name
    except MCPError:
        return name


def _in_event_loop() -> bool:
    """Whether the calling code runs inside an asyncio event loop (an
    ``async`` cell or a task), where a blocking RPC would stall every task."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and asyncio._get_running_loop() is not None


class ToolDenied(PermissionDenied):
    """Code called a tool the policy denies (``await mcp_x.delete_all()``),
    or asked for its docs: the message is the host's, the one a
    ``call_tool`` of it fails with, and names the rule and its file. A call
    goes to the host like any other, whose gate denies it and audits the
    attempt; the function itself is there (``from mcp.servers.x import
    delete_all`` works), so that the attempt is a call the host sees, never
    an AttributeError raised in the sandbox."""


class Server:
    """One upstream server: its names and its cached tool list."""

    def __init__(self, name: str, alias: str, description: str | None, cwd: str | None = None):
        self.name = name
        self.alias = alias
        self.description = description or ""
        self.cwd = cwd
        self.python = f"mcp_{alias}"
        self.module = f"mcp.servers.{alias}"
        self.proxy = ServerProxy(self)
        self.tools: list[dict] | None = None          # the tool dicts, once fetched
        self.names: dict[str, str] = {}                # original tool name -> python name
        self._by_python: dict[str, dict] = {}          # python name -> tool dict
        self._functions: dict[str, Callable] = {}      # python name -> function
        self.denied: dict[str, tuple[str, str]] = {}   # original or python name of a denied tool -> (original, why)
        self._fetching = None                          # the task fetching the list for waiting calls

    # ---- tool list -----------------------------------------------------

    def set_tools(self, tools: object) -> None:
        """Install a fresh tool list (drops functions built from the old one).
        Entries with ``denied`` (tools the policy denies, see PROTOCOL.md)
        are kept apart: no listing shows them, and naming one raises
        :class:`ToolDenied` with the host's message."""
        entries = [t for t in tools or () if isinstance(t, dict) and isinstance(t.get("name"), str)]
        tools = [t for t in entries if "denied" not in t]
        self.forget()
        self.tools = tools
        self.names = assign(t["name"] for t in tools)
        self._by_python = {self.names[t["name"]]: t for t in tools}
        for t in entries:
            why = t.get("denied")
            if isinstance(why, str):
                self.denied[t["name"]] = (t["name"], why)
                self.denied.setdefault(assign([t["name"]])[t["name"]], (t["name"], why))

    def forget(self) -> None:
        """Drop the cached tool list and every function built from it (also
        those cached on ``mcp.servers.<alias>``); the next use fetches the
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
        self.denied = {}

    def tools_plan(self, refresh: bool = False) -> Plan:
        """The tool list: fetched with the ``list_tools`` RPC the first time
        (or with ``refresh=True``), then cached."""
        if self.tools is None or refresh:
            self.set_tools((yield ("list_tools", {"server": self.name})))
        return self.tools

    list_tools = twin(tools_plan, "list_tools")   # awaitable
    list_tools_sync = list_tools.sync             # blocking

    async def fetch_tools(self) -> None:
        """Fetch the tool list, once for every task that needs it at the
        same time (calls gathered before the list was cached): they all
        go on in the same turn of the loop, so that their calls are sent
        together, as one batch (see ``_channel.GATED``)."""
        import asyncio
        if self.tools is not None:
            return
        loop = asyncio.get_running_loop()
        fetching = self._fetching
        if fetching is None or fetching.get_loop() is not loop or fetching.done():
            fetching = self._fetching = loop.create_task(self.list_tools())
        await asyncio.shield(fetching)

    def python_names(self) -> list[str]:
        """The Python names of the tools, sorted (fetches the list, blocking)."""
        self.list_tools_sync()
        return sorted(self._by_python)

    def tool(self, name: str) -> dict | None:
        """The tool dict for an original or python tool name, or None."""
        self.list_tools_sync()
        pyname = self.names.get(name)
        if pyname is None and name in self._by_python:
            pyname = name
        return self._by_python.get(pyname) if pyname else None

    def original_name(self, name: str) -> str:
        """The original name of a tool given by its original or Python name
        (``name`` itself when the list is not cached or it is neither)."""
        if self.tools is not None and name not in self.names and name in self._by_python:
            return self._by_python[name]["name"]
        return name

    def python_name(self, tool_name: str) -> str:
        """``mcp_<alias>.<python tool name>`` for an original tool name."""
        pyname = self.names.get(tool_name)
        if pyname is None:
            pyname = assign([tool_name]).get(tool_name)
        return f"{self.python}.{pyname}"

    def function(self, pyname: str) -> Callable | None:
        """The proxy function for a python tool name, or None."""
        fn = self._functions.get(pyname)
        if fn is None:
            self.list_tools_sync()
            tool = self._by_python.get(pyname)
            if tool is None:
                return None
            fn = self._functions[pyname] = _make_function(self, tool, pyname)
        return fn

    def attribute(self, name: str) -> object:
        """What ``mcp_<alias>.<name>`` (and ``mcp.servers.<alias>.<name>``) is:
        the tool of that Python name; else ``<tool>_sync`` for a tool's
        blocking twin; else the Python peer's ``list_tools``/``list_tools_sync``
        helpers and the resource and prompt helpers (``mcp._resources``).
        Looked up inside an event loop before the tool list is
        cached, a name is a :class:`PendingTool`: the list is fetched when it
        is called, without blocking other tasks."""
        if self.tools is None and not name.endswith("_sync") and name != "list_tools" \
                and _in_event_loop():
            return PendingTool(self, name)
        fn = self.function(name)
        if fn is not None:
            return fn
        if name.endswith("_sync"):
            fn = self.function(name[:-5])
            if fn is not None:
                return fn.sync
        if name == "list_tools":
            return self.list_tools
        if name == "list_tools_sync":
            return self.list_tools_sync
        fn = self.helper(name) or self.denied_function(name)
        if fn is not None:
            return fn
        raise self.missing(name)

    def helper(self, name: str) -> Callable | None:
        """The resource or prompt helper called ``name`` (``list_resources``,
        ``read_resource``, ``get_prompt``, ... and their ``_sync`` twins)
        bound to this server, or None (see ``mcp._resources``)."""
        from mcp._resources import server_helper
        return server_helper(self, name)

    def denied_function(self, name: str) -> Callable | None:
        """The function of a tool the policy denies, named by its original or
        Python name (``<name>_sync``: its blocking twin), or None. Calling
        it asks the host, as any tool call does: the host's gate denies the
        call and audits it, and it raises :class:`ToolDenied`."""
        denied = self.denied.get(name)
        if denied is None:
            if name.endswith("_sync") and name[:-5] in self.denied:
                return self.denied_function(name[:-5]).sync
            return None
        return _denied_function(self, name, *denied)

    def missing(self, name: str) -> Exception:
        """The error for a name that is not a tool: :class:`ToolDenied` for a
        tool the policy denies (also as ``<tool>_sync``), else an
        AttributeError that lists the tools."""
        denied = self.denied.get(name)
        if denied is None and name.endswith("_sync"):
            denied = self.denied.get(name[:-5])
        if denied is not None:
            return ToolDenied(denied[1])
        names = list(self._by_python)
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        listing = ", ".join(names[:30]) + (" ..." if len(names) > 30 else "")
        return AttributeError(f"MCP server {self.name!r} ({self.python}) has no tool {name!r}{hint} "
                              f"Tools: {listing or 'none'}. Original names work with "
                              f"call_tool({self.name!r}, 'tool name', {{...}}).")


def _denied_function(server: Server, pyname: str, tool_name: str, why: str) -> Callable:
    """The async function (and ``.sync`` twin) of a tool the policy denies:
    a call sends the arguments as given to the host, like any tool call,
    and raises the host's denial as :class:`ToolDenied` (its docs are the
    denial: the host sends no schema of a denied tool)."""
    server_name = server.name

    def call(**kwargs) -> Plan:
        try:
            result = yield ("call_tool", {"server": server_name, "tool": tool_name, "arguments": kwargs})
        except PermissionDenied as exc:
            if exc.kind != "denied":
                raise
            err = ToolDenied(str(exc))
            err.type = getattr(exc, "type", None)
            raise err from None
        return convert(result, server_name, tool_name)

    fn = twin(call)
    for f, qual in ((fn, f"{server.python}.{pyname}"), (fn.sync, f"{server.python}.{pyname}.sync")):
        f.__name__ = pyname
        f.__qualname__ = qual
        f.__module__ = server.module
        f.__doc__ = f"Denied: {why}"
        f.server = server_name
        f.tool_name = tool_name
    return fn


def _make_function(server: Server, tool: dict, pyname: str) -> Callable:
    """Build the async tool function and its ``.sync`` twin."""
    from mcp._schema import ToolSpec  # inspect/typing: only once tools are used

    ref = f"{server.python}.{pyname}"
    spec = ToolSpec(server.name, ref, tool, pyname)
    server_name, tool_name = server.name, tool["name"]

    def call(**kwargs) -> Plan:
        arguments, raw = spec.prepare(kwargs)
        result = yield ("call_tool", {"server": server_name, "tool": tool_name,
                                      "arguments": arguments})
        return convert(result, server_name, tool_name, raw)

    fn = twin(call)
    for f, qual in ((fn, ref), (fn.sync, ref + ".sync")):
        f.__name__ = pyname
        f.__qualname__ = qual
        f.__module__ = server.module
        f.__doc__ = spec.doc
        f.__signature__ = spec.signature
        f.server = server_name
        f.tool_name = tool_name
        f.schema = tool
    return fn


def refreshed(obj: object) -> object:
    """The tool function ``obj`` (or its ``.sync`` twin) built from the
    server's tool list fetched afresh (one ``list_tools`` RPC), so that its
    docs show what the host observed of its results up to now; ``obj``
    itself when it is no tool function or the list cannot be fetched."""
    server = _servers.get(getattr(obj, "server", None)) if callable(obj) else None
    tool = getattr(obj, "tool_name", None)
    if server is None or not isinstance(tool, str) or isinstance(obj, PendingTool):
        return obj
    try:
        server.list_tools_sync(refresh=True)
    except MCPError:
        return obj
    fn = server.function(server.names.get(tool, ""))
    if fn is None:
        return obj
    return fn.sync if getattr(obj, "__qualname__", "").endswith(".sync") else fn


class Help:
    """Python's help(); for an MCP tool, its docs fetched afresh first, so
    that they show what its calls returned so far (also in the cell that
    made them)."""

    def __repr__(self) -> str:
        import builtins
        return repr(builtins.help)

    def __call__(self, *args, **kwargs):
        import builtins
        if args:
            args = (refreshed(args[0]),) + args[1:]
        return builtins.help(*args, **kwargs)


class PendingTool:
    # ``mcp_<alias>.<name>`` looked up inside an event loop before the
    # server's tool list is cached. Fetching the list there would stall every
    # task of the loop, so the lookup returns this stand-in at once. Awaiting
    # a call fetches the list (other tasks run meanwhile), then calls the tool
    # (AttributeError if there is none of that name). ``.sync``, ``help()``
    # and ``inspect.signature()`` need the tool at once: they fetch the list
    # blocking. (No docstring: ``__doc__`` is the tool's.)

    def __init__(self, server: Server, name: str):
        self._server = server
        self.__name__ = self.__qualname__ = name
        self.__module__ = server.module

    async def __call__(self, **kwargs):
        await self._server.fetch_tools()
        return await self._resolve()(**kwargs)

    def _resolve(self) -> Callable:
        fn = (self._server.function(self.__name__) or self._server.helper(self.__name__)
              or self._server.denied_function(self.__name__))
        if fn is None:
            raise self._server.missing(self.__name__)
        return fn

    # What the tool function has, found once the list is there.
    sync = property(lambda self: self._resolve().sync)
    __doc__ = property(lambda self: self._resolve().__doc__)
    __wrapped__ = property(lambda self: self._resolve())  # inspect.signature follows it
    tool_name = property(lambda self: self._resolve().tool_name)

    def __get__(self, obj, owner=None):
        """A descriptor, so that pydoc takes it for a routine: help() then
        shows the tool's signature and docs."""
        return self

    def __repr__(self):
        return f"<MCP tool {self._server.python}.{self.__name__} (tool list not fetched yet)>"


class ServerProxy:
    """An upstream MCP server. Its tools are attributes:

        await mcp_<alias>.<tool>(arg=...)     # async
        mcp_<alias>.<tool>.sync(arg=...)      # blocking (also <tool>_sync)
        help(mcp_<alias>.<tool>)              # signature and docs
        dir(mcp_<alias>)                      # the tool names

    Tools are fetched from the server on first use and cached.
    """

    def __init__(self, server: Server):
        self.__server = server

    def __getattr__(self, name: str) -> object:
        if is_dunder(name) or name == "_ServerProxy__server":
            raise AttributeError(name)
        return self.__server.attribute(name)

    def __dir__(self) -> list[str]:
        return self.__server.python_names()

    def __repr__(self) -> str:
        server = self.__server
        if server.tools is None:
            return f"<MCP server {server.name!r} as {server.python}; dir() lists its tools>"
        return f"<MCP server {server.name!r} as {server.python}: {len(server.tools)} tools>"


def forget(names: object) -> None:
    """Drop the cached tool lists of the servers called ``names`` (original
    names, from the exec frame's ``stale``: their tools changed upstream)."""
    for name in names if isinstance(names, list) else ():
        server = _servers.get(name) if isinstance(name, str) else None
        if server is not None:
            server.forget()


def install(hello_servers: object) -> dict[str, ServerProxy]:
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
        cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else None
        server = Server(name, aliases[name], entry.get("description"), cwd)
        _servers[name] = server
        _aliases[server.alias] = server
    servers_pkg._install(servers())
    return {s.python: s.proxy for s in _servers.values()}
