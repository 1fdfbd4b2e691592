"""``share(path)``: hand a workspace file to the user.

The file must be a regular file under /workspace (checked by
:func:`mcp._files.resolve`; no ``..``, no symlinks). The run_python result
then carries an MCP ``resource_link`` to ``codebridge://workspace/<path>``,
which the client reads with ``resources/read``; ``codebridge exec --out
DIR`` copies it to the host.
"""

from __future__ import annotations

import os

from mcp import _channel
from mcp._files import BASE, open_regular, resolve

__all__ = ["share"]


def share(path, mime=None):
    """Share a file of /workspace with the user: the run_python result links
    to it (``codebridge://workspace/<path>``), and the client can read it.
    ``path`` is relative to /workspace or absolute under it. Returns
    ``{uri, name, mime, size}``."""
    full = resolve(os.fspath(path), (BASE,))
    f, size = open_regular(full)
    f.close()
    if mime is None:
        import mimetypes
        mime = mimetypes.guess_type(full)[0] or "application/octet-stream"
    return _channel.get().call("share", {"path": full, "size": size, "mime": str(mime)})
