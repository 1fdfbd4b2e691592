"""Processes cells start: forked copies of the runtime, and what an
interrupt does to the processes of a cell.

Killing a cell's leftover processes (after an interrupt, or when they fill
the process limit) happens only inside the sandbox container, where the
runtime is alone with its init; the end-to-end tests (e2e/faults_test.go)
cover it. Here, on a host, the runtime must never signal a process it did
not start.
"""

import os
import signal
import tempfile
import unittest

from mcp import _procs
from tests.harness import Runtime, RuntimeTestCase


class SweepTest(unittest.TestCase):
    """The sweep that kills a cell's processes, on a fake process table."""

    def test_kills_new_ones_continues_old_ones_and_catches_late_forks(self):
        table = {10: 5, 11: 99, 12: 100, 13: 150}   # pid -> start tick; since = 100
        late = [{14: 160}, {15: 170}, {}]           # children still being forked
        sent = []

        def processes():
            table.update(late.pop(0) if late else {})
            return [(pid, start) for pid, start in table.items() if (pid, signal.SIGKILL) not in sent]

        killed = _procs.sweep(100, processes, lambda pid, sig: sent.append((pid, sig)))
        self.assertEqual(killed, {12, 13, 14, 15})
        self.assertEqual(sorted(p for p, sig in sent if sig == signal.SIGCONT), [10, 11])
        self.assertFalse([p for p, sig in sent if sig == signal.SIGKILL and p in (10, 11)])

    def test_gives_up_after_the_rounds(self):
        pids = iter(range(1000, 2000))
        rounds = []

        def processes():   # a new process every time it looks
            rounds.append(1)
            return [(next(pids), 200)]

        killed = _procs.sweep(100, processes, lambda pid, sig: None)
        self.assertEqual(len(rounds), _procs._ROUNDS)
        self.assertEqual(len(killed), _procs._ROUNDS)

    def test_vanished_processes_are_fine(self):
        def kill(pid, sig):
            raise ProcessLookupError(pid)
        self.assertEqual(_procs.sweep(0, lambda: [(7, 1)], kill), {7})


class KeptFileTest(unittest.TestCase):
    """The kept-open pids.events: re-read in place, reopened when the code
    closed it, and never confused with a file that took its number."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = os.path.join(self.dir.name, "pids.events")
        self.write(b"max 3\n")

    def write(self, data):
        with open(self.path, "wb") as f:
            f.write(data)

    def test_reads_the_count_again_in_place(self):
        events = _procs.KeptFile(self.path)
        self.assertEqual(_procs.refused(events), 3)
        self.write(b"max 12\n")
        self.assertEqual(_procs.refused(events), 12)

    def test_reopens_when_the_code_closed_it_or_reused_its_number(self):
        events = _procs.KeptFile(self.path)
        self.assertEqual(_procs.refused(events), 3)
        other = os.path.join(self.dir.name, "other")
        with open(other, "wb") as f:
            f.write(b"max 99\n")
        taken = events._fd
        with open(other, "rb") as f:       # the code's own file, under the kept number
            os.dup2(f.fileno(), taken)
        self.addCleanup(os.close, taken)
        self.assertEqual(_procs.refused(events), 3)
        self.assertEqual(os.pread(taken, 16, 0), b"max 99\n", "the code's own file stays open")
        os.close(events._fd)               # closed outright
        self.assertEqual(_procs.refused(events), 3)
        self.addCleanup(os.close, events._fd)

    def test_unreadable_counts_are_none(self):
        self.write(b"max lots\n")
        self.assertIsNone(_procs.refused(_procs.KeptFile(self.path)))
        self.assertIsNone(_procs.refused(_procs.KeptFile(self.path + ".missing")))


class CellsTest(unittest.TestCase):
    """What a cell's begin, interrupt and end do, with fake counters."""

    def cells(self):
        self.count = 0
        self.stops, self.interrupts = [], []

        def stop(since):
            self.stops.append(since)
            return 3
        return _procs.Cells(enabled=True, refused=lambda: self.count, stop=stop,
                            interrupt=self.interrupts.append)

    def test_interrupt_sends_sigint_when_the_limit_held(self):
        cells = self.cells()
        cells.begin()
        cells.interrupted()
        self.assertEqual((len(self.interrupts), self.stops), (1, []))
        self.assertIn("killed 3 processes the interrupted cell left running", cells.end(True))

    def test_interrupt_of_a_fork_bomb_kills_at_once(self):
        cells = self.cells()
        cells.begin()
        self.count = 5                     # the limit refused forks
        cells.interrupted()
        self.assertEqual((self.interrupts, self.stops), ([], [cells.started]))
        self.assertIn("killed 6 processes the interrupted cell left running", cells.end(True))

    def test_a_bomb_left_running_is_killed_at_the_next_begin(self):
        cells = self.cells()
        cells.begin()
        self.assertEqual(cells.end(False), "")
        first = cells.started
        self.count = 1
        self.assertIn("killed 3 processes it started", cells.begin())
        self.assertEqual(self.stops, [first])

    def test_disabled_does_nothing(self):
        cells = _procs.Cells(enabled=False, stop=lambda since: 1 / 0, interrupt=lambda since: 1 / 0)
        self.assertEqual((cells.begin(), cells.interrupted(), cells.end(True)), ("", None, ""))


class ForkedCopyTest(RuntimeTestCase):
    def exit_code(self, var="pid"):
        return self.waited(var).value

    def waited(self, var="pid"):
        """Wait for the copy; the cell's output ends with everything the copy wrote."""
        return self.run_ok(f"os.waitstatus_to_exitcode(os.waitpid({var}, 0)[1])")

    def test_copy_that_reaches_the_end_of_the_cell_exits(self):
        cell = self.run_ok("import os\npid = os.fork()\nwho = 'child' if pid == 0 else 'parent'\nprint(who, flush=True)")
        self.assertEqual(self.exit_code(), "0")
        self.assertIn("parent", cell.stdout)

    def test_sys_exit_in_a_copy_is_its_exit_code(self):
        self.run_ok("import os, sys\npid = os.fork()\nif pid == 0:\n    sys.exit(5)")
        self.assertEqual(self.exit_code(), "5")

    def test_exception_in_a_copy_is_printed_and_exits_1(self):
        first = self.run_ok("import os\npid = os.fork()\nif pid == 0:\n    raise ValueError('in the child')")
        waited = self.waited()
        self.assertEqual(waited.value, "1")
        self.assertIn("ValueError: in the child", first.stderr + waited.stderr)

    def test_copy_in_an_async_cell_exits(self):
        self.run_ok("import asyncio, os\nawait asyncio.sleep(0)\npid = os.fork()\nawait asyncio.sleep(0)")
        self.assertEqual(self.exit_code(), "0")
        self.assertEqual(self.run_ok("await asyncio.sleep(0, 'loop ok')").value, "'loop ok'")

    def test_forks_are_tracked(self):
        self.run_ok("import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)")
        self.assertEqual(self.run_ok("import mcp._procs\npid in mcp._procs._copies").value, "True")
        self.exit_code()


class OutsideContainerTest(unittest.TestCase):
    def test_interrupt_leaves_other_processes_alone(self):
        rt = Runtime()
        try:
            self.assertEqual(rt.run("import mcp._procs as p\n(p._CONTAINED, p.stop_since(0), p.signal_since(0, 0))").value,
                             "(False, 0, 0)")
            rt.run("import subprocess, time\nold = subprocess.Popen(['sleep', '30'])")
            cell = rt.start("new = subprocess.Popen(['sleep', '30'])\nprint('go', flush=True)\ntime.sleep(60)")
            rt.wait_output(cell, "go")
            rt.interrupt(cell)
            self.assertEqual(rt.wait(cell, 10).status, "interrupted")
            self.assertNotIn("codebridge:", cell.stderr)
            self.assertEqual(rt.run("(old.poll(), new.poll())").value, "(None, None)")
            rt.run("old.kill(); new.kill(); old.wait(); new.wait()")
        finally:
            rt.close()


if __name__ == "__main__":
    unittest.main()
