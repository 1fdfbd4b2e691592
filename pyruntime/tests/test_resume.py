"""A detachable sandbox (hello ``idle`` and ``resume``): when its host goes
away the runtime keeps its interpreter; a new host, proving itself with the
key, resumes the channel over the runtime's resume socket and learns where
the runtime was; a sandbox nobody comes back for ends by itself
(mcp._channel: Channel.detachable, Channel.resume; relay.py)."""

import hashlib
import json
import os
import socket
import subprocess
import unittest
from pathlib import Path

from tests.harness import PYTHON, Runtime

KEY = os.urandom(16).hex()
RELAY = (Path(__file__).resolve().parents[1] / "relay.py").read_text()


def detachable(idle=600, key=KEY):
    rt = Runtime(hello={"idle": idle, "resume": hashlib.sha256(key.encode()).hexdigest()})
    return rt


def kill(rt):
    rt.proc.kill()
    rt.proc.wait()
    rt._threads_done(10)
    for stream in (rt.proc.stdin, rt._stdout, rt.proc.stderr):
        stream.close()


class Host:
    """A new host, through the relay (relay.py) as a bridge runs it."""

    def __init__(self, key=KEY):
        self.relay = subprocess.Popen([PYTHON, "-I", "-u", "-c", RELAY], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        self.send({"t": "resume", "key": key})

    def send(self, frame):
        self.relay.stdin.write(json.dumps(frame).encode() + b"\n")

    def frame(self):
        line = self.relay.stdout.readline()
        return json.loads(line) if line else None

    def until(self, kind):
        """Frames up to and including the first of type ``kind``."""
        frames = []
        while True:
            f = self.frame()
            if f is None:
                raise AssertionError(f"the stream ended before a {kind} frame: {frames}")
            if f.get("t") != "log":
                frames.append(f)
            if f.get("t") == kind:
                return frames

    def close(self):
        self.relay.stdin.close()
        self.relay.wait(30)
        self.relay.stdout.close()
        self.relay.stderr.close()


class ResumeTest(unittest.TestCase):
    def setUp(self):
        self.rt = detachable()
        self.addCleanup(kill, self.rt)

    def host_dies(self):
        self.rt.proc.stdin.close()  # as the engine closes stdin when a bridge's attach ends

    def test_the_next_host_finds_the_interpreter_and_the_last_cell(self):
        self.rt.run("x = 41\nprint('set')")
        self.host_dies()
        host = Host()
        self.addCleanup(host.close)
        r = host.until("resumed")[-1]
        self.assertEqual((r["last"], r["lost"], r["v"]), (1, 0, self.rt.ready["v"]))
        cell = r["cell"]
        self.assertEqual((cell["id"], cell["running"], cell["stdout"]), (1, False, "set\n"))
        self.assertEqual(cell["done"]["status"], "ok")
        self.assertIsNone(self.rt.proc.poll(), "the runtime ended with its host")
        host.send({"t": "exec", "id": 2, "code": "x + 1"})
        done = host.until("done")[-1]
        self.assertEqual((done["id"], done["value"]), (2, "42"))

    def test_a_wrong_key_is_refused_and_the_right_one_still_works(self):
        self.host_dies()
        wrong = Host(key="0" * 32)   # names no socket: the relay finds none
        self.assertIsNone(wrong.frame())
        wrong.close()
        # Straight to the socket the right key names, with a wrong key in the line.
        name = hashlib.sha256(KEY.encode()).hexdigest()[:32]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(b"\0codebridge-resume-" + name.encode())
        s.sendall(json.dumps({"t": "resume", "key": "not-the-key"}).encode() + b"\n")
        self.assertEqual(s.recv(100), b"", "a host without the key got an answer")
        s.close()
        host = Host()
        self.addCleanup(host.close)
        self.assertEqual(host.until("resumed")[-1]["cell"], None)

    def test_a_running_cell_is_reported_and_its_unanswered_call_fails(self):
        self.rt.hold = lambda rpc: rpc["method"] == "call_tool"
        cell = self.rt.start(
            "print('before')\n"
            "try:\n    await call_tool('everything', 'echo', {'message': 'x'})\n"
            "except BridgeError as e:\n    print('failed:', e)\n")
        self.rt.wait_held(1)
        self.host_dies()
        host = Host()
        self.addCleanup(host.close)
        r = host.until("resumed")[-1]
        self.assertEqual(r["lost"], 1)
        self.assertEqual((r["cell"]["id"], r["cell"]["running"], r["cell"]["done"]), (cell.id, True, None))
        call = r["calls"]["calls"][0]  # the cell's ledger, kept in the sandbox: the call is cancelled
        self.assertEqual((r["calls"]["total"], call["seq"], call["kind"], call["server"], call["tool"], call["state"]),
                         (1, 1, "tool", "everything", "echo", "cancelled"))
        self.assertTrue(r["cell"]["stdout"].startswith("before"), r)
        rest = host.until("done")
        self.assertEqual(rest[-1]["status"], "ok")
        printed = "".join(f["data"] for f in rest if f["t"] == "out")
        self.assertIn("failed: the bridge that was to answer this call went away", printed)

    def test_a_host_after_a_host_resumes_too(self):
        self.rt.run("y = 'kept'")
        self.host_dies()
        first = Host()
        first.until("resumed")
        first.close()   # the second bridge dies too
        second = Host()
        self.addCleanup(second.close)
        self.assertEqual(second.until("resumed")[-1]["last"], 1)
        second.send({"t": "exec", "id": 2, "code": "y"})
        self.assertEqual(second.until("done")[-1]["value"], "'kept'")

    def test_the_host_that_held_the_channel_is_told_it_moved_and_takes_it_back(self):
        first = Host()
        first.until("resumed")
        second = Host()  # takes over from the first, which still listens
        self.addCleanup(second.close)
        second.until("resumed")
        self.assertEqual(first.until("moved")[-1], {"t": "moved"})
        first.send({"t": "exec", "id": 5, "code": "ran = True"})        # dropped unread
        first.send({"t": "resume", "key": "not the key"})              # ignored
        first.send({"t": "resume", "key": KEY})                        # on the same connection
        back = first.until("resumed")[-1]
        self.assertEqual((back["last"], back["yours"]), (0, 0))  # exec 5 was never read
        self.assertEqual(second.until("moved")[-1], {"t": "moved"})
        first.send({"t": "exec", "id": 6, "code": "'ran' in dir()"})
        self.assertEqual(first.until("done")[-1]["value"], "False")
        second.send({"t": "resume", "key": KEY})  # and back again
        back = second.until("resumed")[-1]
        self.assertEqual((back["last"], back["yours"]), (6, 0))
        first.send({"t": "resume", "key": KEY})   # the first's cell 6 was read from its channel
        self.assertEqual(first.until("resumed")[-1]["yours"], 6)
        second.until("moved")
        second.send({"t": "resume", "key": KEY})
        second.until("resumed")
        first.close()  # a waiting channel whose host goes away is closed
        second.send({"t": "exec", "id": 7, "code": "'kept'"})
        self.assertEqual(second.until("done")[-1]["value"], "'kept'")


class IdleDeadlineTest(unittest.TestCase):
    def test_an_orphan_ends_by_itself(self):
        rt = detachable(idle=0.2)
        rt.proc.stdin.close()
        try:
            code = rt.proc.wait(60)   # no host frame, no cell: it ends
        finally:
            kill(rt)
        self.assertEqual(code, 0)


if __name__ == "__main__":
    unittest.main()
