"""Observed result shapes in help() and the docs helpers (issue 26).

The host renders the shape (package shapes) and gives it with the tool in
list_tools's answer (``observed``); the runtime shows it, and help() of a
tool fetches the list afresh so that a call made a moment ago shows.
"""

import copy
import unittest

from mcp._schema import ToolSpec
from tests.harness import TOOLS, FakeUpstream, Runtime, RuntimeTestCase

ECHO = TOOLS["everything"][0]


def doc(tool):
    return ToolSpec("srv", "mcp_srv.t", tool, "t").doc


class ObservedDocTest(unittest.TestCase):
    def test_section(self):
        tool = dict(ECHO, observed={"calls": 3, "errors": 1, "shape": "{id: int, tags: [str]}",
                                    "line": "{id: int, tags: [str]}"})
        text = doc(tool)
        self.assertIn("\nReturns (observed from 3 calls; 1 more raised ToolError):\n"
                      "  {id: int, tags: [str]}\n", text)
        self.assertLess(text.index("Parameters:"), text.index("Returns (observed"))
        self.assertIn("Returns (observed from 1 call):", doc(dict(ECHO, observed={"calls": 1, "shape": "str(text)"})))

    def test_declared_schema_wins(self):
        add = dict(TOOLS["everything"][1], observed={"calls": 2, "shape": "{other: str}"})
        text = doc(add)
        self.assertIn("Returns dict (structuredContent):", text)
        self.assertNotIn("observed", text)
        self.assertNotIn("other", text)

    def test_nothing_observed(self):
        for observed in (None, "{id: int}", {"calls": 2}, {"shape": 5}, []):
            with self.subTest(observed=observed):
                self.assertNotIn("Returns", doc(dict(ECHO, observed=observed)))


class ObservingUpstream(FakeUpstream):
    """A host that observes: list_tools gives echo's shape once it was
    called, with the count of its calls."""

    def handle(self, method, params):
        ok, value = super().handle(method, params)
        if method == "search_tools" and ok:
            value = copy.deepcopy(value)
            value[0]["returns"] = "str(text)"
        if method == "list_tools" and ok:
            value = copy.deepcopy(value)
            n = sum(1 for c in self.calls if c["tool"] == "echo")
            for tool in value:
                if tool["name"] == "echo" and n:
                    tool["observed"] = {"calls": n, "shape": "str(text)", "line": "str(text)"}
        return ok, value


class HelpShowsCallsOfTheSameCellTest(RuntimeTestCase):
    @classmethod
    def setUpClass(cls):
        cls.rt = Runtime(upstream=ObservingUpstream())

    def test_help_after_a_call(self):
        before = self.run_ok("help(mcp_everything.echo)").stdout
        self.assertNotIn("Returns (observed", before)
        out = self.run_ok("await mcp_everything.echo(message='a')\n"
                          "help(mcp_everything.echo)").stdout
        self.assertRegex(out, r"Returns \(observed from 1 call\):\n +str\(text\)\n")
        # a function kept from before, its .sync twin, and a later cell
        out = self.run_ok("e = mcp_everything.echo\n"
                          "mcp_everything.echo.sync(message='b')\n"
                          "help(e.sync)").stdout
        self.assertIn("Returns (observed from 2 calls):", out)
        self.assertIn("\necho(*, message: str", out)   # the blocking twin, not the async one
        docs = self.run_ok("runtime.query_tool_docs_sync('everything', 'echo')").value
        self.assertIn("'returns': 'str(text)'", docs)

    def test_search_hits_carry_the_line(self):
        hits = self.run_ok("[h.get('returns') for h in runtime.search_tool_docs_sync('echo', limit=2)]").value
        self.assertEqual(hits, "['str(text)', None]")

    def test_help_of_other_things_unchanged(self):
        self.assertIn("Help on int object", self.run_ok("help(1)").stdout)
        self.assertIn("Help on", self.run_ok("help(runtime)").stdout)
        self.assertEqual(self.run_ok("help").value, repr(__import__("builtins").help))


if __name__ == "__main__":
    unittest.main()
