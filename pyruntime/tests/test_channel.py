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


if __name__ == "__main__":
    unittest.main()
