"""The test client: mocks, recorded effects, every kind of call (the Rust SDK's sdk.rs
tests, in Python)."""

from __future__ import annotations

import asyncio
import json

import pytest

from atrium_sdk import (
    AgentCallError,
    App,
    HandlerFailure,
    InvalidInput,
    NoHandler,
    Request,
    Response,
    ToolCallError,
)
from atrium_sdk.testing import TestClient, inbound_envelope, room_message, user_added


def build(app: App) -> App:
    @app.tool("read_note")
    async def read_note(ctx, **args):
        note = await ctx.tools.call("notes.get", args)
        ctx.logger.info("read a note")
        return {
            "note": note,
            "key": ctx.secrets.get("NOTES_KEY"),
            "limit": ctx.config.get("limit"),
            "tenant": ctx.tenant_id,
        }

    @app.tool("ping_tool")
    async def ping_tool(ctx):
        emitted = await ctx.events.emit("note_saved", {"id": 1})
        url = ctx.public_callback_url("/hook")
        page = await ctx.http.get("https://api.example.com/ping")
        return {"wires": emitted.wire_count, "url": url, "status": page.status}

    @app.on_message
    async def on_message(ctx, agent, message):
        await ctx.rooms.post(message.room_id, "seen", from_agent=agent)

    return app


def test_the_test_client_mocks_tools_secrets_settings_and_records_effects(app):
    client = (
        TestClient(build(app))
        .tenant("t-42")
        .grant("notes.read")
        .mock_tool("notes.get", {"text": "hi"}, scopes=["notes.read"])
        .mock_secret("NOTES_KEY", "k")
        .setting("limit", 3)
    )
    out = client.call_tool("read_note", {"id": 7})
    assert out == {"note": {"text": "hi"}, "key": "k", "limit": 3, "tenant": "t-42"}
    assert client.tool_calls == [("notes.get", {"id": 7})]
    assert client.logs[0] == ("info", "read a note")
    assert client.call_tool("read_note", id=8)["note"] == {"text": "hi"}


def test_unmocked_and_ungranted_tools_fail_as_on_the_platform(app):
    build(app)
    with pytest.raises(ToolCallError) as err:
        TestClient(app).call_tool("read_note", {})
    assert err.value.decision == "unmocked"
    with pytest.raises(ToolCallError) as err:
        TestClient(app).mock_tool("notes.get", {}, scopes=["notes.read"]).call_tool("read_note", {})
    assert err.value.needed_scopes == ["notes.read"]
    assert err.value.message == "tool `notes.get` needs scopes notes.read: the tenant has not granted them"
    with pytest.raises(NoHandler) as err:
        TestClient(app).call_tool("nope", {})
    assert err.value.message == "tool `nope`"


def test_events_public_urls_and_egress_in_tests(app):
    build(app)
    client = TestClient(app).mock_http("https://api.example.com/ping", Response(204))
    out = client.call_tool("ping_tool")
    assert out["status"] == 204
    assert out["url"] == "http://127.0.0.1:8787/api/apps/sdk-fixture/public/t/tenant-test/hook"
    assert client.emitted == [("note_saved", {"id": 1})]
    public = TestClient(app).public_route().mock_http("https://api.example.com/ping", Response(204))
    with pytest.raises(AgentCallError):
        public.call_tool("ping_tool")


def test_egress_outside_the_manifest_is_refused_in_tests_too(app):
    @app.tool("ping_tool")
    async def ping_tool(ctx):
        await ctx.http.get("https://evil.example.net/")

    with pytest.raises(HandlerFailure) as err:
        TestClient(app).call_tool("ping_tool")
    assert "not in network.egress_hosts" in err.value.message


def test_mock_rooms_record_every_post(app):
    # As on the host, posting needs `rooms.write` granted to the install.
    built = build(app)
    ungranted = TestClient(built)
    with pytest.raises(ToolCallError) as err:
        ungranted.room_message("writer", room_message("room-9", "@sdk-fixture:writer hi"))
    assert (err.value.decision, err.value.needed_scopes) == ("scope_denied", ["rooms.write"])
    assert len(ungranted.rooms) == 0
    client = TestClient(built).grant("rooms.write")
    client.room_message("writer", room_message("room-9", "@sdk-fixture:writer hi"))
    post = client.rooms.posts[0]
    assert (post.room_id, post.content, post.from_agent, post.metadata) == ("room-9", "seen", "writer", None)
    client.room_message("writer", "@sdk-fixture:writer again")
    assert client.rooms[1].room_id == "room-test"
    assert len(client.rooms) == 2
    assert room_message("r", "hi", ["user:u-1"]).mentions == ["user:u-1"]
    seen = []
    other = App(app.manifest)

    @other.on_message
    def record(ctx, agent, message):
        seen.append(message.mentions)

    TestClient(other).room_message("writer", "**@sdk-fixture:writer** ask @user:5f0c6f1e-1111-4222-8333-444455556666, @nobody")
    assert seen == [["sdk-fixture:writer", "user:5f0c6f1e-1111-4222-8333-444455556666"]]


def test_simulate_event_routes_to_the_handler_or_says_no_handler(app, manifest):
    @app.on_event("contact_changed")
    async def changed(ctx, event):
        return {"from": event.emitter_app_id, "agent": event.target_agent_slug, "payload": event.payload}

    client = TestClient(app)
    assert client.simulate_event("contact_changed", {"id": 3}) == {
        "from": "crm",
        "agent": "writer",
        "payload": {"id": 3},
    }
    # An emitter the manifest does not subscribe to has no subscription to target an agent.
    other = client.simulate_event("contact_changed", {}, emitter_app_id="crm-eu")
    assert (other["from"], other["agent"]) == ("crm-eu", None)
    with pytest.raises(NoHandler) as err:
        TestClient(App(manifest)).simulate_event("contact_changed", {})
    assert err.value.message == "event `contact_changed`"


def test_routes_match_placeholders_and_answer_404_405_400_and_500(app):
    @app.route("GET", "/notes/{id}")
    def note(ctx, request: Request):
        if request.param("id") == "bad":
            raise InvalidInput("no such note id")
        if request.param("id") == "boom":
            raise KeyError("boom")
        if request.param("id") == "none":
            return {"not": "a response"}
        return Response.text(200, f"{request.param('id')} {request.query_param('x')} {request.header('X-Trace')}")

    client = TestClient(app)
    answer = client.request("GET", "/notes/n-1?x=1", headers={"X-Trace": "t"})
    assert (answer.status, answer.body) == (200, b"n-1 1 t")
    assert client.request("POST", "/notes/n-1").status == 405
    assert client.request("POST", "/notes/n-1").body == b"method not allowed"
    assert client.request("GET", "/elsewhere").status == 404
    assert client.request("GET", "/elsewhere").body == b"no such route"
    assert client.request("GET", "/hook").status == 404  # declared but not registered
    bad = client.request("GET", "/notes/bad")
    assert (bad.status, bad.body) == (400, b"no such note id")
    boom = client.request("GET", "/notes/boom")
    assert (boom.status, boom.body) == (500, b"KeyError: 'boom'")
    none = client.request("GET", "/notes/none")
    assert none.status == 500
    assert b"returned dict, not a Response" in none.body


def test_request_and_response_helpers():
    request = Request("POST", "/x", "a=1&b=&c", [("content-type", "application/json")], b'{"k": 1}')
    assert request.json() == {"k": 1}
    assert (request.query_param("a"), request.query_param("b"), request.query_param("c")) == ("1", "", None)
    assert request.header("Content-Type") == "application/json"
    with pytest.raises(InvalidInput) as err:
        Request("POST", "/x", body=b"nope").json()
    assert err.value.message.startswith("the body is not the expected JSON")
    response = Response.json({"a": 1}, status=201).with_header("x-b", "2")
    assert (response.status, response.header("content-type"), response.header("X-B")) == (201, "application/json", "2")
    assert response.json_body() == {"a": 1}
    assert Response.json({"a": object()}).status == 500
    assert Response.text(418, "teapot").text_body() == "teapot"


def test_lifecycle_hooks_schedules_and_users(manifest):
    from atrium_sdk import load_manifest_from_string

    text = manifest.text.replace("on_uninstall: false", "on_uninstall: true\n  on_inbound: true\n  on_user_added: true")
    app = App(load_manifest_from_string(text))
    seen = []

    @app.on_install
    async def install(ctx):
        seen.append("install")

    @app.on_uninstall
    def uninstall(ctx):
        seen.append("uninstall")

    @app.on_inbound
    async def inbound(ctx, envelope):
        seen.append(("inbound", envelope.from_, envelope.subject, envelope.metadata))

    @app.on_user_added
    async def added(ctx, user):
        seen.append(("user", user.display_name, user.email))

    @app.on_schedule("hourly")
    async def hourly(ctx):
        seen.append("hourly")

    client = TestClient(app)
    client.install()
    client.uninstall()
    client.inbound(inbound_envelope(from_="a@b.example", subject="Hi", metadata={"k": 1}))
    client.user_added(user_added("Ada", "ada@example.com"))
    client.schedule("hourly")
    assert seen == [
        "install",
        "uninstall",
        ("inbound", "a@b.example", "Hi", {"k": 1}),
        ("user", "Ada", "ada@example.com"),
        "hourly",
    ]
    with pytest.raises(NoHandler) as err:
        TestClient(App(manifest)).schedule("hourly")
    assert err.value.message == "schedule `hourly`"
    for call, message in [
        (lambda c: c.install(), "on_install"),
        (lambda c: c.uninstall(), "on_uninstall"),
        (lambda c: c.inbound(inbound_envelope()), "on_inbound"),
        (lambda c: c.user_added(user_added()), "on_user_added"),
        (lambda c: c.room_message("writer", "hi"), "on_message"),
    ]:
        with pytest.raises(NoHandler) as err:
            call(TestClient(App(manifest)))
        assert err.value.message == message


def test_the_dev_mock_file(app, tmp_path):
    build(app)
    mocks = tmp_path / "atrium.dev.json"
    mocks.write_text(
        json.dumps(
            {
                "notes.get": {"ok": True, "result": {"text": "from file"}, "scopes": ["notes.read"]},
                "mail.send": {"ok": False, "error": {"decision": "scope_denied", "message": "no mail", "neededScopes": ["mail.send"]}},
            }
        )
    )
    client = TestClient(app).grant(["notes.read"]).mock_file(mocks)
    assert client.call_tool("read_note", {})["note"] == {"text": "from file"}
    with pytest.raises(ToolCallError) as err:
        asyncio.run(client.ctx().tools.call("mail.send", {}))
    assert (err.value.decision, err.value.message, err.value.needed_scopes) == ("scope_denied", "no mail", ["mail.send"])
    for text, message in [
        ("[]", "the mock file must be a JSON object"),
        ('{"c": {}}', "mock `c` needs `ok`: true or false"),
        ("{", "the mock file is not valid JSON"),
        (str(tmp_path / "atrium.dev.jsn"), f"cannot read the mock file {tmp_path / 'atrium.dev.jsn'}: "),
    ]:
        with pytest.raises(ValueError) as err:
            TestClient(app).mock_file(text)
        assert message in str(err.value)
    # A path given as a string, and the file's text, load alike.
    assert TestClient(app).grant("notes.read").mock_file(str(mocks)).call_tool("read_note")["note"] == {"text": "from file"}
    assert TestClient(app).grant("notes.read").mock_file(mocks.read_text()).call_tool("read_note")["note"] == {"text": "from file"}


def test_tool_arguments_are_bound_and_checked(app):
    @app.tool("read_note")
    def read_note(ctx, id: int, tags: list[str] | None = None, ratio: float = 1.0, strict: bool = False):
        return {"id": id, "tags": tags, "ratio": ratio, "strict": strict}

    client = TestClient(app)
    assert client.call_tool("read_note", id=3, ratio=2) == {"id": 3, "tags": None, "ratio": 2.0, "strict": False}
    cases = [
        ({}, "missing a required argument: 'id'"),
        ({"id": 1, "colour": "red"}, "got an unexpected keyword argument 'colour'"),
        ({"id": "3"}, "`id` must be an integer, got a string"),
        ({"id": 1, "tags": "a"}, "`tags` must be an array or null, got a string"),
        ({"id": 1, "strict": 1}, "`strict` must be true or false, got a number"),
        ({"id": True}, "`id` must be an integer, got a boolean"),
    ]
    for args, message in cases:
        with pytest.raises(InvalidInput) as err:
            client.call_tool("read_note", args)
        assert err.value.message == f"the arguments do not match: {message}"
    with pytest.raises(InvalidInput) as err:
        client.call_tool("read_note", id=object())
    assert err.value.message.startswith("the arguments do not serialize: ")
    with pytest.raises(InvalidInput) as err:
        app.call_tool(client.ctx(), "read_note", "[1]")
    assert err.value.message == "the arguments must be a JSON object"
    with pytest.raises(InvalidInput) as err:
        app.call_tool(client.ctx(), "read_note", "{")
    assert err.value.message.startswith("the arguments are not valid JSON")


def test_json_numbers_are_given_as_the_annotated_type(app):
    seen = []

    @app.tool("read_note")
    def read_note(ctx, id: int, ratio: float | None = None, either: int | float = 0):
        seen.append((id, ratio, either))
        return None

    client = TestClient(app)
    client.call_tool("read_note", id=3.0, ratio=2, either=1.5)
    client.call_tool("read_note", id=4, either=2.0)
    assert seen == [(3, 2.0, 1.5), (4, None, 2.0)]
    assert [type(v) for v in seen[0]] == [int, float, float]
    assert type(seen[1][2]) is float  # a union naming the value's own type keeps it
    with pytest.raises(InvalidInput) as err:
        client.call_tool("read_note", id=3.5)
    assert err.value.message == "the arguments do not match: `id` must be an integer, got a number"


def test_results_must_serialize(app):
    @app.tool("read_note")
    def read_note(ctx):
        return {"when": object()}

    @app.on_event("contact_changed")
    async def changed(ctx, event):
        return {1, 2}

    client = TestClient(app)
    with pytest.raises(HandlerFailure) as err:
        client.call_tool("read_note")
    assert err.value.message == "the result does not serialize: Object of type object is not JSON serializable"
    with pytest.raises(HandlerFailure) as err:
        client.simulate_event("contact_changed", {})
    assert err.value.message == "the result does not serialize: Object of type set is not JSON serializable"


def test_a_capability_the_host_does_not_offer_answers_not_available(app):
    @app.tool("ping_tool")
    async def fallbacks(ctx):
        out = {}
        try:
            await ctx.events.emit("note_saved", {"id": 1})
        except AgentCallError as e:
            out["emit"] = (e.not_available, e.reason)
        try:
            await ctx.rooms.post("room-1", "hi", from_agent="writer")
        except ToolCallError as e:
            out["post"] = (e.not_available, e.decision, e.message)
        return out

    client = TestClient(app).grant("rooms.write").without("events.emit", "rooms.post")
    out = client.call_tool("ping_tool")
    assert out["emit"] == [
        "events.emit",
        "not_available: `events.emit` is not available on this host",
    ]
    assert out["post"] == [
        "rooms.post",
        "not_available",
        "`rooms.post` is not available on this host",
    ]
    assert client.emitted == [] and len(client.rooms) == 0
    # Nothing is unavailable unless the test says so; other refusals carry no capability.
    assert TestClient(app).grant("rooms.write").call_tool("ping_tool") == {}
    assert AgentCallError("no grant: none").not_available is None
    assert ToolCallError("rooms.post", "not_member", "x").not_available is None
    with pytest.raises(ValueError, match="agent.tell"):
        TestClient(app).without("agent.tell")
