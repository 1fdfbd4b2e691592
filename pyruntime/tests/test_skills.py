"""Skills: the source save_skill takes from the cell history, and reading
workspace files for the host (no channel needed)."""

import linecache
import os
import tempfile
import unittest

from mcp import _files, _skills


def _cell(n, code, ns):
    name = f"<cell {n}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    exec(compile(code, name, "exec"), ns)


class SourceOf(unittest.TestCase):
    def setUp(self):
        self.ns = {"__name__": "__main__", "runtime": object()}
        _skills._namespace, _skills._provided = self.ns, frozenset({"runtime"})

    def test_decorator_default_and_module_constant(self):
        _cell(9001, "import functools\nLIMIT = {'n': 3}\n"
                    "def deco(f):\n    @functools.wraps(f)\n    def w(*a):\n        return f(*a) * 2\n    return w\n", self.ns)
        _cell(9002, "@deco\ndef top(x, k=LIMIT['n']):\n    return x + k + LIMIT['n']\n", self.ns)
        source = _skills.source_of(self.ns["top"], "top")
        fresh = {"__name__": "skills.top"}
        exec(compile(source, "<skill>", "exec"), fresh)
        self.assertEqual(fresh["top"](1), self.ns["top"](1))
        self.assertIn("@deco", source)
        self.assertIn("import functools", source)

    def test_decorator_returning_a_wrapper(self):
        # The user guide promises decorators; one without functools.wraps leaves
        # a wrapper (a closure) under the name: the definition of that name
        # in the cell history is saved, decorator and all.
        _cell(9004, "def shout(f):\n    def wrapper(*a):\n        return f(*a).upper()\n    return wrapper\n", self.ns)
        _cell(9005, "@shout\ndef greet(name):\n    return 'hi ' + name\n", self.ns)
        source = _skills.source_of(self.ns["greet"], "greet")
        fresh = {"__name__": "skills.greet"}
        exec(compile(source, "<skill>", "exec"), fresh)
        self.assertEqual(fresh["greet"]("bo"), "HI BO")
        self.assertIn("@shout\ndef greet", source)
        self.assertIn("def shout(f):", source)

    def test_decorator_returning_an_object(self):
        _cell(9007, "class Counted:\n    def __init__(self, f):\n        self.f, self.n = f, 0\n"
                    "    def __call__(self, *a):\n        self.n += 1\n        return self.f(*a)\n", self.ns)
        _cell(9008, "@Counted\ndef double(x):\n    return 2 * x\n", self.ns)
        source = _skills.source_of(self.ns["double"], "double")
        fresh = {"__name__": "skills.double"}
        exec(compile(source, "<skill>", "exec"), fresh)
        self.assertEqual((fresh["double"](4), fresh["double"].n), (8, 1))

    def test_closure_of_another_function_refused(self):
        _cell(9006, "def make():\n    n = 2\n    def inner():\n        return n\n    return inner\nclo = make()\n", self.ns)
        with self.assertRaisesRegex(_skills.SkillError, "closure over local variables"):
            _skills.source_of(self.ns["clo"], "clo")

    def test_unsaveable_value(self):
        _cell(9003, "import threading\nL = threading.Lock()\ndef f():\n    return L\n", self.ns)
        with self.assertRaisesRegex(_skills.SkillError, "cannot be written as source"):
            _skills.source_of(self.ns["f"], "f")

    def test_not_in_history(self):
        with self.assertRaisesRegex(_skills.SkillError, "not in this session's cells"):
            _skills.source_of(len, "length")


class ReadFile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.old = _files.BASE
        _files.BASE = self.dir

    def tearDown(self):
        _files.BASE = self.old

    def test_reads_and_refuses(self):
        path = os.path.join(self.dir, "a.txt")
        with open(path, "w") as f:
            f.write("abc")
        os.symlink("/etc/hostname", os.path.join(self.dir, "link"))
        got = _files.read_file({"id": 1, "path": path, "max": 10})
        self.assertEqual((got["data"], got["size"]), ("YWJj", 3))
        self.assertIn("over the 2", _files.read_file({"id": 2, "path": path, "max": 2})["error"])
        self.assertIn("symlink", _files.read_file({"id": 3, "path": os.path.join(self.dir, "link"), "max": 10})["error"])
        self.assertTrue(_files.read_file({"id": 4, "path": os.path.join(self.dir, "nope"), "max": 10})["missing"])
        self.assertIn("outside", _files.read_file({"id": 5, "path": "/etc/hostname", "max": 10})["error"])


if __name__ == "__main__":
    unittest.main()
