"""MCP tools from Python: RPCs, proxies, results, helpers and display."""

import base64
import json
import os
import tempfile
import time
import unittest

from tests.harness import COMMAND, PNG, TOOLS, RuntimeTestCase


class ToolTest(RuntimeTestCase):
    def value(self, code):
        return self.run_ok(code).value

    def test_call_forms(self):
        self.assertEqual(self.value("await mcp_everything.echo(message='a')"), "'a'")
        self.assertEqual(self.value("mcp_everything.echo.sync(message='b')"), "'b'")
        self.assertEqual(self.value("mcp_everything.echo_sync(message='c')"), "'c'")
        self.assertEqual(self.value("from mcp.servers.everything import echo\nawait echo(message='d')"), "'d'")
        self.assertEqual(self.value("import mcp.servers.everything as ev\nev.echo.sync(message='e')"), "'e'")
        self.assertEqual(self.value("await call_tool('everything', 'echo', {'message': 'f'})"), "'f'")
        self.assertEqual(self.value("await call_tool('everything', 'echo', message='g')"), "'g'")
        self.assertEqual(self.value("runtime.call_tool_sync('everything', 'echo', {'message': 'h'})"), "'h'")
        self.assertEqual(self.value("runtime.call_tool_sync('mcp_everything', 'echo', message='i')"), "'i'")
        self.assertEqual(self.value("from mcp.servers.everything import *\nadd.sync(a=1, b=1)"), "{'sum': 2}")
        self.assertEqual(self.value("from mcp import servers\nservers.everything.echo.sync(message='j')"), "'j'")

    def test_forgotten_await(self):
        value = self.value("mcp_everything.echo(message='x')")
        self.assertIn("<coroutine object", value)
        self.assertIn("put await before the call", value)
        self.assertEqual(self.rt.run("1").stderr, "")  # no "never awaited" warning later

    def test_rpc_frames(self):
        before = len(self.rt.rpcs)
        cell = self.run_ok("await mcp_everything.echo(message='x')")
        rpc = [r for r in self.rt.rpcs[before:] if r["method"] == "call_tool"][-1]
        self.assertEqual(rpc["exec"], cell.id)
        self.assertEqual(rpc["params"], {"server": "everything", "tool": "echo",
                                         "arguments": {"message": "x"}})
        self.assertIsInstance(rpc["id"], int)

    def test_results(self):
        self.assertEqual(self.value("await mcp_everything.add(a=1, b=2)"), "{'sum': 3}")
        self.assertEqual(self.value("r = await mcp_everything.get_image()\n"
                                    "(r[0], type(r[1]).__name__, r[1].mime_type, len(r[1].data))"),
                         f"('a picture', 'Image', 'image/png', {len(PNG)})")
        self.assertEqual(self.value("r = await mcp_everything.resources()\n[x['type'] for x in r]"),
                         "['resource', 'resource_link']")

    def test_raw(self):
        value = self.value("r = await mcp_everything.echo(message='x', raw=True)\nimport json; json.dumps(r)")
        self.assertEqual(json.loads(eval(value)), {"content": [{"type": "text", "text": "x"}]})
        self.assertEqual(self.value("(await call_tool('everything', 'fail', raw=True))['isError']"), "True")
        # the tool has an argument named raw: the flag becomes raw_
        self.assertEqual(self.value("await mcp_everything.configure(address={'street': 's'}, raw=True)"),
                         "{'got': {'address': {'street': 's'}, 'raw': True}}")
        self.assertEqual(self.value("(await mcp_everything.configure(address={}, raw_=True))['content']"),
                         "[]")

    def test_tool_error(self):
        cell = self.rt.run("x = 1\nawait mcp_everything.fail()")
        self.assertEqual(cell.status, "error")
        self.assertTrue(cell.error.endswith("mcp.ToolError: everything.fail: boom: bad input\n"), cell.error)
        self.assertIn(f'File "<cell {cell.id}>", line 2', cell.error)
        self.assertNotIn("_proxy", cell.error)
        self.assertNotIn("_results", cell.error)
        value = self.value("try:\n    mcp_everything.fail.sync()\nexcept ToolError as e:\n"
                           "    err = e\n(err.server, err.tool, err.message, str(err), isinstance(err, MCPError))")
        self.assertEqual(value, "('everything', 'fail', 'boom: bad input', "
                                "'everything.fail: boom: bad input', True)")

    def test_bridge_error(self):
        cell = self.rt.run("await call_tool('nope', 'x', {})")
        self.assertEqual(cell.status, "error")
        self.assertIn("mcp.BridgeError: unknown server 'nope'; start it or check the name", cell.error)
        cell = self.rt.run("runtime.list_tools_sync('nope')")
        self.assertIn("unknown MCP server 'nope'", cell.error)

    def test_argument_errors(self):
        cell = self.rt.run("await mcp_everything.echo()")
        self.assertIn("TypeError: mcp_everything.echo() missing required keyword argument: message",
                      cell.error)
        cell = self.rt.run("mcp_everything.configure.sync(address={}, colour='red')")
        self.assertIn("unexpected keyword argument 'colour'", cell.error)
        cell = self.rt.run("import datetime\nmcp_everything.echo.sync(message=datetime.date.today())")
        self.assertIn("TypeError: call_tool: argument 'message' cannot be sent as JSON", cell.error)
        cell = self.rt.run("mcp_everything.nosuch")
        self.assertIn("has no tool 'nosuch'", cell.error)
        cell = self.rt.run("mcp_everything.ech")
        self.assertIn("did you mean echo", cell.error)

    def test_gather_50_in_flight(self):
        self.run_ok("mcp_everything.echo")  # tool list fetched and cached
        self.rt.held.clear()
        self.rt.hold = lambda rpc: rpc["method"] == "call_tool"
        try:
            cell = self.rt.start("import asyncio\nr = await asyncio.gather("
                                 "*(mcp_everything.echo(message=str(i)) for i in range(50)))\nr[:3], len(r)")
            self.rt.wait_held(50)
            self.assertIsNone(cell.done)
            self.assertEqual(len({r["id"] for r in self.rt.held}), 50)
            for rpc in reversed(self.rt.held):   # answer in reverse order
                self.rt.answer(rpc)
            self.rt.wait(cell)
        finally:
            self.rt.hold = None
        self.assertEqual(cell.value, "(['0', '1', '2'], 50)")

    def test_gather_waits_for_a_free_slot(self):
        """A cell that gathers more calls than MAX_IN_FLIGHT never has more
        than that many unanswered: each answer lets one more go."""
        from mcp._channel import MAX_IN_FLIGHT
        n = MAX_IN_FLIGHT + 36
        self.run_ok("mcp_everything.echo")
        self.rt.held.clear()
        self.rt.hold = lambda rpc: rpc["method"] == "call_tool"
        most = 0
        try:
            cell = self.rt.start("import asyncio\nr = await asyncio.gather("
                                 f"*(mcp_everything.echo(message=str(i)) for i in range({n})))\nlen(set(r))")
            self.rt.wait_held(MAX_IN_FLIGHT)
            for answered in range(n):
                self.rt.wait_held(answered + 1)
                with self.rt._held_cond:
                    most = max(most, len(self.rt.held) - answered)
                self.rt.answer(self.rt.held[answered])
            self.rt.wait(cell)
        finally:
            self.rt.hold = None
        self.assertEqual(cell.value, str(n))
        self.assertEqual(most, MAX_IN_FLIGHT)

    def test_rpc_failed_when_cell_interrupted(self):
        self.run_ok("mcp_everything.echo")
        self.rt.held.clear()
        self.rt.hold = lambda rpc: rpc["method"] == "call_tool"
        try:
            cell = self.rt.start("r = mcp_everything.echo.sync(message='never')")
            self.rt.wait_held(1)
            self.rt.interrupt(cell)
            self.rt.wait(cell, 10)
            self.assertEqual(cell.status, "interrupted")
            self.rt.answer(self.rt.held[0])  # a late answer is ignored
        finally:
            self.rt.hold = None
        self.assertEqual(self.value("await mcp_everything.echo(message='next')"), "'next'")

    def test_naming(self):
        names = self.value("dir(mcp_my_server_v2)")
        self.assertEqual(eval(names), sorted(["get_item", "get_item_2", "get_item_3", "class_",
                                              "_2fa", "list_tools", "cafe", "get_item_4"]))
        for pyname, original in [("get_item", "get-item"), ("get_item_2", "get.item"),
                                 ("get_item_3", "get item"), ("class_", "class"), ("_2fa", "2fa"),
                                 ("list_tools", "list_tools"), ("cafe", "café"),
                                 ("get_item_4", "get_item")]:
            with self.subTest(pyname=pyname):
                self.assertEqual(self.value(f"mcp_my_server_v2.{pyname}.sync()"), repr(f"called {original}"))
        self.assertEqual(self.value("await call_tool('my-server.v2', 'get item')"), "'called get item'")
        self.assertEqual(self.value("from mcp.servers.my_server_v2 import class_\nclass_.tool_name"), "'class'")

    def test_signature_and_help(self):
        sig = self.value("import inspect\nstr(inspect.signature(mcp_everything.configure))")
        self.assertEqual(eval(sig), "(*, mode: Literal['fast', 'slow'] = 'fast', count: int = None, "
                                    "address: dict, tags: list[str] = None, user_id: Optional[str] = None, "
                                    "class_: str = None, raw: bool = None, raw_: bool = False)")
        self.assertEqual(self.value("str(inspect.signature(mcp_everything.add.sync))"),
                         "'(*, a: float, b: float, raw: bool = False) -> dict'")
        out = self.run_ok("help(mcp_everything.echo)").stdout
        self.assertIn("async echo(*, message: str, raw: bool = False)", out)
        self.assertIn("Echoes back the input.", out)
        self.assertIn("message (str, required): Message to echo", out)
        self.assertEqual(self.value("mcp_everything.echo.__name__"), "'echo'")
        self.assertEqual(self.value("inspect.iscoroutinefunction(mcp_everything.echo)"), "True")

    def test_list_and_query_docs(self):
        tools = eval(self.value("[t['name'] for t in await runtime.list_tools('everything')]"))
        self.assertEqual(tools, [t["name"] for t in TOOLS["everything"]])
        self.assertEqual(self.value("runtime.list_tools_sync('my-server.v2')[1]['python']"),
                         "'mcp_my_server_v2.get_item_2'")
        doc = eval(self.value("runtime.query_tool_docs_sync('everything', 'echo')"))
        self.assertEqual(doc, {"server": "everything", "serverAlias": "everything", "tool": "echo",
                               "toolAlias": "echo", "python": "mcp_everything.echo",
                               "summary": "Echoes back the input.",
                               "description": "Echoes back the input.\nSecond line."})
        full = eval(self.value("await runtime.query_tool_docs('everything', 'add', detail='full')"))
        self.assertEqual(full["signature"], "mcp_everything.add(*, a: float, b: float, raw: bool = False) -> dict")
        self.assertIn("outputSchema", full)
        docs = eval(self.value("runtime.query_tool_docs_sync('my-server.v2')"))
        self.assertEqual(len(docs), len(TOOLS["my-server.v2"]))
        cell = self.rt.run("runtime.query_tool_docs_sync('everything', 'nope')")
        self.assertIn("has no tool 'nope'", cell.error)

    def test_search(self):
        results = eval(self.value("await runtime.search_tool_docs('echo', limit=3)"))
        self.assertEqual(results[0], {"server": "everything", "serverAlias": "everything", "tool": "echo",
                                      "toolAlias": "echo", "python": "mcp_everything.echo",
                                      "summary": "Echoes back the input.", "score": 10,
                                      "description": "Echoes back the input.\nSecond line."})
        self.assertEqual(results[1]["python"], "mcp_my_server_v2.get_item_2")
        self.assertEqual(results[-1], {"server": "broken", "tool": None, "unavailable": "failed to start"})
        full = eval(self.value("runtime.search_tool_docs_sync('echo', limit=1, detail='full')"))
        self.assertIn("inputSchema", full[0])
        # The limit is honoured exactly, servers that could not be searched
        # included; every result has server and tool (the Python bridge's keys).
        self.assertEqual(len(full), 1)
        self.assertTrue(all("server" in r and "tool" in r for r in results), results)
        rpc = [r for r in self.rt.rpcs if r["method"] == "search_tools"][-1]
        self.assertEqual(rpc["params"], {"query": "echo", "limit": 1, "detail": "full"})

    def test_search_cut_note(self):
        # A query cut to its budget: the host's note comes first, outside
        # the limit, and its Python names are still fetched for the hits.
        results = eval(self.value("runtime.search_tool_docs_sync('cut ' + 'word ' * 500, limit=1)"))
        self.assertEqual(results[0], {"server": None, "tool": None,
                                      "note": "the query was cut to its first and last 32 words"})
        self.assertEqual(results[1]["python"], "mcp_everything.echo")
        self.assertEqual(len(results), 2)

    def test_search_stale_hit(self):
        # A hit from a listing saved before its server's entry changed keeps
        # its mark, and its server's tools are not fetched for the Python
        # names (that would wait for the server to start).
        self.run_ok("mcp._proxy.find_server('my-server.v2').forget()")
        before = len(self.rt.rpcs)
        results = eval(self.value("runtime.search_tool_docs_sync('stale')"))
        self.assertEqual(results[0]["stale"], "listed before the server's entry changed")
        self.assertTrue(results[0]["python"].startswith("mcp_my_server_v2.get_item"), results[0])
        self.assertEqual([r["method"] for r in self.rt.rpcs[before:]], ["search_tools"])

    def test_servers(self):
        self.assertEqual(self.value("runtime.discovered_servers()"), "('everything', 'my-server.v2')")
        detailed = eval(self.value("runtime.discovered_servers(detailed=True)"))
        self.assertEqual(detailed[1], {"name": "my-server.v2", "description": "Awkward names",
                                       "python": "mcp_my_server_v2"})
        self.assertEqual(self.value("await runtime.list_servers()"), "('everything', 'my-server.v2')")
        listed = eval(self.value("runtime.list_servers_sync(detailed=True)"))
        self.assertEqual(listed[0], {"name": "everything", "description": "Reference test server",
                                     "running": True, "python": "mcp_everything"})
        desc = eval(self.value("runtime.describe_server('everything')"))
        self.assertEqual((desc["python"], desc["module"]), ("mcp_everything", "mcp.servers.everything"))
        self.assertEqual(desc["tools"][0]["python"], "mcp_everything.echo")
        self.assertEqual(self.value("runtime.start_servers_sync('my-server.v2')"),
                         "[{'name': 'my-server.v2', 'ok': True}]")
        self.assertIn("mcp_everything", self.value("repr(mcp_everything)"))

    def test_manual(self):
        text = eval(self.value("runtime.capability_summary()"))
        for needle in ["everything (mcp_everything)", "search_tool_docs", "asyncio.gather",
                       "ToolError", "display(", "raw=True"]:
            self.assertIn(needle, text)
        out = self.run_ok("help(runtime)").stdout
        for name in ["discovered_servers", "list_servers_sync", "query_tool_docs",
                     "search_tool_docs_sync", "capability_summary", "call_tool_sync", "describe_server"]:
            self.assertIn(name, out)

    def test_display(self):
        png64 = base64.b64encode(PNG).decode()
        cell = self.run_ok(f"import base64\npng = base64.b64decode({png64!r})\nprint('before')\n"
                           "display(png)\nprint('after')")
        self.assertEqual([f["t"] for f in cell.frames], ["out", "image", "out", "done"])
        self.assertEqual(cell.images[0]["mime"], "image/png")
        self.assertEqual(base64.b64decode(cell.images[0]["data"]), PNG)
        cell = self.run_ok("display(await mcp_everything.get_image())")
        self.assertEqual(base64.b64decode(cell.images[0]["data"]), PNG)
        cell = self.run_ok("open('/tmp/cb-test.png', 'wb').write(png)\nimport pathlib\n"
                           "display('/tmp/cb-test.png', pathlib.Path('/tmp/cb-test.png'))\n"
                           "import os; os.unlink('/tmp/cb-test.png')")
        self.assertEqual(len(cell.images), 2)
        cell = self.run_ok("display(b'\\xff\\xd8\\xff\\xe0fakejpeg')")
        self.assertEqual(cell.images[0]["mime"], "image/jpeg")
        cell = self.run_ok("class Figure:\n    def savefig(self, buf, format, bbox_inches):\n"
                           "        buf.write(png)\nFigure.__module__ = 'matplotlib.figure'\n"
                           "display(Figure())")
        self.assertEqual(base64.b64decode(cell.images[0]["data"]), PNG)
        cell = self.rt.run("display(b'not an image')")
        self.assertIn("ValueError", cell.error)
        cell = self.rt.run("display(42)")
        self.assertIn("TypeError", cell.error)

    def test_large_result(self):
        size = 64 << 20
        self.assertEqual(self.value(f"r = await mcp_everything.big(size={size})\nlen(r), r[:3]"),
                         f"({size}, 'yyy')")
        self.assertEqual(self.value("del r\n1"), "1")

    @unittest.skipIf(COMMAND, "the marker file lives in the runtime's own container")
    def test_rpc_from_thread_after_cell_ends(self):
        mark = os.path.join(tempfile.mkdtemp(), "called")
        self.run_ok("import threading, time\nerrors = []\ndef later():\n    time.sleep(0.2)\n"
                    "    try:\n        mcp_everything.echo.sync(message='x')\n"
                    "    except Exception as e:\n        errors.append(e)\n"
                    f"    open({mark!r}, 'w').close()\n"
                    "th = threading.Thread(target=later)\nth.start()")
        self.rt.wait_file(mark)  # the thread called between cells
        value = self.value("th.join()\ntype(errors[0]).__name__, 'only while a cell runs' in str(errors[0])")
        self.assertEqual(value, "('BridgeError', True)")

    def test_toon_bound_when_present(self):
        has = self.value("import importlib.util\nimportlib.util.find_spec('mcp.toon') is not None")
        bound = self.value("'toon' in globals()")
        self.assertEqual(bound, has)
        if has == "True":
            self.assertEqual(self.value("type(toon([{'a': 1, 'b': 2}])).__name__"), "'str'")
            self.assertEqual(self.value("import mcp.toon\ntoon is mcp.toon.toon"), "True")


if __name__ == "__main__":
    unittest.main()
