"""Tool results become Python values (mcp._results), in-process."""

import base64
import unittest

from mcp._results import Image, ToolError, convert
from tests.harness import PNG


class ConvertTest(unittest.TestCase):
    def test_structured_first(self):
        r = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"a": 1}}
        self.assertEqual(convert(r, "s", "t"), {"a": 1})

    def test_single_text(self):
        self.assertEqual(convert({"content": [{"type": "text", "text": "hi"}]}, "s", "t"), "hi")

    def test_list(self):
        r = {"content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "u", "mimeType": "text/plain", "text": "x"}},
            {"type": "resource", "resource": {"uri": "v", "blob": base64.b64encode(b"\0").decode()}},
            {"type": "resource_link", "uri": "w", "name": "n", "mimeType": "text/plain"},
        ]}
        text, image, res, blob, link = convert(r, "s", "t")
        self.assertEqual(text, "a")
        self.assertIsInstance(image, Image)
        self.assertEqual((image.data, image.mime_type), (PNG, "image/png"))
        self.assertEqual(res, {"type": "resource", "uri": "u", "mime_type": "text/plain", "text": "x"})
        self.assertEqual(blob["data"], b"\0")
        self.assertEqual(link, {"type": "resource_link", "uri": "w", "name": "n",
                                "mime_type": "text/plain"})

    def test_empty(self):
        self.assertEqual(convert({"content": []}, "s", "t"), [])

    def test_error(self):
        r = {"content": [{"type": "text", "text": "boom"}], "isError": True}
        with self.assertRaises(ToolError) as ctx:
            convert(r, "srv", "tool")
        err = ctx.exception
        self.assertEqual(str(err), "srv.tool: boom")
        self.assertEqual((err.server, err.tool, err.message, err.result), ("srv", "tool", "boom", r))
        self.assertIs(convert(r, "srv", "tool", raw=True), r)


if __name__ == "__main__":
    unittest.main()
