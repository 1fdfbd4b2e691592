"""What an upstream offers besides tools: resources, templates and prompts.

Each helper is written once, as a plan (see ``mcp._twin``), and reachable
two ways: ``runtime.<helper>(server, ...)`` and ``mcp_<server>.<helper>(...)``
(a tool of the same name wins there; ``runtime`` always has the helper).
Each has a blocking ``_sync`` twin.

    await mcp_docs.list_resources()                  # every page, as dicts
    await mcp_docs.list_resources(limit=20)          # only the pages the first 20 are on
    text = await mcp_docs.read_resource("file:///a")  # str for text, bytes for a blob
    await mcp_docs.read_resource("demo://item/{id}", id=3)   # a template, expanded
    await mcp_docs.list_resource_templates()
    await mcp_docs.list_prompts()
    await mcp_docs.get_prompt("review", code="x = 1")  # {description?, messages}

Lists are fetched a page at a time (one ``list_*`` RPC per page, following
``nextCursor``) until the last page, so no single frame has to carry a huge
list; ``limit=N`` stops at the page that holds the Nth entry, so a long
list costs only what is read of it. A resource's contents come back as the upstream sent them, through the
same frame path as tool results (no size limit below the configured caps).
"""

import base64
import re
from urllib.parse import quote

from mcp import _proxy
from mcp._results import MCPError
from mcp._twin import twin

__all__ = ["list_resources", "list_resource_templates", "read_resource", "list_prompts",
           "get_prompt", "server_helper", "search_result", "HELPERS"]

# A server that hands out the same cursor again would page forever.
_MAX_PAGES = 10000


def _pages(method, server, key, limit=None):
    """Plan: the pages of a list method, concatenated: every page, or with
    ``limit`` only the pages its first ``limit`` entries are on."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive whole number, or None for every entry; got {limit!r}")
    name = _proxy.resolve_server(server)
    items, cursor, seen = [], None, set()
    for _ in range(_MAX_PAGES):
        params = {"server": name}
        if cursor:
            params["cursor"] = cursor
        page = yield (method, params)
        page = page if isinstance(page, dict) else {}
        items.extend(i for i in page.get(key) or () if isinstance(i, dict))
        if limit is not None and len(items) >= limit:
            return items[:limit]
        cursor = page.get("nextCursor")
        if not cursor:
            return items
        if cursor in seen:
            raise MCPError(f"server {name!r} sent the cursor {cursor!r} twice while listing "
                           f"{key}; its list is cut after {len(items)} entries")
        seen.add(cursor)
    raise MCPError(f"server {name!r} listed {key} over more than {_MAX_PAGES} pages; stopped")


def list_resources(server, *, limit=None):
    """The resources of ``server``: dicts with uri, name, and title,
    description, mimeType, size where the server gives them. Every page;
    ``limit=N`` fetches only the pages the first N are on."""
    return (yield from _pages("list_resources", server, "resources", limit))


def list_resource_templates(server, *, limit=None):
    """The resource templates of ``server``: dicts with uriTemplate, name,
    and description, mimeType where given. Read one with
    ``read_resource(template, **values)``. ``limit`` as for list_resources."""
    return (yield from _pages("list_resource_templates", server, "resourceTemplates", limit))


def list_prompts(server, *, limit=None):
    """The prompts of ``server``: dicts with name, description and
    arguments ([{name, description, required}]). ``limit`` as for
    list_resources."""
    return (yield from _pages("list_prompts", server, "prompts", limit))


_VARIABLE = re.compile(r"\{([^{}]+)\}")


def expand(template, values):
    """Fill the ``{name}`` variables of a URI template (RFC 6570 simple
    expansion; ``{+name}`` keeps reserved characters such as ``/``)."""
    missing = []

    def fill(match):
        expr = match.group(1)
        reserved = expr.startswith("+")
        names = expr.lstrip("+#").split(",")
        parts = []
        for var in names:
            var = var.strip().rstrip("*")
            if var not in values:
                missing.append(var)
                continue
            parts.append(quote(str(values[var]), safe=":/?#[]@!$&'()*+,;=" if reserved else ""))
        return ",".join(parts)

    uri = _VARIABLE.sub(fill, template)
    if missing:
        raise TypeError(f"the URI template {template!r} needs {', '.join(missing)}")
    unused = set(values) - set(v.strip().lstrip("+#").rstrip("*")
                               for m in _VARIABLE.findall(template) for v in m.split(","))
    if unused:
        raise TypeError(f"the URI template {template!r} has no variable {', '.join(sorted(unused))}")
    return uri


def _content(item):
    """One entry of a ReadResourceResult's contents as a Python value."""
    if not isinstance(item, dict):
        return item
    if "blob" in item:
        try:
            return base64.b64decode(item.get("blob") or "")
        except (ValueError, TypeError):
            raise MCPError(f"resource {item.get('uri')!r}: the server sent a blob that is not base64")
    return item.get("text", "")


def read_resource(server, uri, /, *, raw=False, **values):
    """Read the resource at ``uri``: its text as ``str``, a blob as ``bytes``
    (a list of those when the server returns several contents). ``uri`` may
    be a template such as ``"demo://item/{id}"`` with the values as keyword
    arguments. ``raw=True`` returns the ReadResourceResult dict
    ({contents: [{uri, mimeType, text | blob}]})."""
    if values:
        uri = expand(str(uri), values)
    name = _proxy.resolve_server(server)
    result = yield ("read_resource", {"server": name, "uri": str(uri)})
    if raw or not isinstance(result, dict):
        return result
    contents = [_content(c) for c in result.get("contents") or ()]
    return contents[0] if len(contents) == 1 else contents


def get_prompt(server, name, /, **arguments):
    """The prompt ``name`` of ``server`` with its arguments filled in: the
    GetPromptResult dict ({description?, messages: [{role, content}]}).
    Prompt arguments are strings; other values are passed as ``str()``."""
    args = {k: v if isinstance(v, str) else str(v) for k, v in arguments.items()}
    params = {"server": _proxy.resolve_server(server), "name": str(name)}
    if args:
        params["arguments"] = args
    return (yield ("get_prompt", params))


list_resources = twin(list_resources)
list_resource_templates = twin(list_resource_templates)
read_resource = twin(read_resource)
list_prompts = twin(list_prompts)
get_prompt = twin(get_prompt)

# The helpers a server object has besides its tools.
HELPERS = {f.__name__: f for f in (list_resources, list_resource_templates, read_resource,
                                   list_prompts, get_prompt)}


def server_helper(server, name):
    """``mcp_<alias>.<name>`` for a helper name (or its ``_sync`` twin),
    bound to ``server``; None when ``name`` is not a helper."""
    sync = name.endswith("_sync")
    helper = HELPERS.get(name[:-5] if sync else name)
    if helper is None:
        return None
    fn = helper.sync if sync else helper

    def bound(*args, **kwargs):
        return fn(server.name, *args, **kwargs)

    bound.__name__ = name
    bound.__qualname__ = f"{server.python}.{name}"
    bound.__doc__ = fn.__doc__
    if not sync:
        bound.sync = server_helper(server, name + "_sync")
    return bound


def search_result(entry):
    """A resource, template or prompt found by ``search_tool_docs``: kind,
    server, name, uri (templates: the URI template), summary, description,
    score, and ``python``: the call that reads or gets it."""
    from mcp.runtime import _summary
    name, kind, uri = entry.get("server"), entry.get("kind"), entry.get("uri")
    try:
        python = _proxy.find_server(name).python
    except MCPError:
        python = f"runtime.{'get_prompt' if kind == 'prompt' else 'read_resource'}({name!r}, ...)"
    else:
        if kind == "prompt":
            python = f"{python}.get_prompt({entry.get('tool')!r}, ...)"
        elif kind == "template":
            python = f"{python}.read_resource({uri!r}, ...)"
        else:
            python = f"{python}.read_resource({uri!r})"
    doc = {"kind": kind, "server": name, "name": entry.get("tool"), "python": python,
           "summary": _summary(entry.get("description")), "score": entry.get("score")}
    if uri:
        doc["uri"] = uri
    if entry.get("description"):
        doc["description"] = entry["description"]
    return doc
