//! HTTP routes through wasi:http, and the handler calls' declared-name checks.

use atrium_runtime::{AppEvent, CallError, Caller, InboundEnvelope, UserAdded};
use bytes::Bytes;
use serde_json::json;

use crate::common::*;

fn get(path: &str) -> http::Request<Bytes> {
    http::Request::get(path).body(Bytes::new()).unwrap()
}

#[tokio::test]
async fn routes_are_served_with_params_query_and_body() {
    let p = platform();
    let app = probe();
    let response = app
        .handle_http(&inv(&p), get("/echo/hello?x=1"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(
        json(std::str::from_utf8(response.body()).unwrap()),
        json!({"word": "hello", "query": "x=1", "tenant": "tenant-a", "public": false, "caller_app": null, "chain_depth": 1})
    );

    let post = http::Request::post("/submit")
        .body(Bytes::from_static(b"payload"))
        .unwrap();
    let response = app.handle_http(&inv(&p), post).await.unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["x-length"], "7");
    assert_eq!(response.body().as_ref(), b"payload");
}

#[tokio::test]
async fn undeclared_routes_never_reach_the_app() {
    let p = platform();
    let err = probe()
        .handle_http(&inv(&p), get("/admin"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::NotDeclared(m) if m.contains("GET /admin")),
        "{err:?}"
    );
    let err = probe()
        .handle_http(
            &inv(&p),
            http::Request::delete("/submit").body(Bytes::new()).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::NotDeclared(_)));
}

#[tokio::test]
async fn public_routes_run_without_a_tenant_principal() {
    let p = platform();
    let public = inv(&p).on_public_route();
    let response = probe().handle_http(&public, get("/open")).await.unwrap();
    let body = json(std::str::from_utf8(response.body()).unwrap());
    assert_eq!(body["public"], true);
    assert!(
        body["emit"]["err"]["reason"]
            .as_str()
            .unwrap()
            .contains("public route")
    );
    let err = probe()
        .handle_http(&public, get("/echo/x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::NotDeclared(m) if m.contains("is not public")),
        "{err:?}"
    );
}

#[tokio::test]
async fn any_wasi_http_component_serves_routes() {
    let p = platform();
    let plain = load_on(
        runtime(),
        atrium_test_artifacts::PLAIN_HTTP,
        atrium_test_artifacts::PLAIN_HTTP_MANIFEST,
        |_| {},
    );
    let response = plain
        .handle_http(&inv(&p), get("/hello?name=x"))
        .await
        .unwrap();
    assert_eq!(
        response.body().as_ref(),
        b"plain wasi:http answered /hello?name=x"
    );
    let err = plain
        .call_tool(&inv(&p), "anything", "{}")
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::NotDeclared(_)));
}

#[tokio::test]
async fn missing_exports_are_not_supported_by_this_app() {
    let p = platform();
    let only = load_on(
        runtime(),
        atrium_test_artifacts::HANDLERS_ONLY,
        atrium_test_artifacts::HANDLERS_ONLY_MANIFEST,
        |_| {},
    );
    let err = only.handle_http(&inv(&p), get("/hello")).await.unwrap_err();
    assert!(
        matches!(&err, CallError::NotSupported(m) if m.contains("serves no HTTP routes")),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("not supported by this app"));
    assert_eq!(
        only.call_tool(&inv(&p), "hello", "{}").await.unwrap(),
        r#""hello from tenant-a""#
    );

    let plain = load_on(
        runtime(),
        atrium_test_artifacts::PLAIN_HTTP,
        atrium_test_artifacts::PLAIN_HTTP_MANIFEST,
        |m| {
            m.tools = manifest(atrium_test_artifacts::HANDLERS_ONLY_MANIFEST).tools;
        },
    );
    let err = plain.call_tool(&inv(&p), "hello", "{}").await.unwrap_err();
    assert!(
        matches!(&err, CallError::NotSupported(m) if m.contains("serves no handler calls")),
        "{err:?}"
    );
}

#[tokio::test]
async fn tool_calls_are_checked_against_the_manifest_before_the_app_runs() {
    let p = platform();
    let app = probe();
    let err = app
        .call_tool(&inv(&p), "undeclared", "{}")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::NotDeclared(m) if m.contains("tool `undeclared`")),
        "{err:?}"
    );
    let err = app
        .call_tool(&inv(&p).with_scopes(["probe.read"]), "guarded", "{}")
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CallError::ScopeDenied {
            tool: "guarded".into(),
            needed: vec!["probe.write".into()]
        }
    );
    assert_eq!(
        app.call_tool(
            &inv(&p).with_scopes(["probe.read", "probe.write"]),
            "guarded",
            "{}"
        )
        .await
        .unwrap(),
        r#""guarded ok""#
    );
    let agent = inv(&p).with_caller(Caller::Agent);
    assert_eq!(
        app.call_tool(&agent, "internal", "{}").await.unwrap_err(),
        CallError::NotAgentVisible("internal".into())
    );
    assert!(
        app.call_tool(&inv(&p).with_caller(Caller::App), "internal", "{}")
            .await
            .is_ok()
    );
    assert!(matches!(
        app.call_tool(&inv(&p), "echo", "[1]").await.unwrap_err(),
        CallError::InvalidInput(_)
    ));
    assert!(matches!(
        app.call_tool(&inv(&p), "echo", "{oops").await.unwrap_err(),
        CallError::InvalidInput(_)
    ));
    assert_eq!(
        app.call_tool(&inv(&p), "not_json", "{}").await.unwrap_err(),
        CallError::NoHandler("tool `not_json`".into())
    );
}

#[tokio::test]
async fn lifecycle_schedules_events_and_rooms_reach_their_handlers() {
    let p = std::sync::Arc::new(
        atrium_runtime::memory::MemoryPlatform::default().with_room("r1", &["probe:helper"]),
    );
    let app = probe();
    // The probe's on_message posts an answer: the install holds rooms.write.
    let i = inv(&p).with_scopes(["rooms.write"]);
    app.on_install(&i).await.unwrap();
    app.on_uninstall(&i).await.unwrap();
    let envelope = InboundEnvelope {
        message_id: "m1".into(),
        channel: "email".into(),
        from: "a@b.example".into(),
        body: "hi".into(),
        subject: None,
        received_at: "2026-01-01T00:00:00Z".into(),
        attachment_ids: vec![],
        metadata: "{}".into(),
    };
    app.on_inbound(&i, envelope).await.unwrap();
    let user = UserAdded {
        user_id: "u-9".into(),
        display_name: "Ann".into(),
        email: None,
    };
    assert_eq!(
        app.on_user_added(&i, user).await.unwrap_err(),
        CallError::Failed("refusing user u-9".into())
    );
    app.on_schedule(&i, "tick").await.unwrap();
    assert_eq!(
        app.on_schedule(&i, "unhandled").await.unwrap_err(),
        CallError::NoHandler("schedule `unhandled`".into())
    );
    assert!(matches!(
        app.on_schedule(&i, "hourly").await.unwrap_err(),
        CallError::NotDeclared(_)
    ));

    let event = |name: &str, emitter: &str| AppEvent {
        event_name: name.into(),
        emitter_app_id: emitter.into(),
        payload: r#"{"entry":5}"#.into(),
        target_agent_slug: Some("lead".into()),
    };
    let handled = json(
        &app.on_event(&i, event("entry_booked", "ledger"))
            .await
            .unwrap(),
    );
    assert_eq!(
        handled,
        json!({"event": "entry_booked", "from": "ledger", "payload": r#"{"entry":5}"#, "tenant": "tenant-a", "agent": "lead", "chain_depth": 1})
    );
    assert_eq!(
        app.on_event(&i, event("entry_voided", "ledger"))
            .await
            .unwrap_err(),
        CallError::NoHandler("event `entry_voided`".into())
    );
    assert!(matches!(
        app.on_event(&i, event("entry_booked", "crm"))
            .await
            .unwrap_err(),
        CallError::NotDeclared(_)
    ));
    let mut bad = event("entry_booked", "ledger");
    bad.payload = "not json".into();
    assert!(matches!(
        app.on_event(&i, bad).await.unwrap_err(),
        CallError::InvalidInput(_)
    ));

    let message = atrium_runtime::RoomMessage {
        id: "m".into(),
        room_id: "r1".into(),
        tenant_id: "tenant-a".into(),
        sender_type: atrium_runtime::SenderType::User,
        sender_ref: "user:u-1".into(),
        sender_display: "U".into(),
        content: "@probe:helper ping".into(),
        mentions: vec!["probe:helper".into()],
        metadata: "{}".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
    };
    app.on_message(&i, "helper", message.clone()).await.unwrap();
    assert_eq!(
        p.posts()[0].message.content,
        "helper got: @probe:helper ping"
    );
    assert!(matches!(
        app.on_message(&i, "ghost", message).await.unwrap_err(),
        CallError::NotDeclared(_)
    ));

    let bare = load_on(
        runtime(),
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |m| {
            m.lifecycle.on_install = false;
        },
    );
    let err = bare.on_install(&i).await.unwrap_err();
    assert_eq!(
        err,
        CallError::NotDeclared("lifecycle.on_install is not true in the manifest".into())
    );
}
