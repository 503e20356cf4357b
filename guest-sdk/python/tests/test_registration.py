"""Every registration rule, with the Rust SDK's kind and exact words."""

from __future__ import annotations

import functools

import pytest

from atrium_sdk import App, RegistrationError, RegistrationErrorKind as Kind, Response


def ok(ctx, **_):
    return "ok"


async def handler(ctx, *_):
    return None


def refused(register) -> RegistrationError:
    with pytest.raises(RegistrationError) as err:
        register()
    return err.value


def test_a_tool_must_be_declared(app):
    err = refused(lambda: app.tool("write_note")(ok))
    assert err.kind is Kind.UNKNOWN_TOOL
    assert err.message == (
        "cannot register tool `write_note`: it is not in the manifest's tools "
        "(declared: read_note, ping_tool)"
    )
    assert str(err) == err.message


def test_scopes_required_must_be_inside_required_scopes(app):
    err = refused(lambda: app.tool("read_note", scopes_required=["notes.read", "notes.write"])(ok))
    assert err.kind is Kind.SCOPE_NOT_REQUIRED
    assert err.message == (
        "cannot register tool `read_note`: scopes_required notes.write must be a subset of the "
        "manifest's required_scopes (declared: notes.read)"
    )
    app.tool("read_note", scopes_required=["notes.read"], description="Reads.")(ok)


def test_a_tool_is_registered_once(app):
    app.tool("read_note")(ok)
    err = refused(lambda: app.tool("read_note")(ok))
    assert err.kind is Kind.DOUBLE_REGISTRATION
    assert err.message == "cannot register tool `read_note` twice: a handler is already registered"


def test_a_bare_tool_decorator_uses_the_function_name(app):
    @app.tool
    def ping_tool(ctx):
        return "pong"

    assert app.registration().tools == ["ping_tool"]
    assert ping_tool(None) == "pong"  # the decorator answers the function itself


def test_lifecycle_hooks_need_their_flag(app):
    err = refused(lambda: app.on_uninstall(handler))
    assert err.kind is Kind.LIFECYCLE_DISABLED
    assert err.message == (
        "cannot register on_uninstall: lifecycle.on_uninstall is not true in the manifest"
    )
    for hook in (app.on_inbound, app.on_user_added):
        assert refused(lambda hook=hook: hook(handler)).kind is Kind.LIFECYCLE_DISABLED
    app.on_install(handler)
    err = refused(lambda: app.on_install(handler))
    assert err.kind is Kind.DOUBLE_REGISTRATION
    assert err.message == (
        "cannot register lifecycle hook `on_install` twice: a handler is already registered"
    )


def test_lifecycle_decorators_work_with_and_without_parentheses(app):
    @app.on_install()
    def install(ctx):
        pass

    assert app.registration().lifecycle == ["on_install"]


def test_schedules_must_be_declared(app):
    err = refused(lambda: app.on_schedule("daily")(handler))
    assert err.kind is Kind.UNKNOWN_SCHEDULE
    assert err.message == (
        "cannot register schedule `daily`: it is not in lifecycle.schedules (declared: hourly)"
    )
    app.on_schedule("hourly")(handler)
    err = refused(lambda: app.on_schedule("hourly")(handler))
    assert err.kind is Kind.DOUBLE_REGISTRATION
    assert err.message == "cannot register schedule `hourly` twice: a handler is already registered"


def test_events_must_be_subscribed_to(app):
    err = refused(lambda: app.on_event("contact_deleted")(handler))
    assert err.kind is Kind.UNKNOWN_EVENT
    assert err.message == (
        "cannot register event handler `contact_deleted`: the manifest's subscribes_to has no "
        "such event (declared: contact_changed)"
    )
    app.on_event("contact_changed")(handler)
    err = refused(lambda: app.on_event("contact_changed")(handler))
    assert err.kind is Kind.DOUBLE_REGISTRATION
    assert err.message == (
        "cannot register event `contact_changed` twice: a handler is already registered"
    )


def test_event_handlers_must_be_async(app):
    def sync(ctx, event):
        return None

    err = refused(lambda: app.on_event("contact_changed")(sync))
    assert err.kind is Kind.NOT_ASYNC
    assert err.message == (
        "cannot register event handler `contact_changed`: it must be a coroutine function "
        "(`async def`); synchronous event handlers are rejected at registration"
    )
    assert err.kind.value == "NotAsync"
    # A lambda returning a coroutine is still not `async def`.
    assert refused(lambda: app.on_event("contact_changed")(lambda c, e: handler(c))).kind is Kind.NOT_ASYNC
    # A partial of an async function and an object with an async __call__ are async.
    app.on_event("contact_changed")(functools.partial(handler))

    class Callable:
        async def __call__(self, ctx, event):
            return None

    other = App(app.manifest)
    other.on_event("contact_changed")(Callable())
    assert other.registration().events == ["contact_changed"]


def test_routes_must_be_declared_with_their_method(app):
    async def route(ctx, request):
        return Response(204)

    err = refused(lambda: app.route("POST", "/notes/{id}")(route))
    assert err.kind is Kind.UNKNOWN_ROUTE
    assert err.message == (
        "cannot register route `POST /notes/{id}`: it is not in the manifest's http_routes "
        "(declared: GET /notes/{id}, GET /hook)"
    )
    app.route("get", "/notes/{id}")(route)
    err = refused(lambda: app.route("GET", "/notes/{id}")(route))
    assert err.kind is Kind.DOUBLE_REGISTRATION
    assert err.message == (
        "cannot register route `GET /notes/{id}` twice: a handler is already registered"
    )


def test_on_message_needs_an_agent(app, bare):
    app.on_message(handler)
    err = refused(lambda: app.on_message(handler))
    assert err.kind is Kind.DOUBLE_REGISTRATION
    assert err.message == (
        "cannot register room handler `on_message` twice: a handler is already registered"
    )
    err = refused(lambda: App(bare).on_message(handler))
    assert err.kind is Kind.NO_AGENT
    assert err.message == (
        "cannot register on_message: the manifest declares no agent to be mentioned"
    )


def test_an_app_without_tools_says_none_are_declared(bare):
    err = refused(lambda: App(bare).tool("anything")(ok))
    assert err.message.endswith("(none are declared)")
    err = refused(lambda: App(bare).on_schedule("hourly")(handler))
    assert err.message.endswith("(none are declared)")


def test_the_kinds_are_the_rust_names():
    assert [k.value for k in Kind] == [
        "LifecycleDisabled",
        "UnknownSchedule",
        "ScopeNotRequired",
        "DoubleRegistration",
        "UnknownTool",
        "UnknownEvent",
        "UnknownRoute",
        "NoAgent",
        "NotAsync",
    ]


def test_registration_is_what_describe_answers(app, manifest):
    async def route(ctx, request):
        return Response(204)

    app.route("GET", "/hook")(route)
    app.route("GET", "/notes/{id}")(route)
    app.tool("read_note")(ok)
    app.tool("ping_tool")(ok)
    app.on_event("contact_changed")(handler)
    app.on_schedule("hourly")(handler)
    app.on_install(handler)
    app.on_message(handler)
    r = app.registration()
    assert r.manifest == manifest.text
    assert r.manifest.startswith("apiVersion: platform/v2")
    assert r.tools == ["ping_tool", "read_note"]
    assert r.lifecycle == ["on_install"]
    assert r.schedules == ["hourly"]
    assert r.events == ["contact_changed"]
    assert r.room_messages is True
    assert r.routes == ["GET /hook", "GET /notes/{id}"]


def test_app_takes_a_manifest():
    with pytest.raises(TypeError):
        App("atrium.app.yaml")  # type: ignore[arg-type]


def test_rules_are_checked_in_the_typescript_sdks_order(app):
    # An undeclared event is reported as such even when its handler is synchronous too.
    err = refused(lambda: app.on_event("contact_deleted")(lambda ctx, event: None))
    assert err.kind is Kind.UNKNOWN_EVENT


def test_every_lifecycle_flag_is_named_in_its_refusal(app):
    for hook in ("on_inbound", "on_user_added"):
        err = refused(lambda hook=hook: getattr(app, hook)(handler))
        assert err.message == (
            f"cannot register {hook}: lifecycle.{hook} is not true in the manifest"
        )


def test_a_name_taking_decorator_used_bare_is_refused(app):
    # Without the check, @app.on_schedule would register nothing and replace the function.
    with pytest.raises(TypeError) as err:

        @app.on_schedule
        async def hourly(ctx):
            return None

    assert str(err.value) == (
        '@app.on_schedule takes the schedule\'s name: @app.on_schedule("nightly"), '
        "not @app.on_schedule"
    )
    with pytest.raises(TypeError) as err:
        app.on_event(handler)
    assert str(err.value).startswith("@app.on_event takes the event's name")
    assert app.registration().schedules == [] and app.registration().events == []


def test_scopes_required_is_a_list(app):
    with pytest.raises(TypeError) as err:
        app.tool("read_note", scopes_required="notes.read")
    assert str(err.value) == (
        "scopes_required takes a list of scope names, not the string 'notes.read': "
        "scopes_required=['notes.read']"
    )
    # `description` is documentation only, as in the TypeScript SDK.
    app.tool("read_note", scopes_required=("notes.read",), description="Reads a note.")(ok)
    assert app.registration().tools == ["read_note"]


def test_a_handler_that_cannot_take_the_sdks_arguments_is_refused_at_registration(app):
    def no_ctx():
        return None

    with pytest.raises(TypeError) as err:
        app.tool("read_note")(no_ctx)
    assert str(err.value) == (
        "cannot register tool `read_note`: its handler is called as (ctx, **arguments), "
        "which test_a_handler_that_cannot_take_the_sdks_arguments_is_refused_at_registration"
        ".<locals>.no_ctx() does not accept (too many positional arguments)"
    )
    # Required keyword arguments are the tool's arguments, checked per call.
    app.tool("read_note")(lambda ctx, id, *, strict=False: id)

    async def install(ctx, extra):
        return None

    with pytest.raises(TypeError) as err:
        app.on_install(install)
    assert "cannot register on_install: its handler is called as (ctx), which" in str(err.value)
    assert "missing a required argument: 'extra'" in str(err.value)
    for register, shape in [
        (lambda f: app.on_schedule("hourly")(f), "(ctx)"),
        (lambda f: app.on_event("contact_changed")(f), "(ctx, event)"),
        (app.on_message, "(ctx, agent_slug, message)"),
        (lambda f: app.route("GET", "/hook")(f), "(ctx, request)"),
    ]:

        async def wrong(ctx, a, b, c, d):
            return None

        with pytest.raises(TypeError) as err:
            register(wrong)
        assert f"its handler is called as {shape}" in str(err.value)
    assert app.registration().lifecycle == [] and app.registration().routes == []
