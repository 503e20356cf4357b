"""The component side: the platform through the component's imports, and the export classes
(`Handlers`, `IncomingHandler`) over the bindings componentize-py generates (`wit_world`).

Imported only by the entry module that `python -m atrium_sdk build` generates, inside the
component: natively `wit_world` does not exist. The build runs componentize-py with
`--import-interface-name atrium:app/types@0.1.0=atrium_types` and
`--import-interface-name wasi:http/types@0.2.12=types`, hence the module names below.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from componentize_py_types import Err, Ok  # type: ignore[import-not-found]
from wit_world.imports import (  # type: ignore[import-not-found]
    agent as wit_agent,
    apps as wit_apps,
    atrium_types as wt,
    commitments as wit_commitments,
    config as wit_config,
    context as wit_context,
    events as wit_events,
    outgoing_handler,
    rooms as wit_rooms,
    secrets as wit_secrets,
    streams,
    team as wit_team,
    tools as wit_tools,
    types as http,
)
from wit_world.imports import logging as wit_logging  # type: ignore[import-not-found]

from ._app import App, failure_message, report_unexpected
from ._ctx import Backend, Ctx
from ._errors import (
    AgentCallError,
    HandlerFailure,
    InvalidInput,
    NoHandler,
    RegistrationError,
    ToolCallError,
)
from ._http import MAX_OUTBOUND_BODY, MAX_REQUEST_BODY, OutboundRequest, Request, Response
from ._types import (
    AppEvent,
    CallInfo,
    EmitResult,
    FetchResponse,
    InboundEnvelope,
    LogLevel,
    RoomMessage,
    RoomPost,
    SenderType,
    UserAdded,
    parse_json_object,
)

#: Largest write to a wasi:io output stream in one call.
_WRITE_CHUNK = 4096

_LEVELS = {
    LogLevel.TRACE: wt.LogLevel.TRACE,
    LogLevel.DEBUG: wt.LogLevel.DEBUG,
    LogLevel.INFO: wt.LogLevel.INFO,
    LogLevel.WARN: wt.LogLevel.WARN,
    LogLevel.ERROR: wt.LogLevel.ERROR,
}


def _tool_error(e: Any) -> ToolCallError:
    return ToolCallError(e.tool_name, e.decision, e.message, list(e.needed_scopes))


def _room_message(m: Any) -> RoomMessage:
    return RoomMessage(
        id=m.id,
        room_id=m.room_id,
        tenant_id=m.tenant_id,
        sender_type=SenderType(m.sender_type.name.lower()),
        sender_ref=m.sender_ref,
        sender_display=m.sender_display,
        content=m.content,
        mentions=list(m.mentions),
        metadata=parse_json_object(m.metadata),
        created_at=m.created_at,
    )


class ImportsBackend(Backend):
    """The platform through the component's imports."""

    def call_info(self) -> CallInfo:
        i = wit_context.current()
        return CallInfo(
            tenant_id=i.tenant_id,
            app_id=i.app_id,
            app_version=i.app_version,
            call_id=i.call_id,
            chain_depth=i.chain_depth,
            visited_agents=list(i.visited_agents),
            public_route=i.public_route,
        )

    def public_callback_url(self, path: str) -> str:
        try:
            return wit_context.public_callback_url(path)
        except Err as e:
            raise HandlerFailure(str(e.value)) from None

    def call_tool(self, name: str, args: str) -> str:
        try:
            return wit_tools.call(name, args)
        except Err as e:
            raise _tool_error(e.value) from None

    def secret(self, key: str) -> str | None:
        return wit_secrets.get(key)

    def config_get(self, key: str) -> str | None:
        return wit_config.get(key)

    def config_all(self) -> str:
        return wit_config.all()

    def room_post(
        self, room_id: str, content: str, from_agent: str, metadata: str | None
    ) -> RoomPost:
        try:
            post = wit_rooms.post(room_id, content, from_agent, metadata)
        except Err as e:
            raise _tool_error(e.value) from None
        return RoomPost(_room_message(post.message), list(post.routed_targets))

    def delegate(self, target: str, prompt: str, from_agent: str) -> str:
        try:
            return wit_team.delegate(target, prompt, from_agent)
        except Err as e:
            raise AgentCallError(e.value.reason) from None

    def invoke(self, app: str, agent: str, prompt: str) -> str:
        try:
            return wit_apps.invoke(app, agent, prompt)
        except Err as e:
            raise AgentCallError(e.value.reason) from None

    def fetch(self, app: str, path: str, method: str, body: bytes | None) -> FetchResponse:
        try:
            r = wit_apps.fetch(app, path, method, body)
        except Err as e:
            raise AgentCallError(e.value.reason) from None
        return FetchResponse(r.status, [tuple(h) for h in r.headers], bytes(r.body))

    def emit(self, name: str, payload: str) -> EmitResult:
        try:
            r = wit_events.emit(name, payload)
        except Err as e:
            raise AgentCallError(e.value.reason) from None
        return EmitResult(r.wire_count, r.dispatched, r.failures)

    def ask(self, prompt: str, agent: str | None) -> str:
        try:
            return wit_agent.ask(prompt, agent)
        except Err as e:
            raise AgentCallError(e.value.reason) from None

    def add_commitment(
        self, title: str, content: str, from_agent: str, due_at: str | None
    ) -> str:
        try:
            return wit_commitments.add(title, content, from_agent, due_at)
        except Err as e:
            raise _tool_error(e.value) from None

    def log(self, level: LogLevel, message: str) -> None:
        wit_logging.log(_LEVELS[level], message)

    def http_send(self, request: OutboundRequest) -> Response:
        return _send_outbound(request)


# --- wasi:http ------------------------------------------------------------------------------

_METHODS = {
    "GET": http.Method_Get,
    "HEAD": http.Method_Head,
    "POST": http.Method_Post,
    "PUT": http.Method_Put,
    "DELETE": http.Method_Delete,
    "CONNECT": http.Method_Connect,
    "OPTIONS": http.Method_Options,
    "TRACE": http.Method_Trace,
    "PATCH": http.Method_Patch,
}


def _method_name(method: Any) -> str:
    if isinstance(method, http.Method_Other):
        return method.value
    return type(method).__name__.removeprefix("Method_").upper()


def _method_value(name: str) -> Any:
    cls = _METHODS.get(name.upper())
    return cls() if cls is not None else http.Method_Other(name)


def _code_name(code: Any) -> str:
    """An error code as the Rust SDK prints it: `DnsError(...)`, `HttpRequestDenied`."""
    name = type(code).__name__.removeprefix("ErrorCode_")
    value = getattr(code, "value", None)
    return f"{name}({value!r})" if value is not None else name


def _fields(headers: list[tuple[str, str]]) -> Any:
    """The headers as wasi:http fields; raises `Err` when wasi:http refuses one."""
    return http.Fields.from_list([(k.lower(), v.encode("utf-8")) for k, v in headers])


def _refused_header(headers: list[tuple[str, str]], error: Any) -> str:
    """Which header wasi:http refuses and why, for the message."""
    for name, value in headers:
        try:
            with http.Fields.from_list([(name.lower(), value.encode("utf-8"))]):
                pass
        except Err as e:
            return f"`{name}` ({_code_name(e.value)})"
    return _code_name(error)


def _entries(fields: Any) -> list[tuple[str, str]]:
    with fields:
        return [(k, bytes(v).decode("utf-8", errors="replace")) for k, v in fields.entries()]


def _read_body(body: Any, limit: int) -> tuple[bytes, bool]:
    """Reads an incoming body up to `limit` bytes: (bytes, whether it was larger)."""
    chunks: list[bytes] = []
    total = 0
    too_large = False
    stream = body.stream()
    try:
        while True:
            try:
                chunk = stream.blocking_read(64 * 1024)
            except Err as e:
                if isinstance(e.value, streams.StreamError_Closed):
                    break
                raise
            total += len(chunk)
            if total > limit:
                too_large = True
                break
            chunks.append(bytes(chunk))
    finally:
        stream.__exit__(None, None, None)
    http.IncomingBody.finish(body).__exit__(None, None, None)
    return b"".join(chunks), too_large


def _write_body(body: Any, data: bytes) -> None:
    stream = body.write()
    try:
        for start in range(0, len(data), _WRITE_CHUNK):
            stream.blocking_write_and_flush(data[start : start + _WRITE_CHUNK])
    finally:
        stream.__exit__(None, None, None)


class _Early(Exception):
    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def _read_request(request: Any) -> Request:
    method = _method_name(request.method())
    target = request.path_with_query() or "/"
    path, sep, query = target.partition("?")
    headers = _entries(request.headers())
    data = b""
    try:
        body = request.consume()
    except Err:
        body = None
    if body is not None:
        try:
            data, too_large = _read_body(body, MAX_REQUEST_BODY)
        except Err:
            raise _Early(Response.text(400, "the request body could not be read")) from None
        if too_large:
            raise _Early(Response.text(413, "the request body is larger than 1 MiB"))
    return Request(method, path, query if sep else None, headers, data)


def _write_response(response: Response, out: Any) -> None:
    try:
        fields = _fields(response.headers)
    except Err:  # as the Rust SDK: the response goes out, without the headers
        fields = http.Fields()
    outgoing = http.OutgoingResponse(fields)
    try:
        outgoing.set_status_code(response.status)
    except Err:
        outgoing.set_status_code(500)
    body = outgoing.body()
    http.ResponseOutparam.set(out, Ok(outgoing))
    try:
        _write_body(body, response.body)
    finally:
        http.OutgoingBody.finish(body, None)


def _send_outbound(request: OutboundRequest) -> Response:
    url = request.url
    if url.startswith("https://"):
        scheme, rest = http.Scheme_Https(), url[len("https://") :]
    elif url.startswith("http://"):
        scheme, rest = http.Scheme_Http(), url[len("http://") :]
    else:
        raise HandlerFailure(f"`{url}` is not an http:// or https:// URL")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:] or "/"
    if path.startswith("?"):
        path = "/" + path
    headers = list(request.headers)
    if request.body and not any(k.lower() == "content-length" for k, _ in headers):
        # Many servers read a body only by its length (not chunked).
        headers.append(("content-length", str(len(request.body))))
    try:
        fields = _fields(headers)
    except Err as e:
        # As the Rust SDK: never send a request without the headers the app set (its
        # credentials among them).
        raise HandlerFailure(f"invalid headers: {_refused_header(headers, e.value)}") from None
    outgoing = http.OutgoingRequest(fields)
    try:
        outgoing.set_method(_method_value(request.method))
        outgoing.set_scheme(scheme)
        outgoing.set_authority(authority)
        outgoing.set_path_with_query(path)
    except Err:
        raise HandlerFailure(f"invalid request: {request.method} {url}") from None
    body = outgoing.body()
    try:
        future = outgoing_handler.handle(outgoing, None)
    except Err as e:
        raise HandlerFailure(f"request refused: {_code_name(e.value)}") from None
    # The body is written once the request is on its way: the host buffers only so much of a
    # body that is not being sent, so writing first would block a large body forever.
    try:
        if request.body:
            _write_body(body, request.body)
    except Err as e:
        raise HandlerFailure(f"writing the request body failed: {e.value}") from None
    finally:
        http.OutgoingBody.finish(body, None)
    with future:
        with future.subscribe() as pollable:
            pollable.block()
        got = future.get()
    if got is None or not isinstance(got, Ok):
        raise HandlerFailure("request failed: no response")
    inner = got.value
    if not isinstance(inner, Ok):
        raise HandlerFailure(f"request failed: {_code_name(inner.value)}")
    incoming = inner.value
    with incoming:
        status = incoming.status()
        headers = _entries(incoming.headers())
        data = b""
        try:
            incoming_body = incoming.consume()
        except Err:
            incoming_body = None
        if incoming_body is not None:
            try:
                data, _ = _read_body(incoming_body, MAX_OUTBOUND_BODY)
            except Err as e:
                raise HandlerFailure(f"reading the response failed: {e.value}") from None
    return Response(status, headers, data)


# --- exports ---------------------------------------------------------------------------------


def _wit_error(error: BaseException) -> Any:
    if isinstance(error, InvalidInput):
        return wt.HandlerError_InvalidInput(error.message)
    if isinstance(error, ToolCallError):
        return wt.HandlerError_Tool(
            wt.ToolCallError(
                error.tool_name, error.decision, error.message, list(error.needed_scopes)
            )
        )
    if isinstance(error, AgentCallError):
        return wt.HandlerError_Agent(wt.AgentCallError(error.reason))
    if isinstance(error, NoHandler):
        return wt.HandlerError_NoHandler(error.message)
    if isinstance(error, RegistrationError):
        return wt.HandlerError_Registration(error.message)
    if isinstance(error, HandlerFailure):
        return wt.HandlerError_Failed(error.message)
    report_unexpected(error)
    return wt.HandlerError_Failed(failure_message(error))


def _run(body: Callable[[], Any]) -> Any:
    try:
        return body()
    except Err:
        raise
    except Exception as e:  # noqa: BLE001 - every failure becomes a handler-error
        raise Err(_wit_error(e)) from None


def _envelope(e: Any) -> InboundEnvelope:
    return InboundEnvelope(
        message_id=e.message_id,
        channel=e.channel,
        from_=e.from_,
        body=e.body,
        subject=e.subject,
        received_at=e.received_at,
        attachment_ids=list(e.attachment_ids),
        metadata=parse_json_object(e.metadata),
    )


def _event(e: Any) -> AppEvent:
    try:
        payload = json.loads(e.payload) if e.payload else None
    except ValueError as err:
        raise InvalidInput(f"the event payload is not valid JSON: {err}") from None
    return AppEvent(e.event_name, e.emitter_app_id, payload, e.target_agent_slug)


def find_app(module: Any) -> App:
    """The `App` an entry module defines: its `app`, else its only `App`."""
    app = getattr(module, "app", None)
    if isinstance(app, App):
        return app
    found = [v for v in vars(module).values() if isinstance(v, App)]
    if len(found) == 1:
        return found[0]
    name = getattr(module, "__name__", "the entry module")
    raise RuntimeError(
        f"{name} must define `app = App.from_manifest(\"atrium.app.yaml\")` "
        f"(found {len(found)} App instances)"
    )


def exports(module: Any) -> tuple[type, type]:
    """The export classes for the app that `module` defines."""
    app = find_app(module)

    def ctx() -> Ctx:
        return Ctx(ImportsBackend())

    class Handlers:
        def describe(self) -> Any:
            r = app.registration()
            return wt.Registration(
                r.manifest, r.tools, r.lifecycle, r.schedules, r.events, r.room_messages, r.routes
            )

        def call_tool(self, name: str, args: str) -> str:
            return _run(lambda: app.call_tool(ctx(), name, args))

        def on_install(self) -> None:
            _run(lambda: app.lifecycle(ctx(), "on_install"))

        def on_uninstall(self) -> None:
            _run(lambda: app.lifecycle(ctx(), "on_uninstall"))

        def on_inbound(self, envelope: Any) -> None:
            _run(lambda: app.inbound(ctx(), _envelope(envelope)))

        def on_user_added(self, user: Any) -> None:
            _run(
                lambda: app.user_added(
                    ctx(), UserAdded(user.user_id, user.display_name, user.email)
                )
            )

        def on_schedule(self, name: str) -> None:
            _run(lambda: app.schedule(ctx(), name))

        def on_event(self, event: Any) -> str:
            return _run(lambda: app.event(ctx(), _event(event)))

        def on_message(self, agent_slug: str, message: Any) -> None:
            _run(lambda: app.room_message(ctx(), agent_slug, _room_message(message)))

    class IncomingHandler:
        def handle(self, request: Any, response_out: Any) -> None:
            try:
                response = app.serve(ctx(), _read_request(request))
            except _Early as early:
                response = early.response
            except Exception as e:  # noqa: BLE001 - answer 500 rather than trap
                report_unexpected(e)
                response = Response.text(500, failure_message(e))
            _write_response(response, response_out)

    return Handlers, IncomingHandler


def broken(error: RegistrationError) -> tuple[type, type]:
    """Export classes for an app whose registrations break a rule: `describe` and every call
    fail with `registration` and the message (the host's health check reports it), and every
    request is answered 500."""

    def fail(*_: Any) -> Any:
        raise Err(wt.HandlerError_Registration(error.message))

    methods = (
        "describe",
        "call_tool",
        "on_install",
        "on_uninstall",
        "on_inbound",
        "on_user_added",
        "on_schedule",
        "on_event",
        "on_message",
    )
    Handlers = type("Handlers", (), {m: fail for m in methods})

    class IncomingHandler:
        def handle(self, request: Any, response_out: Any) -> None:
            _write_response(Response.text(500, error.message), response_out)

    return Handlers, IncomingHandler
