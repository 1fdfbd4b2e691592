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
"""

import base64

__all__ = ["MCPError", "BridgeError", "ToolError", "Image", "Audio", "convert"]


class MCPError(RuntimeError):
    """Base class of every error raised by the MCP bridge."""


class BridgeError(MCPError):
    """The host could not complete a request: unknown server or tool, upstream
    down or crashed, time limit reached, or a call made outside a cell.
    The message says what happened and what to do."""


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


for _cls in (MCPError, BridgeError, ToolError):
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
