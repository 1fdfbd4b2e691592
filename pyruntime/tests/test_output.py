"""The output layer's parts on their own (mcp._output): the ordered text
buffer and the spill files, with a fake channel and a temporary folder."""

import os
import tempfile
import unittest

from mcp import _output


class FakeChannel:
    def __init__(self):
        self.exec_id = 1
        self.frames = []

    def enter_critical(self):
        return False

    def leave_critical(self, entered):
        pass

    def send(self, frame):
        self.frames.append(frame)

    def send_many(self, frames):
        self.frames.extend(frames)

    def log(self, level, msg):
        self.frames.append({"t": "log", "msg": msg})


class TextOutputTest(unittest.TestCase):
    def setUp(self):
        self.channel = FakeChannel()
        self.spill = _output.Spill(tempfile.mkdtemp())
        self.spill.begin(1, 0)
        self.text = _output.TextOutput(self.channel, self.spill)

    def sent(self):
        return [(f["stream"], f["data"]) for f in self.channel.frames if f["t"] == "out"]

    def test_order_is_kept_and_runs_are_joined(self):
        for stream, data in [("stdout", "a"), ("stdout", "b"), ("stderr", "c"), ("stdout", "d")]:
            self.text.write(stream, data)
        self.text.flush()
        self.assertEqual(self.sent(), [("stdout", "ab"), ("stderr", "c"), ("stdout", "d")])

    def test_large_text_is_cut_into_chunks(self):
        self.text.write("stdout", "x" * (_output.CHUNK + 5))
        self.text.flush()
        self.assertEqual([len(d) for _, d in self.sent()], [_output.CHUNK, 5])

    def test_between_cells_output_waits_and_is_capped(self):
        self.channel.exec_id = None
        self.text.write("stdout", "a" * _output.PENDING_CAP)
        self.text.write("stdout", "b" * 10)
        self.text.flush()
        self.assertEqual(self.sent(), [])
        self.channel.exec_id = 2
        self.text.flush()
        sent = self.sent()
        self.assertEqual(sent[0], ("stderr", f"[codebridge: {_output.PENDING_CAP} characters written "
                                             "between cells were dropped]\n"))
        self.assertEqual(sent[1], ("stdout", "b" * 10))


class SpillTest(unittest.TestCase):
    def setUp(self):
        self.folder = os.path.join(tempfile.mkdtemp(), "output")
        self.spill = _output.Spill(self.folder)

    def test_within_the_budget_no_file(self):
        self.spill.begin(7, 10)
        self.spill.add("stdout", "0123456789")
        self.assertIsNone(self.spill.end())
        self.assertFalse(os.path.exists(self.folder))

    def test_over_the_budget_the_whole_stream_is_saved(self):
        self.spill.begin(7, 10)
        for part in ["01234", "56789", "abc", "def"]:
            self.spill.add("stdout", part)
        self.spill.add("stderr", "e")
        report = self.spill.end()
        path = os.path.join(self.folder, "cell-7-stdout.txt")
        self.assertEqual(report, {"stdout": {"chars": 16, "path": path}})
        with open(path) as f:
            self.assertEqual(f.read(), "0123456789abcdef")

    def test_an_existing_file_is_kept(self):
        os.makedirs(self.folder)
        with open(os.path.join(self.folder, "cell-3-stderr.txt"), "w") as f:
            f.write("mine")
        self.spill.begin(3, 1)
        self.spill.add("stderr", "xy")
        self.assertEqual(self.spill.end()["stderr"]["path"], os.path.join(self.folder, "cell-3-stderr-2.txt"))
        with open(os.path.join(self.folder, "cell-3-stderr.txt")) as f:
            self.assertEqual(f.read(), "mine")

    def test_no_folder_is_reported_not_raised(self):
        with open(self.folder, "w"):
            pass  # a file where the folder should be
        self.spill.begin(1, 1)
        self.spill.add("stdout", "xy")
        report = self.spill.end()["stdout"]
        self.assertNotIn("path", report)
        self.assertIn("could not create a file for it", report["error"])

    def test_the_file_size_is_capped(self):
        self.spill.begin(1, 1)
        saved, _output.SPILL_MAX = _output.SPILL_MAX, 8
        try:
            self.spill.add("stdout", "abcdefghijkl")
            report = self.spill.end()["stdout"]
        finally:
            _output.SPILL_MAX = saved
        self.assertEqual(report["chars"], 8)
        self.assertIn("a spill file holds at most", report["error"])


if __name__ == "__main__":
    unittest.main()
