"""Names become Python identifiers deterministically (mcp._naming)."""

import unittest

from mcp._naming import assign, identifier


class IdentifierTest(unittest.TestCase):
    TABLE = [
        ("echo", "echo"),
        ("getItem", "getItem"),              # case is kept
        ("get-item", "get_item"),
        ("get.item", "get_item"),
        ("get item", "get_item"),
        ("a--b", "a__b"),                    # no collapsing
        ("2fa", "_2fa"),
        ("123", "_123"),
        ("class", "class_"),
        ("None", "None_"),
        ("async", "async_"),
        ("match", "match"),                  # soft keywords are identifiers
        ("café", "cafe"),
        ("Ångström", "Angstrom"),
        ("naïve-résumé", "naive_resume"),
        ("ﬁle", "file"),                     # NFKD compatibility ligature
        ("日本語", "___"),
        ("tool🚀", "tool_"),
        ("", "_"),
        ("_private", "_private"),
        ("__init__", "__init__"),
        ("x/y:z", "x_y_z"),
        ("١٢", "__"),                        # non-ASCII digits are not kept
    ]

    def test_table(self):
        for name, expected in self.TABLE:
            with self.subTest(name=name):
                got = identifier(name)
                self.assertEqual(got, expected)
                self.assertTrue(got.isidentifier() and got.isascii())


class AssignTest(unittest.TestCase):
    TABLE = [
        (["get-item", "get.item", "get item", "get_item"],
         ["get_item", "get_item_2", "get_item_3", "get_item_4"]),
        (["get_item", "get-item"], ["get_item", "get_item_2"]),      # original order wins
        (["a-b", "a_b", "a_b_2"], ["a_b", "a_b_2", "a_b_2_2"]),
        (["class", "class_", "class-"], ["class_", "class__2", "class__3"]),
        (["1", "_1"], ["_1", "_1_2"]),
        (["x", "x"], ["x"]),                                          # duplicates map once
    ]

    def test_table(self):
        for names, expected in self.TABLE:
            with self.subTest(names=names):
                self.assertEqual(list(assign(names).values()), expected)

    def test_deterministic(self):
        names = ["b-1", "b.1", "é", "e", "for"]
        self.assertEqual(assign(names), assign(list(names)))
        self.assertEqual(assign(names), {"b-1": "b_1", "b.1": "b_1_2", "é": "e", "e": "e_2",
                                         "for": "for_"})

    def test_taken(self):
        self.assertEqual(assign(["raw"], taken={"raw"}), {"raw": "raw_2"})


if __name__ == "__main__":
    unittest.main()
