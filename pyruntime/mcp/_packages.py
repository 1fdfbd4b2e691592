"""Packages on demand: ``await runtime.install("pandas", "matplotlib>=3.8")``.

The sandbox has no network. The runtime tells the host what its Python can
run (:func:`target`: version, ABI and platform tags); the host resolves and
downloads wheels with pip, from its own cache when it can, and writes them
into ``/tmp/.codebridge/wheels`` through the frame channel (``put``). The
runtime then installs each wheel, which is only an unzip: the files go into
:data:`SITE`, a directory under the workspace on ``sys.path``, and the
package is importable at once in the same interpreter. No pip, no build,
no network in the sandbox.

Packages configured on the host arrive with the hello frame (their wheels
and :data:`START`); :func:`start` installs them before the first cell, or,
when the host had no wheels for them yet, :func:`before_cell` asks for them
in the first cell.

The installed files stay in the workspace: a workspace kept between runs
keeps its packages (:func:`activate` puts :data:`SITE` on ``sys.path`` at
start).
"""

from __future__ import annotations

import json
import os
import sys

from ._results import PackageError

__all__ = ["SITE", "target", "activate", "install", "install_wheel", "start", "before_cell"]

SITE = "/workspace/.codebridge/site-packages"
WHEELS = "/tmp/.codebridge/wheels"
START = "/tmp/.codebridge/start-packages.json"
RECORD = ".codebridge-wheels.json"   # in SITE: the wheel files installed there

_pending: list[str] = []   # configured requirements the host had no wheels for yet


class InstallError(PackageError):
    """A wheel could not be installed in the sandbox (the workspace is full,
    the wheel is broken or is not for this Python): a PackageError, so that
    one ``except PackageError`` catches every failed install."""


# ---- what this Python runs ----------------------------------------------

def _glibc():
    """(major, minor) of the C library, or None when it is not glibc."""
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
        major, minor = version.split(".")[:2]
        return (int(major), int(minor)) if name == "glibc" else None
    except (AttributeError, ValueError, OSError):
        return None


def _platforms():
    """Platform tags this interpreter can load, best first (as packaging's
    manylinux rules give them: PEP 600 names, with the legacy aliases)."""
    import platform
    machine = platform.machine()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)
    if sys.maxsize <= 2 ** 32 and arch == "x86_64":
        arch = "i686"
    libc = _glibc()
    tags = []
    if libc is not None and libc[0] == 2:
        lowest = 5 if arch in ("x86_64", "i686") else 17
        legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
        for minor in range(libc[1], lowest - 1, -1):
            tags.append(f"manylinux_2_{minor}_{arch}")
            if minor in legacy:
                tags.append(f"{legacy[minor]}_{arch}")
    tags.append(f"linux_{arch}")
    return tags


def target():
    """What this Python can run, as the host's pip needs it."""
    impl = {"cpython": "cp", "pypy": "pp"}.get(sys.implementation.name, sys.implementation.name)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    abi = f"{impl}{sys.version_info[0]}{sys.version_info[1]}"
    if impl == "cp" and hasattr(sys, "abiflags") and "t" in sys.abiflags:
        abi += "t"   # free-threaded builds have their own ABI
    return {"python": version, "implementation": impl, "abis": [abi], "platforms": _platforms()}


# ---- sys.path -------------------------------------------------------------

def activate():
    """Put :data:`SITE` on ``sys.path`` (before the image's site-packages,
    so that an installed version wins over the image's) and make new
    modules there visible to import."""
    import importlib
    if SITE not in sys.path:
        at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))),
                  len(sys.path))
        sys.path.insert(at, SITE)
    importlib.invalidate_caches()


# ---- installing a wheel -----------------------------------------------------

def _installed():
    """{wheel file name: distribution} of the wheels installed in SITE."""
    try:
        with open(os.path.join(SITE, RECORD)) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_installed(data):
    path = os.path.join(SITE, RECORD)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


def _norm(name):
    import re
    return re.sub(r"[-_.]+", "-", name).lower()


def _remove_distribution(name):
    """Remove an installed distribution of ``name`` from SITE (an upgrade),
    by the files its RECORD lists."""
    import csv
    import shutil
    for entry in os.listdir(SITE):
        if not entry.endswith(".dist-info") or _norm(entry[:-10].rsplit("-", 1)[0]) != _norm(name):
            continue
        info = os.path.join(SITE, entry)
        try:
            with open(os.path.join(info, "RECORD"), newline="") as f:
                for row in csv.reader(f):
                    if row and ".." not in row[0].split("/") and not row[0].startswith("/"):
                        try:
                            os.unlink(os.path.join(SITE, row[0]))
                        except OSError:
                            pass
        except OSError:
            pass
        shutil.rmtree(info, ignore_errors=True)


def _destination(member, data_dir):
    """Where a wheel member goes, relative to SITE, or None to skip it.
    ``name.data/purelib`` and ``platlib`` go into SITE; scripts, headers
    and data are not installed."""
    parts = member.split("/")
    if member.startswith("/") or ".." in parts or "\\" in member:
        raise InstallError(f"the wheel has an unsafe path {member!r}")
    if parts[0] == data_dir:
        if len(parts) > 2 and parts[1] in ("purelib", "platlib"):
            return "/".join(parts[2:])
        return None
    return member


def _free(path):
    import shutil
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def _mib(n):
    return f"{n / (1 << 20):.1f} MiB"


def _workspace_full(wheel, needed):
    free = _free(os.path.dirname(SITE)) or 0
    return InstallError(
        f"the workspace is too small for {wheel}: it needs {_mib(needed)} unpacked and "
        f"/workspace has {_mib(free)} free. Delete files in /workspace (installed packages are "
        f"in {SITE}), install fewer packages, or ask the user for a larger workspace "
        "(the sandbox's workspace size setting)")


def install_wheel(path):
    """Unpack the wheel at ``path`` into SITE; return ``(name, version,
    top-level names)``. An older version of the same distribution is
    removed first. On failure nothing of the wheel stays behind."""
    import zipfile
    os.makedirs(SITE, exist_ok=True)
    wheel = os.path.basename(path)
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InstallError(f"{wheel} is not a readable wheel: {exc}") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        info_dir = next((i.filename.split("/")[0] for i in infos
                         if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/WHEEL")), None)
        if info_dir is None:
            raise InstallError(f"{wheel} has no .dist-info/WHEEL: it is not a wheel")
        name, _, version = info_dir[:-len(".dist-info")].rpartition("-")
        needed = sum(i.file_size for i in infos)
        free = _free(SITE)
        if free is not None and needed > free:
            raise _workspace_full(wheel, needed)
        _remove_distribution(name)
        data_dir = info_dir[:-len(".dist-info")] + ".data"
        written, tops = [], set()
        try:
            for info in infos:
                rel = _destination(info.filename, data_dir)
                if rel is None:
                    continue
                dest = os.path.join(SITE, rel)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with zf.open(info) as src, open(dest, "wb") as out:
                    written.append(dest)
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
                mode = (info.external_attr >> 16) & 0o777
                os.chmod(dest, 0o755 if mode & 0o111 else 0o644)
                top = rel.split("/")[0]
                if not top.endswith((".dist-info", ".pth")):
                    tops.add(top[:-3] if top.endswith(".py") else top)
        except BaseException as exc:
            for f in written:
                try:
                    os.unlink(f)
                except OSError:
                    pass
            import errno
            if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
                raise _workspace_full(wheel, needed) from None
            raise
    return name, version, sorted(tops)


def _install_files(paths):
    """Install the wheels at ``paths`` (removing each file after), record
    them, and return what was installed."""
    record = _installed()
    done = []
    for path in paths:
        try:
            name, version, tops = install_wheel(path)
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        for old in [k for k, v in record.items() if _norm(str(v.get("name"))) == _norm(name)]:
            del record[old]   # an upgrade or downgrade replaced it
        record[os.path.basename(path)] = {"name": name, "version": version}
        done.append((name, version, tops))
    if paths:
        _save_installed(record)
    activate()
    return done


# ---- runtime.install --------------------------------------------------------

def install(*requirements, upgrade=False):
    """Install packages from the host's package index, e.g.
    ``await runtime.install("pandas", "matplotlib>=3.8")``; importable at
    once. The host fetches wheels for this sandbox's Python (the sandbox
    stays offline) and keeps them in its cache: the same request again
    comes from the cache. ``upgrade=True`` asks the index again for the
    newest matching versions.

    Returns ``{"installed": ["numpy 2.1.3", ...], "cached": bool,
    "downloaded": bytes, "sent": bytes}``. Raises PackageError (a BridgeError)
    when the host refuses or pip fails (its message says why), InstallError when the
    workspace is too small."""
    reqs = []
    for r in requirements:
        reqs.extend(r if isinstance(r, (list, tuple)) else [r])
    if not reqs or not all(isinstance(r, str) and r.strip() for r in reqs):
        raise ValueError('name the packages to install as strings, e.g. install("pandas", "numpy>=2")')
    params = dict(target(), requirements=[r.strip() for r in reqs], upgrade=bool(upgrade))
    params["installed"] = sorted(_installed())
    answer = yield ("install", params)
    paths = [w["path"] for w in answer.get("wheels") or () if w.get("path")]
    done = _install_files(paths)
    names = [f"{n} {v}" for n, v, _ in done]
    result = {"installed": names, "cached": bool(answer.get("cached")),
              "downloaded": answer.get("downloaded", 0), "sent": answer.get("sent", 0)}
    stale = sorted({t for _, _, tops in done for t in tops if t in sys.modules})
    if stale:
        result["note"] = (f"already imported before this install: {', '.join(stale)}; the version "
                          "imported first stays in use until the sandbox restarts")
    return result


# ---- packages configured on the host ----------------------------------------

def start(log=None):
    """At startup: put SITE on sys.path, install the configured packages'
    wheels the host sent, and remember those it could not send yet."""
    try:
        with open(START) as f:
            manifest = json.load(f)
        os.unlink(START)
    except (OSError, ValueError):
        manifest = None
    if isinstance(manifest, dict):
        wheels = [p for p in manifest.get("wheels") or () if isinstance(p, str)]
        try:
            _install_files(wheels)
        except Exception as exc:
            if log:
                log("warning", f"installing the configured packages failed: {exc}")
            wheels = []
        if not wheels:
            _pending[:] = [r for r in manifest.get("requirements") or () if isinstance(r, str)]
    if os.path.isdir(SITE):
        activate()


def before_cell(stderr):
    """Before the first cell, when the host had no wheels for the configured
    packages at start: install them now (errors go to the cell's stderr)."""
    if not _pending:
        return
    from mcp._twin import run_sync
    reqs, _pending[:] = list(_pending), []
    try:
        run_sync(install(*reqs))
    except Exception as exc:
        stderr.write(f"[codebridge: the configured packages {' '.join(reqs)} were not installed: {exc}]\n")
