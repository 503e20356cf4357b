"""Sync and async handlers, and the driver's refusal of awaits that never complete."""

from __future__ import annotations

import asyncio

import pytest

from atrium_sdk import HandlerFailure, InvalidInput, UnsupportedAwait
from atrium_sdk._driver import drive, run
from atrium_sdk.testing import TestClient


def test_sync_and_async_handlers_give_the_same_result(app):
    @app.tool("read_note")
    def sync(ctx, id: int):
        return {"id": id}

    @app.tool("ping_tool")
    async def asynchronous(ctx):
        await asyncio.sleep(0)  # a bare yield is passed over

        async def inner():
            return await ctx.events.emit("note_saved", {})

        return (await inner()).wire_count

    client = TestClient(app)
    assert client.call_tool("read_note", id=1) == {"id": 1}
    assert client.call_tool("ping_tool") == 0


def test_an_await_that_needs_an_event_loop_fails_clearly(app):
    @app.tool("read_note")
    async def sleepy(ctx):
        await asyncio.sleep(0.01)

    with pytest.raises(UnsupportedAwait) as err:
        TestClient(app).call_tool("read_note")
    assert err.value.message.startswith("the handler awaited something that needs an event loop")
    assert "inside an Atrium component no event loop runs" in err.value.message
    assert isinstance(err.value, HandlerFailure)  # the call fails with `failed`


def test_an_awaited_future_that_never_completes_fails_clearly():
    class Pending:
        def __await__(self):
            yield self  # what an event-loop future does while it waits

    closed = []

    async def handler():
        try:
            await Pending()
        finally:
            closed.append(True)

    with pytest.raises(UnsupportedAwait) as err:
        drive(handler())
    assert err.value.message.startswith("the handler awaited Pending, which does not complete synchronously")
    assert closed == [True]  # the coroutine was closed, its finally ran


def test_a_future_inside_a_running_loop_is_refused_too():
    async def inner():
        loop = asyncio.get_running_loop()
        await loop.create_future()

    async def outer():
        return run(inner)

    with pytest.raises(UnsupportedAwait) as err:
        asyncio.run(outer())
    assert "Future" in err.value.message


def test_other_exceptions_become_failures_chained_to_the_original(app):
    @app.tool("read_note")
    async def broken(ctx):
        return {}["missing"]

    @app.tool("ping_tool")
    async def refusing(ctx):
        raise InvalidInput("nope")

    client = TestClient(app)
    with pytest.raises(HandlerFailure) as err:
        client.call_tool("read_note")
    assert err.value.message == "KeyError: 'missing'"
    assert isinstance(err.value.__cause__, KeyError)
    with pytest.raises(InvalidInput):
        client.call_tool("ping_tool")


def test_run_returns_plain_values_and_awaitables():
    assert run(lambda x: x + 1, 1) == 2

    async def twice(x):
        return x * 2

    assert run(twice, 4) == 8


def test_a_handlers_own_runtime_error_is_not_taken_for_a_missing_loop(app):
    @app.tool("read_note")
    async def broken(ctx):
        raise RuntimeError("the event loop of the queue is full")

    with pytest.raises(HandlerFailure) as err:
        TestClient(app).call_tool("read_note")
    assert not isinstance(err.value, UnsupportedAwait)
    assert err.value.message == "RuntimeError: the event loop of the queue is full"
