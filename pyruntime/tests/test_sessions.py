"""runtime.sessions() and runtime.end_session(): the principal's sessions
with handles, which the host keeps (PROTOCOL.md, methods ``sessions`` and
``end_session``); the runtime asks and hands the answer over as data."""

import unittest

from tests.harness import FakeUpstream, Runtime, RuntimeTestCase


class SessionsUpstream(FakeUpstream):
    """A host with two sessions of the principal, the asking cell's first."""

    def __init__(self):
        super().__init__()
        self.asked = []
        self.live = [{"tag": "s-0123456789abcdef", "running": True, "age_seconds": 9, "idle_seconds": 0, "current": True},
                     {"tag": "s-fedcba9876543210", "running": False, "age_seconds": 5, "idle_seconds": 5, "current": False}]

    def handle(self, method, params):
        if method == "sessions":
            self.asked.append((method, params))
            return True, list(self.live)
        if method == "end_session":
            self.asked.append((method, params))
            before = len(self.live)
            self.live = [s for s in self.live if s["tag"] != params["session"] or s["current"]]
            if len(self.live) == before:
                return False, {"type": "BridgeError", "message": "no session of yours is that", "kind": "internal"}
            return True, {"ended": True}
        return super().handle(method, params)


class SessionsTest(RuntimeTestCase):
    @classmethod
    def setUpClass(cls):
        cls.upstream = SessionsUpstream()
        cls.rt = Runtime(upstream=cls.upstream)

    def test_list_end_and_sync_twins(self):
        value = self.run_ok(
            "s = await runtime.sessions()\n"
            "other = [x['tag'] for x in s if not x['current']][0]\n"
            "ended = await runtime.end_session(other)\n"
            "(len(s), ended, [x['tag'] for x in runtime.sessions_sync()])").value
        self.assertEqual(eval(value), (2, {"ended": True}, ["s-0123456789abcdef"]))
        self.assertEqual(self.upstream.asked[:2], [("sessions", {}), ("end_session", {"session": "s-fedcba9876543210"})])
        value = self.run_ok(
            "try:\n    runtime.end_session_sync('s-nothing')\nexcept BridgeError as e:\n    r = str(e)\nr").value
        self.assertIn("no session of yours", value)

    def test_listed(self):
        from mcp import runtime
        for name in ("sessions", "sessions_sync", "end_session", "end_session_sync"):
            self.assertIn(name, runtime.__all__)
        self.assertIn("not its handle", runtime.sessions.__doc__)


if __name__ == "__main__":
    unittest.main()
