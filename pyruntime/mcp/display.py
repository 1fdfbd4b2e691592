"""``display(obj)``: show a picture in the run_python result.

Accepts an :class:`~mcp._results.Image` from a tool result (or a list of
results: the pictures in it are shown), PNG/JPEG/GIF/WebP/SVG bytes (the
format is sniffed from the bytes), a file path (``str`` or ``Path``), a
``data:image/...;base64,`` URL, a matplotlib figure, axes or ``pyplot``
itself (the current figure, saved as PNG), and any object with
``_repr_png_``/``_repr_jpeg_`` (PIL images, for example). A path to a
file that is not a picture (a CSV, a PDF) is shared instead: the result
links to it (see :func:`mcp._share.share`).
"""

import base64
import os

from mcp import _channel
from mcp._results import BridgeError, Image

__all__ = ["display", "sniff"]


def sniff(data):
    """The image MIME type of ``data`` from its magic bytes, or None."""
    head = bytes(data[:512])
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    text = head.lstrip().lower()
    if text.startswith(b"<svg") or (text.startswith(b"<?xml") and b"<svg" in text):
        return "image/svg+xml"
    return None


def _matplotlib_png(obj):
    """PNG bytes for a matplotlib figure, axes or the pyplot module; else None."""
    module = getattr(type(obj), "__module__", "") or ""
    if getattr(obj, "__name__", None) == "matplotlib.pyplot":
        obj = obj.gcf()
    elif not module.startswith("matplotlib"):
        return None
    figure = obj if hasattr(obj, "savefig") else getattr(obj, "figure", None)
    if figure is None or not hasattr(figure, "savefig"):
        return None
    import io
    buf = io.BytesIO()
    figure.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


class _NotAnImage(ValueError):
    """A file that display() shares instead of showing."""


def _from_path(path):
    with open(path, "rb") as f:
        data = f.read()
    mime = sniff(data)
    if mime is None:
        import mimetypes
        guess = mimetypes.guess_type(os.fspath(path))[0]
        if guess and guess.startswith("image/"):
            mime = guess
    if mime is None:
        raise _NotAnImage(f"display(): {os.fspath(path)!r} is not a PNG, JPEG, GIF, WebP or SVG image")
    return data, mime


def _pictures(obj):
    """Yield (bytes, mime) for everything ``obj`` holds that can be shown."""
    if isinstance(obj, Image):
        yield obj.data, obj.mime_type
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        mime = sniff(obj)
        if mime is None:
            raise ValueError("display(): the bytes are not a PNG, JPEG, GIF, WebP or SVG image")
        yield bytes(obj), mime
    elif isinstance(obj, str) and obj.startswith("data:image/") and ";base64," in obj[:100]:
        header, _, payload = obj.partition(",")
        yield base64.b64decode(payload), header[5:].split(";")[0]
    elif isinstance(obj, (str, os.PathLike)):
        yield _from_path(obj)
    elif isinstance(obj, (list, tuple)):
        for item in obj:  # a tool result list: skip its text and resource items
            if item is not None and not isinstance(item, (str, dict)):
                yield from _pictures(item)
    else:
        png = _matplotlib_png(obj)
        if png is not None:
            yield png, "image/png"
            return
        for method, mime in (("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg")):
            fn = getattr(obj, method, None)
            data = fn() if callable(fn) else None
            if data:
                yield data, mime
                return
        raise TypeError(f"display() cannot show a {type(obj).__name__}: pass an Image from a "
                        "tool result, image bytes, a file path or a matplotlib figure")


def display(*objs):
    """Show pictures in the run_python result.

    display(img)                    # an Image from a tool result (or a list of results)
    display(png_bytes)              # PNG, JPEG, GIF, WebP or SVG bytes
    display("/tmp/chart.png")       # a file
    display(fig)                    # a matplotlib figure (or plt for the current one)
    display(a, b, c)                # several; text items of a result list are skipped
    display("/workspace/out.csv")   # not a picture: shared, the result links to it
    """
    channel = _channel.get()
    pictures, files = [], []
    for obj in objs:
        try:
            pictures.extend(_pictures(obj))
        except _NotAnImage:
            files.append(obj)
    if not pictures and not files and any(isinstance(o, (list, tuple)) for o in objs):
        raise TypeError("display(): no image in the list")
    cell = channel.exec_id
    if cell is None:
        raise BridgeError("display() works only while a cell runs")
    channel.flush_output()  # text printed before the picture comes first
    for data, mime in pictures:
        channel.send({"t": "image", "id": cell, "mime": mime,
                      "data": base64.b64encode(data).decode("ascii")})
    if files:
        from mcp._share import share
        for path in files:
            share(path)
