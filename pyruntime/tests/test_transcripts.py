"""Replays the host-runtime transcripts in testdata/protocol against the
real runtime: the host's frames are sent as recorded, and the runtime must
answer with the frames the transcript has ("*" matches any value). The Go
session test replays the same files from the host's side
(sandbox/transcript_test.go), so a frame field renamed on either side
fails a unit test on that side.
"""

import json
import os
import queue
import secrets
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import unittest
from pathlib import Path

from tests import harness

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "testdata" / "protocol"


def parse_txtar(text):
    """The sections of a txtar archive: {name: text}."""
    sections, name = {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith("-- ") and line.rstrip().endswith(" --"):
            name = line.strip()[3:-3].strip()
            sections[name] = ""
        elif name is not None:
            sections[name] += line
    return sections


def matches(want, got):
    """``got`` equals ``want``, where "*" in ``want`` matches any value."""
    if want == "*":
        return True
    if isinstance(want, dict):
        return (isinstance(got, dict) and want.keys() == got.keys()
                and all(matches(v, got[k]) for k, v in want.items()))
    if isinstance(want, list):
        return (isinstance(got, list) and len(want) == len(got)
                and all(matches(w, g) for w, g in zip(want, got)))
    return want == got and type(want) is type(got)


class Replay:
    """One runtime process fed a transcript's host frames."""

    def __init__(self):
        command = (shlex.split(harness.COMMAND) + [harness.LOADER] if harness.COMMAND
                   else [harness.PYTHON, "-I", "-u", "-c", harness.LOADER])
        # The loader's init, as pid 1 has it: the rewind transcript needs it.
        env = dict(os.environ, CODEBRIDGE_INIT="subreaper")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0, env=env)
        self.frames = queue.Queue()
        self.stderr = []
        # The threads that read the runtime's streams; close() waits for
        # them before it closes the streams, so that none reads a
        # descriptor number the next Replay's pipe took over (it stole the
        # first byte of the next runtime's frame).
        self.readers = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=lambda: self.stderr.extend(iter(self.proc.stderr.readline, b"")),
                             daemon=True),
        ]
        for t in self.readers:
            t.start()
        archive = harness.build_zip()
        self.proc.stdin.write(b"%16d" % len(archive) + archive)

        self.folder = None     # where the offered socket is
        self.conn = None       # the direct channel, once the runtime connected
        self.listener = None
        self.secret = None

    def _read(self, stream=None):
        for line in stream or self.proc.stdout:
            frame = json.loads(line)
            if frame.get("t") != "log":  # diagnostics are not part of the exchange
                self.frames.put(frame)
        if stream is None and self.conn is not None:
            return  # stdout ends, unused, after the runtime took the socket
        self.frames.put(None)

    def offer(self, direct):
        """Play the host's channel frame: a real socket (and secret) when the
        transcript's runtime connects, else a path where nothing listens."""
        folder = self.folder = tempfile.mkdtemp(prefix="codebridge-replay-")
        path = os.path.join(folder, "frames.sock")
        self.secret = secrets.token_hex(32)
        if direct:
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(path)
            self.listener.listen(1)
            self.listener.settimeout(30)
        self.send(json.dumps({"t": "channel", "path": path, "secret": self.secret}))

    def accept(self):
        """The runtime's connect line, read from the socket it opened; every
        later frame travels over that socket."""
        conn, _ = self.listener.accept()
        conn.settimeout(None)
        self.listener.close()
        reader = conn.makefile("rb")
        first = json.loads(reader.readline())
        self.conn = conn
        self.readers.append(threading.Thread(target=self._read, args=(reader,), daemon=True))
        self.readers[-1].start()
        return first

    def send(self, line):
        if self.conn is not None:
            self.conn.sendall(line.encode() + b"\n")
            return
        self.proc.stdin.write(line.encode() + b"\n")

    def next(self):
        try:
            return self.frames.get(timeout=30)
        except queue.Empty:
            raise AssertionError("the runtime sent nothing for 30 s; stderr: "
                                 + b"".join(self.stderr).decode(errors="replace")) from None

    def close(self):
        if self.conn is not None:  # its reader holds the descriptor: shut it down
            self.conn.shutdown(socket.SHUT_RDWR)
            self.conn.close()
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        for t in self.readers:  # the runtime is gone: each stream ends
            t.join(timeout=30)
        self.proc.stdout.close()
        self.proc.stderr.close()
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)


def joined_output(rt, want, got):
    """got, or, when want is output that the runtime sent in several
    chunks (its flusher sends what waited 100 ms, which a loaded machine
    reaches between the parts of one print), those chunks joined: how
    output is cut into frames is not part of the contract."""
    same = lambda f: (f.get("t") == "out" and f.get("id") == want.get("id")
                      and f.get("stream") == want.get("stream"))
    if want.get("t") != "out" or not same(got):
        return got
    data = got.get("data", "")
    while len(data) < len(want.get("data", "")) and want["data"].startswith(data):
        more = rt.next()
        if not same(more):
            raise AssertionError(f"output {data!r} was followed by {json.dumps(more)}, want the rest of {want['data']!r}")
        data += more.get("data", "")
    return dict(got, data=data)


class TranscriptTest(unittest.TestCase):
    def test_transcripts(self):
        files = sorted(TRANSCRIPTS.glob("*.txtar"))
        self.assertTrue(files, f"no transcripts in {TRANSCRIPTS}")
        for path in files:
            with self.subTest(transcript=path.name):
                self.replay(parse_txtar(path.read_text())["exchange"])

    def replay(self, exchange):
        rt = Replay()
        lines = exchange.strip().splitlines()
        try:
            for n, line in enumerate(lines, 1):
                side, _, frame = line.partition(": ")
                want = json.loads(frame)
                if side == "host" and want.get("t") == "channel":
                    rt.offer(direct='"t":"connect"' in lines[n])  # the runtime's answer
                    continue
                if side == "host":
                    rt.send(frame)
                    continue
                if want.get("t") == "connect":
                    got = rt.accept()
                    self.assertEqual(got, {"t": "connect", "secret": rt.secret})
                else:
                    got = joined_output(rt, want, rt.next())
                self.assertTrue(matches(want, got),
                                f"line {n}: the runtime sent\n  {json.dumps(got)}\nwant\n  {frame}")
        finally:
            rt.close()


if __name__ == "__main__":
    unittest.main()
