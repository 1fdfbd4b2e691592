"""Discover and call the MCP servers configured for this sandbox.

Available as ``runtime`` in every cell (or ``from mcp import runtime``).
Helpers that talk to the host are ``async``; each has a ``_sync`` twin.

    runtime.discovered_servers()                    # ('github', 'everything', ...)
    await runtime.search_tool_docs("create issue")  # best matches, with the name to call
    runtime.query_tool_docs_sync("github", "create_issue", detail="full")
    help(mcp_github.create_issue)                   # signature, parameters, observed result shape
    r = await mcp_github.create_issue(repo="a/b", title="Bug")
    r = await runtime.call_tool("github", "create_issue", {"repo": "a/b", "title": "Bug"})

``print(runtime.capability_summary())`` prints a one-page manual.
"""

from collections.abc import Mapping

from mcp import _proxy
from mcp._resources import (get_prompt, list_prompts, list_resource_templates,  # by server name
                            list_resources, read_resource)
from mcp._results import (Audio, BridgeError, Image, InvalidArguments, MCPError,  # noqa: F401
                          PackageError, PermissionDenied, ServerUnavailable, ToolError,
                          ToolTimeout, UnknownTool, UpstreamError, convert)
from mcp._twin import run_sync, twin
from mcp.display import display
from mcp._share import share
from mcp._skills import delete_skill, list_skills, save_skill, save_tool
from mcp._rewind import rewind
from mcp._fork import fork

# The functions only, so that help(runtime) is about them; the classes
# (MCPError, BridgeError and its kinds: PermissionDenied, ToolTimeout,
# UnknownTool, InvalidArguments, UpstreamError, ServerUnavailable,
# PackageError; ToolError, Image, Audio) are attributes too.
__all__ = [
    "discovered_servers", "list_servers", "list_servers_sync", "list_tools",
    "list_tools_sync", "describe_server", "list_loaded_server_metadata", "query_tool_docs",
    "query_tool_docs_sync", "search_tool_docs", "search_tool_docs_sync", "capability_summary",
    "call_tool", "call_tool_sync", "start_servers", "start_servers_sync", "display",
    "install", "install_sync",
    "save_skill", "save_tool", "list_skills", "delete_skill", "share",
    "list_resources", "list_resources_sync", "read_resource", "read_resource_sync",
    "list_resource_templates", "list_resource_templates_sync", "list_prompts",
    "list_prompts_sync", "get_prompt", "get_prompt_sync", "calls", "calls_sync", "rewind", "fork",
    "sessions", "sessions_sync", "end_session", "end_session_sync",
]

# Each helper that asks the host is written once, as a plan (a generator
# that yields its RPCs, see mcp._twin); twin() makes the async function and
# its blocking _sync twin from it.


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
    value = str(detail).lower()
    if value not in ("summary", "full"):
        raise ValueError(f"detail must be 'summary' or 'full', not {detail!r}")
    return value


def _with_python(server, tool):
    entry = dict(tool)
    entry["python"] = server.python_name(tool["name"])
    entry["alias"] = entry["python"].rpartition(".")[2]
    return entry


def _tool_doc(server, tool, detail):
    """One tool's docs. The keys of the Python peer (serverAlias, toolAlias,
    description, inputSchema) mean what they mean there."""
    python = server.python_name(tool["name"])
    doc = {"server": server.name, "serverAlias": server.alias, "tool": tool["name"],
           "toolAlias": python.rpartition(".")[2], "python": python,
           "summary": _summary(tool.get("description"))}
    if tool.get("description") or detail == "full":
        doc["description"] = tool.get("description") or ""
    observed = tool.get("observed")
    if isinstance(observed, dict) and isinstance(observed.get("line"), str):
        doc["returns"] = observed["line"]
    if detail == "full":
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
        err = server.missing(tool)  # ToolDenied (an MCPError) for a denied tool
        raise err if isinstance(err, MCPError) else MCPError(str(err))
    return _tool_doc(server, found, detail)


def _metadata(server):
    """A server as the Python peer's describe_server() gives it: name, alias,
    description, cwd and tools as {name, alias, description, input_schema},
    plus the Python names to use (python, module; each tool's python and
    summary)."""
    tools = []
    for tool in server.tools or ():
        entry = _with_python(server, tool)
        tools.append({"name": tool["name"], "alias": entry["alias"], "python": entry["python"],
                      "summary": _summary(tool.get("description")),
                      "description": (tool.get("description") or "").strip(),
                      "input_schema": tool.get("inputSchema")})
    return {"name": server.name, "alias": server.alias, "description": server.description,
            "python": server.python, "module": server.module, "cwd": server.cwd, "tools": tools}


def _fetch_all(servers):
    """Plan: fetch the tool lists of ``servers`` that are not cached, all at
    once. A server whose list cannot be fetched stays without one."""
    pending = [s for s in servers if s.tools is None]
    if not pending:
        return
    answers = yield [("list_tools", {"server": s.name}) for s in pending]
    for server, answer in zip(pending, answers):
        if not isinstance(answer, BaseException):
            server.set_tools(answer)


def _search_params(query, limit, detail):
    limit = int(limit)
    if limit < 1:
        raise ValueError("limit must be at least 1")
    return {"query": str(query), "limit": limit, "detail": _detail(detail)}


def _search_result(entry, detail):
    if entry.get("kind"):
        from mcp._resources import search_result
        return search_result(entry)
    name = entry.get("server")
    try:
        server = _proxy.find_server(name)
        alias, python = server.alias, server.python_name(entry.get("tool"))
    except MCPError:
        from mcp._naming import identifier
        alias = identifier(name)
        python = f"mcp_{alias}.{identifier(entry.get('tool'))}"
    doc = {"server": name, "serverAlias": alias, "tool": entry.get("tool"),
           "toolAlias": python.rpartition(".")[2], "python": python,
           "summary": _summary(entry.get("description")), "score": entry.get("score")}
    if isinstance(entry.get("returns"), str):
        doc["returns"] = entry["returns"]   # the observed shape, on one line
    if isinstance(entry.get("stale"), str):
        doc["stale"] = entry["stale"]       # listed before the server's entry changed
    if entry.get("description") or detail == "full":
        doc["description"] = entry.get("description") or ""
    if detail == "full":
        for key in ("inputSchema", "outputSchema"):
            if entry.get(key) is not None:
                doc[key] = entry[key]
    return doc


def _skill_result(entry):
    """A saved skill among search results: marked ``skill: True``; ``python``
    is the name to use (``skills.<name>``); its ``server`` is None."""
    name = entry.get("tool")
    return {"skill": True, "server": None, "name": name, "tool": name, "python": f"skills.{name}",
            "summary": _summary(entry.get("description")),
            "description": entry.get("description") or "", "score": entry.get("score")}


def _search_results(entries, detail, limit):
    """The results, at most ``limit`` of them; each has ``server`` and
    ``tool`` keys (None where there is no such thing)."""
    results, notes = [], []
    for entry in entries or ():
        if len(results) >= limit:
            break
        if not isinstance(entry, dict):
            continue
        if "note" in entry:    # the query was cut to its budget: what was cut
            notes.append({"server": None, "tool": None, "note": str(entry["note"])})
        elif "unavailable" in entry:
            results.append({"server": entry.get("server"), "tool": None, "unavailable": entry["unavailable"]})
        elif entry.get("skill"):
            results.append(_skill_result(entry))
        else:
            result = _search_result(entry, detail)
            result.setdefault("tool", result.get("name"))
            results.append(result)
    return notes + results


def _searched_servers(entries):
    """The known servers in search results, but for those searched from a
    stale listing (their tool lists would wait for them to start)."""
    found = []
    for entry in entries or ():
        if isinstance(entry, dict) and "unavailable" not in entry and "note" not in entry and not entry.get("skill") \
                and not entry.get("kind") and not entry.get("stale"):
            try:
                server = _proxy.find_server(entry.get("server"))
            except MCPError:
                continue
            if server not in found:
                found.append(server)
    return found


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
    return found.name, found.original_name(tool), arguments


def _server_names(names):
    if len(names) == 1 and isinstance(names[0], (list, tuple)):
        names = names[0]
    return [_proxy.resolve_server(n) for n in names]


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


def list_servers(detailed=False):
    """Names of the configured servers; ``detailed=True`` asks the host for
    ``[{name, description, running, python}]``."""
    if not detailed:
        return discovered_servers()
    return _servers_value((yield ("list_servers", {})))


def list_tools(server=None, refresh=False):
    """The tools of ``server`` as dicts (name, description, inputSchema,
    outputSchema?, annotations?, and the Python names: python, alias).
    Starts the server if needed; cached after the first fetch
    (``refresh=True`` fetches again)."""
    if server is None:
        raise MCPError("list_tools needs a server name, such as runtime.list_tools_sync('github'); "
                       "runtime.discovered_servers() lists the names")
    found = _proxy.find_server(server)
    return [_with_python(found, t) for t in (yield from found.tools_plan(refresh))]


def _describe_server(name):
    server = _proxy.find_server(name)
    yield from server.tools_plan()
    return _metadata(server)


def describe_server(name):
    """One server: name, alias, description, cwd, the Python object and
    module to use, and its tools (name, alias, python, summary, description,
    input_schema). Fetches the tool list once, then uses the cache."""
    return run_sync(_describe_server(name))


def _loaded_server_metadata():
    listed = yield ("list_servers", {})
    running = {e.get("name") for e in listed or () if isinstance(e, dict) and e.get("running")}
    loaded = [s for s in _proxy.servers() if s.name in running]
    yield from _fetch_all(loaded)
    return tuple(_metadata(s) for s in loaded if s.tools is not None)


def list_loaded_server_metadata():
    """The servers running now (started by use, by run_python's ``servers``
    or by start_servers), each as :func:`describe_server` gives it."""
    return run_sync(_loaded_server_metadata())


def query_tool_docs(server, tool=None, detail="summary"):
    """Docs of every tool of ``server`` (a list), or of one ``tool`` (a dict,
    by original or Python name). ``detail="summary"``: server, serverAlias,
    tool, toolAlias, python (the name to call), a one-line summary and the
    description; ``"full"`` adds inputSchema, outputSchema and the Python
    signature."""
    detail = _detail(detail)
    found = _proxy.find_server(server)
    yield from found.tools_plan()
    return _docs(found, tool, detail)


def search_tool_docs(query, limit=5, detail="summary"):
    """Fuzzy search over the tools of every configured server, best first.

    Each result: server, tool, python (e.g. ``mcp_github.create_issue``),
    serverAlias, toolAlias, summary, description and score;
    ``detail="full"`` adds the schemas. Resources, resource templates and
    prompts are found too, marked by ``kind`` ("resource", "template",
    "prompt"), with their name, uri and the ``python`` that reads them.
    A hit read from a listing saved before its server's entry changed has
    ``stale`` (why it may be out of date). Servers that could not be
    searched (yet) come last as {server, tool: None, unavailable}. A query
    too long to search whole is cut to its head and tail, and a first
    {server: None, tool: None, note} says what was cut. Every result has
    ``server`` and ``tool``; there are at most ``limit`` results besides
    that note.
    """
    params = _search_params(query, limit, detail)
    entries = yield ("search_tools", params)
    yield from _fetch_all(_searched_servers(entries))   # for the Python names
    return _search_results(entries, params["detail"], params["limit"])


# ---- calling -----------------------------------------------------------

def call_tool(server, tool, args=None, /, *, raw=False, **kwargs):
    """Call ``tool`` of ``server`` by their original names (aliases work too)
    with ``args`` (a dict) and/or keyword arguments.

    Returns structuredContent if the tool gives one, else the text of a single
    text block, else a list of items (str, Image, dicts); ``raw=True`` returns
    the CallToolResult dict. A tool error raises ToolError; a failure of the
    bridge raises the BridgeError of its kind (UnknownTool, ServerUnavailable,
    ToolTimeout, PermissionDenied, ...).
    Pass a tool argument that is itself named ``raw`` inside ``args``.
    """
    server, tool, arguments = _call_params(server, tool, args, kwargs)
    result = yield ("call_tool", {"server": server, "tool": tool, "arguments": arguments})
    return convert(result, server, tool, raw)


def start_servers(*names):
    """Start servers now instead of on first use; returns
    ``[{name, ok, error?}]``."""
    return (yield ("start_servers", {"servers": _server_names(names)}))


def calls():
    """What this cell and the previous one did: ``{"current": ledger,
    "previous": ledger or None}``, where a ledger is ``{"total": N,
    "calls": [...], "earlier": {state: count}}``: the cell's last 20 tool
    calls (and resource reads, prompts, installs) in order, each ``{seq,
    kind, server, tool, state, error_kind?, duration_ms}``, and the states
    of the calls before them counted. ``state`` is ``running``, ``ok``,
    ``tool_error``, ``error`` (``error_kind`` says which: ``timeout``,
    ``upstream``, ...), ``cancelled`` (its cell ended before the server
    answered: the server may have acted) or ``denied`` (never sent). After
    a timeout, look here before doing again what may already be done.
    """
    return (yield ("calls", {}))


def sessions():
    """Your sessions that have handles (clients on MCP 2026-07-28 start one
    per call that names no ``session``): ``[{tag, running, age_seconds,
    idle_seconds, current}]``, oldest first. A tag names a session here
    and in the log; it is not its handle and cannot be used as one."""
    return (yield ("sessions", {}))


def end_session(session):
    """End one of your sessions, by the tag ``sessions()`` gave (or its
    handle): its sandbox, variables and files are removed. The session
    this code runs in cannot end itself."""
    return (yield ("end_session", {"session": str(session)}))


list_servers = twin(list_servers)
list_tools = twin(list_tools)
query_tool_docs = twin(query_tool_docs)
search_tool_docs = twin(search_tool_docs)
call_tool = twin(call_tool)
start_servers = twin(start_servers)
calls = twin(calls)
list_servers_sync = list_servers.sync
list_tools_sync = list_tools.sync
query_tool_docs_sync = query_tool_docs.sync
search_tool_docs_sync = search_tool_docs.sync
call_tool_sync = call_tool.sync
start_servers_sync = start_servers.sync
calls_sync = calls.sync
sessions = twin(sessions)
end_session = twin(end_session)
sessions_sync = sessions.sync
end_session_sync = end_session.sync
list_resources_sync = list_resources.sync
read_resource_sync = read_resource.sync
list_resource_templates_sync = list_resource_templates.sync
list_prompts_sync = list_prompts.sync
get_prompt_sync = get_prompt.sync

from mcp._packages import install as _install_plan  # noqa: E402  (packages on demand)
install = twin(_install_plan)
install_sync = install.sync


# ---- manual ------------------------------------------------------------

def capability_summary():
    """A one-page manual: how to discover, call, gather, handle errors and
    show images."""
    import pkgutil
    import sys
    from mcp._skills import names
    listed = [f"{s.name} ({s.python})" for s in _proxy.servers()]
    manual = pkgutil.get_data("mcp", "MANUAL.txt").decode("utf-8")
    return manual.format(python=sys.version.split()[0],
                          servers=", ".join(listed) if listed else "none configured",
                          skills=", ".join(names()) or "none saved yet")
