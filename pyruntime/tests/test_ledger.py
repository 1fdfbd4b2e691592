"""runtime.calls(): the ledger of this cell's calls and the previous cell's,
which the host keeps (PROTOCOL.md, method ``calls``); the runtime asks for it
and hands it to the code as plain data."""

import unittest

from tests.harness import FakeUpstream, Runtime, RuntimeTestCase


class LedgerUpstream(FakeUpstream):
    """A host that keeps a ledger of the cells' tool calls, as the real one
    does: an exec frame starts a new cell (the runtime sends none of its
    own, so the test says when one starts)."""

    def __init__(self):
        super().__init__()
        self.cells = []
        self.asked = []

    def new_cell(self):
        self.cells.append([])

    def handle(self, method, params):
        if method == "calls":
            self.asked.append(params)
            current = self.ledger(self.cells[-1])
            previous = self.ledger(self.cells[-2]) if len(self.cells) > 1 else None
            return True, {"current": current, "previous": previous}
        if method == "call_tool":
            ok, value = super().handle(method, params)
            state = "ok" if ok and not value.get("isError") else ("tool_error" if ok else "error")
            entry = {"seq": len(self.cells[-1]) + 1, "kind": "tool", "server": params["server"],
                     "tool": params["tool"], "state": state, "duration_ms": 1.5}
            if not ok:
                entry["error_kind"] = value.get("kind") or value["type"]
            self.cells[-1].append(entry)
            return ok, value
        return super().handle(method, params)

    @staticmethod
    def ledger(calls):
        return {"total": len(calls), "calls": calls[-20:], "earlier": {"ok": max(0, len(calls) - 20)} if len(calls) > 20 else {}}


class CallsTest(RuntimeTestCase):
    @classmethod
    def setUpClass(cls):
        cls.upstream = LedgerUpstream()
        cls.rt = Runtime(upstream=cls.upstream)

    def cell(self, code):
        self.upstream.new_cell()
        return self.run_ok(code).value

    def test_current_and_previous(self):
        self.cell("await mcp_everything.echo(message='a')\n"
                  "try:\n    await mcp_everything.fail()\nexcept ToolError:\n    pass")
        value = self.cell(
            "await mcp_everything.add(a=1, b=2)\n"
            "c = await runtime.calls()\n"
            "([(x['seq'], x['tool'], x['state']) for x in c['current']['calls']], c['current']['total'],\n"
            " [(x['tool'], x['state']) for x in c['previous']['calls']], type(c['previous']['calls'][0]['duration_ms']).__name__)")
        self.assertEqual(eval(value), ([(1, "add", "ok")], 1, [("echo", "ok"), ("fail", "tool_error")], "float"))
        self.assertEqual(self.upstream.asked[-1], {})

    def test_sync_twin_and_no_previous(self):
        fresh = LedgerUpstream()
        rt = Runtime(upstream=fresh)
        self.addCleanup(rt.close)
        fresh.new_cell()
        cell = rt.run("c = runtime.calls_sync()\n(c['previous'], c['current'])")
        self.assertEqual(cell.status, "ok", cell)
        self.assertEqual(eval(cell.value), (None, {"total": 0, "calls": [], "earlier": {}}))

    def test_error_kind_and_bound(self):
        value = self.cell(
            "for i in range(21):\n    await mcp_everything.echo(message=str(i))\n"
            "try:\n    await call_tool('nowhere', 'x', {})\nexcept BridgeError:\n    pass\n"
            "c = (await runtime.calls())['current']\n"
            "(c['total'], len(c['calls']), c['earlier'], c['calls'][-1]['state'], c['calls'][-1]['error_kind'])")
        self.assertEqual(eval(value), (22, 20, {"ok": 2}, "error", "unknown_server"))

    def test_listed_and_documented(self):
        from mcp import runtime
        self.assertIn("calls", runtime.__all__)
        self.assertIn("calls_sync", runtime.__all__)
        self.assertIn("cancelled", runtime.calls.__doc__)
        self.assertIn("runtime.calls()", eval(self.cell("runtime.capability_summary()")))


if __name__ == "__main__":
    unittest.main()
