"""Processes cells start: forked copies of the runtime, and what an
interrupt does to the processes of a cell.

Killing a cell's leftover processes (after an interrupt, or when they fill
the process limit) happens only inside the sandbox container, where the
runtime is alone with its init; the end-to-end tests (e2e/faults_test.go)
cover it. Here, on a host, the runtime must never signal a process it did
not start.
"""

import unittest

from tests.harness import Runtime, RuntimeTestCase


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
