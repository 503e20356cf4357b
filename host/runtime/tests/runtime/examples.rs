//! The example apps as components, through the real runtime and the in-memory platform.

use std::sync::Arc;

use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{CallError, RoomMessage, SenderType};
use bytes::Bytes;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn the_minimal_app_passes_its_health_check_and_idles() {
    let app = load_on(
        runtime(),
        atrium_test_artifacts::MINIMAL,
        atrium_test_artifacts::MINIMAL_MANIFEST,
        |_| {},
    );
    let registration = app.health(&inv(&platform())).await.unwrap().unwrap();
    assert!(registration.tools.is_empty() && registration.lifecycle.is_empty());
    assert!(registration.manifest.contains("hello-minimal"));
}

#[tokio::test]
async fn a_component_loaded_with_another_apps_manifest_fails_its_health_check() {
    let app = load_on(
        runtime(),
        atrium_test_artifacts::MINIMAL,
        atrium_test_artifacts::ROOM_BOT_MANIFEST,
        |_| {},
    );
    let err = app.health(&inv(&platform())).await.unwrap_err();
    assert!(
        matches!(&err, CallError::Registration(m) if m.contains("hello-minimal@1.0.0") && m.contains("room-bot@0.4.0")),
        "{err:?}"
    );
}

#[tokio::test]
async fn invoice_desk_lists_invoices_and_serves_its_public_pdf() {
    let app = load_on(
        runtime(),
        atrium_test_artifacts::INVOICES,
        atrium_test_artifacts::INVOICES_MANIFEST,
        |_| {},
    );
    // Built with the SDK: every call starts from the snapshot with the app already built.
    assert!(app.preinitialized());
    let p = Arc::new(
        MemoryPlatform::default()
            .with_tool("records.query", &["invoices.read"], json!([{"id": "inv-1", "issued_at": "2026-01-01"}, {"id": "inv-2", "issued_at": "2026-02-01"}]))
            .with_tool("records.update", &["invoices.write"], json!({"ok": true}))
            .with_wire("invoice_approved", 1),
    );
    let i = inv(&p).with_scopes(["invoices.read", "invoices.write"]);
    let list = json(&app.call_tool(&i, "list_invoices", "{}").await.unwrap());
    assert_eq!(list["invoices"][0]["id"], "inv-2");

    let approved = json(
        &app.call_tool(&i, "approve_invoice", r#"{"id": "inv-1", "amount": 10}"#)
            .await
            .unwrap(),
    );
    assert_eq!(
        approved,
        json!({"id": "inv-1", "status": "approved", "subscribers": 1})
    );
    assert_eq!(p.emitted()[0].0, "invoice_approved");

    let pdf = http::Request::get("/files/invoice-42.pdf")
        .body(Bytes::new())
        .unwrap();
    let response = app
        .handle_http(&inv(&p).on_public_route(), pdf)
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/pdf");
    assert!(response.body().starts_with(b"%PDF-1.4"));

    let registration = app.health(&inv(&p)).await.unwrap().unwrap();
    assert_eq!(registration.routes.len(), 3);
}

#[tokio::test]
async fn the_room_bot_answers_a_mention_in_the_room() {
    let app = load_on(
        runtime(),
        atrium_test_artifacts::ROOM_BOT,
        atrium_test_artifacts::ROOM_BOT_MANIFEST,
        |_| {},
    );
    let p = Arc::new(
        MemoryPlatform::default().with_room("room-1", &["room-bot:concierge", "user:u-1"]),
    );
    let message = RoomMessage {
        id: "m-1".into(),
        room_id: "room-1".into(),
        tenant_id: "tenant-a".into(),
        sender_type: SenderType::User,
        sender_ref: "user:u-1".into(),
        sender_display: "Ann".into(),
        content: "@room-bot:concierge summarize the launch".into(),
        mentions: vec!["room-bot:concierge".into()],
        metadata: "{}".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
    };
    let granted = inv(&p).with_scopes(["rooms.write"]);
    app.on_message(&granted, "concierge", message)
        .await
        .unwrap();
    let posts = p.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].message.sender_ref, "room-bot:concierge");
    assert_eq!(
        posts[0].message.content,
        "@user:u-1 here is the summary: [room-bot:scribe] Summarize: the launch"
    );
    assert_eq!(posts[0].routed_targets, vec!["user:u-1".to_owned()]);

    // A failed agent call inside the handler reaches the caller as the agent error.
    let deep = inv(&p).with_chain(atrium_runtime::ChainContext {
        depth: 8,
        visited: vec![],
    });
    let mut again = posts[0].message.clone();
    again.sender_type = SenderType::User;
    again.sender_ref = "user:u-1".into();
    again.content = "@room-bot:concierge summarize it".into();
    let err = app.on_message(&deep, "concierge", again).await.unwrap_err();
    assert!(
        matches!(&err, CallError::Agent(e) if e.reason.starts_with("chain depth exceeded")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_failed_platform_tool_inside_a_handler_reaches_the_caller() {
    let app = load_on(
        runtime(),
        atrium_test_artifacts::INVOICES,
        atrium_test_artifacts::INVOICES_MANIFEST,
        |_| {},
    );
    let p = platform();
    let err = app
        .call_tool(
            &inv(&p).with_scopes(["invoices.read"]),
            "list_invoices",
            "{}",
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Tool(e) if e.decision == "unknown_tool" && e.tool_name == "records.query"),
        "{err:?}"
    );
}
