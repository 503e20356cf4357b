"""Test helpers: run an app's handlers natively, without building a component, against mock
tools, secrets, settings, rooms, agents and outbound HTTP.

```python
from atrium_sdk.testing import TestClient
from app import app

def test_greet():
    client = TestClient(app).setting("greeting", "Welcome")
    assert client.call_tool("greet", {"name": "Ada"}) == {"message": "Welcome, Ada!"}
```

Every call the app makes is checked by the host's own sandbox rules, run in the validator
module (`atrium_sandbox`), so the decisions and words are the host's: a post from an agent
the manifest does not declare, empty or oversized content, non-object metadata, a delegation
outside the caller's team, an emit of an event not in `emits`, a chain deeper than 8, a call
on a public route that needs a tenant, a host outside `network.egress_hosts`, a malformed
secret key (read as unset, with the host's warning in `logs`). Beyond those, the mocks
answer: a tool that is not mocked fails with decision `unmocked`; a tool mocked with scopes
the test did not `grant` fails with `scope_denied` and the scopes needed.

A handler's failure is raised as the exception that maps to the WIT `handler-error` case:
`InvalidInput`, `ToolCallError`, `AgentCallError`, `HandlerFailure` (any other exception
becomes one, chained to the original), `NoHandler`.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import _sandbox as sandbox
from ._app import App
from ._ctx import Backend, Ctx
from ._errors import CAPABILITIES, HandlerFailure, InvalidInput, ToolCallError
from ._http import OutboundRequest, Request, Response
from ._manifest import Manifest
from ._types import (
    AppEvent,
    CallInfo,
    EmitResult,
    FetchResponse,
    InboundEnvelope,
    LogLevel,
    Registration,
    RoomMessage,
    RoomPost,
    SenderType,
    UserAdded,
)

__all__ = [
    "MockRooms",
    "RecordedPost",
    "TestClient",
    "inbound_envelope",
    "room_message",
    "user_added",
]


@dataclass
class RecordedPost:
    """A recorded `ctx.rooms.post` call."""

    room_id: str
    content: str
    from_agent: str
    metadata: dict[str, Any] | None = None


class MockRooms:
    """Records every `ctx.rooms.post` call (`MockRooms` of the spec)."""

    def __init__(self) -> None:
        self.posts: list[RecordedPost] = []

    def __len__(self) -> int:
        return len(self.posts)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.posts)

    def __getitem__(self, i: int) -> RecordedPost:
        return self.posts[i]


@dataclass
class _MockTool:
    scopes: list[str]
    result: Any = None
    error: ToolCallError | None = None


@dataclass
class _State:
    tools: dict[str, _MockTool] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    granted: set[str] = field(default_factory=set)
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    emitted: list[tuple[str, Any]] = field(default_factory=list)
    logs: list[tuple[str, str]] = field(default_factory=list)
    agent_calls: list[str] = field(default_factory=list)
    commitments: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    http_mocks: dict[str, Response] = field(default_factory=dict)
    http_requests: list[OutboundRequest] = field(default_factory=list)
    answers: dict[tuple[str, ...], Any] = field(default_factory=dict)
    fetches: dict[tuple[str, str, str], FetchResponse] = field(default_factory=dict)
    unavailable: set[str] = field(default_factory=set)


def _answer(answer: Any, *args: Any) -> Any:
    if isinstance(answer, BaseException):
        raise answer
    return answer(*args) if callable(answer) else answer


class _MockBackend(Backend):
    """The mock platform behind a `TestClient`."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    @property
    def manifest(self) -> Manifest:
        return self.client.app.manifest

    @property
    def state(self) -> _State:
        return self.client._state

    def _refuse_unavailable(self, capability: str) -> None:
        if capability in self.state.unavailable:
            sandbox.not_available(self.manifest, capability)

    def _chain(self) -> sandbox.Chain:
        info = self.client.info
        return sandbox.Chain(info.chain_depth, list(info.visited_agents), info.public_route)

    def call_info(self) -> CallInfo:
        return copy.deepcopy(self.client.info)

    def public_callback_url(self, path: str) -> str:
        sandbox.public_callback_path(self.manifest, path)
        info = self.client.info
        return f"http://127.0.0.1:8787/api/apps/{info.app_id}/public/t/{info.tenant_id}{path}"

    def call_tool(self, name: str, args: str) -> str:
        value = sandbox.tool_arguments(self.manifest, name, args)
        self.state.tool_calls.append((name, value))
        tool = self.state.tools.get(name)
        if tool is None:
            raise ToolCallError(name, "unmocked", f"tool `{name}` is not mocked")
        sandbox.tool_scopes(self.manifest, name, tool.scopes, self.state.granted)
        self._refuse_unavailable("tools.call")
        if tool.error is not None:
            raise copy.deepcopy(tool.error)
        return json.dumps(tool.result)

    def secret(self, key: str) -> str | None:
        warning = sandbox.secret_key(self.manifest, key)
        if warning is not None:
            # As the host does: the developer reads why in the log; the key reads as unset.
            self.log(LogLevel.WARN, warning)
            return None
        value = self.state.secrets.get(key)
        if isinstance(value, BaseException):
            raise value
        return value

    def config_get(self, key: str) -> str | None:
        if key not in self.state.settings:
            return None
        return json.dumps(self.state.settings[key])

    def config_all(self) -> str:
        return json.dumps(self.state.settings)

    def room_post(
        self, room_id: str, content: str, from_agent: str, metadata: str | None
    ) -> RoomPost:
        sender_ref, display, meta = sandbox.room_post(
            self.manifest, from_agent, content, metadata, self.state.granted
        )
        self._refuse_unavailable("rooms.post")
        posts = self.client.rooms.posts
        posts.append(
            RecordedPost(room_id, content, from_agent, meta if metadata is not None else None)
        )
        message = RoomMessage(
            id=f"00000000-0000-4000-8000-{len(posts):012x}",
            room_id=room_id,
            tenant_id=self.client.info.tenant_id,
            sender_type=SenderType.AGENT,
            sender_ref=sender_ref,
            sender_display=display,
            content=content,
            mentions=sandbox.extract_mentions(self.manifest, content),
            metadata=meta,
            created_at="2026-01-01T00:00:00Z",
        )
        return RoomPost(message, [])

    def delegate(self, target: str, prompt: str, from_agent: str) -> str:
        info = self.client.info
        sandbox.delegate(self.manifest, self._chain(), target, from_agent)
        self._refuse_unavailable("team.delegate")
        self.state.agent_calls.append(f"delegate {target}")
        if ("delegate", target) in self.state.answers:
            return str(_answer(self.state.answers[("delegate", target)], prompt, from_agent))
        return f"[{info.app_id}:{target}] {prompt}"

    def invoke(self, app: str, agent: str, prompt: str) -> str:
        sandbox.invoke(self.manifest, self._chain(), app, agent)
        self._refuse_unavailable("apps.invoke")
        self.state.agent_calls.append(f"invoke {app}:{agent}")
        if ("invoke", app, agent) in self.state.answers:
            return str(_answer(self.state.answers[("invoke", app, agent)], prompt))
        return f"[{app}:{agent}] {prompt}"

    def fetch(self, app: str, path: str, method: str, body: bytes | None) -> FetchResponse:
        upper = sandbox.fetch(self.manifest, self._chain(), path, method)
        self._refuse_unavailable("apps.fetch")
        self.state.agent_calls.append(f"fetch {app} {upper} {path}")
        mocked = self.state.fetches.get((app, upper, path))
        if mocked is not None:
            return copy.deepcopy(mocked)
        return FetchResponse(200, [], b"{}")

    def emit(self, name: str, payload: str) -> EmitResult:
        value = sandbox.emit(self.manifest, self._chain(), name, payload)
        self._refuse_unavailable("events.emit")
        self.state.emitted.append((name, value))
        return EmitResult(0, 0, 0)

    def ask(self, prompt: str, agent: str | None) -> str:
        slug = sandbox.ask(self.manifest, self._chain(), agent)
        self._refuse_unavailable("agent.ask")
        self.state.agent_calls.append(f"ask {slug}")
        if ("ask", slug) in self.state.answers:
            return str(_answer(self.state.answers[("ask", slug)], prompt))
        return f"[{self.client.info.app_id}:{slug}] {prompt}"

    def add_commitment(
        self, title: str, content: str, from_agent: str, due_at: str | None
    ) -> str:
        sandbox.commitment(self.manifest, title, content, from_agent, due_at)
        self._refuse_unavailable("commitments.add")
        self.state.commitments.append((title, content, from_agent, due_at))
        return f"commitment-{len(self.state.commitments)}"

    def log(self, level: LogLevel, message: str) -> None:
        self.state.logs.append((level.value, message))

    def http_send(self, request: OutboundRequest) -> Response:
        host = sandbox.url_host(request.url)
        if not sandbox.egress_allows(self.manifest, host):
            raise HandlerFailure(
                f"request refused: HttpRequestDenied (`{host}` is not in network.egress_hosts)"
            )
        self.state.http_requests.append(copy.deepcopy(request))
        mocked = self.state.http_mocks.get(request.url)
        if mocked is None:
            raise HandlerFailure(f"no mock response for {request.url}")
        return copy.deepcopy(mocked)


class TestClient:
    """Runs an app natively against mocks. Configuration methods return the client, so they
    chain: `TestClient(app).grant("a.read").mock_tool("a.get", {...}).setting("x", 1)`."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        app: App,
        *,
        tenant_id: str = "tenant-test",
        chain_depth: int = 1,
        public_route: bool = False,
    ) -> None:
        if not isinstance(app, App):
            raise TypeError(f"TestClient takes an App, got {type(app).__name__}")
        self.app = app
        m = app.manifest
        self.info = CallInfo(
            tenant_id=tenant_id,
            app_id=m.app_id,
            app_version=m.version,
            call_id="call-test",
            chain_depth=chain_depth,
            visited_agents=[],
            public_route=public_route,
        )
        #: The room posts the app made.
        self.rooms = MockRooms()
        self._state = _State()
        self._backend = _MockBackend(self)

    # --- configuration ----------------------------------------------------------------------

    def tenant(self, tenant_id: str) -> TestClient:
        """Sets the tenant id the app sees."""
        self.info.tenant_id = tenant_id
        return self

    def chain_depth(self, depth: int, visited_agents: list[str] | None = None) -> TestClient:
        """Sets the chain the app sees (to test the depth limit and cycles)."""
        self.info.chain_depth = depth
        if visited_agents is not None:
            self.info.visited_agents = list(visited_agents)
        return self

    def public_route(self, public: bool = True) -> TestClient:
        """Marks calls as arriving on a public route (no tenant principal)."""
        self.info.public_route = public
        return self

    def without(self, *capabilities: str) -> TestClient:
        """Answers each capability (`"agent.ask"`, `"rooms.post"`, ...) with decision
        `not_available`, as a host that does not offer it does, after the sandbox rules: a
        test of the app's fallback."""
        for c in capabilities:
            if c not in CAPABILITIES:
                raise ValueError(f"`{c}` is not a capability ({', '.join(CAPABILITIES)})")
            self._state.unavailable.add(c)
        return self

    def grant(self, *scopes: str) -> TestClient:
        """Grants scopes to the install (`grant("a", "b")` or `grant(["a", "b"])`)."""
        for s in scopes:
            self._state.granted.update([s] if isinstance(s, str) else s)
        return self

    def mock_tool(self, name: str, result: Any = None, *, scopes: list[str] = ()) -> TestClient:  # type: ignore[assignment]
        """Mocks a platform tool; with `scopes`, the call fails with `scope_denied` unless they
        are granted."""
        self._state.tools[name] = _MockTool(list(scopes), copy.deepcopy(result))
        return self

    def mock_tool_error(
        self,
        name: str,
        decision: str | ToolCallError = "failed",
        message: str = "",
        needed_scopes: list[str] | None = None,
        *,
        scopes: list[str] = (),  # type: ignore[assignment]
    ) -> TestClient:
        """Mocks a platform tool that fails with a `ToolCallError` (given whole or by its
        decision, message and needed scopes)."""
        error = (
            decision
            if isinstance(decision, ToolCallError)
            else ToolCallError(name, decision, message, needed_scopes)
        )
        self._state.tools[name] = _MockTool(list(scopes), None, error)
        return self

    def mock_file(self, file: str | os.PathLike[str]) -> TestClient:
        """Loads mocks from the developer tool's mock file (`atrium.dev.json`): a path or the
        JSON text (a string starting with `{` or `[`). Tool names map to `{"ok": true,
        "result": ...}` or `{"ok": false, "error": {"decision", "message", "neededScopes"}}`,
        with an optional `scopes` list. Raises `ValueError` naming the file or the entry when
        it cannot be read or is malformed."""
        if isinstance(file, str) and file.lstrip()[:1] in ("{", "["):
            text = file
        else:
            try:
                text = Path(file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ValueError(f"cannot read the mock file {os.fspath(file)}: {e}") from None
        for entry in sandbox.mock_file(text):
            error = entry.get("error")
            failure = (
                ToolCallError(
                    entry["name"], error["decision"], error["message"], error["needed_scopes"]
                )
                if error is not None
                else None
            )
            self._state.tools[entry["name"]] = _MockTool(
                entry["scopes"], entry.get("result"), failure
            )
        return self

    def mock_secret(self, key: str, value: str | BaseException) -> TestClient:
        """Sets a secret (an exception makes the platform fail: `get` still answers None)."""
        self._state.secrets[key] = value  # type: ignore[assignment]
        return self

    def setting(self, key: str, value: Any) -> TestClient:
        """Fills in an install setting (`ctx.config`)."""
        self._state.settings[key] = copy.deepcopy(value)
        return self

    def settings(self, values: dict[str, Any]) -> TestClient:
        """Fills in several install settings."""
        for key, value in values.items():
            self.setting(key, value)
        return self

    def mock_http(self, url: str, response: Response) -> TestClient:
        """Answers outbound requests to `url` (its host must still be in
        `network.egress_hosts`)."""
        self._state.http_mocks[url] = response
        return self

    def mock_delegate(self, target: str, answer: str | Callable[..., str]) -> TestClient:
        """What agent `target` answers `ctx.team.delegate` (a text, or a function of
        (prompt, from_agent)); default `[<app>:<target>] <prompt>`."""
        self._state.answers[("delegate", target)] = answer
        return self

    def mock_invoke(
        self, app: str, agent: str, answer: str | Callable[[str], str] | BaseException
    ) -> TestClient:
        """What agent `agent` of app `app` answers `ctx.apps.invoke` (a text, a function of
        the prompt, or an `AgentCallError` to raise such as a missing grant); default
        `[<app>:<agent>] <prompt>`."""
        self._state.answers[("invoke", app, agent)] = answer
        return self

    def mock_fetch(
        self, app: str, path: str, response: FetchResponse, method: str = "GET"
    ) -> TestClient:
        """What app `app` answers `ctx.apps.fetch(app, path, method)`; default 200 `{}`."""
        self._state.fetches[(app, method.upper(), path)] = response
        return self

    def mock_agent(self, answer: str | Callable[[str], str], agent: str | None = None) -> TestClient:
        """What the app's agent (the default one when `agent` is None) answers
        `ctx.agent.ask`; default `[<app>:<agent>] <prompt>`."""
        slug = agent or self.app.manifest.default_agent or ""
        self._state.answers[("ask", slug)] = answer
        return self

    # --- what the app did -------------------------------------------------------------------

    @property
    def tool_calls(self) -> list[tuple[str, Any]]:
        """Platform tool calls made so far: (name, arguments)."""
        return copy.deepcopy(self._state.tool_calls)

    @property
    def emitted(self) -> list[tuple[str, Any]]:
        """Events emitted so far: (name, payload)."""
        return copy.deepcopy(self._state.emitted)

    @property
    def logs(self) -> list[tuple[str, str]]:
        """Log records written so far: (level, message), level `debug` ... `error`."""
        return list(self._state.logs)

    @property
    def agent_calls(self) -> list[str]:
        """Nested agent calls made so far: `delegate <agent>`, `invoke <app>:<agent>`,
        `fetch <app> <METHOD> <path>`, `ask <agent>`."""
        return list(self._state.agent_calls)

    @property
    def commitments(self) -> list[tuple[str, str, str, str | None]]:
        """Commitments added so far: (title, content, from_agent, due_at)."""
        return list(self._state.commitments)

    @property
    def http_requests(self) -> list[OutboundRequest]:
        """Outbound requests made so far."""
        return copy.deepcopy(self._state.http_requests)

    def registration(self) -> Registration:
        """What the app registered, as `describe` answers."""
        return self.app.registration()

    # --- calls ------------------------------------------------------------------------------

    def ctx(self) -> Ctx:
        """A fresh context over the mocks (for calling helpers directly)."""
        return Ctx(self._backend)

    def call_tool(self, name: str, args: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        """Calls a tool with an arguments object (a dict and/or keyword arguments) and answers
        its result as a Python value."""
        merged = {**(args or {}), **kwargs}
        try:
            text = json.dumps(merged)
        except (TypeError, ValueError) as e:
            raise InvalidInput(f"the arguments do not serialize: {e}") from None
        return json.loads(self.app.call_tool(self.ctx(), name, text))

    def install(self) -> None:
        """Runs `on_install`."""
        self.app.lifecycle(self.ctx(), "on_install")

    def uninstall(self) -> None:
        """Runs `on_uninstall`."""
        self.app.lifecycle(self.ctx(), "on_uninstall")

    def inbound(self, envelope: InboundEnvelope) -> None:
        """Runs `on_inbound`."""
        self.app.inbound(self.ctx(), envelope)

    def user_added(self, user: UserAdded) -> None:
        """Runs `on_user_added`."""
        self.app.user_added(self.ctx(), user)

    def schedule(self, name: str) -> None:
        """Runs schedule `name`."""
        self.app.schedule(self.ctx(), name)

    def room_message(self, agent_slug: str, message: RoomMessage | str) -> None:
        """Delivers a room message that mentions agent `agent_slug` (a `RoomMessage`, or its
        text for a message from a test user in room `room-test`, with the mentions the host
        would find in it)."""
        if isinstance(message, str):
            mentions = sandbox.extract_mentions(self.app.manifest, message)
            message = room_message("room-test", message, mentions)
        self.app.room_message(self.ctx(), agent_slug, message)

    def simulate_event(
        self, event_name: str, payload: Any = None, emitter_app_id: str | None = None
    ) -> Any:
        """Delivers an event as the platform would and answers the handler's result. Without
        `emitter_app_id`, the emitter is the first the manifest subscribes to for that name; the
        target agent is that of the emitter's own subscription (none for an emitter the
        manifest does not subscribe to)."""
        subscription = next(
            (
                s
                for s in self.app.manifest.subscriptions
                if s["event_name"] == event_name
                and (emitter_app_id is None or s["emitter_app"] == emitter_app_id)
            ),
            None,
        )
        emitter = emitter_app_id or (subscription["emitter_app"] if subscription else "")
        # The payload crosses the boundary as JSON, as it would on the platform.
        event = AppEvent(
            event_name=event_name,
            emitter_app_id=emitter,
            payload=json.loads(json.dumps({} if payload is None else payload)),
            target_agent_slug=subscription["target_agent"] if subscription else None,
        )
        return json.loads(self.app.event(self.ctx(), event))

    def request(
        self,
        method: str,
        path_and_query: str,
        body: bytes | str | dict[str, Any] | list[Any] = b"",
        headers: dict[str, str] | list[tuple[str, str]] | None = None,
    ) -> Response:
        """Sends an HTTP request to the app's routes (a dict or list body is sent as JSON)."""
        path, _, query = path_and_query.partition("?")
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode("utf-8")
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = bytes(body)
        pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
        request = Request(
            method=method.upper(),
            path=path,
            query=query if "?" in path_and_query else None,
            headers=[(k.lower(), v) for k, v in pairs],
            body=data,
        )
        return self.app.serve(self.ctx(), request)


def room_message(room_id: str, content: str, mentions: list[str] | None = None) -> RoomMessage:
    """A room message for tests, posted by a test user (`mentions` are the canonical keys it
    mentions; none unless given)."""
    return RoomMessage(
        id="00000000-0000-4000-8000-000000000001",
        room_id=room_id,
        tenant_id="tenant-test",
        sender_type=SenderType.USER,
        sender_ref="user:00000000-0000-4000-8000-0000000000aa",
        sender_display="Test User",
        content=content,
        mentions=list(mentions or []),
        metadata={},
        created_at="2026-01-01T00:00:00Z",
    )


def inbound_envelope(
    channel: str = "email",
    from_: str = "someone@example.com",
    body: str = "",
    subject: str | None = None,
    *,
    message_id: str = "msg-test",
    received_at: str = "2026-01-01T00:00:00Z",
    attachment_ids: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
) -> InboundEnvelope:
    """An inbound envelope for tests."""
    return InboundEnvelope(
        message_id=message_id,
        channel=channel,
        from_=from_,
        body=body,
        subject=subject,
        received_at=received_at,
        attachment_ids=list(attachment_ids or []),
        metadata=dict(metadata or {}),
    )


def user_added(
    display_name: str = "Test User",
    email: str | None = None,
    user_id: str = "00000000-0000-4000-8000-0000000000aa",
) -> UserAdded:
    """A joining user for tests."""
    return UserAdded(user_id=user_id, display_name=display_name, email=email)

