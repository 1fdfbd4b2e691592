"""Runs every official TOON encode fixture against pyruntime/mcp/toon.py.

Run from the repository root:
    python3 -m unittest discover -s pyruntime/tests -t pyruntime
"""

import decimal
import importlib.util
import json
import math
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "testdata/toon/encode"
TOON_PY = ROOT / "pyruntime/mcp/toon.py"


def _load_toon():
    """Import mcp.toon; fall back to loading the file directly when the mcp
    package is absent, broken, or shadowed by another distribution."""
    try:
        from mcp import toon as mod

        if Path(mod.__file__).resolve() == TOON_PY.resolve():
            return mod.toon
    except Exception:
        pass
    spec = importlib.util.spec_from_file_location("_codebridge_toon", TOON_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.toon


toon = _load_toon()

OPTION_NAMES = {
    "indent": "indent",
    "delimiter": "delimiter",
    "keyFolding": "key_folding",
    "flattenDepth": "flatten_depth",
}


def _kwargs(options):
    kw = {}
    for name, value in (options or {}).items():
        if name not in OPTION_NAMES:
            raise KeyError(f"unknown fixture option {name!r}")
        if name == "flattenDepth" and value in ("Infinity", None):
            value = None
        kw[OPTION_NAMES[name]] = value
    return kw


class TestFixtures(unittest.TestCase):
    def test_fixtures(self):
        files = sorted(FIXTURES.glob("*.json"))
        self.assertTrue(files, f"no fixtures in {FIXTURES}")
        count = 0
        for path in files:
            data = json.loads(path.read_text(encoding="utf-8"))
            self.assertTrue(data["tests"], path.name)
            for case in data["tests"]:
                count += 1
                with self.subTest(f"{path.stem}/{case['name']}"):
                    kw = _kwargs(case.get("options"))
                    if case.get("shouldError"):
                        with self.assertRaises((ValueError, TypeError)):
                            toon(case["input"], **kw)
                    else:
                        self.assertEqual(toon(case["input"], **kw), case["expected"])
        print(f"\n[test_toon] ran {count} encode fixture cases from {len(files)} files")


class TestExtras(unittest.TestCase):
    def test_numbers(self):
        cases = [
            (-0.0, "0"), (1.0, "1"), (1.5, "1.5"), (1e6, "1000000"), (1e-6, "0.000001"),
            (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (1e20, "100000000000000000000"),
            (1e21, "1e+21"), (-1.25e21, "-1.25e+21"), (0.1 + 0.2, "0.30000000000000004"),
            (10**30, "1000000000000000000000000000000"), (math.nan, "null"), (-math.inf, "null"),
            (decimal.Decimal("1.500"), "1.5"), (decimal.Decimal("0.10000000000000000000001"),
                                                "0.10000000000000000000001"),
            (decimal.Decimal("-0"), "0"), (decimal.Decimal("1E+400"), "1e+400"),
            (decimal.Decimal("NaN"), "null"),
        ]
        for value, want in cases:
            with self.subTest(value=value):
                self.assertEqual(toon(value), want)

    def test_host_types(self):
        import dataclasses
        import datetime

        @dataclasses.dataclass
        class P:
            x: int
            y: str

        self.assertEqual(toon([P(1, "a"), P(2, "b")]), "[2]{x,y}:\n  1,a\n  2,b")
        self.assertEqual(toon({"when": datetime.date(2025, 1, 2)}), 'when: 2025-01-02')
        self.assertEqual(toon((1, 2)), "[2]: 1,2")
        self.assertEqual(toon({2: "a", True: "b", None: "c", 1.5: "d"}), '"2": a\ntrue: b\nnull: c\n"1.5": d')
        self.assertEqual(toon(b"hi"), "aGk=")
        self.assertEqual(toon("x\ud800"), "x\ufffd")
        with self.assertRaises(TypeError):
            toon(object())
        loop = []
        loop.append(loop)
        with self.assertRaises(ValueError):
            toon(loop)

    def test_edge_cases(self):
        # Details the fixtures do not cover.
        cases = [
            ({"a": 1, "b": 2}, {}, "a: 1\nb: 2"),
            ([{"a": 1, "b": "x"}, {"b": "y", "a": 2}], {}, "[2]{a,b}:\n  1,x\n  2,y"),
            (["\u00a0x", "x\u3000", "a b"], {}, '[3]: "\u00a0x","x\u3000",a b'),
            (["+5", "5+", "1.", ".5"], {}, '[4]: "+5",5+,1.,.5'),
            ("a\u0001\u001fb", {}, '"a\\u0001\\u001fb"'),
            ([[[1], [{"a": 1}]]], {}, "[1]:\n  - [2]:\n    - [1]: 1\n    - [1]:\n      - a: 1"),
            ([{"x": 1, "t": [{"a": 1}, {"a": 2}]}], {}, "[1]:\n  - x: 1\n    t[2]{a}:\n      1\n      2"),
            ([{"o": {"p": 1}, "q": 2}], {}, "[1]:\n  - o:\n      p: 1\n    q: 2"),
            ({"items": [{"users": [{"id": 1}], "note": "x"}]}, {"indent": 4},
             "items[1]:\n    - users[1]{id}:\n            1\n        note: x"),
            ([{"a": {"b": 1}, "c": 2}], {"key_folding": "safe"}, "[1]:\n  - a.b: 1\n    c: 2"),
            ({"a.b": 0, "l": [{"a": {"b": 1}}]}, {"key_folding": "safe"}, "a.b: 0\nl[1]:\n  - a.b: 1"),
            ({"a": {"x": 1, "b": {"c": 2}}, "a.b.c": 3}, {"key_folding": "safe"},
             "a:\n  x: 1\n  b:\n    c: 2\na.b.c: 3"),
            ({"a": {"b": {"x": 1, "y": 2}}}, {"key_folding": "safe"}, "a.b:\n  x: 1\n  y: 2"),
            ({"a": {"b": {"c": {"d": {"e": 1}}}}}, {"key_folding": "safe", "flatten_depth": 3},
             "a.b.c:\n  d:\n    e: 1"),
            ({"a": "x|y", "b": ["x|y"]}, {"delimiter": "|"}, 'a: "x|y"\nb[1|]: "x|y"'),
            ({"a": [], "b": [[]]}, {"delimiter": "\t"}, "a: []\nb[1\t]:\n  - [0\t]:"),
        ]
        for value, kw, want in cases:
            with self.subTest(value=value, kw=kw):
                self.assertEqual(toon(value, **kw), want)

    def test_bad_options(self):
        for kw in ({"indent": 0}, {"delimiter": ";"}, {"key_folding": "on"}, {"flatten_depth": -1}):
            with self.subTest(kw=kw), self.assertRaises(ValueError):
                toon({}, **kw)

    def test_docstring_is_short(self):
        self.assertLess(len(toon.__doc__.splitlines()), 25)


if __name__ == "__main__":
    unittest.main()
