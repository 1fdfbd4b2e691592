"""A detachable sandbox (hello ``idle``): a new host resumes the channel and
learns where the runtime was; a sandbox nobody comes back for ends by
itself (mcp._channel: Channel.detachable, Channel.resume)."""

import threading
import unittest

from tests.harness import Runtime


def resumed_frames(rt):
    return [f for f in rt.stray if f.get("t") == "resumed"]


class ResumeTest(unittest.TestCase):
    def setUp(self):
        self.rt = Runtime(hello={"idle": 600})
        self.addCleanup(self.rt.close)

    def resume(self, before=b""):
        """Play a new host: maybe the tail of a frame the old host never
        finished, then a newline and the resume frame; the resumed answer."""
        seen = threading.Event()
        self.rt.write(before + b"\n")
        self.rt.send({"t": "resume"})
        # The answer is the runtime's next frame without an id: the reader
        # thread files it among the stray frames.
        for _ in range(3000):
            if resumed_frames(self.rt):
                return resumed_frames(self.rt)[-1]
            seen.wait(0.01)
        raise AssertionError(f"no resumed frame; logs {self.rt.logs}")

    def test_idle_resume_reports_the_last_cell_and_keeps_the_variables(self):
        self.rt.run("x = 41\nprint('set')")
        r = self.resume(before=b'{"t":"exec","id":9,"co')  # a frame cut by the old host's death
        self.assertEqual(r["last"], 1)
        self.assertEqual(r["lost"], 0)
        self.assertEqual(r["v"], self.rt.ready["v"])
        cell = r["cell"]
        self.assertEqual((cell["id"], cell["running"], cell["stdout"]), (1, False, "set\n"))
        self.assertEqual(cell["done"]["status"], "ok")
        self.assertEqual(self.rt.run("x + 1").value, "42")

    def test_a_running_cell_is_reported_with_its_output_and_its_lost_call_fails(self):
        self.rt.hold = lambda rpc: rpc["method"] == "call_tool"
        cell = self.rt.start(
            "print('before')\n"
            "try:\n    await call_tool('everything', 'echo', {'message': 'x'})\n"
            "except BridgeError as e:\n    print('failed:', e)\n")
        self.rt.wait_held(1)
        r = self.resume()
        self.assertEqual(r["lost"], 1)
        self.assertEqual((r["cell"]["id"], r["cell"]["running"], r["cell"]["done"]), (cell.id, True, None))
        self.assertTrue(r["cell"]["stdout"].startswith("before"), r)  # what was sent so far
        self.rt.wait(cell)
        self.assertIn("failed: the bridge that was to answer this call went away", cell.stdout)

    def test_a_cell_that_ended_unheard_is_kept_until_the_next_exec(self):
        self.rt.run("print('a' * 10)")
        first = self.resume()["cell"]
        self.assertEqual((first["id"], first["done"]["status"]), (1, "ok"))
        self.rt.stray.clear()
        self.rt.run("pass")
        second = self.resume()["cell"]
        self.assertEqual((second["id"], second["stdout"]), (2, ""))


class IdleDeadlineTest(unittest.TestCase):
    def test_an_orphan_ends_by_itself(self):
        rt = Runtime(hello={"idle": 0.2})
        try:
            code = rt.proc.wait(60)   # no host frame, no cell: it ends
        finally:
            rt.close()
        self.assertEqual(code, 0)
        self.assertTrue(any("no host" in f["msg"] for f in rt.logs), rt.logs)


class NotDetachableTest(unittest.TestCase):
    def test_resume_is_ignored(self):
        rt = Runtime()
        try:
            rt.send({"t": "resume"})
            self.assertEqual(rt.run("1").value, "1")
            self.assertFalse(resumed_frames(rt))
            self.assertTrue(any("not started detachable" in f["msg"] for f in rt.logs), rt.logs)
        finally:
            rt.close()


if __name__ == "__main__":
    unittest.main()
