"""The handlers of app.py against the SDK's test client: python -m pytest."""

import pytest

from atrium_sdk import InvalidInput
from atrium_sdk.testing import TestClient

from app import app


def test_greet_uses_the_install_greeting():
    client = TestClient(app).setting("greeting", "Welcome")
    assert client.call_tool("greet", {"name": "Ada"}) == {"message": "Welcome, Ada!"}


def test_greet_defaults_to_hello():
    assert TestClient(app).call_tool("greet", {"name": "Ada"}) == {"message": "Hello, Ada!"}


def test_greet_greets_the_world_without_a_name():
    assert TestClient(app).call_tool("greet", {}) == {"message": "Hello, world!"}


def test_greet_refuses_an_empty_name():
    with pytest.raises(InvalidInput):
        TestClient(app).call_tool("greet", {"name": " "})
