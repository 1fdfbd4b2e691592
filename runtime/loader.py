# codebridge runtime bootstrap, run as `python3 -I -u -c <this file>`.
# Reads a 16-byte decimal length and that many bytes of zip archive (the `mcp`
# package) from fd 0 without read-ahead, writes the archive to a fresh private
# directory under /tmp, imports it and hands over to mcp._main.main().
import os, sys, tempfile


def _read(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            os.write(2, b"codebridge loader: stdin closed during bootstrap\n")
            os._exit(1)
        buf += chunk
    return bytes(buf)


_size = int(_read(16).decode("ascii").strip())
_dir = tempfile.mkdtemp(prefix=".codebridge-", dir="/tmp")
_path = os.path.join(_dir, "runtime.zip")
with open(_path, "wb") as _f:
    _f.write(_read(_size))
sys.path.insert(0, _path)
import mcp._main
mcp._main.main()
