"""Signatures and docstrings from JSON Schema (mcp._schema), in-process."""

import inspect
import typing
import unittest

from mcp._schema import ToolSpec, annotation, resolve, type_text
from tests.harness import ADDRESS_SCHEMA


def spec(schema, output=None, name="t"):
    tool = {"name": name, "description": "Does things.", "inputSchema": schema}
    if output is not None:
        tool["outputSchema"] = output
    return ToolSpec("srv", f"mcp_srv.{name}", tool, name)


class AnnotationTest(unittest.TestCase):
    def test_types(self):
        table = [
            ({"type": "string"}, str),
            ({"type": "integer"}, int),
            ({"type": "number"}, float),
            ({"type": "boolean"}, bool),
            ({"type": "array"}, list),
            ({"type": "array", "items": {"type": "integer"}}, list[int]),
            ({"type": "object"}, dict),
            ({"properties": {"a": {}}}, dict),
            ({"enum": ["a", "b"]}, typing.Literal["a", "b"]),
            ({"const": 3}, typing.Literal[3]),
            ({"type": ["string", "null"]}, typing.Optional[str]),
            ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, typing.Union[int, str]),
            ({}, inspect.Parameter.empty),
            ({"enum": [{"a": 1}]}, inspect.Parameter.empty),   # unhashable: no Literal
        ]
        for schema, expected in table:
            with self.subTest(schema=schema):
                self.assertEqual(annotation(schema, schema), expected)

    def test_ref(self):
        root = {"$defs": {"N": {"type": "integer"}, "L": {"type": "array", "items": {"$ref": "#/$defs/N"}}}}
        self.assertEqual(annotation({"$ref": "#/$defs/L"}, root), list[int])
        self.assertEqual(type_text({"$ref": "#/$defs/L"}, root), "list[int]")
        self.assertEqual(resolve({"$ref": "#/$defs/N", "description": "d"}, root),
                         {"type": "integer", "description": "d"})
        self.assertEqual(resolve({"$ref": "#/nowhere"}, root), {"$ref": "#/nowhere"})

    def test_cyclic_ref_terminates(self):
        root = {"$defs": {"Node": {"type": "object", "properties": {
            "child": {"$ref": "#/$defs/Node"}, "name": {"type": "string"}}}}}
        schema = {"type": "object", "properties": {"tree": {"$ref": "#/$defs/Node"}}, **root}
        doc = spec(schema).doc
        self.assertIn("tree (dict)", doc)
        self.assertIn("...", doc)


class SignatureTest(unittest.TestCase):
    def test_required_optional_enum_ref(self):
        s = spec(ADDRESS_SCHEMA)
        sig = s.signature
        params = sig.parameters
        self.assertTrue(all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values()))
        self.assertEqual(list(params), ["mode", "count", "address", "tags", "user_id",
                                        "class_", "raw", "raw_"])
        self.assertIs(params["address"].default, inspect.Parameter.empty)
        self.assertEqual(params["mode"].default, "fast")
        self.assertEqual(params["mode"].annotation, typing.Literal["fast", "slow"])
        self.assertIsNone(params["count"].default)
        self.assertEqual(params["count"].annotation, int)
        self.assertEqual(params["address"].annotation, dict)
        self.assertEqual(params["tags"].annotation, list[str])
        self.assertEqual(params["user_id"].annotation, typing.Optional[str])
        self.assertEqual(params["raw_"].default, False)
        self.assertEqual(s.raw_name, "raw_")

    def test_docstring(self):
        doc = spec(ADDRESS_SCHEMA).doc
        self.assertTrue(doc.startswith("Does things."))
        for line in ['mode ("fast" | "slow", default "fast"): How hard to try.',
                     "address (dict, required): Where to send it.",
                     "    street (str, required): Street and number.",
                     "    city (str)",
                     'user_id (str | None, name "user-id"): The user.',
                     "tags (list[str])",
                     "await mcp_srv.t(address=...)"]:
            self.assertIn(line, doc)

    def test_output_schema(self):
        s = spec({"type": "object", "properties": {}},
                 {"type": "object", "properties": {"sum": {"type": "number", "description": "total"}}})
        self.assertEqual(s.signature.return_annotation, dict)
        self.assertIn("Returns dict (structuredContent):", s.doc)
        self.assertIn("sum (float): total", s.doc)

    def test_prepare(self):
        s = spec(ADDRESS_SCHEMA)
        args, raw = s.prepare({"address": {"street": "x"}, "user_id": "u", "class_": "c",
                               "count": None, "raw": True})
        self.assertEqual(args, {"address": {"street": "x"}, "user-id": "u", "class": "c", "raw": True})
        self.assertFalse(raw)
        args, raw = s.prepare({"address": {}, "raw_": True, **{"user-id": "v"}})
        self.assertEqual(args, {"address": {}, "user-id": "v"})
        self.assertTrue(raw)
        with self.assertRaisesRegex(TypeError, "missing required keyword argument: address"):
            s.prepare({})
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'colour'"):
            s.prepare({"address": {}, "colour": 1})

    def test_lenient_without_properties(self):
        s = spec({"type": "object"})
        self.assertEqual(s.prepare({"anything": 1}), ({"anything": 1}, False))
        s = spec({"type": "object", "properties": {"a": {}}, "additionalProperties": True})
        self.assertEqual(s.prepare({"b": 2}), ({"b": 2}, False))

    def test_no_schema(self):
        s = ToolSpec("srv", "mcp_srv.x", {"name": "x"}, "x")
        self.assertEqual(str(s.signature), "(*, raw: bool = False)")


if __name__ == "__main__":
    unittest.main()
