"""Code written for the Python code-execution bridge keeps working: its
documented helpers, dictionary keys and globals (see docs/migration.md; e2e/compat_python_bridge_test.go runs
its README snippet against real servers)."""

import unittest

from tests.harness import RuntimeTestCase


class PeerNamesTest(RuntimeTestCase):
    def value(self, code):
        return eval(self.run_ok(code).value)

    def test_loaded_metadata_is_the_running_servers(self):
        loaded = self.value("runtime.list_loaded_server_metadata()")
        self.assertEqual([s["name"] for s in loaded], ["everything"])   # the only one running
        first = loaded[0]
        self.assertEqual((first["alias"], first["cwd"]), ("everything", None))
        echo = first["tools"][0]
        self.assertEqual((echo["name"], echo["alias"], echo["description"]),
                         ("echo", "echo", "Echoes back the input.\nSecond line."))
        self.assertEqual(echo["input_schema"]["required"], ["message"])

    def test_describe_server_keys(self):
        desc = self.value("runtime.describe_server('my-server.v2')")
        self.assertEqual((desc["name"], desc["alias"], desc["python"]),
                         ("my-server.v2", "my_server_v2", "mcp_my_server_v2"))
        self.assertEqual([t["alias"] for t in desc["tools"]][:2], ["get_item", "get_item_2"])
        self.assertEqual(desc["tools"][1]["name"], "get.item")

    def test_docs_by_tool_alias(self):
        summaries = self.value("await runtime.query_tool_docs('my-server.v2')")
        self.assertEqual(summaries[1]["toolAlias"], "get_item_2")
        detailed = self.value("await runtime.query_tool_docs('my-server.v2', tool='get_item_2', detail='FULL')")
        self.assertEqual((detailed["tool"], detailed["serverAlias"]), ("get.item", "my_server_v2"))
        self.assertIn("inputSchema", detailed)

    def test_globals(self):
        self.assertEqual(self.value("await mcp_servers['my-server.v2'].get_item_2()"), "called get.item")
        self.assertEqual(self.value("await mcp.runtime.call_tool('everything', 'echo', {'message': 'm'})"), "m")
        self.assertEqual(self.value("sorted(mcp_servers)"), ["everything", "my-server.v2"])
        self.assertEqual(self.value("[t['name'] for t in await mcp_everything.list_tools()][:1]"), ["echo"])
        self.assertEqual(self.value("runtime.list_tools_sync('everything')[0]['alias']"), "echo")

    def test_list_tools_needs_a_server(self):
        for code in ("runtime.list_tools_sync()", "await runtime.list_tools()"):
            cell = self.rt.run(f"try:\n    {code}\nexcept runtime.MCPError as e:\n    print('MCPError:', e)\n")
            self.assertEqual(cell.status, "ok", cell)
            self.assertIn("MCPError: list_tools needs a server name", cell.stdout)


if __name__ == "__main__":
    unittest.main()
