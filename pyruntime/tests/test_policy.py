"""Tools the host's policy denies: the list_tools answer names them with the
error a call gets (PROTOCOL.md); no listing shows them, and a call by
attribute goes to the host like any call (whose gate denies and audits it)
and raises its error, not "has no tool" with suggestions."""

import unittest

from tests.harness import TOOLS, FakeUpstream, Runtime

DENIED = ("tool everything.delete_all was denied: the policy does not allow it; change the "
          "rule in the config (or --policy) to allow it (rule tools.deny \"delete_*\" of "
          "server \"everything\" in /home/u/MCPs/a.json)")


class DenyingUpstream(FakeUpstream):
    """The fake upstream, whose list marks two tools as denied."""

    def handle(self, method, params):
        if method == "list_tools" and params["server"] == "everything":
            return True, TOOLS["everything"] + [
                {"name": "delete_all", "denied": DENIED},
                {"name": "fs/delete", "denied": DENIED.replace("delete_all", "fs/delete")}]
        if method == "call_tool" and params["tool"] in ("delete_all", "fs/delete"):
            self.calls.append(params)  # the host's gate denies it (and audits it)
            return False, {"type": "denied", "kind": "denied",
                           "message": DENIED.replace("delete_all", params["tool"])}
        return super().handle(method, params)


class DeniedToolTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rt = Runtime(upstream=DenyingUpstream())

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()

    def value(self, code):
        cell = self.rt.run(code)
        self.assertEqual(cell.status, "ok", cell)
        return cell.value

    def test_attribute_says_denied_by_policy(self):
        for expr in ["await mcp_everything.delete_all()", "mcp_everything.delete_all_sync()",
                     "mcp_everything.fs_delete.sync()",
                     "from mcp.servers.everything import delete_all\n    await delete_all()",
                     "runtime.query_tool_docs_sync('everything', 'delete_all')"]:
            with self.subTest(expr=expr):
                cell = self.rt.run(f"try:\n    {expr}\nexcept BridgeError as e:\n"
                                   "    print(type(e).__name__, '-', e)")
                self.assertEqual(cell.status, "ok", cell)
                self.assertIn("ToolDenied - tool everything.", cell.stdout)
                self.assertIn("was denied: the policy does not allow it", cell.stdout)
                self.assertIn('(rule tools.deny "delete_*" of server "everything" in /home/u/MCPs/a.json)', cell.stdout)
                self.assertNotIn("has no tool", cell.stdout)

    def test_call_by_attribute_asks_the_host(self):
        """The host's gate decides and audits a call by attribute, as it does
        a call_tool of the same tool: the runtime sends it with its
        arguments, before the tool list is cached (in a loop) and after."""
        self.rt.upstream.calls.clear()
        forget = "from mcp import _proxy\n_proxy.find_server('everything').forget()\n"
        for code in [forget + "await mcp_everything.delete_all(where='all')", "mcp_everything.fs_delete_sync(path='/')",
                     "await call_tool('everything', 'delete_all', {'where': 'all'})"]:
            with self.subTest(code=code):
                body = code.replace("\n", "\n    ")
                cell = self.rt.run(f"try:\n    {body}\nexcept PermissionDenied as e:\n    print('refused')")
                self.assertEqual(cell.status, "ok", cell)
                self.assertIn("refused", cell.stdout)
        self.assertEqual([(c["tool"], c["arguments"]) for c in self.rt.upstream.calls],
                         [("delete_all", {"where": "all"}), ("fs/delete", {"path": "/"}),
                          ("delete_all", {"where": "all"})])

    def test_denied_tools_are_listed_nowhere(self):
        got = self.value("names = [t['name'] for t in await runtime.list_tools('everything')]\n"
                         "(names, [n for n in dir(mcp_everything) if 'delete' in n], len(await mcp_everything.list_tools()))")
        self.assertNotIn("delete", got.split("]")[0])
        self.assertTrue(got.endswith(f"[], {len(TOOLS['everything'])})"), got)

    def test_unknown_name_still_suggests(self):
        cell = self.rt.run("mcp_everything.ecoh")
        self.assertEqual(cell.status, "error")
        self.assertIn("AttributeError: MCP server 'everything' (mcp_everything) has no tool 'ecoh'; did you mean echo?",
                      cell.done["error"])


if __name__ == "__main__":
    unittest.main()
