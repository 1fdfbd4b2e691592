"""One definition, two calling conventions: ``async`` and blocking.

A helper that asks the host for something is written once, as a *plan*: a
generator function that yields its requests and is sent their answers::

    def _list_tools(server):
        tools = yield ("list_tools", {"server": server})
        return [t["name"] for t in tools]

    list_tools = twin(_list_tools)       # await list_tools("x")
    list_tools_sync = list_tools.sync    # list_tools_sync("x")

:func:`twin` turns the plan into an ``async`` function, which awaits each
answer (other tasks run meanwhile), with a blocking twin as its ``.sync``
attribute, which waits for each answer. Both have the plan's signature and
docstring. A request is ``(method, params)``; a failed request raises its
error (a :class:`~mcp.BridgeError`) at the ``yield``, so the plan can catch
it. A plan may yield a list of requests: they are all sent at once and the
answer is a list in the same order, holding the value or the exception of
each (like ``asyncio.gather(..., return_exceptions=True)``). Plans compose
with ``yield from``.
"""

from __future__ import annotations  # annotations stay text: no typing import at startup

import functools
from collections.abc import Callable, Generator

from mcp import _channel

__all__ = ["twin", "run_sync", "run_async", "Plan"]

# A plan yields ``(method, params)`` or a list of them and returns its value.
Plan = Generator


def _send(request, asynchronous=False):
    """Send one request, or a list of them; return their futures: asyncio
    futures of the running loop when ``asynchronous``."""
    channel = _channel.get()
    send = channel.request_async if asynchronous else channel.request
    if isinstance(request, list):
        return [send(method, params) for method, params in request]
    method, params = request
    return send(method, params)


def _outcome(future):
    """The value of a finished future, or its exception (for lists)."""
    error = future.exception()
    return error if error is not None else future.result()


def run_sync(plan: Plan) -> object:
    """Run a plan, waiting for each answer."""
    answer, error = None, None
    while True:
        try:
            request = plan.send(answer) if error is None else plan.throw(error)
        except StopIteration as stop:
            return stop.value
        answer, error = None, None
        try:
            sent = _send(request)
            answer = [_outcome(f) for f in sent] if isinstance(sent, list) else sent.result()
        except Exception as exc:  # given to the plan; KeyboardInterrupt is not
            error = exc


async def run_async(plan: Plan) -> object:
    """Run a plan, awaiting each answer."""
    import asyncio
    answer, error = None, None
    while True:
        try:
            request = plan.send(answer) if error is None else plan.throw(error)
        except StopIteration as stop:
            return stop.value
        answer, error = None, None
        try:
            sent = _send(request, asynchronous=True)
            if isinstance(sent, list):
                answer = await asyncio.gather(*sent, return_exceptions=True)
            else:
                answer = await sent
        except Exception as exc:  # given to the plan; cancellation is not
            error = exc


def twin(plan: Callable[..., Plan], name: str | None = None) -> Callable[..., object]:
    """The ``async`` function for ``plan``, with its blocking twin as ``.sync``.
    They are called ``name`` (default: the plan's name) and ``<name>_sync``."""

    @functools.wraps(plan)
    async def run(*args, **kwargs):
        return await run_async(plan(*args, **kwargs))

    @functools.wraps(plan)
    def sync(*args, **kwargs):
        return run_sync(plan(*args, **kwargs))

    if name is not None:
        prefix = run.__qualname__[:-len(run.__name__)]   # "Server." for a method
        run.__name__, run.__qualname__ = name, prefix + name
    sync.__name__ = run.__name__ + "_sync"
    sync.__qualname__ = run.__qualname__ + "_sync"
    run.sync = sync
    return run
