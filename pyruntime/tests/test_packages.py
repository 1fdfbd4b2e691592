"""Installing wheels in the sandbox (mcp._packages): unpacking, upgrades,
hostile wheels, a full workspace, the tags reported to the host, and the
packages of a kept workspace on sys.path at start."""

import importlib
import io
import json
import os
import sys
import tempfile
import unittest
import zipfile

from mcp import _packages
from mcp._results import PackageError


def make_wheel(folder, name, version, files, extra=None):
    """Write a wheel with ``files`` ({path: text}) and its dist-info."""
    info = f"{name}-{version}.dist-info"
    path = os.path.join(folder, f"{name}-{version}-py3-none-any.whl")
    members = dict(files)
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    members[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    members[f"{info}/RECORD"] = "".join(f"{p},,\n" for p in members) + f"{info}/RECORD,,\n"
    members.update(extra or {})
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in members.items():
            zf.writestr(member, text)
    return path


class PackagesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.site = os.path.join(self.tmp.name, "site")
        self.wheels = os.path.join(self.tmp.name, "wheels")
        os.makedirs(self.wheels)
        self.old = (_packages.SITE, list(sys.path))
        _packages.SITE = self.site

        def restore():
            _packages.SITE = self.old[0]
            sys.path[:] = self.old[1]
            for mod in [m for m in sys.modules if m.startswith("cbpkg")]:
                del sys.modules[mod]
        self.addCleanup(restore)

    def test_installed_wheel_imports_at_once(self):
        w = make_wheel(self.wheels, "cbpkg_a", "1.0", {"cbpkg_a/__init__.py": "VALUE = 1\n",
                                                       "cbpkg_a-1.0.data/purelib/cbpkg_a_extra.py": "X = 2\n",
                                                       "cbpkg_a-1.0.data/scripts/tool": "#!/bin/sh\n"})
        done = _packages._install_files([w])
        self.assertEqual(done, [("cbpkg_a", "1.0", ["cbpkg_a", "cbpkg_a_extra"])])
        self.assertFalse(os.path.exists(w), "the wheel file is removed once installed")
        self.assertIn(self.site, sys.path)
        self.assertLess(sys.path.index(self.site),
                        min([i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))
                             and p != self.site] or [len(sys.path)]))
        self.assertEqual(importlib.import_module("cbpkg_a").VALUE, 1)
        self.assertEqual(importlib.import_module("cbpkg_a_extra").X, 2)
        self.assertFalse(os.path.exists(os.path.join(self.site, "cbpkg_a-1.0.data")))
        with open(os.path.join(self.site, _packages.RECORD)) as f:
            self.assertEqual(json.load(f), {os.path.basename(w): {"name": "cbpkg_a", "version": "1.0"}})

    def test_upgrade_removes_the_old_files(self):
        old = make_wheel(self.wheels, "cbpkg_b", "1.0", {"cbpkg_b/__init__.py": "V = 1\n", "cbpkg_b/gone.py": ""})
        _packages._install_files([old])
        new = make_wheel(self.wheels, "cbpkg_b", "2.0", {"cbpkg_b/__init__.py": "V = 2\n"})
        _packages._install_files([new])
        self.assertFalse(os.path.exists(os.path.join(self.site, "cbpkg_b", "gone.py")))
        self.assertFalse(os.path.exists(os.path.join(self.site, "cbpkg_b-1.0.dist-info")))
        self.assertEqual(list(_packages._installed()), [os.path.basename(new)])

    def test_hostile_wheels_are_refused(self):
        for bad in ({"../escape.py": ""}, {"/abs.py": ""}):
            w = make_wheel(self.wheels, "cbpkg_c", "1.0", {"cbpkg_c/__init__.py": ""}, extra=bad)
            with self.assertRaisesRegex(_packages.InstallError, "unsafe path"):
                _packages.install_wheel(w)
            self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "escape.py")))
            self.assertFalse(os.path.exists(os.path.join(self.site, "cbpkg_c", "__init__.py")),
                             "a refused wheel leaves nothing behind")
        junk = os.path.join(self.wheels, "junk-1.0-py3-none-any.whl")
        with open(junk, "wb") as f:
            f.write(b"not a zip")
        with self.assertRaisesRegex(_packages.InstallError, "not a readable wheel") as caught:
            _packages.install_wheel(junk)
        # One `except PackageError` catches every failed install, with its kind.
        self.assertIsInstance(caught.exception, PackageError)
        self.assertEqual(caught.exception.kind, "package")
        nodist = os.path.join(self.wheels, "nodist-1.0-py3-none-any.whl")
        with zipfile.ZipFile(nodist, "w") as zf:
            zf.writestr("nodist.py", "")
        with self.assertRaisesRegex(_packages.InstallError, "not a wheel"):
            _packages.install_wheel(nodist)

    def test_workspace_too_small(self):
        w = make_wheel(self.wheels, "cbpkg_d", "1.0", {"cbpkg_d/__init__.py": "x" * 100000})
        real = _packages._free
        _packages._free = lambda path: 5000
        self.addCleanup(setattr, _packages, "_free", real)
        with self.assertRaisesRegex(_packages.InstallError,
                                    r"the workspace is too small for cbpkg_d-1.0-py3-none-any.whl: it needs 0.1 MiB"):
            _packages.install_wheel(w)
        self.assertFalse(os.path.exists(os.path.join(self.site, "cbpkg_d")))

    def test_disk_full_while_unpacking_leaves_nothing(self):
        w = make_wheel(self.wheels, "cbpkg_e", "1.0", {"cbpkg_e/__init__.py": "", "cbpkg_e/big.py": "x"})
        real_open = open
        import builtins
        import errno

        def full(path, mode="r", *a, **k):
            if "w" in mode and str(path).endswith("big.py"):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_open(path, mode, *a, **k)
        builtins.open = full
        try:
            with self.assertRaisesRegex(_packages.InstallError, "the workspace is too small"):
                _packages.install_wheel(w)
        finally:
            builtins.open = real_open
        self.assertFalse(os.path.exists(os.path.join(self.site, "cbpkg_e", "__init__.py")))

    def test_target_tags(self):
        t = _packages.target()
        self.assertEqual(t["python"], f"{sys.version_info[0]}.{sys.version_info[1]}")
        self.assertEqual(t["implementation"], "cp")
        self.assertEqual(t["abis"], [f"cp{sys.version_info[0]}{sys.version_info[1]}"])
        plats = t["platforms"]
        self.assertTrue(plats[-1].startswith("linux_"))
        libc = _packages._glibc()
        if libc is not None:  # Debian: manylinux_2_<own>... down to the oldest, with legacy names
            arch = plats[-1][len("linux_"):]
            self.assertEqual(plats[0], f"manylinux_2_{libc[1]}_{arch}")
            self.assertIn(f"manylinux2014_{arch}", plats)
            self.assertLess(plats.index(f"manylinux_2_17_{arch}"), plats.index(f"manylinux2014_{arch}"))

    def test_start_installs_sent_wheels_or_remembers_requirements(self):
        start = os.path.join(self.tmp.name, "start.json")
        real = _packages.START
        _packages.START = start
        self.addCleanup(setattr, _packages, "START", real)
        w = make_wheel(self.wheels, "cbpkg_f", "1.0", {"cbpkg_f.py": "OK = True\n"})
        with open(start, "w") as f:
            json.dump({"requirements": ["cbpkg_f"], "wheels": [w]}, f)
        _packages.start()
        self.assertTrue(importlib.import_module("cbpkg_f").OK)
        self.assertEqual(_packages._pending, [])
        with open(start, "w") as f:
            json.dump({"requirements": ["pandas"], "wheels": []}, f)
        _packages.start()
        self.assertEqual(_packages._pending, ["pandas"])
        _packages._pending.clear()

    def test_kept_workspace_packages_are_on_path_at_start(self):
        os.makedirs(os.path.join(self.site, "cbpkg_g"))
        with open(os.path.join(self.site, "cbpkg_g", "__init__.py"), "w") as f:
            f.write("KEPT = 1\n")
        sys.path[:] = [p for p in sys.path if p != self.site]
        _packages.start()
        self.assertEqual(importlib.import_module("cbpkg_g").KEPT, 1)

    def test_install_refuses_non_strings(self):
        for bad in ((), (1,), ("",)):
            with self.assertRaises(ValueError):
                next(_packages.install(*bad))


if __name__ == "__main__":
    unittest.main()
