"""`ctx` against the test backend: every member, with the host's refusals."""

from __future__ import annotations

import pytest

from atrium_sdk import (
    AgentCallError,
    App,
    HandlerFailure,
    Response,
    RoomPost,
    SenderType,
    ToolCallError,
)
from atrium_sdk._driver import drive
from atrium_sdk.testing import TestClient


@pytest.fixture
def client(app) -> TestClient:
    return TestClient(app)


def test_call_facts(app):
    ctx = TestClient(app, tenant_id="t-42", chain_depth=3).ctx()
    assert (ctx.tenant_id, ctx.app_id, ctx.app_version, ctx.call_id, ctx.chain_depth) == (
        "t-42",
        "sdk-fixture",
        "0.1.0",
        "call-test",
        3,
    )
    assert ctx.visited_agents == []
    assert ctx.is_public_route is False


def test_tools_call_answers_the_result_and_records_the_call(client):
    client.grant("notes.read").mock_tool("notes.get", {"text": "hi"}, scopes=["notes.read"])
    ctx = client.ctx()
    assert drive(ctx.tools.call("notes.get", {"id": 7})) == {"text": "hi"}
    assert drive(ctx.tools.call("notes.get", id=8)) == {"text": "hi"}
    assert client.tool_calls == [("notes.get", {"id": 7}), ("notes.get", {"id": 8})]


def test_tools_call_refusals_are_tool_call_errors(client):
    ctx = client.ctx()
    with pytest.raises(ToolCallError) as err:
        drive(ctx.tools.call("notes.get", {}))
    assert (err.value.tool_name, err.value.decision) == ("notes.get", "unmocked")
    assert err.value.message == "tool `notes.get` is not mocked"

    client.mock_tool("notes.get", {}, scopes=["notes.read", "notes.admin"])
    with pytest.raises(ToolCallError) as err:
        drive(ctx.tools.call("notes.get", {}))
    assert err.value.decision == "scope_denied"
    assert err.value.needed_scopes == ["notes.read", "notes.admin"]
    assert err.value.message == (
        "tool `notes.get` needs scopes notes.read, notes.admin: add notes.admin to "
        "required_scopes so the tenant can grant them"
    )
    assert str(err.value) == (
        "tool call `notes.get` failed (scope_denied): " + err.value.message
        + " [needed scopes: notes.read, notes.admin]"
    )

    client.mock_tool_error("mail.send", "network_error", "mail is down")
    with pytest.raises(ToolCallError) as err:
        drive(ctx.tools.call("mail.send", {}))
    assert (err.value.decision, err.value.message) == ("network_error", "mail is down")

    with pytest.raises(ToolCallError) as err:
        drive(ctx.tools.call("notes.get", {"when": object()}))
    assert (err.value.decision, err.value.message) == (
        "invalid_arguments",
        "the arguments do not serialize: Object of type object is not JSON serializable",
    )


def test_tools_call_arguments_must_be_an_object_as_the_host_says(client):
    ctx = client.ctx()
    with pytest.raises(ToolCallError) as err:
        drive(ctx.tools.call("notes.get", [1, 2]))
    # The host's words (the sandbox module), not a TypeError of the SDK.
    assert (err.value.decision, err.value.message) == (
        "invalid_arguments",
        "the arguments must be a JSON object",
    )
    with pytest.raises(ToolCallError) as err:
        drive(ctx.tools.call("notes.get", [1], id=2))
    assert err.value.message == (
        "the arguments (list) cannot be merged with keyword arguments: pass one dict, or "
        "keyword arguments only"
    )
    client.mock_tool("notes.get", {})
    assert drive(ctx.tools.call("notes.get")) == {}
    assert client.tool_calls[-1] == ("notes.get", {})


def test_secrets_get_answers_none_on_any_failure(client):
    client.mock_secret("NOTES_KEY", "k").mock_secret("BROKEN", RuntimeError("network down"))
    secrets = client.ctx().secrets
    assert secrets.get("NOTES_KEY") == "k"
    assert secrets.get("UNSET") is None
    assert secrets.get("BROKEN") is None  # the platform failed: None, never an exception
    for bad in ("notes_key", "1KEY", "", "K" * 65, "KEY-1", None, 7):
        assert secrets.get(bad) is None  # type: ignore[arg-type]
    assert secrets.get("K" * 64) is None  # well-formed, not set


def test_a_malformed_secret_key_is_logged_with_the_hosts_words(client):
    client.mock_secret("notes_key", "never read")
    assert client.ctx().secrets.get("notes_key") is None
    assert client.logs == [
        (
            "warn",
            "secrets.get(`notes_key`): a secret key must match ^[A-Z][A-Z0-9_]{0,63}$; "
            "returning none",
        )
    ]


def test_config_get_and_all(client):
    client.setting("limit", 3).setting("name", "Acme").setting("flags", {"a": [1]})
    config = client.ctx().config
    assert config.get("limit") == 3
    assert config.get("missing") is None
    assert config.get("missing", 10) == 10
    assert config["name"] == "Acme"
    assert "flags" in config and "missing" not in config
    with pytest.raises(KeyError):
        config["missing"]
    assert config.all() == {"limit": 3, "name": "Acme", "flags": {"a": [1]}}


def test_rooms_post_is_recorded_and_checked(client):
    ctx = client.ctx()
    with pytest.raises(ToolCallError) as err:
        drive(ctx.rooms.post("room-1", "hello", from_agent="writer"))
    assert (err.value.decision, err.value.needed_scopes) == ("scope_denied", ["rooms.write"])
    assert err.value.message == (
        "tool `rooms.post` needs scopes rooms.write: "
        "add rooms.write to required_scopes so the tenant can grant them"
    )
    client.grant("rooms.write")
    post = drive(ctx.rooms.post("room-1", "hello @crm:bot", from_agent="writer", metadata={"k": 1}))
    assert isinstance(post, RoomPost)
    assert post.message.sender_ref == "sdk-fixture:writer"
    assert post.message.sender_display == "Writer"
    assert post.message.sender_type is SenderType.AGENT
    assert post.message.mentions == ["crm:bot"]
    assert post.message.metadata == {"k": 1}
    assert [(p.room_id, p.content, p.from_agent, p.metadata) for p in client.rooms] == [
        ("room-1", "hello @crm:bot", "writer", {"k": 1})
    ]
    refusals = [
        (dict(content="x", from_agent=""), "invalid_arguments", "from_agent is required"),
        (dict(content="x", from_agent="ghost"), "unknown_agent", "`ghost` is not an agent of this app (declared agents: writer)"),
        (dict(content="   ", from_agent="writer"), "invalid_arguments", "content must not be empty"),
        (dict(content="x" * 20_001, from_agent="writer"), "invalid_arguments", "content has 20001 characters; a room message has at most 20000"),
        (dict(content="x", from_agent="writer", metadata=[1]), "invalid_arguments", "metadata must be a JSON object"),
        (dict(content="x", from_agent="writer", metadata={"at": object()}), "invalid_arguments", "the metadata does not serialize: Object of type object"),
    ]
    for kwargs, decision, message in refusals:
        with pytest.raises(ToolCallError) as err:
            drive(ctx.rooms.post("room-1", **kwargs))
        assert (err.value.tool_name, err.value.decision) == ("rooms.post", decision)
        assert err.value.message.startswith(message), err.value.message
    assert len(client.rooms) == 1


def test_team_delegate_follows_the_team(manifest):
    from atrium_sdk import load_manifest_from_string

    text = manifest.text.replace(
        "agents:\n  - { id: writer, name: Writer, system_prompt: Writes., is_default: true }",
        "agents:\n  - { id: writer, name: Writer, system_prompt: Writes., is_default: true, team: [editor] }\n"
        "  - { id: editor, name: Editor, system_prompt: Edits. }",
    )
    client = TestClient(App(load_manifest_from_string(text))).mock_delegate(
        "editor", lambda prompt, from_agent: f"edited {prompt} for {from_agent}"
    )
    ctx = client.ctx()
    assert drive(ctx.team.delegate("editor", "draft", from_agent="writer")) == "edited draft for writer"
    with pytest.raises(AgentCallError) as err:
        drive(ctx.team.delegate("writer", "draft", from_agent="editor"))
    assert err.value.reason == "team delegation denied: agent `editor` has no team"
    with pytest.raises(AgentCallError) as err:
        drive(ctx.team.delegate("ghost", "x", from_agent="writer"))
    assert err.value.reason == "team delegation denied: `ghost` is not in the team of `writer` (editor)"
    assert client.agent_calls == ["delegate editor"]
    deep = TestClient(client.app).chain_depth(8)
    with pytest.raises(AgentCallError) as err:
        drive(deep.ctx().team.delegate("editor", "x", from_agent="writer"))
    assert err.value.reason == "chain depth exceeded: this call would be hop 9, the limit is 8"


def test_apps_invoke_and_fetch(client):
    from atrium_sdk import FetchResponse

    client.mock_invoke("crm", "bot", "hi from crm").mock_fetch(
        "crm", "/contacts", FetchResponse(200, [("content-type", "application/json")], b'{"n": 2}')
    )
    ctx = client.ctx()
    assert drive(ctx.apps.invoke("crm", "bot", "hello")) == "hi from crm"
    assert drive(ctx.apps.invoke("crm", "other", "hello")) == "[crm:other] hello"
    fetched = drive(ctx.apps.fetch("crm", "/contacts"))
    assert (fetched.status, fetched.json()) == (200, {"n": 2})
    assert drive(ctx.apps.fetch("crm", "/x", "post", body={"a": 1})).status == 200
    with pytest.raises(AgentCallError) as err:
        drive(ctx.apps.fetch("crm", "x"))
    assert err.value.reason == "apps.fetch: the path `x` must start with /"
    with pytest.raises(AgentCallError) as err:
        drive(ctx.apps.fetch("crm", "/x", "TRACE"))
    assert "is not one of GET, POST, PUT, DELETE, PATCH" in err.value.reason
    client.mock_invoke("crm", "locked", AgentCallError("no grant"))
    with pytest.raises(AgentCallError) as err:
        drive(ctx.apps.invoke("crm", "locked", "x"))
    assert err.value.reason == "no grant"
    assert client.agent_calls[:3] == ["invoke crm:bot", "invoke crm:other", "fetch crm GET /contacts"]


def test_events_emit_needs_the_declaration(client):
    ctx = client.ctx()
    result = drive(ctx.events.emit("note_saved", {"id": 1}))
    assert (result.wire_count, result.dispatched, result.failures) == (0, 0, 0)
    assert client.emitted == [("note_saved", {"id": 1})]
    with pytest.raises(AgentCallError) as err:
        drive(ctx.events.emit("note_saved", {"at": {1, 2}}))
    assert err.value.reason == "the payload does not serialize: Object of type set is not JSON serializable"
    drive(ctx.events.emit("note_saved"))  # no payload: an empty object
    assert client.emitted[-1] == ("note_saved", {})
    with pytest.raises(AgentCallError) as err:
        drive(ctx.events.emit("note_lost", {}))
    assert err.value.reason == "event `note_lost` is not declared in the manifest's emits (note_saved)"
    public = TestClient(client.app).public_route()
    with pytest.raises(AgentCallError) as err:
        drive(public.ctx().events.emit("note_saved", {}))
    assert err.value.reason.startswith("events.emit is not available on a public route")


def test_agent_ask(client, bare):
    client.mock_agent("a summary")
    ctx = client.ctx()
    assert drive(ctx.agent.ask("summarise")) == "a summary"
    assert drive(ctx.agent.ask("hi", agent="writer")) == "a summary"
    with pytest.raises(AgentCallError) as err:
        drive(ctx.agent.ask("hi", agent="ghost"))
    assert err.value.reason == "agent `ghost` is not an agent of this app (declared agents: writer)"
    with pytest.raises(AgentCallError) as err:
        drive(TestClient(App(bare)).ctx().agent.ask("hi"))
    assert err.value.reason == "agent.ask: this app declares no agent"
    assert client.agent_calls == ["ask writer", "ask writer"]


def test_commitments_add(client):
    ctx = client.ctx()
    assert drive(ctx.commitments.add("Call back", "About the invoice", "writer", "2026-05-01T09:00:00Z")) == "commitment-1"
    assert client.commitments == [("Call back", "About the invoice", "writer", "2026-05-01T09:00:00Z")]
    with pytest.raises(ToolCallError) as err:
        drive(ctx.commitments.add("Call back", "", "writer", "tomorrow"))
    assert (err.value.tool_name, err.value.decision) == ("commitments.add", "invalid_arguments")
    assert err.value.message.startswith("due_at `tomorrow` is not an ISO-8601 time with an offset")
    with pytest.raises(ToolCallError) as err:
        drive(ctx.commitments.add(" ", "", "writer"))
    assert err.value.message == "title must not be empty"
    with pytest.raises(ToolCallError) as err:
        drive(ctx.commitments.add("T", "", "ghost"))
    assert err.value.decision == "unknown_agent"
    with pytest.raises(ToolCallError) as err:
        drive(ctx.commitments.add("t" * 201, "", "writer"))
    assert err.value.message == "title has 201 characters; a commitment title has at most 200"
    with pytest.raises(ToolCallError) as err:
        drive(ctx.commitments.add("T", "é" * 10_001, "writer"))
    assert err.value.message == "content has 10001 characters; a commitment has at most 10000"
    assert drive(ctx.commitments.add("t" * 200, "é" * 10_000, "writer")) == "commitment-2"


def test_public_callback_url(client):
    ctx = client.ctx()
    assert ctx.public_callback_url("/hook") == (
        "http://127.0.0.1:8787/api/apps/sdk-fixture/public/t/tenant-test/hook"
    )
    with pytest.raises(HandlerFailure) as err:
        ctx.public_callback_url("/notes/1")
    assert err.value.message == "`/notes/1` matches no public route of this app (public routes: /hook)"


def test_logger_writes_every_level(client):
    log = client.ctx().logger
    log.debug("d")
    log.info("i")
    log.warning("w")
    log.warn("w2")
    log.error({"e": 1})
    assert client.logs == [("debug", "d"), ("info", "i"), ("warn", "w"), ("warn", "w2"), ("error", "{'e': 1}")]


def test_http_reaches_only_the_egress_hosts(client):
    client.mock_http("https://api.example.com/ping", Response(204))
    http = client.ctx().http
    assert drive(http.get("https://api.example.com/ping", headers={"x-a": "1"})).status == 204
    assert client.http_requests[0].headers == [("x-a", "1")]
    with pytest.raises(HandlerFailure) as err:
        drive(http.get("https://evil.example.net/"))
    assert err.value.message == (
        "request refused: HttpRequestDenied (`evil.example.net` is not in network.egress_hosts)"
    )
    with pytest.raises(HandlerFailure) as err:
        drive(http.send("POST", "https://api.example.com:8443/other", body="x"))
    assert err.value.message == "no mock response for https://api.example.com:8443/other"


def test_egress_follows_the_hosts_policy(manifest):
    from atrium_sdk import load_manifest_from_string

    text = manifest.text.replace("egress_hosts: [api.example.com]", 'egress_hosts: ["*.bank.example", API.Example.com]')
    client = TestClient(App(load_manifest_from_string(text)))
    http = client.ctx().http
    for url in ("https://api.example.com./x", "http://a.b.bank.example:8080/", "https://API.BANK.example"):
        client.mock_http(url, Response(200))
        assert drive(http.get(url)).status == 200, url
    for url in ("https://bank.example/", "https://evil-bank.example/", "https://example.com/"):
        with pytest.raises(HandlerFailure) as err:
            drive(http.get(url))
        assert err.value.message.endswith("is not in network.egress_hosts)"), url
