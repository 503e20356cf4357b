"""The handlers of app.py against the SDK's test client (the twin of the tests in
examples/room-bot/src/lib.rs). Run: python -m pytest examples/room-bot-py."""

from __future__ import annotations

import pytest
from atrium_sdk import SenderType, ToolCallError
from atrium_sdk.testing import TestClient, room_message

from app import app


def test_a_mention_gets_an_answer_in_the_same_room():
    client = TestClient(app).grant("rooms.write")
    client.room_message(
        "concierge", room_message("room-1", "**@room-bot-py:concierge** is the build green?")
    )
    posts = client.rooms.posts
    assert len(posts) == 1
    assert posts[0].room_id == "room-1"
    assert posts[0].from_agent == "concierge"
    assert posts[0].content == (
        "@user:00000000-0000-4000-8000-0000000000aa thanks, concierge read: is the build green?"
    )


def test_its_own_agents_are_not_answered():
    client = TestClient(app).grant("rooms.write")
    message = room_message("room-1", "@room-bot-py:concierge hello")
    message.sender_type = SenderType.AGENT
    message.sender_ref = "room-bot-py:scribe"
    client.room_message("concierge", message)
    assert len(client.rooms) == 0


def test_without_rooms_write_the_answer_is_refused():
    client = TestClient(app)
    with pytest.raises(ToolCallError) as err:
        client.room_message("concierge", room_message("room-1", "@room-bot-py:concierge hi"))
    assert err.value.decision == "scope_denied"
    assert len(client.rooms) == 0
