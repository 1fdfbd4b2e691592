"""One definition, two calling conventions (mcp._twin), with a fake channel."""

import asyncio
import inspect
import unittest
from concurrent.futures import Future

from mcp import _channel
from mcp._results import BridgeError
from mcp._twin import twin


class FakeChannel:
    """Answers requests from a dict: method -> value or exception."""

    def __init__(self, answers):
        self.answers = answers
        self.sent = []

    def request(self, method, params):
        self.sent.append((method, params))
        future = Future()
        answer = self.answers[method]
        answer = answer(params) if callable(answer) else answer
        if isinstance(answer, BaseException):
            future.set_exception(answer)
        else:
            future.set_result(answer)
        return future

    def request_async(self, method, params):
        """The channel's awaitable form: an asyncio future of the running loop."""
        return asyncio.wrap_future(self.request(method, params))


def _double(x, *, label="n"):
    """Doubles ``x`` on the host."""
    value = yield ("double", {"x": x})
    return {label: value}


def _all(xs):
    return (yield [("double", {"x": x}) for x in xs])


def _caught():
    try:
        yield ("broken", {})
    except BridgeError as exc:
        return f"caught: {exc}"


def _composed(x):
    first = yield from _double(x)
    return (yield from _double(first["n"]))


double, every, caught, composed = twin(_double, "double"), twin(_all), twin(_caught), twin(_composed)


class TwinTest(unittest.TestCase):
    def setUp(self):
        self.channel = FakeChannel({"double": lambda p: p["x"] * 2,
                                    "broken": BridgeError("upstream down")})
        self.saved, _channel._channel = _channel._channel, self.channel

    def tearDown(self):
        _channel._channel = self.saved

    def both(self, fn, *args, **kwargs):
        """The async result and the blocking one, which must agree."""
        got = asyncio.run(fn(*args, **kwargs))
        self.assertEqual(fn.sync(*args, **kwargs), got)
        return got

    def test_one_definition_gives_both(self):
        self.assertEqual(self.both(double, 2, label="v"), {"v": 4})
        self.assertEqual(self.channel.sent, [("double", {"x": 2})] * 2)
        self.assertTrue(inspect.iscoroutinefunction(double))
        self.assertFalse(inspect.iscoroutinefunction(double.sync))

    def test_names_signature_and_docs(self):
        self.assertEqual((double.__name__, double.sync.__name__), ("double", "double_sync"))
        self.assertEqual(str(inspect.signature(double)), "(x, *, label='n')")
        self.assertEqual(inspect.signature(double.sync), inspect.signature(double))
        self.assertEqual(double.sync.__doc__, "Doubles ``x`` on the host.")

    def test_a_list_of_requests_answers_with_values_and_errors(self):
        self.assertEqual(self.both(every, [1, 2, 3]), [2, 4, 6])
        self.channel.answers["double"] = lambda p: p["x"] * 2 if p["x"] else BridgeError("zero")
        for answers in (asyncio.run(every([1, 0])), every.sync([1, 0])):
            self.assertEqual(answers[0], 2)
            self.assertIsInstance(answers[1], BridgeError)

    def test_a_failed_request_is_raised_in_the_plan(self):
        self.assertEqual(self.both(caught), "caught: upstream down")
        with self.assertRaises(BridgeError):
            asyncio.run(twin(lambda: (yield ("broken", {})))())

    def test_plans_compose(self):
        self.assertEqual(self.both(composed, 3), {"n": 12})


if __name__ == "__main__":
    unittest.main()
