"""The marks the host's approvals read on rpc frames: the line of the cell
that made a request, and the batch of requests a cell sent together."""

import json
import os
import unittest

from mcp._channel import MAX_IN_FLIGHT, Channel
from tests.harness import RuntimeTestCase


class BatchTest(RuntimeTestCase):
    def held_calls(self, code, n, **fields):
        """Start ``code``, hold its first ``n`` call_tool requests, answer
        them, and return them with the finished cell."""
        self.rt.held.clear()
        self.rt.hold = lambda rpc: rpc["method"] == "call_tool"
        try:
            cell = self.rt.start(code, **fields)
            self.rt.wait_held(n)
            held = list(self.rt.held)
            for rpc in held:
                self.rt.answer(rpc)
            self.rt.wait(cell)
        finally:
            self.rt.hold = None
        self.assertEqual(cell.status, "ok", cell)
        return held, cell

    def test_gathered_calls_are_one_batch(self):
        self.run_ok("mcp_everything.echo")  # the tool list is cached
        held, cell = self.held_calls("import asyncio\n"
                                     "r = await asyncio.gather(*(mcp_everything.echo(message=str(i)) for i in range(5)))\n"
                                     "len(r)", 5)
        self.assertEqual(cell.value, "5")
        self.assertEqual({r.get("batch") for r in held} - {None}, {held[0]["batch"]}, held)
        self.assertEqual([r["size"] for r in held], [5] * 5)
        self.assertEqual([r["line"] for r in held], [2] * 5)   # where the cell waits for them

        again, _ = self.held_calls("import asyncio\nawait asyncio.gather(mcp_everything.echo(message='a'), "
                                   "mcp_everything.echo(message='b'))", 2)
        self.assertNotEqual(again[0]["batch"], held[0]["batch"])   # unique in the cell, and beyond

    def test_calls_gathered_before_the_list_is_cached(self):
        """The tool list is fetched once for all of them, and their calls
        still go out together."""
        before = len(self.rt.rpcs)
        held, _ = self.held_calls("import asyncio\n"
                                  "await asyncio.gather(*(mcp_everything.echo(message=str(i)) for i in range(4)))",
                                  4, stale=["everything"])
        lists = [r for r in self.rt.rpcs[before:] if r["method"] == "list_tools"]
        self.assertEqual(len(lists), 1, lists)
        self.assertEqual(len({r["batch"] for r in held}), 1, held)
        self.assertEqual(held[0]["size"], 4)

    def test_alone(self):
        """A call sent alone has no batch; its line is the cell's line that
        made it, inside a function of the cell too, and for a blocking
        call; a call from a function of an earlier cell names the line of
        this cell that called it."""
        self.run_ok("mcp_everything.echo")
        self.run_ok("async def earlier(m):\n    return await mcp_everything.echo(message=m)")
        code = ("x = 1\n"
                "await mcp_everything.echo(message='a')\n"
                "mcp_everything.echo.sync(message='b')\n"
                "async def f(m):\n"
                "    return await mcp_everything.echo(message=m)\n"
                "await f('c')\n"
                "await earlier('d')\n")
        before = len(self.rt.rpcs)
        self.run_ok(code)
        calls = [r for r in self.rt.rpcs[before:] if r["method"] == "call_tool"]
        self.assertEqual([(r["params"]["arguments"]["message"], r["line"], r.get("batch")) for r in calls],
                         [("a", 2, None), ("b", 3, None), ("c", 5, None), ("d", 7, None)])

    def test_only_gated_requests_count(self):
        """A batch counts the requests that pass the host's gate: a listing
        sent in the same turn is not one of them."""
        self.run_ok("mcp_everything.echo")
        before = len(self.rt.rpcs)
        held, _ = self.held_calls("import asyncio\nawait asyncio.gather(runtime.list_servers(detailed=True), "
                                  "mcp_everything.echo(message='a'), mcp_everything.echo(message='b'))", 2)
        listing = [r for r in self.rt.rpcs[before:] if r["method"] == "list_servers"][0]
        self.assertNotIn("batch", listing)
        self.assertEqual([r["size"] for r in held], [2, 2])
        held, _ = self.held_calls("import asyncio\nawait asyncio.gather(runtime.list_servers(detailed=True), "
                                  "mcp_everything.echo(message='a'))", 1)
        self.assertNotIn("batch", held[0])


class SendTogetherTest(unittest.TestCase):
    """Channel.send_together on its own: one write, and no batch larger
    than the free slots (the host would wait for members that cannot be
    sent until an answer frees a slot)."""

    def setUp(self):
        host_in, runtime_out = os.pipe()
        runtime_in, host_out = os.pipe()
        self.ch = Channel(runtime_in, runtime_out)
        self.ch.exec_id = 1
        self.reader = open(host_in, "rb")
        for f in (self.reader.close, lambda: os.close(host_out), self.ch._in.close, lambda: os.close(runtime_out)):
            self.addCleanup(f)

    def test_a_batch_is_what_has_slots(self):
        import asyncio
        import threading
        writes = []

        def host():  # reads the first write, then answers one call: a slot frees
            writes.append(os.read(self.reader.fileno(), 1 << 16))
            first = json.loads(writes[0].splitlines()[0])
            self.ch._resolve({"t": "result", "id": first["id"], "ok": True, "value": 1})
            writes.append(os.read(self.reader.fileno(), 1 << 16))

        async def main():
            for _ in range(MAX_IN_FLIGHT - 3):  # three slots are free
                self.ch._slots.acquire()
            for i in range(3):
                self.ch.request_async("call_tool", {"i": i})
            self.ch.request_async("call_tool", {"i": 3})
            await asyncio.sleep(0)  # the end of the turn sends them

        t = threading.Thread(target=host)
        t.start()
        asyncio.run(main())
        t.join()
        first = [json.loads(line) for line in writes[0].splitlines()]   # one write: three at once
        self.assertEqual([(f["params"]["i"], f.get("size")) for f in first], [(0, 3), (1, 3), (2, 3)])
        self.assertEqual(len({f["batch"] for f in first}), 1)
        later = json.loads(writes[1])
        self.assertEqual((later["params"]["i"], later.get("batch")), (3, None))  # alone, once a slot freed

if __name__ == "__main__":
    unittest.main()
