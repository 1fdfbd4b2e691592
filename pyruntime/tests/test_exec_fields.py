"""The optional fields of exec and done frames: the output budget and its
spill files (limit / spill), final values as JSON (json), stale tool lists
(stale); and output that reaches the host while a cell still runs."""

import ast
import unittest

from tests.harness import TOOLS, FakeUpstream, Runtime, RuntimeTestCase


class SpillTest(unittest.TestCase):
    """A stream over the budget is saved whole to a file in SPILL_DIR."""

    @classmethod
    def setUpClass(cls):
        cls.rt = Runtime()
        # A private SPILL_DIR, made inside the runtime (which may run in a
        # container of its own).
        cls.dir = cls.value_of(cls.rt, "import os, tempfile, mcp._output as _o\n"
                                       "_o.SPILL_DIR = os.path.join(tempfile.mkdtemp(), 'output')\n"
                                       "_o.SPILL_DIR")

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()
        assert not cls.rt.late, f"frames after done: {cls.rt.late[:3]}"

    @staticmethod
    def value_of(rt, code):
        cell = rt.run(code)
        assert cell.status == "ok", cell
        return ast.literal_eval(cell.value)

    def value(self, code):
        return self.value_of(self.rt, code)

    def read(self, path):
        return self.value(f"open({path!r}, encoding='utf-8').read()")

    def spill(self, code, limit=100):
        cell = self.rt.run(code, limit=limit)
        self.assertEqual(cell.status, "ok", cell)
        return cell, cell.done.get("spill")

    def test_within_the_budget_no_file(self):
        cell, spill = self.spill("print('x' * 99)")  # 100 characters with the newline
        self.assertIsNone(spill)
        self.assertFalse(any(f.startswith(f"cell-{cell.id}-") for f in self.value(
            "os.listdir(_o.SPILL_DIR) if os.path.isdir(_o.SPILL_DIR) else []")))

    def test_no_limit_no_file(self):
        cell = self.rt.run("print('x' * 500)")
        self.assertNotIn("spill", cell.done)

    def test_over_the_budget_everything_is_saved(self):
        cell, spill = self.spill("import os, sys\nprint('a' * 60)\nos.write(1, b'b' * 60 + b'\\n')\n"
                                 "print('c' * 60)\nprint('e' * 30, file=sys.stderr)")
        self.assertEqual(list(spill), ["stdout"])  # stderr stayed within the budget
        entry = spill["stdout"]
        self.assertEqual(entry["path"], f"{self.dir}/cell-{cell.id}-stdout.txt")
        self.assertNotIn("error", entry)
        self.assertEqual(entry["chars"], len(cell.stdout))
        self.assertEqual(self.read(entry["path"]), cell.stdout)
        self.assertEqual(cell.stdout, "a" * 60 + "\n" + "b" * 60 + "\n" + "c" * 60 + "\n")

    def test_characters_not_bytes(self):
        _, spill = self.spill("print('é' * 99)")  # 198 bytes, 100 characters
        self.assertIsNone(spill)
        cell, spill = self.spill("print('é' * 150)")
        self.assertEqual(spill["stdout"]["chars"], 151)
        self.assertEqual(self.read(spill["stdout"]["path"]), "é" * 150 + "\n")

    def test_both_streams(self):
        cell, spill = self.spill("import sys\nprint('o' * 200)\nprint('e' * 300, file=sys.stderr)")
        self.assertEqual(self.read(spill["stdout"]["path"]), cell.stdout)
        self.assertEqual(self.read(spill["stderr"]["path"]), cell.stderr)
        self.assertTrue(spill["stderr"]["path"].endswith(f"cell-{cell.id}-stderr.txt"))

    def test_large_output(self):
        size = 3 << 20
        cell, spill = self.spill(f"print('x' * {size})", limit=20000)
        self.assertEqual(spill["stdout"]["chars"], size + 1)
        self.assertEqual(self.value(f"os.path.getsize({spill['stdout']['path']!r})"), size + 1)

    def test_a_file_of_that_name_is_kept(self):
        next_id = self.rt._next_id + 1  # the cell after the one that makes the file
        mine = f"{self.dir}/cell-{next_id}-stdout.txt"
        self.value(f"os.makedirs(_o.SPILL_DIR, exist_ok=True)\nopen({mine!r}, 'w').write('mine')")
        cell, spill = self.spill("print('y' * 200)")
        self.assertEqual(cell.id, next_id)
        self.assertEqual(spill["stdout"]["path"], f"{self.dir}/cell-{next_id}-stdout-2.txt")
        self.assertEqual(self.read(mine), "mine")

    def test_a_file_that_cannot_be_made_is_reported(self):
        self.value("_o.SPILL_DIR = '/dev/null/output'\n1")
        try:
            cell, spill = self.spill("print('z' * 200)")
        finally:
            self.value(f"_o.SPILL_DIR = {self.dir!r}\n1")
        entry = spill["stdout"]
        self.assertNotIn("path", entry)
        self.assertEqual(entry["chars"], 0)
        self.assertIn("could not create a file for it in /dev/null/output", entry["error"])
        self.assertEqual(len(cell.stdout), 201)  # the output itself is whole

    def test_a_file_stops_at_its_cap(self):
        self.value("_o.SPILL_MAX = 1000\n1")
        try:
            cell, spill = self.spill("print('w' * 5000)")
        finally:
            self.value("_o.SPILL_MAX = 32 << 20\n1")
        entry = spill["stdout"]
        self.assertEqual(entry["chars"], 1000)
        self.assertIn("at most 1,000 bytes", entry["error"])
        self.assertEqual(self.read(entry["path"]), "w" * 1000)
        self.assertEqual(len(cell.stdout), 5001)


class TOONValueTest(RuntimeTestCase):
    """With ``render: "toon"`` a final value that is JSON data comes as its
    TOON text instead of its repr; any other value keeps its repr."""

    def done(self, code, **fields):
        return self.run_ok(code, **fields).done

    def test_records(self):
        done = self.done("[{'id': 1, 'name': 'a'}, {'id': 2, 'name': 'b'}]", render="toon")
        self.assertEqual(done["value"], "[2]{id,name}:\n  1,a\n  2,b")
        self.assertNotIn("json", done)

    def test_only_when_asked(self):
        self.assertEqual(self.done("[1, 2]")["value"], "[1, 2]")
        self.assertIsNone(self.done("print(1)", render="toon")["value"])
        self.assertIsNone(self.done("None", render="toon")["value"])

    def test_json_values(self):
        from mcp.toon import toon
        for code, want in [("'text'", "text"), ("3", 3), ("2.5", 2.5), ("True", True),
                           ("{'a': None, 'b': [1, {'c': 'd'}]}", {"a": None, "b": [1, {"c": "d"}]}),
                           ("10 ** 30", 10 ** 30), ("'é\\u2713'", "é\u2713")]:
            with self.subTest(code=code):
                self.assertEqual(self.done(code, render="toon")["value"], toon(want))

    def test_not_json(self):
        deep = "[" * 150 + "]" * 150
        for code in ["(1, 2)", "{1: 'a'}", "float('nan')", "{'a': {1, 2}}", "10 ** 2000",
                     "object()", deep, f"'x' * {(1 << 20) + 1}", "[float('inf')]",
                     "import collections\ncollections.OrderedDict(a=1)"]:
            with self.subTest(code=code[:40]):
                done = self.done(code, render="toon")
                plain = self.done(code)
                self.assertEqual(done["value"], plain["value"])

    def test_structured_tool_result(self):
        done = self.done("await mcp_everything.add(a=1, b=2)", render="toon")
        self.assertEqual(done["value"], "sum: 3")


class GrowingUpstream(FakeUpstream):
    """The fake upstream, with a tool list that a test can change."""

    def __init__(self):
        super().__init__()
        self.tools = list(TOOLS["everything"])

    def handle(self, method, params):
        if method == "list_tools" and params["server"] == "everything":
            return True, self.tools
        if method == "call_tool" and params["tool"] == "fresh":
            return True, {"content": [{"type": "text", "text": "fresh result"}]}
        return super().handle(method, params)


class StaleTest(unittest.TestCase):
    """The exec frame's ``stale`` drops cached tool lists before the cell."""

    def setUp(self):
        self.upstream = GrowingUpstream()
        self.rt = Runtime(upstream=self.upstream)

    def tearDown(self):
        self.rt.close()

    def value(self, code, **fields):
        cell = self.rt.run(code, **fields)
        self.assertEqual(cell.status, "ok", cell)
        return cell.value

    def list_calls(self):
        return sum(1 for r in self.rt.rpcs if r["method"] == "list_tools")

    def test_stale_lists_are_fetched_again(self):
        self.value("from mcp.servers.everything import echo\nkept = mcp_everything.echo\necho.sync(message='x')")
        self.upstream.tools.append({"name": "fresh", "description": "Added later.",
                                    "inputSchema": {"type": "object"}})
        fetched = self.list_calls()
        self.assertEqual(self.value("hasattr(mcp_everything, 'fresh')"), "False")  # still cached
        self.assertEqual(self.list_calls(), fetched)

        self.assertEqual(self.value("mcp_everything.fresh.sync()", stale=["everything"]), "'fresh result'")
        self.assertEqual(self.list_calls(), fetched + 1)
        self.assertEqual(self.value("from mcp.servers.everything import fresh\nawait fresh()"), "'fresh result'")
        self.assertIn("'fresh'", self.value("[d['tool'] for d in runtime.query_tool_docs_sync('everything')]"))
        self.assertEqual(self.value("kept.sync(message='still works')"), "'still works'")

    def test_unknown_names_are_ignored(self):
        self.assertEqual(self.value("1", stale=["nope", 3, None]), "1")
        self.assertEqual(self.value("1", stale="everything"), "1")


class LiveOutputTest(RuntimeTestCase):
    """Output printed before a long pause reaches the host while the cell runs."""

    def test_line_before_sleep_arrives_during_the_cell(self):
        cell = self.rt.start("print('working')\nimport time\ntime.sleep(60)")
        self.rt.wait_output(cell, "working", timeout=30)
        self.assertIsNone(cell.done)  # still sleeping
        self.rt.interrupt(cell)
        self.assertEqual(self.rt.wait(cell).status, "interrupted")


if __name__ == "__main__":
    unittest.main()
