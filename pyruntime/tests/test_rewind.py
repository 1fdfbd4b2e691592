"""Rewind (mcp._rewind): a real runtime with the loader's init (as a
subreaper, since the tests' process is not pid 1), driven like the host
drives it: the cell that calls rewind(n) ends with ``rewind`` in its done
frame, the host sends a ``rewind`` frame and reads ``rewound``."""

import os
import shutil
import signal
import tempfile
import unittest

from mcp import _rewind
from tests.harness import Cell, runtime_with_init


class RewindTest(unittest.TestCase):
    def setUp(self):
        self.ws = tempfile.mkdtemp(prefix="rewind-ws-")
        self.addCleanup(shutil.rmtree, self.ws, True)
        self.rt = self.start()

    def start(self, hello=None):
        """A runtime with the loader's init, greeted with ``hello``'s
        fields besides the usual ones."""
        rt = runtime_with_init(self.ws, hello)
        self.addCleanup(rt.close)
        return rt

    def ok(self, code):
        cell = self.rt.run(code)
        self.assertEqual(cell.status, "ok", cell)
        return cell

    def rewind(self, n, then=None):
        """Run rewind(n), send the rewind frame (and ``then``'s bytes in the
        same write), return the rewound frame."""
        cell = self.ok(f"rewind({n})")
        self.assertEqual(cell.done.get("rewind"), n)
        frame = b'{"t":"rewind","n":%d}\n' % n
        self.rt.write(frame + (then or b""))
        return self.rt.rewounds.get(timeout=30)

    def test_restores_variables_imports_and_files(self):
        ws = self.ws
        self.ok(f"a = 1\nimport json\nopen('{ws}/keep.txt', 'w').write('one')")
        self.ok(f"a = 2\nimport fractions\nopen('{ws}/keep.txt', 'w').write('two')\n"
                f"import os\nos.mkdir('{ws}/d')\nopen('{ws}/d/new.txt', 'w').write('x')")
        r = self.rewind(1)
        self.assertTrue(r["ok"], r)
        self.assertEqual(r["cells"], 1)
        self.assertEqual(r["workspace"], {"kept": True, "files": 1, "copied": 1, "removed": 1})
        self.assertEqual(r["names"], ["a"])
        self.assertEqual(r["modules"], ["json"])
        cell = self.ok(f"print(a, 'fractions' in globals(), 'os' in globals(), open('{ws}/keep.txt').read(), "
                       f"sorted(__import__('os').listdir('{ws}')))")
        self.assertEqual(cell.stdout, "1 False False one ['keep.txt']\n")

    def test_rewound_state_can_be_rewound_again(self):
        self.ok("a = 1")
        self.ok("a = 2")
        self.assertTrue(self.rewind(1)["ok"])
        self.ok("b = 3")
        r = self.rewind(1)
        self.assertTrue(r["ok"], r)
        self.assertEqual(self.ok("print(a, 'b' in globals())").stdout, "1 False\n")

    def test_frames_read_ahead_are_handed_over(self):
        """An exec the host wrote right behind the rewind frame (the old
        runtime's reader may have read it with the rewind) runs once, in
        the restored state."""
        self.ok("a = 1")
        self.ok("a = 2")
        self.ok("rewind(1)")
        cell = Cell(self.rt._next_id)
        self.rt._next_id += 1
        self.rt._cells[cell.id] = cell
        self.rt.write(b'{"t":"rewind","n":1}\n{"t":"exec","id":%d,"code":"a"}\n' % cell.id)
        self.assertTrue(self.rt.rewounds.get(timeout=30)["ok"])
        self.rt.wait(cell)
        self.assertEqual(cell.value, "1")
        self.assertEqual([f["t"] for f in cell.frames], ["done"])

    def test_refused_rewinds_change_nothing(self):
        self.ok("a = 1")
        cell = self.rt.run("rewind(5)")
        self.assertEqual(cell.status, "error")
        self.assertIn("only 1 cell lie behind this one", cell.error)
        self.assertNotIn("rewind", cell.done)
        cell = self.rt.run("rewind(0)")
        self.assertIn("1 or more", cell.error)
        # A rewind frame that no cell asked for is refused, and the runtime goes on.
        self.rt.send({"t": "rewind", "n": 1})
        r = self.rt.rewounds.get(timeout=30)
        self.assertFalse(r["ok"])
        self.assertIn("did not ask for", r["error"])
        self.assertEqual(self.ok("a").value, "1")

    def test_threads_do_not_survive(self):
        self.ok("import threading\nstop = threading.Event()\n"
                "threading.Thread(target=stop.wait, name='worker', daemon=True).start()")
        self.ok("a = 1")
        r = self.rewind(1)
        self.assertEqual(r["threads"], ["worker"])
        self.assertEqual(self.ok("print([t.name for t in threading.enumerate() if t.name == 'worker'])").stdout,
                         "[]\n")

    def test_checkpoints_are_bounded_and_end_with_the_runtime(self):
        for i in range(_rewind.MAX_CHECKPOINTS + 4):
            self.ok(f"x = {i}")
        cell = self.ok("from mcp import _rewind\n[p.pid for p in _rewind._keeper.points]")
        pids = eval(cell.value)
        self.assertEqual(len(pids), _rewind.MAX_CHECKPOINTS)
        self.rt.close()
        for pid in pids:
            st = _rewind._start_tick(pid)
            self.assertTrue(st is None or st[0] in (b"Z", b"X"), f"checkpoint {pid} outlived its runtime")

    def test_the_hello_sets_how_many_are_kept(self):
        self.rt.close()
        self.rt = self.start({"checkpoints": 2})
        for i in range(4):
            self.ok(f"x = {i}")
        self.assertEqual(self.ok("from mcp import _rewind\nlen(_rewind._keeper.points)").value, "2")
        cell = self.rt.run("rewind(3)")
        self.assertIn("at most 2 are kept", cell.error)

    def test_zero_checkpoints_takes_none_and_rewind_says_so(self):
        """checkpoints 0 in the hello (--checkpoints 0): no checkpoint is
        forked after a cell, and rewind says checkpoints are off and how
        to turn them on."""
        self.rt.close()
        self.rt = self.start({"checkpoints": 0})
        self.ok("a = 1")
        self.ok("a = 2")
        self.assertEqual(self.ok("from mcp import _rewind\nlen(_rewind._keeper.points)").value, "0")
        cell = self.rt.run("rewind(1)")
        self.assertEqual(cell.status, "error")
        self.assertIn("checkpoints are off", cell.error)
        self.assertIn("--checkpoints N", cell.error)
        self.assertNotIn("rewind", cell.done)
        self.assertEqual(self.ok("a").value, "2")

    def test_the_runtime_becomes_the_init_at_its_first_rewind(self):
        """Not pid 1 (as in a Kubernetes Pod), the runtime is the process
        the host started until its first rewind, which makes that process
        the init of the checkpoint it woke."""
        self.ok("import os\na = 1")
        self.assertEqual(eval(self.ok("os.getpid()").value), self.rt.proc.pid)
        self.assertTrue(self.rewind(1)["ok"])
        runtime, init = eval(self.ok("import os\n(os.getpid(), os.getppid())").value)
        self.assertEqual(init, self.rt.proc.pid)
        self.assertNotEqual(runtime, init)
        self.ok("a = 2")
        self.assertTrue(self.rewind(1)["ok"])  # the init follows the next hand-over
        self.assertEqual(self.ok("print(a)").stdout, "1\n")
        self.assertIsNone(self.rt.proc.poll())

    def test_nothing_outlives_a_killed_runtime(self):
        """After a rewind made the process the host started the init, a
        runtime the kernel kills leaves its checkpoints and a process the
        code forked to that init, which kills them all before it exits: none
        outlives the sandbox's runtime, as none outlives a container."""
        self.ok("a = 1")
        self.ok("a = 2")
        self.assertTrue(self.rewind(1)["ok"])
        cell = self.ok("import os, time\nfrom mcp import _rewind\nchild = os.fork()\n"
                       "if child == 0:\n    time.sleep(60)\n    os._exit(0)\n"
                       "(os.getpid(), os.getppid(), child, [p.pid for p in _rewind._keeper.points])")
        runtime, init, child, points = eval(cell.value)
        self.assertEqual(init, self.rt.proc.pid)
        self.assertEqual(len(points), 2)
        os.kill(runtime, signal.SIGKILL)
        self.assertEqual(self.rt.proc.wait(30), 128 + signal.SIGKILL)
        for pid in [child, *points]:
            st = _rewind._start_tick(pid)
            self.assertTrue(st is None or st[0] in (b"Z", b"X"), f"process {pid} outlived the killed runtime")

    def test_orphans_come_to_the_init_before_it_is_executed(self):
        """The process the host started becomes the init only after the
        checkpoint answered, and the new runtime may run code (start a
        process, be killed) before that execve: the orphans it leaves
        meanwhile come to that process, a subreaper from before the
        hand-over, and the init ends them; none goes to the container's
        pid 1, which would keep it. Here the execve is held until the
        runtime was killed."""
        gate = tempfile.mkdtemp(prefix="rewind-gate-")
        self.addCleanup(shutil.rmtree, gate, True)
        go = os.path.join(gate, "go")
        self.ok("import os, time\nfrom mcp import _rewind\nreal = _rewind._become_init\n"
                "def held(*args):\n"
                f"    while not os.path.exists({go!r}):\n"
                "        time.sleep(0.01)\n"
                "    real(*args)\n"
                "_rewind._become_init = held")
        self.ok("a = 2")
        self.assertTrue(self.rewind(1)["ok"])
        cell = self.ok("import os, time\nchild = os.fork()\n"
                       "if child == 0:\n    time.sleep(60)\n    os._exit(0)\n"
                       "(os.getpid(), child)")
        runtime, child = eval(cell.value)
        os.kill(runtime, signal.SIGKILL)
        with open(go, "w"):
            pass
        self.assertEqual(self.rt.proc.wait(30), 128 + signal.SIGKILL)
        st = _rewind._start_tick(child)
        self.assertTrue(st is None or st[0] in (b"Z", b"X"), f"process {child} outlived the killed runtime")

    def test_workspace_over_budget_is_not_kept(self):
        ws = self.ws
        budget = _rewind.WORKSPACE_BUDGET
        self.ok(f"open('{ws}/big', 'wb').write(b'x' * {budget + 1})")
        self.ok(f"open('{ws}/big', 'wb').write(b'y')")
        r = self.rewind(1)
        self.assertTrue(r["ok"], r)
        self.assertFalse(r["workspace"]["kept"])
        self.assertIn("MiB a checkpoint copies", r["workspace"]["reason"])


class SnapshotTest(unittest.TestCase):
    """The /workspace copies alone, without a runtime."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="rewind-root-")
        self.store = tempfile.mkdtemp(prefix="rewind-store-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.addCleanup(shutil.rmtree, self.store, True)

    def write(self, rel, data):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(data)

    def test_unchanged_files_are_links_and_an_unchanged_workspace_is_shared(self):
        self.write("a.txt", "a")
        self.write("sub/b.txt", "b")
        first = _rewind.snapshot(self.store, 1, None, root=self.root)
        self.assertIs(_rewind.snapshot(self.store, 2, first, root=self.root), first)
        self.write("a.txt", "changed!")
        second = _rewind.snapshot(self.store, 3, first, root=self.root)
        b1 = os.stat(os.path.join(first.folder, "sub/b.txt"))
        b2 = os.stat(os.path.join(second.folder, "sub/b.txt"))
        self.assertEqual(b1.st_ino, b2.st_ino)   # a hard link, not a copy
        a1 = os.stat(os.path.join(first.folder, "a.txt"))
        a2 = os.stat(os.path.join(second.folder, "a.txt"))
        self.assertNotEqual(a1.st_ino, a2.st_ino)

    def test_restore_puts_back_and_removes(self):
        self.write("a.txt", "a")
        os.symlink("a.txt", os.path.join(self.root, "link"))
        snap = _rewind.snapshot(self.store, 1, None, root=self.root)
        self.write("a.txt", "later")
        self.write("new/c.txt", "c")
        os.unlink(os.path.join(self.root, "link"))
        os.makedirs(os.path.join(self.root, ".codebridge"))
        self.write(".codebridge/spill.txt", "kept")
        copied, removed = _rewind.restore(snap, root=self.root)
        self.assertEqual((copied, removed), (1, 1))
        with open(os.path.join(self.root, "a.txt")) as f:
            self.assertEqual(f.read(), "a")
        self.assertEqual(os.readlink(os.path.join(self.root, "link")), "a.txt")
        self.assertEqual(sorted(os.listdir(self.root)), [".codebridge", "a.txt", "link"])
        # The snapshot's copy is not the live file: writing one leaves the other.
        self.write("a.txt", "again")
        with open(os.path.join(snap.folder, "a.txt")) as f:
            self.assertEqual(f.read(), "a")


if __name__ == "__main__":
    unittest.main()
