"""Exceptions and the conversion of MCP tool results into Python values.

A ``call_tool`` RPC answers with the upstream's ``CallToolResult`` as JSON:
``{"content": [...], "structuredContent": ..., "isError": bool}``.
:func:`convert` turns it into the value a tool call returns:

* ``structuredContent`` when the tool gave one;
* else the text of a single text block;
* else a list with one item per content block: ``str`` for text,
  :class:`Image` (or :class:`Audio`) for pictures and sound, and plain dicts
  for embedded resources and resource links.

``isError: true`` raises :class:`ToolError`.

A request the host could not complete raises a :class:`BridgeError`: the
subclass of its kind, which the host sends beside the message (see
PROTOCOL.md), so code can ``except PermissionDenied`` (policy, approval),
``ToolTimeout``, ``UnknownTool``, ``InvalidArguments``, ``UpstreamError``
(``ServerUnavailable``: the server did not start, or exited) or
``PackageError``; any other kind, or none, is a plain BridgeError.
"""

import base64

__all__ = ["MCPError", "BridgeError", "ToolError", "PermissionDenied", "ToolTimeout", "UnknownTool",
           "InvalidArguments", "UpstreamError", "ServerUnavailable", "PackageError",
           "ERROR_KINDS", "bridge_error", "Image", "Audio", "convert"]


class MCPError(RuntimeError):
    """Base class of every error raised by the MCP bridge."""


class BridgeError(MCPError):
    """The host could not complete a request: unknown server or tool, upstream
    down or crashed, time limit reached, or a call made outside a cell.
    The message says what happened and what to do; ``err.kind`` says what
    kind of failure it is (one subclass per kind, below; "internal" for
    any other)."""

    kind = "internal"


class PermissionDenied(BridgeError):
    """The policy does not allow the request (``kind == "denied"``), or it
    needed the user's approval and did not get it (``"declined"``): the
    message names the rule and what to change."""

    kind = "denied"


class ToolTimeout(BridgeError):
    """The request ran past its time limit (the server entry's
    ``timeout``, or the bridge's ``--call-timeout``)."""

    kind = "timeout"


class UnknownTool(BridgeError):
    """The request names no configured server, or a tool its server does
    not list under exactly that name."""

    kind = "unknown_tool"


class InvalidArguments(BridgeError):
    """The upstream (or the gate) refused the request's arguments."""

    kind = "invalid_arguments"


class UpstreamError(BridgeError):
    """The upstream server failed the request: it answered with a protocol
    error, or the exchange broke. (A tool that ran and reported an error
    raises :class:`ToolError` instead.)"""

    kind = "upstream"


class ServerUnavailable(UpstreamError):
    """The upstream server could not start, or exited (it is restarted on
    the next call)."""

    kind = "unavailable"


class PackageError(BridgeError):
    """An on-demand install was refused or failed."""

    kind = "package"


# The kinds the host sends (protocol.ErrorKind), each with its class.
ERROR_KINDS = {
    "denied": PermissionDenied,
    "declined": PermissionDenied,
    "timeout": ToolTimeout,
    "unknown_tool": UnknownTool,
    "invalid_arguments": InvalidArguments,
    "upstream": UpstreamError,
    "unavailable": ServerUnavailable,
    "package": PackageError,
    "internal": BridgeError,
}


def bridge_error(error) -> BridgeError:
    """The exception for a result frame's ``error`` ``{type, message,
    kind?}``: the class of its kind, a plain BridgeError for a kind this
    runtime does not know or none (an older host)."""
    error = error if isinstance(error, dict) else {}
    kind = error.get("kind")
    kind = kind if isinstance(kind, str) and kind in ERROR_KINDS else "internal"
    err = ERROR_KINDS[kind](error.get("message") or "the host reported an error")
    err.kind = kind
    err.type = error.get("type")
    return err


class ToolError(MCPError):
    """The upstream tool ran and reported an error (``isError: true``).

    ``str(err)`` is ``"server.tool: <upstream message>"``; the parts are in
    ``err.server``, ``err.tool``, ``err.message`` and the raw CallToolResult
    dict in ``err.result``.
    """

    def __init__(self, server, tool, message, result=None):
        super().__init__(f"{server}.{tool}: {message}")
        self.server = server
        self.tool = tool
        self.message = message
        self.result = result


for _cls in (MCPError, BridgeError, ToolError, PermissionDenied, ToolTimeout, UnknownTool,
             InvalidArguments, UpstreamError, ServerUnavailable, PackageError):
    _cls.__module__ = "mcp"  # tracebacks say "mcp.ToolError: ..."


class _Media:
    """Binary content of a tool result: ``.data`` (bytes) and ``.mime_type``."""

    kind = "media"

    def __init__(self, data, mime_type):
        self.data = data
        self.mime_type = mime_type

    def __repr__(self):
        return f"<{type(self).__name__} {self.mime_type}, {len(self.data)} bytes>"

    def __eq__(self, other):
        return (type(other) is type(self) and other.data == self.data
                and other.mime_type == self.mime_type)

    __hash__ = None

    def save(self, path):
        """Write the bytes to ``path`` and return the path."""
        with open(path, "wb") as f:
            f.write(self.data)
        return path


class Image(_Media):
    """An image from a tool result. ``display(img)`` shows it; ``img.data`` is
    the raw bytes, ``img.mime_type`` e.g. ``"image/png"``."""

    kind = "image"

    def _repr_png_(self):
        return self.data if self.mime_type == "image/png" else None


class Audio(_Media):
    """Audio from a tool result: ``.data`` (bytes) and ``.mime_type``."""

    kind = "audio"


def _b64(text):
    try:
        return base64.b64decode(text or "")
    except (ValueError, TypeError):
        return b""


def _item(block):
    """Convert one content block into a Python value."""
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "image":
        return Image(_b64(block.get("data")), block.get("mimeType", "image/png"))
    if kind == "audio":
        return Audio(_b64(block.get("data")), block.get("mimeType", "audio/wav"))
    if kind == "resource":
        res = block.get("resource") or {}
        out = {"type": "resource", "uri": res.get("uri"), "mime_type": res.get("mimeType")}
        if "text" in res:
            out["text"] = res["text"]
        if "blob" in res:
            out["data"] = _b64(res["blob"])
        return out
    if kind == "resource_link":
        out = {"type": "resource_link"}
        for key, new in (("uri", "uri"), ("name", "name"), ("title", "title"),
                         ("description", "description"), ("mimeType", "mime_type"),
                         ("size", "size")):
            if key in block:
                out[new] = block[key]
        return out
    return block


def error_message(result):
    """The upstream's error text from an ``isError`` result."""
    texts = [b.get("text", "") for b in result.get("content") or ()
             if isinstance(b, dict) and b.get("type") == "text"]
    message = "\n".join(t for t in texts if t)
    if not message and result.get("structuredContent") is not None:
        message = repr(result["structuredContent"])
    return message or "the tool reported an error without a message"


def convert(result, server, tool, raw=False):
    """Turn a CallToolResult dict into the value a tool call returns.

    With ``raw=True`` the dict comes back unchanged (even when ``isError``).
    """
    if raw:
        return result
    if not isinstance(result, dict):
        return result
    if result.get("isError"):
        raise ToolError(server, tool, error_message(result), result)
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    content = result.get("content") or []
    if len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
        return content[0].get("text", "")
    return [_item(block) for block in content]
