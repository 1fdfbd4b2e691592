"""Error kinds: the host sends each failed request's kind beside its message
(PROTOCOL.md), and the runtime raises the BridgeError subclass of that kind,
so that code can ``except PermissionDenied``; a kind it does not know, or
none (an older host), is a plain BridgeError, as before."""

import unittest

from mcp import _results
from tests.harness import FakeUpstream, Runtime

# tool name -> the error the fake host answers a call to it with
ERRORS = {
    "echo": {"type": "BridgeError", "kind": "denied", "message": "tool everything.echo was denied"},
    "add": {"type": "BridgeError", "kind": "declined", "message": "the user did not approve it"},
    "get_image": {"type": "BridgeError", "kind": "timeout", "message": "calling tool timed out"},
    "configure": {"type": "BridgeError", "kind": "unknown_tool", "message": "no such tool"},
    "resources": {"type": "BridgeError", "kind": "invalid_arguments", "message": "bad arguments"},
    "big": {"type": "BridgeError", "kind": "upstream", "message": "the server failed"},
    "fail": {"type": "BridgeError", "kind": "unavailable", "message": "the server exited"},
}
EXPECT = {"echo": "PermissionDenied", "add": "PermissionDenied", "get_image": "ToolTimeout",
          "configure": "UnknownTool", "resources": "InvalidArguments", "big": "UpstreamError",
          "fail": "ServerUnavailable"}


class KindedUpstream(FakeUpstream):
    """The fake upstream, whose calls fail with the errors above."""

    def call(self, server, tool, args):
        if server == "everything" and tool in ERRORS:
            return False, ERRORS[tool]
        if tool == "nokind":
            return False, {"type": "BridgeError", "message": "an older host"}
        if tool == "newkind":
            return False, {"type": "BridgeError", "kind": "from_the_future", "message": "a newer host"}
        return super().call(server, tool, args)


class ErrorKindTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rt = Runtime(upstream=KindedUpstream())

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()

    def catch(self, call, clause):
        cell = self.rt.run(f"try:\n    {call}\nexcept {clause} as e:\n"
                           "    print(type(e).__name__, e.kind, isinstance(e, BridgeError), '-', e)")
        self.assertEqual(cell.status, "ok", cell)
        return cell.stdout.strip()

    def test_each_kind_raises_its_class(self):
        for tool, cls in EXPECT.items():
            kind = ERRORS[tool]["kind"]
            for call in [f"await call_tool('everything', {tool!r}, {{}})",
                         f"runtime.call_tool_sync('everything', {tool!r}, {{}})"]:
                with self.subTest(tool=tool, call=call):
                    got = self.catch(call, cls)
                    self.assertEqual(got, f"{cls} {kind} True - {ERRORS[tool]['message']}")

    def test_still_a_bridge_error(self):
        for tool in EXPECT:
            with self.subTest(tool=tool):
                self.assertIn(" True - ", self.catch(f"await call_tool('everything', {tool!r}, {{}})", "BridgeError"))

    def test_by_attribute(self):
        self.assertEqual(self.catch("await mcp_everything.fail()", "UpstreamError"),
                         "ServerUnavailable unavailable True - the server exited")
        self.assertEqual(self.catch("mcp_everything.fail.sync()", "ServerUnavailable"),
                         "ServerUnavailable unavailable True - the server exited")

    def test_no_kind_or_unknown_kind_is_plain(self):
        for tool in ["nokind", "newkind"]:
            with self.subTest(tool=tool):
                got = self.catch(f"await call_tool('my-server.v2', {tool!r}, {{}})", "BridgeError")
                self.assertTrue(got.startswith("BridgeError internal True - "), got)

    def test_exported(self):
        cell = self.rt.run("import mcp\nfrom mcp import runtime as r\n"
                           "print(all(getattr(mcp, n) is getattr(r, n) is globals()[n] for n in "
                           "['PermissionDenied', 'ToolTimeout', 'UnknownTool', 'InvalidArguments', "
                           "'UpstreamError', 'ServerUnavailable', 'PackageError']))\n"
                           "from mcp._proxy import ToolDenied\nprint(issubclass(ToolDenied, PermissionDenied))")
        self.assertEqual(cell.stdout, "True\nTrue\n", cell)


class BridgeErrorTest(unittest.TestCase):
    """bridge_error alone: every kind has a class, and odd frames still raise."""

    def test_every_kind(self):
        for kind, cls in _results.ERROR_KINDS.items():
            err = _results.bridge_error({"type": "BridgeError", "message": "m", "kind": kind})
            self.assertIs(type(err), cls)
            self.assertEqual((err.kind, str(err)), (kind, "m"))
            self.assertIsInstance(err, _results.BridgeError)

    def test_odd_frames(self):
        for error in [None, "text", {}, {"kind": 3}, {"kind": ["denied"], "message": "m"}]:
            err = _results.bridge_error(error)
            self.assertIs(type(err), _results.BridgeError)
            self.assertEqual(err.kind, "internal")


if __name__ == "__main__":
    unittest.main()
