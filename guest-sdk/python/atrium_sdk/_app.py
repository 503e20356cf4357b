"""`App`: the registry of an app's handlers, checked against its manifest.

Every registration is checked when it happens (a decorator raises `RegistrationError`), with
the rules and the words of the Rust SDK (guest-sdk/src/app.rs): a lifecycle handler needs its
flag, a schedule its name, a tool its declaration and `scopes_required` inside
`required_scopes`, an event handler a subscription (and `async def`), a route its
`http_routes` entry, `on_message` an agent, and nothing may be registered twice.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
import traceback
import types
import typing
from typing import Any, Callable, TypeVar

from . import _driver
from ._ctx import Ctx
from ._errors import (
    AgentCallError,
    HandlerFailure,
    InvalidInput,
    NoHandler,
    RegistrationError,
    RegistrationErrorKind as Kind,
    ToolCallError,
)
from ._http import Request, Response, match_route
from ._manifest import Manifest, load_manifest
from ._types import AppEvent, InboundEnvelope, Registration, RoomMessage, UserAdded

F = TypeVar("F", bound=Callable[..., Any])

#: The lifecycle hooks, named and ordered as in the manifest, with their handlers' parameters.
HOOKS = {
    "on_install": ("ctx",),
    "on_uninstall": ("ctx",),
    "on_inbound": ("ctx", "envelope"),
    "on_user_added": ("ctx", "user"),
}


def _listing(names: list[str]) -> str:
    return f"declared: {', '.join(names)}" if names else "none are declared"


def _fail(kind: Kind, message: str) -> RegistrationError:
    return RegistrationError(kind, message)


def _double(what: str, name: str) -> RegistrationError:
    return _fail(
        Kind.DOUBLE_REGISTRATION,
        f"cannot register {what} `{name}` twice: a handler is already registered",
    )


def _check_signature(
    what: str, handler: Any, parameters: tuple[str, ...], *, arguments: bool = False
) -> None:
    """Refuses, at registration, a handler that cannot be called with the positional
    `parameters` the SDK passes (a tool's handler also takes its `**arguments`, which it may
    require). A wrong signature is a bug of the app, not a rule of the manifest, so this is a
    `TypeError`; left to the call, every call would fail, a tool's as if its caller had sent
    the wrong arguments."""
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # a callable without a signature is not checked
        return
    try:
        (signature.bind_partial if arguments else signature.bind)(*parameters)
    except TypeError as e:
        shape = ", ".join(parameters + (("**arguments",) if arguments else ()))
        name = getattr(handler, "__qualname__", type(handler).__name__)
        raise TypeError(
            f"cannot register {what}: its handler is called as ({shape}), which "
            f"{name}{signature} does not accept ({e})"
        ) from None


def _require_name(decorator: str, what: str, name: Any, example: str) -> None:
    """`@app.on_schedule` or `@app.on_event` used bare would register nothing and replace the
    function with the decorator: refuse it."""
    if not isinstance(name, str):
        raise TypeError(
            f'@app.{decorator} takes the {what}\'s name: @app.{decorator}("{example}"), '
            f"not @app.{decorator}"
        )


def _is_async(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    return call is not None and not inspect.isfunction(fn) and inspect.iscoroutinefunction(call)


# --- tool arguments -----------------------------------------------------------------------

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "an array",
    dict: "an object",
}


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _union_options(hint: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(hint)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return typing.get_args(hint)
    return None


def _accepts(hint: Any, value: Any) -> tuple[bool, str]:
    """Whether a JSON value fits a simple annotation; unknown annotations accept anything."""
    if hint is Any or hint is inspect.Parameter.empty:
        return True, ""
    options = _union_options(hint)
    if options is not None:
        if any(_accepts(o, value)[0] for o in options):
            return True, ""
        named = [_accepts(o, value)[1] for o in options if o is not type(None)]
        return False, " or ".join(n for n in named if n) + (
            " or null" if type(None) in options else ""
        )
    if hint is type(None):
        return value is None, "null"
    base = typing.get_origin(hint) or hint
    if base in (list, typing.List):  # noqa: UP006
        base = list
    if base in (dict, typing.Dict):  # noqa: UP006
        base = dict
    if base not in _TYPE_NAMES:
        return True, ""
    expected = _TYPE_NAMES[base]
    if base is bool:
        return isinstance(value, bool), expected
    if base is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok or (isinstance(value, float) and value.is_integer())
        return ok, expected
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool), expected
    return isinstance(value, base), expected


def _coerce(hint: Any, value: Any) -> Any:
    """An accepted JSON number as the annotation's type: `1` for a `float` is `1.0`, `3.0`
    for an `int` is `3` (also inside `Optional`; a union that names the value's own type
    keeps it)."""
    options = _union_options(hint)
    if options is not None:
        if type(value) in options:
            return value
        return next((_coerce(o, value) for o in options if _accepts(o, value)[0]), value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, float):
        return int(value)
    return value


class _ToolArgs:
    """Binds a tool call's JSON object to the handler's keyword parameters."""

    def __init__(self, handler: Callable[..., Any]) -> None:
        self.signature = inspect.signature(handler)
        try:
            self.hints = typing.get_type_hints(handler)
        except Exception:  # noqa: BLE001 - unresolvable annotations are not checked
            self.hints = {}

    def bind(self, ctx: Ctx, args: dict[str, Any]) -> inspect.BoundArguments:
        try:
            bound = self.signature.bind(ctx, **args)
        except TypeError as e:
            raise InvalidInput(f"the arguments do not match: {e}") from None
        first = next(iter(self.signature.parameters), None)
        for name, value in bound.arguments.items():
            if name == first:
                continue
            parameter = self.signature.parameters[name]
            if parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
                continue
            hint = self.hints.get(name, parameter.annotation)
            ok, expected = _accepts(hint, value)
            if not ok:
                raise InvalidInput(
                    f"the arguments do not match: `{name}` must be {expected}, "
                    f"got {_json_kind(value)}"
                )
            bound.arguments[name] = _coerce(hint, value)
        return bound


def _result(value: Any) -> str:
    """A handler's result as JSON text (the Rust SDK's words when it does not serialize)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as e:
        raise HandlerFailure(f"the result does not serialize: {e}") from None


def failure_message(error: BaseException) -> str:
    """The `failed` message of an exception that is none of the SDK's."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def report_unexpected(error: BaseException) -> None:
    """Writes an unexpected exception's traceback to stderr (the host's log of the call)."""
    if os.environ.get("ATRIUM_SDK_QUIET"):
        return
    try:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    except Exception:  # noqa: BLE001 - reporting never fails the call
        pass


def _guard(run: Callable[[], Any]) -> Any:
    """Runs a handler; the SDK's exceptions pass, anything else becomes `HandlerFailure`."""
    try:
        return run()
    except (
        InvalidInput,
        HandlerFailure,
        ToolCallError,
        AgentCallError,
        NoHandler,
        RegistrationError,
    ):
        raise
    except Exception as e:  # noqa: BLE001 - a handler's bug fails only its call
        report_unexpected(e)
        raise HandlerFailure(failure_message(e)) from e


def _beside_caller(path: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """A relative manifest path resolved next to the module calling `App.from_manifest`, when a
    file is there. Inside a component the embedded manifest is looked up by the path as given."""
    from . import _embedded  # noqa: PLC0415 - tiny, and only here

    if _embedded.active() or os.path.isabs(path):
        return path
    frame = sys._getframe(2)  # from_manifest's caller
    caller = frame.f_globals.get("__file__")
    if caller:
        beside = os.path.join(os.path.dirname(os.path.abspath(caller)), path)
        if os.path.isfile(beside):
            return beside
    return path


class App:
    """An app: its manifest and the handlers registered for it.

    ```python
    app = App.from_manifest("atrium.app.yaml")

    @app.tool("greet")
    async def greet(ctx, name: str):
        return {"message": f"Hello, {name}!"}
    ```
    """

    def __init__(self, manifest: Manifest) -> None:
        if not isinstance(manifest, Manifest):
            raise TypeError(
                "App(manifest) takes a Manifest from load_manifest(); "
                "use App.from_manifest(path) for a file"
            )
        self.manifest = manifest
        self._tools: dict[str, tuple[Callable[..., Any], _ToolArgs]] = {}
        self._hooks: dict[str, Callable[..., Any]] = {}
        self._schedules: dict[str, Callable[..., Any]] = {}
        self._events: dict[str, Callable[..., Any]] = {}
        self._room_message: Callable[..., Any] | None = None
        self._routes: list[tuple[str, str, Callable[..., Any]]] = []

    @classmethod
    def from_manifest(cls, path: str | os.PathLike[str] = "atrium.app.yaml") -> App:
        """An app for the manifest file at `path`, strictly validated (`ManifestError` with the
        findings when it is invalid). A relative path is found next to the module that calls
        this (so `app.py` finds its `atrium.app.yaml` whatever the working directory), else
        relative to the working directory. Inside a component: the manifest embedded by the
        build."""
        return cls(load_manifest(_beside_caller(path)))

    # --- registration ---------------------------------------------------------------------

    def tool(
        self,
        name: str | Callable[..., Any] | None = None,
        *,
        scopes_required: list[str] | tuple[str, ...] = (),
        description: str | None = None,
    ) -> Any:
        """Registers the handler of tool `name` (declared in the manifest's `tools`; the
        function's name when omitted): `(ctx, **arguments)`, sync or async, answering a
        JSON-serialisable value. The call's arguments object is bound to the handler's keyword
        parameters; a missing or unknown argument, or one that does not fit a simple
        annotation (`str`, `int`, `float`, `bool`, `list`, `dict`, optional ones), is
        answered `invalid-input` naming it. `scopes_required` must be a subset of the
        manifest's `required_scopes`. `description` is documentation only: the planner reads
        the manifest's."""
        if callable(name):
            return self.tool(name.__name__)(name)
        if isinstance(scopes_required, str):
            raise TypeError(
                f"scopes_required takes a list of scope names, not the string "
                f"{scopes_required!r}: scopes_required=[{scopes_required!r}]"
            )
        del description  # documentation only (the TypeScript SDK's option of that name)

        def register(handler: F) -> F:
            self._register_tool(name or handler.__name__, list(scopes_required), handler)
            return handler

        return register

    def _register_tool(
        self, name: str, scopes_required: list[str], handler: Callable[..., Any]
    ) -> None:
        m = self.manifest
        if name not in m.tool_names:
            raise _fail(
                Kind.UNKNOWN_TOOL,
                f"cannot register tool `{name}`: it is not in the manifest's tools "
                f"({_listing(m.tool_names)})",
            )
        outside = [s for s in scopes_required if s not in m.required_scopes]
        if outside:
            raise _fail(
                Kind.SCOPE_NOT_REQUIRED,
                f"cannot register tool `{name}`: scopes_required {', '.join(outside)} must be "
                f"a subset of the manifest's required_scopes ({_listing(m.required_scopes)})",
            )
        if name in self._tools:
            raise _double("tool", name)
        _check_signature(f"tool `{name}`", handler, ("ctx",), arguments=True)
        self._tools[name] = (handler, _ToolArgs(handler))

    def _hook(self, hook: str, handler: Any) -> Any:
        def register(fn: F) -> F:
            if not self.manifest.lifecycle.get(hook):
                raise _fail(
                    Kind.LIFECYCLE_DISABLED,
                    f"cannot register {hook}: lifecycle.{hook} is not true in the manifest",
                )
            if hook in self._hooks:
                raise _double("lifecycle hook", hook)
            _check_signature(hook, fn, HOOKS[hook])
            self._hooks[hook] = fn
            return fn

        return register if handler is None else register(handler)

    def on_install(self, handler: F | None = None) -> Any:
        """Registers the `on_install` handler `(ctx)`; needs `lifecycle.on_install: true`."""
        return self._hook("on_install", handler)

    def on_uninstall(self, handler: F | None = None) -> Any:
        """Registers the `on_uninstall` handler `(ctx)`; needs `lifecycle.on_uninstall: true`."""
        return self._hook("on_uninstall", handler)

    def on_inbound(self, handler: F | None = None) -> Any:
        """Registers the `on_inbound` handler `(ctx, envelope: InboundEnvelope)`; needs
        `lifecycle.on_inbound: true`."""
        return self._hook("on_inbound", handler)

    def on_user_added(self, handler: F | None = None) -> Any:
        """Registers the `on_user_added` handler `(ctx, user: UserAdded)`; needs
        `lifecycle.on_user_added: true`."""
        return self._hook("on_user_added", handler)

    def on_schedule(self, name: str) -> Callable[[F], F]:
        """Registers the handler `(ctx)` of schedule `name`, declared in
        `lifecycle.schedules`."""

        _require_name("on_schedule", "schedule", name, "nightly")

        def register(handler: F) -> F:
            schedules = self.manifest.schedule_names
            if name not in schedules:
                raise _fail(
                    Kind.UNKNOWN_SCHEDULE,
                    f"cannot register schedule `{name}`: it is not in lifecycle.schedules "
                    f"({_listing(schedules)})",
                )
            if name in self._schedules:
                raise _double("schedule", name)
            _check_signature(f"schedule `{name}`", handler, ("ctx",))
            self._schedules[name] = handler
            return handler

        return register

    def on_event(self, name: str) -> Callable[[F], F]:
        """Registers the handler `async (ctx, event: AppEvent)` of event `name`; one handler
        per event name, shared by every emitter the manifest subscribes to (told apart by
        `event.emitter_app_id`). It must be `async def`: a synchronous handler is rejected."""

        _require_name("on_event", "event", name, "entry_booked")

        def register(handler: F) -> F:
            events = [s["event_name"] for s in self.manifest.subscriptions]
            if name not in events:
                raise _fail(
                    Kind.UNKNOWN_EVENT,
                    f"cannot register event handler `{name}`: the manifest's subscribes_to has "
                    f"no such event ({_listing(events)})",
                )
            if not _is_async(handler):
                raise _fail(
                    Kind.NOT_ASYNC,
                    f"cannot register event handler `{name}`: it must be a coroutine function "
                    "(`async def`); synchronous event handlers are rejected at registration",
                )
            if name in self._events:
                raise _double("event", name)
            _check_signature(f"event handler `{name}`", handler, ("ctx", "event"))
            self._events[name] = handler
            return handler

        return register

    def on_message(self, handler: F | None = None) -> Any:
        """Registers the room handler `(ctx, agent_slug, message: RoomMessage)`, run when a
        room message mentions one of the app's agents. The app must declare an agent."""

        def register(fn: F) -> F:
            if not self.manifest.agents:
                raise _fail(
                    Kind.NO_AGENT,
                    "cannot register on_message: the manifest declares no agent to be mentioned",
                )
            if self._room_message is not None:
                raise _double("room handler", "on_message")
            _check_signature("on_message", fn, ("ctx", "agent_slug", "message"))
            self._room_message = fn
            return fn

        return register if handler is None else register(handler)

    def route(self, method: str, path: str) -> Callable[[F], F]:
        """Registers the handler `(ctx, request: Request) -> Response` of a route declared in
        `http_routes` (same method, case-insensitive, and path pattern)."""

        def register(handler: F) -> F:
            upper = method.upper()
            declared = self.manifest.routes
            route = next(
                (r for r in declared if r["method"] == upper and r["path"] == path), None
            )
            if route is None:
                names = [f"{r['method']} {r['path']}" for r in declared]
                raise _fail(
                    Kind.UNKNOWN_ROUTE,
                    f"cannot register route `{upper} {path}`: it is not in the manifest's "
                    f"http_routes ({_listing(names)})",
                )
            if any(m == upper and p == path for m, p, _ in self._routes):
                raise _double("route", f"{upper} {path}")
            _check_signature(f"route `{upper} {path}`", handler, ("ctx", "request"))
            self._routes.append((upper, path, handler))
            return handler

        return register

    def registration(self) -> Registration:
        """What is registered, as the host's health check reads it (`describe`)."""
        return Registration(
            manifest=self.manifest.text,
            tools=sorted(self._tools),
            lifecycle=[h for h in HOOKS if h in self._hooks],
            schedules=sorted(self._schedules),
            events=sorted(self._events),
            room_messages=self._room_message is not None,
            routes=[f"{m} {p}" for m, p, _ in self._routes],
        )

    # --- dispatch (the component glue and the test client call these) ---------------------

    def call_tool(self, ctx: Ctx, name: str, args: str) -> str:
        """Runs tool `name` with its JSON arguments; answers the JSON result."""
        entry = self._tools.get(name)
        if entry is None:
            raise NoHandler(f"tool `{name}`")
        handler, binder = entry
        try:
            parsed = json.loads(args) if args.strip() else {}
        except ValueError as e:
            raise InvalidInput(f"the arguments are not valid JSON: {e}") from None
        if not isinstance(parsed, dict):
            raise InvalidInput("the arguments must be a JSON object")
        bound = binder.bind(ctx, parsed)
        result = _guard(lambda: _driver.run(handler, *bound.args, **bound.kwargs))
        return _result(result)

    def lifecycle(self, ctx: Ctx, hook: str) -> None:
        """Runs `on_install` or `on_uninstall`."""
        handler = self._hooks.get(hook) if hook in ("on_install", "on_uninstall") else None
        if handler is None:
            raise NoHandler(hook)
        _guard(lambda: _driver.run(handler, ctx))

    def inbound(self, ctx: Ctx, envelope: InboundEnvelope) -> None:
        """Runs the `on_inbound` handler."""
        handler = self._hooks.get("on_inbound")
        if handler is None:
            raise NoHandler("on_inbound")
        _guard(lambda: _driver.run(handler, ctx, envelope))

    def user_added(self, ctx: Ctx, user: UserAdded) -> None:
        """Runs the `on_user_added` handler."""
        handler = self._hooks.get("on_user_added")
        if handler is None:
            raise NoHandler("on_user_added")
        _guard(lambda: _driver.run(handler, ctx, user))

    def schedule(self, ctx: Ctx, name: str) -> None:
        """Runs the handler of schedule `name`."""
        handler = self._schedules.get(name)
        if handler is None:
            raise NoHandler(f"schedule `{name}`")
        _guard(lambda: _driver.run(handler, ctx))

    def event(self, ctx: Ctx, event: AppEvent) -> str:
        """Runs the handler of an event; answers its JSON result (`no-handler` when none is
        registered: the platform answers `{ok: false, no_handler: true}`)."""
        handler = self._events.get(event.event_name)
        if handler is None:
            raise NoHandler(f"event `{event.event_name}`")
        result = _guard(lambda: _driver.run(handler, ctx, event))
        return _result(result)

    def room_message(self, ctx: Ctx, agent_slug: str, message: RoomMessage) -> None:
        """Runs the room handler for the mentioned agent."""
        handler = self._room_message
        if handler is None:
            raise NoHandler("on_message")
        _guard(lambda: _driver.run(handler, ctx, agent_slug, message))

    def serve(self, ctx: Ctx, request: Request) -> Response:
        """Serves a request on the registered routes: 404 when no registered route matches the
        path, 405 when one matches with another method, 400 for `InvalidInput`, 500 for any
        other failure."""
        path_matched = False
        for method, pattern, handler in self._routes:
            params = match_route(pattern, request.path)
            if params is None:
                continue
            path_matched = True
            if method != request.method.upper():
                continue
            request.params = dict(params)
            try:
                response = _guard(lambda: _driver.run(handler, ctx, request))
            except InvalidInput as e:
                return Response.text(400, e.message)
            except (HandlerFailure, ToolCallError, AgentCallError, NoHandler) as e:
                return Response.text(500, str(e))
            if not isinstance(response, Response):
                return Response.text(
                    500,
                    f"the handler of route `{method} {pattern}` returned "
                    f"{type(response).__name__}, not a Response",
                )
            return response
        if path_matched:
            return Response.text(405, "method not allowed")
        return Response.text(404, "no such route")
