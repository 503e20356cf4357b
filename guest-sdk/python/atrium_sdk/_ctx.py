"""`ctx`: what a handler reaches the platform through.

Calls that reach the platform and may be refused are coroutines, awaited as in the spec
(`await ctx.tools.call(name, kwargs)`): `tools.call`, `rooms.post`, `team.delegate`,
`apps.invoke`, `apps.fetch`, `events.emit`, `agent.ask`, `commitments.add`, `http.send` /
`http.get`. Reads that never fail are plain calls: `secrets.get` (None on any failure),
`config.get` / `config.all`, the call facts (`tenant_id`, ...), `logger.*`, and
`public_callback_url`.

Every call goes through one internal `Backend`: the component's imports inside a component
(`_component.ImportsBackend`), the mocks of `atrium_sdk.testing` natively. Handlers run the same
code against both.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, Callable

from ._errors import AgentCallError, ToolCallError
from ._http import OutboundRequest, Response
from ._types import CallInfo, EmitResult, FetchResponse, LogLevel, RoomPost

class Backend(ABC):
    """The platform as the SDK reaches it. Arguments and results that are JSON on the WIT
    boundary are JSON text here too; refusals are raised as `ToolCallError` /
    `AgentCallError`."""

    @abstractmethod
    def call_info(self) -> CallInfo:
        """`context.current`."""

    @abstractmethod
    def public_callback_url(self, path: str) -> str:
        """`context.public-callback-url`; raises `HandlerFailure` with the platform's text."""

    @abstractmethod
    def call_tool(self, name: str, args: str) -> str:
        """`tools.call`."""

    @abstractmethod
    def secret(self, key: str) -> str | None:
        """`secrets.get`: None when the secret is not set. A key that does not match the
        secret key format reads as unset too: the host checks it (and logs a warning for the
        developer), so does the test backend, with the host's rule and words."""

    @abstractmethod
    def config_get(self, key: str) -> str | None:
        """`config.get`."""

    @abstractmethod
    def config_all(self) -> str:
        """`config.all`."""

    @abstractmethod
    def room_post(
        self, room_id: str, content: str, from_agent: str, metadata: str | None
    ) -> RoomPost:
        """`rooms.post`."""

    @abstractmethod
    def delegate(self, target: str, prompt: str, from_agent: str) -> str:
        """`team.delegate`."""

    @abstractmethod
    def invoke(self, app: str, agent: str, prompt: str) -> str:
        """`apps.invoke`."""

    @abstractmethod
    def fetch(self, app: str, path: str, method: str, body: bytes | None) -> FetchResponse:
        """`apps.fetch`."""

    @abstractmethod
    def emit(self, name: str, payload: str) -> EmitResult:
        """`events.emit`."""

    @abstractmethod
    def ask(self, prompt: str, agent: str | None) -> str:
        """`agent.ask`."""

    @abstractmethod
    def add_commitment(
        self, title: str, content: str, from_agent: str, due_at: str | None
    ) -> str:
        """`commitments.add`."""

    @abstractmethod
    def log(self, level: LogLevel, message: str) -> None:
        """`logging.log`."""

    @abstractmethod
    def http_send(self, request: OutboundRequest) -> Response:
        """Outbound HTTP (`wasi:http/outgoing-handler`); raises `HandlerFailure`."""


def _to_json(value: Any, refusal: Callable[[str], Exception]) -> str:
    """`value` as JSON text; raises `refusal(why)` when it does not serialize."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as e:
        raise refusal(str(e)) from None


class Tools:
    """`ctx.tools`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def call(self, name: str, args: dict[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """Calls a platform tool with an arguments object (a dict and/or keyword arguments)
        and answers its JSON result as a Python value. Raises `ToolCallError`
        (`invalid_arguments` when the arguments are not a JSON object, as the host refuses
        them)."""
        if kwargs:
            if args is not None and not isinstance(args, dict):
                raise ToolCallError(
                    name,
                    "invalid_arguments",
                    f"the arguments ({type(args).__name__}) cannot be merged with keyword "
                    "arguments: pass one dict, or keyword arguments only",
                )
            args = {**(args or {}), **kwargs}
        # Anything else that is not an object goes to the platform, which refuses it with
        # its own words.
        text = _to_json(
            {} if args is None else args,
            lambda why: ToolCallError(
                name, "invalid_arguments", f"the arguments do not serialize: {why}"
            ),
        )
        result = self._backend.call_tool(name, text)
        try:
            return json.loads(result)
        except ValueError as e:
            raise ToolCallError(
                name, "invalid_result", f"the result is not valid JSON: {e}"
            ) from None


class Secrets:
    """`ctx.secrets`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def get(self, key: str) -> str | None:
        """A secret's value, or None when it is not set, the key does not match
        `^[A-Z][A-Z0-9_]{0,63}$` (the host logs a warning), or the platform cannot be
        reached. Never raises."""
        try:
            if not isinstance(key, str):
                return None
            value = self._backend.secret(key)
            return value if isinstance(value, str) else None
        except Exception:  # noqa: BLE001 - get never fails (spec, section 7)
            return None


class Config:
    """`ctx.config`: the install settings the tenant filled in."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def get(self, key: str, default: Any = None) -> Any:
        """A setting's value, or `default` when it is not filled in."""
        text = self._backend.config_get(key)
        if text is None:
            return default
        try:
            return json.loads(text)
        except ValueError:
            return default

    def all(self) -> dict[str, Any]:
        """Every filled-in setting."""
        try:
            value = json.loads(self._backend.config_all())
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def __getitem__(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None


class Rooms:
    """`ctx.rooms`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def post(
        self,
        room_id: str,
        content: str,
        *,
        from_agent: str,
        metadata: dict[str, Any] | None = None,
    ) -> RoomPost:
        """Posts `content` to a room as the app's agent `from_agent`. Raises `ToolCallError`
        (`not_member`, `unknown_room`, `unknown_agent`, `invalid_arguments`, ...)."""
        meta = None
        if metadata is not None:
            meta = _to_json(
                metadata,
                lambda why: ToolCallError(
                    "rooms.post", "invalid_arguments", f"the metadata does not serialize: {why}"
                ),
            )
        return self._backend.room_post(room_id, content, from_agent, meta)


class Team:
    """`ctx.team`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def delegate(self, target: str, prompt: str, *, from_agent: str) -> str:
        """Asks agent `target` of this app (in `from_agent`'s team) to handle `prompt` and
        answers its reply. Raises `AgentCallError`."""
        return self._backend.delegate(target, prompt, from_agent)


class Apps:
    """`ctx.apps`: other apps, through bilateral grants."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def invoke(self, app: str, agent: str, prompt: str) -> str:
        """Invokes agent `agent` of app `app`. Raises `AgentCallError`."""
        return self._backend.invoke(app, agent, prompt)

    async def fetch(
        self,
        app: str,
        path: str,
        method: str = "GET",
        body: bytes | str | dict[str, Any] | list[Any] | None = None,
    ) -> FetchResponse:
        """Calls an HTTP route of app `app`; a dict or list body is sent as JSON. Raises
        `AgentCallError`."""
        if isinstance(body, str):
            data: bytes | None = body.encode("utf-8")
        elif isinstance(body, (dict, list)):
            data = json.dumps(body).encode("utf-8")
        else:
            data = body
        return self._backend.fetch(app, path, method.upper(), data)


class Events:
    """`ctx.events`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def emit(self, name: str, payload: Any = None) -> EmitResult:
        """Emits event `name` (declared in `emits`) with a JSON payload to every approved
        wire. Raises `AgentCallError`."""
        text = _to_json(
            {} if payload is None else payload,
            lambda why: AgentCallError(f"the payload does not serialize: {why}"),
        )
        return self._backend.emit(name, text)


class Agent:
    """`ctx.agent`: the app's own agents."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def ask(self, prompt: str, agent: str | None = None) -> str:
        """Asks one of the app's agents (the default agent when `agent` is None) and answers
        its reply. Raises `AgentCallError`."""
        return self._backend.ask(prompt, agent)


class Commitments:
    """`ctx.commitments`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def add(
        self, title: str, content: str, from_agent: str, due_at: str | None = None
    ) -> str:
        """Records a commitment of agent `from_agent` (`due_at` ISO-8601) and answers its id.
        Raises `ToolCallError`."""
        return self._backend.add_commitment(title, content, from_agent, due_at)


class Logger:
    """`ctx.logger`: structured logs, tagged by the host with tenant, app, version and call."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def _log(self, level: LogLevel, message: Any) -> None:
        try:
            self._backend.log(level, str(message))
        except Exception:  # noqa: BLE001 - logging never fails a handler
            pass

    def debug(self, message: Any) -> None:
        """Debugging detail."""
        self._log(LogLevel.DEBUG, message)

    def info(self, message: Any) -> None:
        """Normal operation."""
        self._log(LogLevel.INFO, message)

    def warning(self, message: Any) -> None:
        """Something unexpected that was handled."""
        self._log(LogLevel.WARN, message)

    warn = warning

    def error(self, message: Any) -> None:
        """A failure."""
        self._log(LogLevel.ERROR, message)


class Http:
    """`ctx.http`: outbound HTTP, only to the hosts in `network.egress_hosts` (the host refuses
    any other before connecting)."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | list[tuple[str, str]] | None = None,
        body: bytes | str | None = None,
    ) -> Response:
        """Sends a request and answers the response. Raises `HandlerFailure` when the request
        is refused or fails."""
        pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
        data = body.encode("utf-8") if isinstance(body, str) else (body or b"")
        request = OutboundRequest(method.upper(), url, pairs, data)
        return self._backend.http_send(request)

    async def get(
        self, url: str, *, headers: dict[str, str] | list[tuple[str, str]] | None = None
    ) -> Response:
        """A GET request."""
        return await self.send("GET", url, headers=headers)


class Ctx:
    """The context of one call: `ctx.tools`, `ctx.secrets`, `ctx.config`, `ctx.rooms`,
    `ctx.team`, `ctx.apps`, `ctx.events`, `ctx.agent`, `ctx.commitments`, `ctx.logger`,
    `ctx.http`, the call's facts and `ctx.public_callback_url(path)`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._info: CallInfo | None = None
        self.tools = Tools(backend)
        self.secrets = Secrets(backend)
        self.config = Config(backend)
        self.rooms = Rooms(backend)
        self.team = Team(backend)
        self.apps = Apps(backend)
        self.events = Events(backend)
        self.agent = Agent(backend)
        self.commitments = Commitments(backend)
        self.logger = Logger(backend)
        self.http = Http(backend)

    def _call_info(self) -> CallInfo:
        if self._info is None:
            self._info = self._backend.call_info()
        return self._info

    @property
    def tenant_id(self) -> str:
        """The tenant the call is for."""
        return self._call_info().tenant_id

    @property
    def app_id(self) -> str:
        """The app's slug."""
        return self._call_info().app_id

    @property
    def app_version(self) -> str:
        """The app version serving the call."""
        return self._call_info().app_version

    @property
    def call_id(self) -> str:
        """The call's id, as in the host's logs."""
        return self._call_info().call_id

    @property
    def chain_depth(self) -> int:
        """How many agent hops led to this call (1 for a call from the platform itself)."""
        return self._call_info().chain_depth

    @property
    def visited_agents(self) -> list[str]:
        """Canonical keys (`<app>:<agent>`) of the agents already on this call chain."""
        return list(self._call_info().visited_agents)

    @property
    def is_public_route(self) -> bool:
        """Whether the call arrived on a public route (no tenant principal)."""
        return self._call_info().public_route

    def public_callback_url(self, path: str) -> str:
        """The public address of one of the app's public routes for this tenant. Raises
        `HandlerFailure` when `path` matches no route declared `public: true`."""
        return self._backend.public_callback_url(path)


__all__ = [
    "Agent",
    "Apps",
    "Backend",
    "Commitments",
    "Config",
    "Ctx",
    "Events",
    "Http",
    "Logger",
    "Rooms",
    "Secrets",
    "Team",
    "Tools",
]
