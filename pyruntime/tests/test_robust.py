"""Bad values and bad frames fail one call, never the channel; odd tool
names import; looking a tool up inside the event loop never blocks it."""

import unittest

from tests.harness import SERVERS, TOOLS, FakeUpstream, Runtime, RuntimeTestCase


class ArgumentsTest(RuntimeTestCase):
    def calls(self):
        return sum(1 for r in self.rt.rpcs if r["method"] == "call_tool")

    def test_non_json_numbers_are_refused_before_sending(self):
        for value in ["float('nan')", "float('inf')", "-float('inf')", "[1, float('nan')]"]:
            before = self.calls()
            cell = self.rt.run(f"await mcp_everything.echo(message={value})")
            self.assertEqual(cell.status, "error", cell)
            self.assertIn("ValueError: call_tool: argument 'message' cannot be sent as JSON", cell.error)
            self.assertEqual(self.calls(), before, "nothing may reach the host")
        cell = self.rt.run("runtime.call_tool_sync('everything', 'add', {'a': 1, 'b': float('inf')})")
        self.assertIn("argument 'b' cannot be sent as JSON", cell.error)
        self.assertEqual(self.run_ok("await mcp_everything.echo(message='next')").value, "'next'")


class UndecodableResultTest(RuntimeTestCase):
    """A result frame the runtime cannot decode fails its RPC at once."""

    def held_call(self):
        self.rt.held.clear()
        self.rt.hold = lambda rpc: rpc["method"] == "call_tool"
        cell = self.rt.start("try:\n    await mcp_everything.echo(message='x')\n"
                             "except BridgeError as e:\n    print('failed:', e)")
        self.rt.wait_held(1)
        self.rt.hold = None
        return cell, self.rt.held[0]["id"]

    def test_bad_utf8_and_too_deep(self):
        self.run_ok("mcp_everything.echo")  # tool list cached
        bodies = [b'"\xff\xfe"', b"[" * 200000 + b"]" * 200000]
        for body in bodies:
            cell, rid = self.held_call()
            self.rt.write(b'{"t":"result","id":%d,"ok":true,"value":%s}\n' % (rid, body))
            self.rt.wait(cell, 20)
            self.assertEqual(cell.status, "ok", cell)
            self.assertIn("failed: the host's answer to this call could not be decoded", cell.stdout)
        self.assertEqual(self.run_ok("await mcp_everything.echo(message='next')").value, "'next'")

    def test_other_bad_lines_are_logged(self):
        self.rt.write(b"not json\n")
        self.assertEqual(self.run_ok("1").value, "1")
        self.assertTrue(any("unreadable frame ignored" in f["msg"] for f in self.rt.logs))


ODD = {"name": "odd", "description": "Tools with special names"}


class OddUpstream(FakeUpstream):
    TOOLS = ["___", "____", "__init__", "plain"]

    def handle(self, method, params):
        if method == "list_tools" and params["server"] == "odd":
            return True, [{"name": n, "inputSchema": {"type": "object"}} for n in self.TOOLS]
        if method == "call_tool" and params["server"] == "odd":
            return True, {"content": [{"type": "text", "text": "called " + params["tool"]}]}
        return super().handle(method, params)


class OddNamesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rt = Runtime(servers=SERVERS + [ODD], upstream=OddUpstream())

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()

    def test_import_star_and_attributes(self):
        cell = self.rt.run("from mcp.servers.odd import *\n"
                           "(await ___(), ____.sync(), plain.sync())")
        self.assertEqual(cell.status, "ok", cell)
        self.assertEqual(cell.value, "('called ___', 'called ____', 'called plain')")
        self.assertEqual(self.rt.run("mcp_odd.___.sync()").value, "'called ___'")
        self.assertEqual(self.rt.run("await call_tool('odd', '__init__')").value, "'called __init__'")


class PendingToolTest(RuntimeTestCase):
    """In an async cell, a tool looked up before its server's tool list is
    cached does not block the event loop while the list is fetched."""

    def test_lookup_does_not_block_other_tasks(self):
        self.rt.held.clear()
        self.rt.hold = lambda rpc: rpc["method"] == "list_tools"
        try:
            cell = self.rt.start(
                "import asyncio\n"
                "async def other():\n    print('other task ran', flush=True)\n"
                "task = asyncio.create_task(other())\n"
                "echo = mcp_everything.echo\n"     # must not wait for the list
                "await asyncio.sleep(0)\n"
                "r = await echo(message='hi')\n"
                "await task\n(r, echo.__name__)", stale=["everything"])
            self.rt.wait_held(1)
            self.rt.wait_output(cell, "other task ran")  # while list_tools is held
            self.rt.answer(self.rt.held[0])
        finally:
            self.rt.hold = None
        self.assertEqual(self.rt.wait(cell, 20).value, "('hi', 'echo')")

    def test_pending_tool_help_sync_and_missing(self):
        out = self.run_ok("import asyncio\nawait asyncio.sleep(0)\nhelp(mcp_everything.echo)",
                          stale=["everything"]).stdout
        self.assertIn("message (str, required): Message to echo", out)
        self.assertIn("echo(*, message: str", out)
        self.assertEqual(self.run_ok("import asyncio\nawait asyncio.sleep(0)\n"
                                     "mcp_everything.echo.sync(message='s')", stale=["everything"]).value, "'s'")
        cell = self.rt.run("import asyncio\nawait asyncio.sleep(0)\nawait mcp_everything.nosuch()",
                           stale=["everything"])
        self.assertIn("AttributeError: MCP server 'everything' (mcp_everything) has no tool 'nosuch'", cell.error)
        self.assertEqual(self.run_ok("type(mcp_everything.echo).__name__").value, "'function'")


if __name__ == "__main__":
    unittest.main()
