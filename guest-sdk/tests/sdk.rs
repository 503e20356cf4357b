//! The SDK's registration rules, its context and its test helpers, natively.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use atrium_sdk::http::Response;
use atrium_sdk::testing::{TestClient, room_message};
use atrium_sdk::{
    App, Ctx, Error, HandlerError, ManifestInfo, RegistrationErrorKind as Kind, ToolOptions,
};
use serde_json::{Value, json};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("tests/fixtures/atrium.app.yaml");
static BARE: ManifestInfo = atrium_sdk::manifest!("tests/fixtures/no-agents.yaml");

fn ok_tool(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {
    Ok(json!("ok"))
}

fn kind_of(result: Result<&mut App, atrium_sdk::RegistrationError>) -> (Kind, String) {
    let err = result.err().expect("the registration is refused");
    (err.kind, err.message)
}

#[test]
fn the_manifest_is_embedded_with_its_names() {
    assert_eq!(MANIFEST.app_id, "sdk-fixture");
    assert_eq!(MANIFEST.required_scopes, ["notes.read"]);
    assert_eq!(MANIFEST.tools[0].scopes_required, ["notes.read"]);
    assert_eq!(MANIFEST.lifecycle.schedules, ["hourly"]);
    assert!(MANIFEST.routes[1].public);
    assert_eq!(MANIFEST.subscriptions[0].target_agent, Some("writer"));
    assert!(MANIFEST.source.starts_with("apiVersion: platform/v2"));
}

#[test]
fn every_registration_rule_is_enforced_with_its_message() {
    let mut app = App::new(&MANIFEST);
    let (kind, message) = kind_of(app.tool("write_note", ok_tool));
    assert_eq!(kind, Kind::UnknownTool);
    assert_eq!(
        message,
        "cannot register tool `write_note`: it is not in the manifest's tools (declared: read_note, ping_tool)"
    );

    let options = ToolOptions {
        scopes_required: &["notes.read", "notes.write"],
    };
    let (kind, message) = kind_of(app.tool_with("read_note", options, ok_tool));
    assert_eq!(kind, Kind::ScopeNotRequired);
    assert!(
        message.contains(
            "scopes_required notes.write must be a subset of the manifest's required_scopes"
        ),
        "{message}"
    );

    app.tool("read_note", ok_tool).unwrap();
    let (kind, message) = kind_of(app.tool("read_note", ok_tool));
    assert_eq!(kind, Kind::DoubleRegistration);
    assert_eq!(
        message,
        "cannot register tool `read_note` twice: a handler is already registered"
    );

    let (kind, message) = kind_of(app.on_uninstall(|_| Ok(())));
    assert_eq!(kind, Kind::LifecycleDisabled);
    assert_eq!(
        message,
        "cannot register on_uninstall: lifecycle.on_uninstall is not true in the manifest"
    );
    let (kind, _) = kind_of(app.on_inbound(|_, _| Ok(())));
    assert_eq!(kind, Kind::LifecycleDisabled);
    app.on_install(|_| Ok(())).unwrap();
    assert_eq!(
        kind_of(app.on_install(|_| Ok(()))).0,
        Kind::DoubleRegistration
    );

    let (kind, message) = kind_of(app.on_schedule("daily", |_| Ok(())));
    assert_eq!(kind, Kind::UnknownSchedule);
    assert!(
        message.contains("it is not in lifecycle.schedules (declared: hourly)"),
        "{message}"
    );
    app.on_schedule("hourly", |_| Ok(())).unwrap();
    assert_eq!(
        kind_of(app.on_schedule("hourly", |_| Ok(()))).0,
        Kind::DoubleRegistration
    );

    let (kind, _) = kind_of(app.on_event("contact_deleted", |_, _| Ok(json!(null))));
    assert_eq!(kind, Kind::UnknownEvent);
    app.on_event("contact_changed", |_, _| Ok(json!(null)))
        .unwrap();
    assert_eq!(
        kind_of(app.on_event("contact_changed", |_, _| Ok(json!(null)))).0,
        Kind::DoubleRegistration
    );

    let (kind, _) = kind_of(app.route("POST", "/notes/{id}", |_, _| Ok(Response::status(204))));
    assert_eq!(kind, Kind::UnknownRoute);
    app.route("get", "/notes/{id}", |_, _| Ok(Response::status(204)))
        .unwrap();
    assert_eq!(
        kind_of(app.route("GET", "/notes/{id}", |_, _| Ok(Response::status(204)))).0,
        Kind::DoubleRegistration
    );

    app.on_message(|_, _, _| Ok(())).unwrap();
    assert_eq!(
        kind_of(app.on_message(|_, _, _| Ok(()))).0,
        Kind::DoubleRegistration
    );
    let (kind, _) = kind_of(App::new(&BARE).on_message(|_, _, _| Ok(())));
    assert_eq!(kind, Kind::NoAgent);

    let registration = app.registration();
    assert_eq!(registration.tools, vec!["read_note"]);
    assert_eq!(registration.lifecycle, vec!["on_install"]);
    assert_eq!(registration.routes, vec!["GET /notes/{id}"]);
    assert!(registration.room_messages);
}

#[test]
fn manifests_load_at_run_time_or_fail_with_manifest_error() {
    let m = atrium_sdk::load_manifest("tests/fixtures/atrium.app.yaml").unwrap();
    assert_eq!(m.app_id, "sdk-fixture");
    let err =
        atrium_sdk::load_manifest_from_str("apiVersion: platform/v2\napp_id: X\n").unwrap_err();
    assert!(
        err.problems.iter().any(|p| p.starts_with("app_id:")),
        "{err}"
    );
    assert!(err.to_string().starts_with("invalid manifest: "));
    let missing = atrium_sdk::load_manifest("tests/fixtures/nope.yaml").unwrap_err();
    assert!(missing.problems[0].contains("cannot read"));
}

fn app() -> Result<App, atrium_sdk::RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.tool(
        "read_note",
        |ctx: &Ctx<'_>, args: Value| -> Result<Value, Error> {
            let note = ctx.tools.call("notes.get", &args)?;
            let key = ctx.secrets.get("NOTES_KEY");
            let limit = ctx.config.get_as::<u32>("limit");
            ctx.logger.info("read a note");
            Ok(json!({"note": note, "key": key, "limit": limit, "tenant": ctx.tenant_id()}))
        },
    )?
    .tool(
        "ping_tool",
        |ctx: &Ctx<'_>, _: Value| -> Result<Value, Error> {
            let emitted = ctx.events.emit("note_saved", json!({"id": 1}))?;
            let url = ctx.public_callback_url("/hook")?;
            let page = ctx.http.get("https://api.example.com/ping")?;
            Ok(json!({"wires": emitted.wire_count, "url": url, "status": page.status}))
        },
    )?
    .on_message(|ctx, agent, message| {
        ctx.rooms.post(&message.room_id, "seen", agent)?;
        Ok(())
    })?;
    Ok(app)
}

#[test]
fn the_test_client_mocks_tools_secrets_settings_and_records_effects() {
    let client = TestClient::new(app())
        .unwrap()
        .tenant("t-42")
        .grant(&["notes.read"])
        .mock_tool_with_scopes("notes.get", &["notes.read"], json!({"text": "hi"}))
        .mock_secret("NOTES_KEY", "k")
        .setting("limit", json!(3));
    let out = client.call_tool("read_note", json!({"id": 7})).unwrap();
    assert_eq!(
        out,
        json!({"note": {"text": "hi"}, "key": "k", "limit": 3, "tenant": "t-42"})
    );
    assert_eq!(
        client.tool_calls(),
        vec![("notes.get".to_owned(), json!({"id": 7}))]
    );
    assert_eq!(client.logs()[0].1, "read a note");
}

#[test]
fn unmocked_and_ungranted_tools_fail_as_on_the_platform() {
    let unmocked = TestClient::new(app())
        .unwrap()
        .call_tool("read_note", json!({}))
        .unwrap_err();
    assert!(
        matches!(&unmocked, HandlerError::Tool(e) if e.decision == "unmocked"),
        "{unmocked:?}"
    );
    let ungranted = TestClient::new(app())
        .unwrap()
        .mock_tool_with_scopes("notes.get", &["notes.read"], json!({}))
        .call_tool("read_note", json!({}))
        .unwrap_err();
    assert!(
        matches!(&ungranted, HandlerError::Tool(e) if e.needed_scopes == ["notes.read"]),
        "{ungranted:?}"
    );
    let unhandled = TestClient::new(app())
        .unwrap()
        .call_tool("nope", json!({}))
        .unwrap_err();
    assert_eq!(unhandled, HandlerError::NoHandler("tool `nope`".into()));
}

#[test]
fn events_public_urls_and_egress_in_tests() {
    let client = TestClient::new(app())
        .unwrap()
        .mock_http("https://api.example.com/ping", Response::status(204));
    let out = client.call_tool("ping_tool", json!({})).unwrap();
    assert_eq!(out["status"], 204);
    assert_eq!(
        out["url"],
        "http://127.0.0.1:8787/api/apps/sdk-fixture/public/t/tenant-test/hook"
    );
    assert_eq!(
        client.emitted(),
        vec![("note_saved".to_owned(), json!({"id": 1}))]
    );
    let public = TestClient::new(app())
        .unwrap()
        .public_route()
        .mock_http("https://api.example.com/ping", Response::status(204));
    assert!(matches!(
        public.call_tool("ping_tool", json!({})).unwrap_err(),
        HandlerError::Agent(_)
    ));
}

#[test]
fn egress_outside_the_manifest_is_refused_in_tests_too() {
    let mut app = App::new(&MANIFEST);
    app.tool(
        "ping_tool",
        |ctx: &Ctx<'_>, _: Value| -> Result<Value, Error> {
            ctx.http.get("https://evil.example.net/")?;
            Ok(json!(null))
        },
    )
    .unwrap();
    let err = TestClient::new(Ok(app))
        .unwrap()
        .call_tool("ping_tool", json!({}))
        .unwrap_err();
    assert!(
        matches!(&err, HandlerError::Failed(m) if m.contains("not in network.egress_hosts")),
        "{err:?}"
    );
}

#[test]
fn mock_rooms_record_every_post() {
    // As on the host, posting needs `rooms.write` granted to the install.
    let ungranted = TestClient::new(app()).unwrap();
    let refused = ungranted
        .room_message("writer", room_message("room-9", "@sdk-fixture:writer hi"))
        .unwrap_err();
    assert!(
        matches!(&refused, HandlerError::Tool(e) if e.decision == "scope_denied"
            && e.needed_scopes == ["rooms.write"]
            && e.message == "tool `rooms.post` needs scopes rooms.write: add rooms.write to required_scopes so the tenant can grant them"),
        "{refused:?}"
    );
    assert!(ungranted.rooms.posts().is_empty());
    let client = TestClient::new(app()).unwrap().grant(&["rooms.write"]);
    client
        .room_message("writer", room_message("room-9", "@sdk-fixture:writer hi"))
        .unwrap();
    let posts = client.rooms.posts();
    assert_eq!(
        (
            posts[0].room_id.as_str(),
            posts[0].content.as_str(),
            posts[0].from_agent.as_str()
        ),
        ("room-9", "seen", "writer")
    );
}

#[test]
fn simulate_event_routes_to_the_handler_or_says_no_handler() {
    let mut app = App::new(&MANIFEST);
    app.on_event("contact_changed", |_, event| {
        Ok(json!({"from": event.emitter_app_id, "agent": event.target_agent_slug}))
    })
    .unwrap();
    let client = TestClient::new(Ok(app)).unwrap();
    assert_eq!(
        client
            .simulate_event("contact_changed", json!({}), None)
            .unwrap(),
        json!({"from": "crm", "agent": "writer"})
    );
    assert_eq!(
        client
            .simulate_event("contact_changed", json!({}), Some("crm-eu"))
            .unwrap(),
        // An emitter the manifest does not subscribe to has no subscription to target an agent.
        json!({"from": "crm-eu", "agent": null})
    );
    let bare = TestClient::new(Ok(App::new(&MANIFEST))).unwrap();
    assert_eq!(
        bare.simulate_event("contact_changed", json!({}), None)
            .unwrap_err(),
        HandlerError::NoHandler("event `contact_changed`".into())
    );
}

#[test]
fn routes_match_placeholders_and_answer_404_and_405() {
    let mut app = App::new(&MANIFEST);
    app.route("GET", "/notes/{id}", |_, request| {
        Ok(Response::text(200, request.param("id").unwrap_or("")))
    })
    .unwrap();
    let client = TestClient::new(Ok(app)).unwrap();
    assert_eq!(client.request("GET", "/notes/n-1?x=1", b"").body, b"n-1");
    assert_eq!(client.request("POST", "/notes/n-1", b"").status, 405);
    assert_eq!(client.request("GET", "/elsewhere", b"").status, 404);
}

#[test]
fn an_app_exported_without_http_may_not_register_a_route() {
    // `export!(app, without_http)` builds the app through this check.
    let without_http = atrium_sdk::__private::without_http;
    let mut app = App::new(&MANIFEST);
    app.tool("ping_tool", ok_tool).unwrap();
    assert!(without_http(Ok(app)).is_ok());
    let mut app = App::new(&MANIFEST);
    app.route("get", "/notes/{id}", |_, _| Ok(Response::status(204)))
        .unwrap();
    let err = without_http(Ok(app)).err().unwrap();
    assert_eq!(err.kind, Kind::RouteNotServed);
    assert!(
        err.message.starts_with(
            "cannot register route `GET /notes/{id}`: the component does not export wasi:http/incoming-handler"
        ),
        "{}",
        err.message
    );
}

#[test]
fn a_test_without_a_capability_gets_not_available_after_the_sandbox_rules() {
    use atrium_sdk::Capability;

    fn fallbacks(ctx: &Ctx<'_>, _: Value) -> Result<Value, Error> {
        let ask = ctx.agent.ask("hello", None).unwrap_err();
        let post = ctx.rooms.post("room-1", "hi", "writer").unwrap_err();
        let ghost = ctx.rooms.post("room-1", "hi", "ghost").unwrap_err();
        Ok(json!({
            "ask": [ask.not_available().map(|c| c.as_str()), ask.reason],
            "post": [post.not_available().map(|c| c.as_str()), post.decision, post.message],
            "ghost": [ghost.not_available().map(|c| c.as_str()), ghost.decision],
        }))
    }
    let mut app = App::new(&MANIFEST);
    app.tool("ping_tool", fallbacks).unwrap();
    let client = TestClient::new(Ok(app))
        .unwrap()
        .grant(&["rooms.write"])
        .without(Capability::AgentAsk)
        .without(Capability::RoomsPost);
    let out = client.call_tool("ping_tool", json!({})).unwrap();
    assert_eq!(
        out["ask"],
        json!([
            "agent.ask",
            "not_available: `agent.ask` is not available on this host"
        ])
    );
    assert_eq!(
        out["post"],
        json!([
            "rooms.post",
            "not_available",
            "`rooms.post` is not available on this host"
        ])
    );
    assert_eq!(out["ghost"], json!([null, "unknown_agent"]));
    assert!(client.rooms.posts().is_empty());
    assert!(client.agent_calls().is_empty());
}
