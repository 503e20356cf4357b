"""Runs a handler to completion, sync or async, without an event loop.

Every call into a component is one synchronous export, and every ctx call that reaches the
platform is a synchronous import wrapped in a coroutine that finishes as soon as it is
awaited. So a handler's coroutine completes in one pass: the driver sends into it until it
returns. A bare `yield` (what `asyncio.sleep(0)` does) is passed over. Anything else a
coroutine yields is an event-loop future (a task, `asyncio.sleep(1)`, a lock, I/O) that nothing
will ever complete inside the component: the driver closes the coroutine and fails the call
with `UnsupportedAwait` instead of hanging until the deadline; asyncio calls that look for the
running loop (`asyncio.sleep(1)`, `gather`, `create_task`) fail the same way. `asyncio.run`
does not work inside a component either (its loop needs a socket pair, which WASI refuses;
measured with componentize-py 0.25.1). The native test client uses the
same driver, so a test fails where the component would.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ._errors import UnsupportedAwait


#: What asyncio says when a coroutine asks for an event loop and none runs.
_NO_LOOP = ("no running event loop", "no current event loop")


def _describe(pending: Any) -> str:
    name = type(pending).__name__
    coro = getattr(pending, "get_coro", None)
    if callable(coro):
        try:
            inner = coro()
            name += f" of {getattr(inner, '__qualname__', inner)}"
        except Exception:  # noqa: BLE001 - only for the message
            pass
    return name


def drive(awaitable: Any) -> Any:
    """The value of an awaitable that completes synchronously."""
    if inspect.iscoroutine(awaitable):
        steps = awaitable
    else:
        steps = awaitable.__await__()
    try:
        while True:
            try:
                pending = steps.send(None)
            except RuntimeError as e:
                # asyncio.sleep(1), asyncio.gather, create_task ... ask for the running loop
                # (asyncio's own words; a handler's other RuntimeErrors pass unchanged).
                if any(words in str(e) for words in _NO_LOOP):
                    raise UnsupportedAwait(
                        _message(f"something that needs an event loop ({e})")
                    ) from e
                raise
            if pending is None:
                continue
            what = _describe(pending)
            steps.close()
            raise UnsupportedAwait(_message(what))
    except StopIteration as done:
        return done.value


def _message(what: str) -> str:
    return (
        f"the handler awaited {what}, which does not complete synchronously: inside an Atrium "
        "component no event loop runs, so a handler may await only ctx calls and its own "
        "coroutines (not tasks, asyncio.sleep with a delay, locks or other I/O)"
    )


def run(handler: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Calls a handler and, when it answers an awaitable, drives it to completion."""
    result = handler(*args, **kwargs)
    if inspect.isawaitable(result):
        return drive(result)
    return result
