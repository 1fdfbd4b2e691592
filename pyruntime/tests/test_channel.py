"""The frame channel's bound on RPCs waiting for answers (mcp._channel)."""

import json
import os
import threading
import unittest

from mcp._channel import MAX_IN_FLIGHT, Channel


class InFlightBoundTest(unittest.TestCase):
    def setUp(self):
        host_in, self.runtime_out = os.pipe()   # frames the runtime sends
        self.runtime_in, host_out = os.pipe()   # frames the host sends (unused)
        self.ch = Channel(self.runtime_in, self.runtime_out)
        self.ch.exec_id = 1
        self.reader = open(host_in, "rb")
        self.addCleanup(self.reader.close)
        self.addCleanup(os.close, host_out)
        self.addCleanup(self.ch._in.close)
        self.addCleanup(os.close, self.runtime_out)

    def test_a_request_beyond_the_bound_waits_for_an_answer(self):
        futures = [self.ch.request("call_tool", {"i": i}) for i in range(MAX_IN_FLIGHT)]
        sent = [json.loads(self.reader.readline()) for _ in futures]
        self.assertEqual(len({f["id"] for f in sent}), MAX_IN_FLIGHT)
        # Every slot is taken: the next request would wait.
        self.assertFalse(self.ch._slots.acquire(blocking=False))
        started = threading.Event()
        later = []

        def one_more():
            started.set()
            later.append(self.ch.request("call_tool", {"i": "late"}))

        t = threading.Thread(target=one_more)
        t.start()
        started.wait()
        self.ch._resolve({"t": "result", "id": sent[0]["id"], "ok": True, "value": "v"})
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual(futures[0].result(), "v")
        self.assertEqual(json.loads(self.reader.readline())["params"], {"i": "late"})
        # The cell's end fails what waits and frees every slot.
        self.ch.fail_pending(1)
        for _ in range(MAX_IN_FLIGHT):
            self.assertTrue(self.ch._slots.acquire(blocking=False))

    def test_an_unknown_or_repeated_answer_frees_nothing(self):
        f = self.ch.request("call_tool", {})
        rid = json.loads(self.reader.readline())["id"]
        for _ in range(2):
            self.ch._resolve({"t": "result", "id": rid, "ok": True, "value": 1})
        self.ch._resolve({"t": "result", "id": 999, "ok": True, "value": 1})
        self.ch._resolve({"t": "result", "id": "x", "ok": True, "value": 1})
        self.assertEqual(f.result(), 1)
        for _ in range(MAX_IN_FLIGHT):
            self.assertTrue(self.ch._slots.acquire(blocking=False))
        self.assertFalse(self.ch._slots.acquire(blocking=False))

    def test_held_frames_go_out_in_one_write_in_order(self):
        self.ch.hold()
        self.ch.send({"t": "out", "id": 1, "stream": "stdout", "data": "1\n"})
        other = threading.Thread(target=self.ch.send, args=({"t": "log", "level": "debug", "msg": "x"},))
        other.start()
        other.join()
        self.ch.send({"t": "done", "id": 1, "status": "ok"})
        self.assertFalse(_readable(self.reader), "a held frame was written")
        self.ch.release()
        data = os.read(self.reader.fileno(), 1 << 16)  # one write: all of it at once
        self.assertEqual([json.loads(line)["t"] for line in data.splitlines()], ["out", "log", "done"])
        self.ch.send({"t": "log", "level": "debug", "msg": "after"})  # released: written at once
        self.assertEqual(json.loads(os.read(self.reader.fileno(), 1 << 16))["msg"], "after")

    def test_an_awaited_request_is_settled_through_its_loop(self):
        import asyncio

        async def main():
            done = self.ch.request_async("call_tool", {"i": 1})
            cancelled = self.ch.request_async("call_tool", {"i": 2})
            await asyncio.sleep(0)  # the end of the turn sends them
            sent = [json.loads(self.reader.readline())["id"] for _ in range(2)]
            cancelled.cancel()
            resolver = threading.Thread(target=lambda: [
                self.ch._resolve({"t": "result", "id": sent[0], "ok": True, "value": "v"}),
                self.ch._resolve({"t": "result", "id": sent[1], "ok": True, "value": "late"})])
            resolver.start()
            value = await done
            resolver.join()
            return value, cancelled.cancelled()

        self.assertEqual(asyncio.run(main()), ("v", True))
        for _ in range(MAX_IN_FLIGHT):  # both answers freed their slots
            self.assertTrue(self.ch._slots.acquire(blocking=False))

    def test_a_burst_of_answers_wakes_the_loop_once(self):
        import asyncio

        async def main():
            loop = asyncio.get_running_loop()
            wakes, real = [], loop._write_to_self
            loop._write_to_self = lambda: (wakes.append(1), real())
            futures = [self.ch.request_async("call_tool", {"i": i}) for i in range(10)]
            await asyncio.sleep(0)  # the end of the turn sends them
            ids = [json.loads(self.reader.readline())["id"] for _ in futures]
            resolver = threading.Thread(target=lambda: [
                self.ch._resolve({"t": "result", "id": rid, "ok": True, "value": rid}) for rid in ids])
            resolver.start()
            resolver.join()  # the loop has not run meanwhile: one batch
            return await asyncio.gather(*futures), len(wakes)

        values, wakes = asyncio.run(main())
        self.assertEqual(wakes, 1)
        self.assertEqual(len(values), 10)
        self.assertEqual(values, sorted(values))


def _readable(f):
    import select
    return bool(select.select([f], [], [], 0)[0])


if __name__ == "__main__":
    unittest.main()


class DirectChannelTest(unittest.TestCase):
    """Channel.connect: the runtime's side of the direct channel's start-up."""

    def setUp(self):
        host_in, runtime_out = os.pipe()
        runtime_in, self.host_out = os.pipe()
        self.ch = Channel(runtime_in, runtime_out)
        self.stdout = open(host_in, "rb")
        self.addCleanup(self.stdout.close)
        self.addCleanup(os.close, self.host_out)

    def tearDown(self):
        for fd in (self.ch._out_fd, self.ch._held_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.ch._in.close()

    def test_an_offer_that_cannot_be_taken_is_answered_on_stdout(self):
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            for offer in ({"path": os.path.join(folder, "none.sock"), "secret": "00"},
                          {"secret": "00"}, {"path": 3, "secret": "00"}):
                self.ch.connect(offer)
                answer = json.loads(self.stdout.readline())
                self.assertEqual(answer["t"], "channel")
                self.assertTrue(answer["error"])
        self.assertEqual(self.ch._held_fd, -1)  # the frames stay on stdin and stdout

    def test_the_socket_carries_the_secret_then_every_frame(self):
        import socket
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "frames.sock")
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(path)
            listener.listen(1)
            self.addCleanup(listener.close)
            self.ch.connect({"path": path, "secret": "ab" * 32})
            conn, _ = listener.accept()
            self.addCleanup(conn.close)
            lines = conn.makefile("rb")
            self.assertEqual(lines.readline(), b'{"t":"connect","secret":"' + b"ab" * 32 + b'"}\n')
            self.ch.send({"t": "log", "level": "info", "msg": "over the socket"})
            self.assertEqual(json.loads(lines.readline())["msg"], "over the socket")
            conn.sendall(b'{"t":"hello","v":2,"servers":[]}\n')
            self.assertEqual(self.ch.read_frame()["t"], "hello")
