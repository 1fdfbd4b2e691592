"""Files the host puts into the sandbox: the ``files`` of the hello frame
and ``put`` frames (see pyruntime/PROTOCOL.md).

A path is absolute under one of :data:`ROOTS`, or relative to :data:`BASE`;
any other path, one with ``..``, or one whose directory resolves outside
the roots (through a symlink the code made) is refused. A file is written
whole: to a temporary name in its directory, then renamed over the target.
"""

from __future__ import annotations

import base64
import os

__all__ = ["ROOTS", "BASE", "write_files", "resolve", "read_file"]

ROOTS = ("/workspace", "/tmp")  # the sandbox's writable trees
BASE = "/workspace"             # where relative paths start


def resolve(path: object, roots: tuple = ROOTS) -> str:
    """The absolute path for ``path``, or raise ValueError saying why not.
    ``roots`` narrows the trees allowed (``("/workspace",)`` for files that
    leave the sandbox)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError(f"not a file path: {path!r}")
    if ".." in path.split("/"):
        raise ValueError(f"{path!r}: '..' is not allowed")
    full = os.path.normpath(path if path.startswith("/") else os.path.join(BASE, path))
    parent = os.path.realpath(os.path.dirname(full))
    for root in roots:
        real = os.path.realpath(root)
        if parent == real or parent.startswith(real + os.sep):
            return os.path.join(parent, os.path.basename(full))
    raise ValueError(f"{path!r} is outside {' and '.join(roots)}")


def _write(entry: dict) -> None:
    path = resolve(entry.get("path"))
    data = base64.b64decode(entry.get("data") or "", validate=True)
    mode = entry.get("mode") or 0o644
    if not isinstance(mode, int) or not 0 <= mode <= 0o777:
        raise ValueError(f"{entry.get('path')!r}: mode {mode!r} is not permission bits")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.codebridge-{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_files(files: object) -> list[str]:
    """Write each file of a hello or put frame; return what failed, one
    message per file (empty when all were written)."""
    errors = []
    for entry in files if isinstance(files, list) else ():
        try:
            if not isinstance(entry, dict):
                raise ValueError("a file entry is not an object")
            _write(entry)
        except (OSError, ValueError, TypeError) as exc:
            errors.append(f"{exc}")
    return errors


def open_regular(path: str):
    """Open a file that :func:`resolve` checked for reading, refusing a
    symlink (which could point anywhere) and anything but a regular file.
    Returns ``(file, size)``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last part is a symlink
            raise ValueError(f"{path!r} is a symlink; share or read the file it points to") from None
        raise
    info = os.fstat(fd)
    import stat
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ValueError(f"{path!r} is not a regular file")
    return os.fdopen(fd, "rb"), info.st_size


def read_file(frame: dict) -> dict:
    """Answer a ``get`` frame: the ``got`` frame with the file's content, or
    with why there is none."""
    answer = {"t": "got", "id": frame.get("id"), "size": 0}
    limit = frame.get("max") or 0
    try:
        path = resolve(frame.get("path"), (BASE,))
        f, size = open_regular(path)
        with f:
            answer["size"] = size
            if size > limit:
                answer["error"] = f"{path} is {size} bytes, over the {limit} allowed"
                return answer
            data = f.read(limit + 1)
        if len(data) > limit:
            answer["size"], answer["error"] = len(data), f"{path} grew over the {limit} bytes allowed"
            return answer
        answer["data"] = base64.b64encode(data).decode("ascii")
    except FileNotFoundError:
        answer["missing"] = True
        answer["error"] = f"{frame.get('path')!r} does not exist"
    except (OSError, ValueError, TypeError) as exc:
        answer["error"] = str(exc)
    return answer
