"""fork() (mcp._fork): a real runtime with the loader's init (a subreaper
here, which follows a second runtime once a first rewind made it the
init), driven like the host drives it: the cell that calls fork() ends
with ``fork`` in its done frame and a ``forked`` frame with a key; the
host reaches the fork through the relay with that key."""

import json
import os
import shutil
import tempfile
import unittest

from tests.harness import runtime_with_init
from tests.test_resume import Host


class ForkTest(unittest.TestCase):
    def setUp(self):
        self.ws = tempfile.mkdtemp(prefix="fork-ws-")
        self.addCleanup(shutil.rmtree, self.ws, True)
        self.rt = runtime_with_init(self.ws)
        self.addCleanup(self.rt.close)

    def ok(self, code, rt=None):
        cell = (rt or self.rt).run(code)
        self.assertEqual(cell.status, "ok", cell)
        return cell

    def become_init(self):
        """A rewind makes the runtime's first process the init (as in a
        Kubernetes Pod): a fork needs one."""
        self.ok("pass")
        self.ok("rewind(1)")
        self.rt.write(b'{"t":"rewind","n":1}\n')
        self.assertTrue(self.rt.rewounds.get(timeout=30)["ok"])

    def fork(self):
        cell = self.ok("fork()")
        self.assertTrue(cell.done.get("fork"), cell.done)
        return self.rt.forkeds.get(timeout=30)

    def test_without_an_init_a_fork_is_refused_clearly(self):
        f = self.fork()
        self.assertFalse(f["ok"])
        self.assertIn("fork needs the sandbox's init", f["error"])
        self.assertEqual(self.ok("print(1)").stdout, "1\n")

    def test_the_fork_diverges_from_its_parent(self):
        self.become_init()
        self.ok(f"x = 1\nopen('{self.ws}/a.txt', 'w').write('parent')")
        f = self.fork()
        self.assertTrue(f["ok"], f)
        self.assertTrue(f["dir"].startswith(os.path.join(self.ws, ".forks")), f)
        host = Host(f["key"])
        self.addCleanup(host.close)
        self.assertEqual(host.until("resumed")[-1]["cell"], None)
        host.send({"t": "exec", "id": 1, "code": "x = 2\nopen('a.txt', 'w').write('fork')\nimport os\nprint(x, os.getcwd())"})
        frames = host.until("done")
        self.assertEqual(frames[-1]["status"], "ok", frames)
        out = "".join(fr.get("data", "") for fr in frames if fr.get("t") == "out")
        self.assertEqual(out, f"2 {f['dir']}\n")
        self.assertEqual(self.ok(f"print(x, open('{self.ws}/a.txt').read())").stdout, "1 parent\n")
        with open(os.path.join(f["dir"], "a.txt")) as fh:
            self.assertEqual(fh.read(), "fork")

    def test_a_wrong_key_reaches_no_fork(self):
        self.become_init()
        f = self.fork()
        self.assertTrue(f["ok"], f)
        wrong = Host("x" * 43)
        self.addCleanup(wrong.close)
        self.assertIsNone(wrong.frame())
        host = Host(f["key"])
        self.addCleanup(host.close)
        host.until("resumed")

    def test_a_fork_ends_with_its_stream_and_the_parent_goes_on(self):
        self.become_init()
        f = self.fork()
        host = Host(f["key"])
        host.until("resumed")
        host.close()
        self.assertEqual(self.ok("print(3)").stdout, "3\n")
        f2 = self.fork()  # a fork of the same parent again
        self.assertTrue(f2["ok"], f2)
        self.assertNotEqual(f2["dir"], f["dir"])
        Host(f2["key"]).close()  # the second fork ends with its stream too

    def test_an_end_frame_ends_the_runtime(self):
        """The host ends a runtime whose container its forks still use
        with an end frame: a detachable one would wait for a host."""
        self.ok("pass")
        self.rt.send({"t": "end"})
        self.assertEqual(self.rt.proc.wait(30), 0)


if __name__ == "__main__":
    unittest.main()
