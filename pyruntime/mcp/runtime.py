"""Discover and call the MCP servers configured for this sandbox.

Available as ``runtime`` in every cell (or ``from mcp import runtime``).
Helpers that talk to the host are ``async``; each has a ``_sync`` twin.

    runtime.discovered_servers()                    # ('github', 'everything', ...)
    await runtime.search_tool_docs("create issue")  # best matches, with the name to call
    runtime.query_tool_docs_sync("github", "create_issue", detail="full")
    help(mcp_github.create_issue)                   # signature and parameter docs
    r = await mcp_github.create_issue(repo="a/b", title="Bug")
    r = await runtime.call_tool("github", "create_issue", {"repo": "a/b", "title": "Bug"})

``print(runtime.capability_summary())`` prints a one-page manual.
"""

from collections.abc import Mapping

from mcp import _channel, _proxy
from mcp._results import Audio, BridgeError, Image, MCPError, ToolError, convert
from mcp.display import display

# The functions only, so that help(runtime) is about them; the classes
# (MCPError, BridgeError, ToolError, Image, Audio) are attributes too.
__all__ = [
    "discovered_servers", "list_servers", "list_servers_sync", "list_tools",
    "list_tools_sync", "describe_server", "query_tool_docs", "query_tool_docs_sync",
    "search_tool_docs", "search_tool_docs_sync", "capability_summary", "call_tool",
    "call_tool_sync", "start_servers", "start_servers_sync", "display",
]


# ---- helpers -----------------------------------------------------------

def _summary(description, limit=160):
    """First line of a description, at most ``limit`` characters."""
    line = (description or "").strip().split("\n", 1)[0].strip()
    if len(line) > limit:
        cut = line[:limit]
        dot = cut.rfind(". ")
        line = cut[:dot + 1] if dot > 40 else cut.rstrip() + "..."
    return line


def _detail(detail):
    if detail not in ("summary", "full"):
        raise ValueError(f"detail must be 'summary' or 'full', not {detail!r}")
    return detail


def _with_python(server, tool):
    entry = dict(tool)
    entry["python"] = server.python_name(tool["name"])
    return entry


def _tool_doc(server, tool, detail):
    doc = {"server": server.name, "tool": tool["name"],
           "python": server.python_name(tool["name"]),
           "summary": _summary(tool.get("description"))}
    if detail == "full":
        doc["description"] = tool.get("description") or ""
        doc["inputSchema"] = tool.get("inputSchema") or {}
        if tool.get("outputSchema") is not None:
            doc["outputSchema"] = tool["outputSchema"]
        fn = server.function(server.names[tool["name"]])
        doc["signature"] = f"{doc['python']}{fn.__signature__}"
    return doc


def _docs(server, tool, detail):
    if tool is None:
        return [_tool_doc(server, t, detail) for t in server.tools]
    found = server.tool(tool)
    if found is None:
        raise MCPError(server.missing(tool))
    return _tool_doc(server, found, detail)


def _search_params(query, limit, detail):
    limit = int(limit)
    if limit < 1:
        raise ValueError("limit must be at least 1")
    return {"query": str(query), "limit": limit, "detail": _detail(detail)}


def _search_results(entries, detail):
    results = []
    for entry in entries or ():
        if not isinstance(entry, dict):
            continue
        if "unavailable" in entry:
            results.append({"server": entry.get("server"), "unavailable": entry["unavailable"]})
            continue
        name = entry.get("server")
        try:
            server = _proxy.find_server(name)
            python = server.python_name(entry.get("tool"))
        except MCPError:
            from mcp._naming import identifier
            python = f"mcp_{identifier(name)}.{identifier(entry.get('tool'))}"
        doc = {"server": name, "tool": entry.get("tool"), "python": python,
               "summary": _summary(entry.get("description")), "score": entry.get("score")}
        if detail == "full":
            doc["description"] = entry.get("description") or ""
            for key in ("inputSchema", "outputSchema"):
                if entry.get(key) is not None:
                    doc[key] = entry[key]
        results.append(doc)
    return results


def _searched_servers(entries):
    """Known servers in search results whose tool lists are not cached yet."""
    names = []
    for entry in entries or ():
        if isinstance(entry, dict) and "unavailable" not in entry:
            try:
                server = _proxy.find_server(entry.get("server"))
            except MCPError:
                continue
            if server.tools is None and server not in names:
                names.append(server)
    return names


def _call_params(server, tool, args, kwargs):
    if args is None:
        arguments = {}
    elif isinstance(args, Mapping):
        arguments = dict(args)
    else:
        raise TypeError("call_tool(server, tool, args): args must be a dict of tool arguments")
    arguments.update(kwargs)
    if callable(tool) and hasattr(tool, "tool_name"):   # call_tool(s, mcp_s.echo, ...)
        tool = tool.tool_name
    try:
        found = _proxy.find_server(server)
    except MCPError:
        return server, tool, arguments  # the host answers with its own message
    if found.tools is not None and tool not in found.names and tool in found._by_python:
        tool = found._by_python[tool]["name"]   # a python name given
    return found.name, tool, arguments


def _server_names(names):
    if len(names) == 1 and isinstance(names[0], (list, tuple)):
        names = names[0]
    return [_proxy.resolve_server(n) for n in names]


# ---- discovery ---------------------------------------------------------

def discovered_servers(detailed=False):
    """Names of the configured MCP servers, in config order (no RPC).

    With ``detailed=True``: dicts with name, description and the Python
    object to use (``python``, e.g. ``mcp_github``).
    """
    if detailed:
        return tuple({"name": s.name, "description": s.description, "python": s.python}
                     for s in _proxy.servers())
    return tuple(s.name for s in _proxy.servers())


def _servers_value(value):
    result = []
    for entry in value or ():
        if isinstance(entry, dict):
            entry = dict(entry)
            try:
                entry["python"] = _proxy.find_server(entry.get("name")).python
            except MCPError:
                pass
            result.append(entry)
    return result


async def list_servers(detailed=False):
    """Names of the configured servers; ``detailed=True`` asks the host for
    ``[{name, description, running, python}]``."""
    if not detailed:
        return discovered_servers()
    return _servers_value(await _channel.get().call_async("list_servers", {}))


def list_servers_sync(detailed=False):
    """Blocking :func:`list_servers`."""
    if not detailed:
        return discovered_servers()
    return _servers_value(_channel.get().call("list_servers", {}))


async def list_tools(server, refresh=False):
    """The tools of ``server`` as dicts (name, description, inputSchema,
    outputSchema?, annotations?, python). Starts the server if needed;
    cached after the first fetch (``refresh=True`` fetches again)."""
    found = _proxy.find_server(server)
    return [_with_python(found, t) for t in await found.fetch_tools_async(refresh)]


def list_tools_sync(server, refresh=False):
    """Blocking :func:`list_tools`."""
    found = _proxy.find_server(server)
    return [_with_python(found, t) for t in found.fetch_tools(refresh)]


def describe_server(name):
    """One server: name, description, the Python object and module to use,
    and its tools with one-line summaries (fetched once, then cached)."""
    server = _proxy.find_server(name)
    tools = server.fetch_tools()
    return {"name": server.name, "description": server.description,
            "python": server.python, "module": server.module,
            "tools": [_tool_doc(server, t, "summary") for t in tools]}


async def query_tool_docs(server, tool=None, detail="summary"):
    """Docs of every tool of ``server`` (a list), or of one ``tool`` (a dict,
    by original or Python name). ``detail="summary"``: server, tool, python
    (the name to call) and a one-line summary; ``"full"`` adds the
    description, inputSchema, outputSchema and the Python signature."""
    detail = _detail(detail)
    found = _proxy.find_server(server)
    await found.fetch_tools_async()
    return _docs(found, tool, detail)


def query_tool_docs_sync(server, tool=None, detail="summary"):
    """Blocking :func:`query_tool_docs`."""
    detail = _detail(detail)
    found = _proxy.find_server(server)
    found.fetch_tools()
    return _docs(found, tool, detail)


async def search_tool_docs(query, limit=5, detail="summary"):
    """Fuzzy search over the tools of every configured server, best first.

    Each result: server, tool, python (e.g. ``mcp_github.create_issue``),
    summary and score; ``detail="full"`` adds description and schemas.
    Servers that could not be searched come last as {server, unavailable}.
    """
    params = _search_params(query, limit, detail)
    entries = await _channel.get().call_async("search_tools", params)
    pending = _searched_servers(entries)
    if pending:
        import asyncio
        await asyncio.gather(*(s.fetch_tools_async() for s in pending), return_exceptions=True)
    return _search_results(entries, params["detail"])


def search_tool_docs_sync(query, limit=5, detail="summary"):
    """Blocking :func:`search_tool_docs`."""
    params = _search_params(query, limit, detail)
    entries = _channel.get().call("search_tools", params)
    for server in _searched_servers(entries):
        try:
            server.fetch_tools()
        except MCPError:
            pass
    return _search_results(entries, params["detail"])


# ---- calling -----------------------------------------------------------

async def call_tool(server, tool, args=None, /, *, raw=False, **kwargs):
    """Call ``tool`` of ``server`` by their original names (aliases work too)
    with ``args`` (a dict) and/or keyword arguments.

    Returns structuredContent if the tool gives one, else the text of a single
    text block, else a list of items (str, Image, dicts); ``raw=True`` returns
    the CallToolResult dict. A tool error raises ToolError; a failure of the
    bridge (unknown server, upstream down, time limit) raises BridgeError.
    Pass a tool argument that is itself named ``raw`` inside ``args``.
    """
    server, tool, arguments = _call_params(server, tool, args, kwargs)
    result = await _channel.get().call_async(
        "call_tool", {"server": server, "tool": tool, "arguments": arguments})
    return convert(result, server, tool, raw)


def call_tool_sync(server, tool, args=None, /, *, raw=False, **kwargs):
    """Blocking :func:`call_tool`."""
    server, tool, arguments = _call_params(server, tool, args, kwargs)
    result = _channel.get().call(
        "call_tool", {"server": server, "tool": tool, "arguments": arguments})
    return convert(result, server, tool, raw)


async def start_servers(*names):
    """Start servers now instead of on first use; returns
    ``[{name, ok, error?}]``."""
    return await _channel.get().call_async("start_servers", {"servers": _server_names(names)})


def start_servers_sync(*names):
    """Blocking :func:`start_servers`."""
    return _channel.get().call("start_servers", {"servers": _server_names(names)})


# ---- manual ------------------------------------------------------------



def capability_summary():
    """A one-page manual: how to discover, call, gather, handle errors and
    show images."""
    import pkgutil
    import sys
    listed = [f"{s.name} ({s.python})" for s in _proxy.servers()]
    manual = pkgutil.get_data("mcp", "MANUAL.txt").decode("utf-8")
    return manual.format(python=sys.version.split()[0],
                          servers=", ".join(listed) if listed else "none configured")
