"""Resources, resource templates and prompts from Python (mcp._resources)."""

import base64
import unittest

from tests.harness import FakeUpstream, Runtime, RuntimeTestCase

RESOURCES = [{"uri": f"demo://r/{i}", "name": f"r{i}"} for i in range(7)]


class PagedUpstream(FakeUpstream):
    """A host whose 'everything' has resources in pages of three, templates,
    prompts, and a server 'loop' that hands out the same cursor forever."""

    def __init__(self):
        super().__init__()
        self.reads = []

    def handle(self, method, params):
        if method == "list_resources":
            if params["server"] == "my-server.v2":
                return True, {"resources": [{"uri": "x://1", "name": "one"}], "nextCursor": "again"}
            start = int(params.get("cursor") or 0)
            page = {"resources": RESOURCES[start:start + 3]}
            if start + 3 < len(RESOURCES):
                page["nextCursor"] = str(start + 3)
            return True, page
        if method == "list_resource_templates":
            return True, {"resourceTemplates": [{"uriTemplate": "demo://r/{id}", "name": "r"}]}
        if method == "list_prompts":
            return True, {"prompts": [{"name": "greet", "arguments": [{"name": "who", "required": True}]}]}
        if method == "get_prompt":
            who = (params.get("arguments") or {}).get("who", "?")
            return True, {"messages": [{"role": "user", "content": {"type": "text", "text": f"hi {who}"}}]}
        if method == "read_resource":
            self.reads.append(params)
            uri = params["uri"]
            if uri.startswith("blob:"):
                return True, {"contents": [{"uri": uri, "blob": base64.b64encode(b"\x00\x01bin").decode()}]}
            if uri == "two:":
                return True, {"contents": [{"uri": uri, "text": "a"}, {"uri": uri, "text": "b"}]}
            if uri == "missing:":
                return False, {"type": "upstream", "message": "server 'everything': resource not found"}
            return True, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"text of {uri}"}]}
        if method == "search_tools" and params["query"] == "greeting":
            return True, [{"server": "everything", "tool": "greet", "kind": "prompt", "score": 9,
                           "description": "Say hello."},
                          {"server": "everything", "tool": "r", "kind": "template", "score": 5,
                           "uri": "demo://r/{id}"},
                          {"server": "gone", "tool": "doc", "kind": "resource", "score": 1, "uri": "x://d"}]
        return super().handle(method, params)


class ResourceTest(RuntimeTestCase):
    @classmethod
    def setUpClass(cls):
        cls.rt = Runtime(upstream=PagedUpstream())

    def value(self, code):
        return self.run_ok(code).value

    def test_every_page(self):
        before = len(self.rt.rpcs)
        self.assertEqual(self.value("[r['name'] for r in await runtime.list_resources('everything')]"),
                         repr([f"r{i}" for i in range(7)]))
        pages = [r["params"] for r in self.rt.rpcs[before:] if r["method"] == "list_resources"]
        self.assertEqual(pages, [{"server": "everything"}, {"server": "everything", "cursor": "3"},
                                 {"server": "everything", "cursor": "6"}])
        self.assertEqual(self.value("len(mcp_everything.list_resources_sync())"), "7")

    def test_limit_fetches_only_the_pages_it_needs(self):
        before = len(self.rt.rpcs)
        self.assertEqual(self.value("[r['name'] for r in await mcp_everything.list_resources(limit=4)]"),
                         repr([f"r{i}" for i in range(4)]))
        pages = [r["params"] for r in self.rt.rpcs[before:] if r["method"] == "list_resources"]
        self.assertEqual(pages, [{"server": "everything"}, {"server": "everything", "cursor": "3"}])
        self.assertEqual(self.value("len(runtime.list_resources_sync('everything', limit=3))"), "3")
        self.assertEqual(self.value("len(await runtime.list_prompts('everything', limit=50))"), "1")
        for bad in ("0", "-1", "2.5", "True", "'3'"):
            cell = self.rt.run(f"runtime.list_resources_sync('everything', limit={bad})")
            self.assertEqual(cell.status, "error", bad)
            self.assertIn("limit must be a positive whole number", cell.error)

    def test_repeated_cursor_stops(self):
        cell = self.rt.run("runtime.list_resources_sync('my-server.v2')")
        self.assertEqual(cell.status, "error")
        self.assertIn("sent the cursor 'again' twice", cell.error)

    def test_read_text_blob_and_several(self):
        self.assertEqual(self.value("await mcp_everything.read_resource('demo://r/1')"), "'text of demo://r/1'")
        self.assertEqual(self.value("runtime.read_resource_sync('everything', 'blob:x')"), repr(b"\x00\x01bin"))
        self.assertEqual(self.value("await runtime.read_resource('everything', 'two:')"), "['a', 'b']")
        self.assertEqual(self.value("(await mcp_everything.read_resource('demo://r/1', raw=True))"
                                    "['contents'][0]['mimeType']"), "'text/plain'")

    def test_read_error(self):
        cell = self.rt.run("await mcp_everything.read_resource('missing:')")
        self.assertEqual(cell.status, "error")
        self.assertIn("BridgeError: server 'everything': resource not found", cell.error)

    def test_template(self):
        self.rt.upstream.reads.clear()
        self.run_ok("await mcp_everything.read_resource('demo://r/{id}/{+path}', id='a b', path='x/y')")
        self.assertEqual(self.rt.upstream.reads[-1]["uri"], "demo://r/a%20b/x/y")
        cell = self.rt.run("await mcp_everything.read_resource('demo://r/{id}', other=1)")
        self.assertIn("needs id", cell.error)
        cell = self.rt.run("await mcp_everything.read_resource('demo://r/{id}', id=1, other=1)")
        self.assertIn("has no variable other", cell.error)

    def test_templates_and_prompts(self):
        self.assertEqual(self.value("(await mcp_everything.list_resource_templates())[0]['uriTemplate']"),
                         "'demo://r/{id}'")
        self.assertEqual(self.value("[p['name'] for p in runtime.list_prompts_sync('everything')]"), "['greet']")
        self.assertEqual(self.value("(await mcp_everything.get_prompt('greet', who=3))"
                                    "['messages'][0]['content']['text']"), "'hi 3'")
        rpc = [r for r in self.rt.rpcs if r["method"] == "get_prompt"][-1]
        self.assertEqual(rpc["params"], {"server": "everything", "name": "greet", "arguments": {"who": "3"}})

    def test_helpers_before_the_tool_list_in_a_task(self):
        # Looked up in the event loop before the tools are cached, the helper
        # is a stand-in that resolves once called (the tool list first: a
        # tool of that name would win).
        code = ("runtime.list_tools_sync('everything', refresh=True)\n"
                "from mcp import _proxy\n_proxy.find_server('everything').forget()\n"
                "import asyncio\nasync def go():\n    return await mcp_everything.list_prompts()\n"
                "[p['name'] for p in await asyncio.create_task(go())]")
        self.assertEqual(self.value(code), "['greet']")

    def test_search_finds_resources_and_prompts(self):
        before = len(self.rt.rpcs)
        hits = eval(self.value("await runtime.search_tool_docs('greeting')"))
        self.assertEqual(hits[0], {"kind": "prompt", "server": "everything", "name": "greet", "tool": "greet",
                                   "python": "mcp_everything.get_prompt('greet', ...)",
                                   "summary": "Say hello.", "score": 9, "description": "Say hello."})
        self.assertEqual(hits[1]["python"], "mcp_everything.read_resource('demo://r/{id}', ...)")
        self.assertEqual(hits[2]["python"], "runtime.read_resource('gone', ...)")
        # no tool list is fetched for hits that are not tools
        self.assertEqual([r["method"] for r in self.rt.rpcs[before:]], ["search_tools"])

    def test_unknown_name_still_an_attribute_error(self):
        cell = self.rt.run("mcp_everything.list_resourcez")
        self.assertIn("AttributeError", cell.error)


if __name__ == "__main__":
    unittest.main()
