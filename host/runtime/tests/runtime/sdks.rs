//! Apps written with the Python and TypeScript SDKs, built into components by the SDKs' own
//! build tools (componentize-py, componentize-js), through the real runtime: the invoice desk
//! twins answer every call as the Rust `invoice-desk` does, and the runtime's limits hold for
//! them (a Python memory bomb hits the cap, an endless JavaScript loop hits the deadline).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{App, AppEvent, CallError, InboundEnvelope, Runtime, RuntimeConfig};
use atrium_test_artifacts::sdk;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::common::*;

/// The invoice desk in one language: its component and its manifest.
struct Desk {
    lang: &'static str,
    component: PathBuf,
    manifest: PathBuf,
}

fn desks() -> Vec<Desk> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    vec![
        Desk {
            lang: "rust",
            component: PathBuf::from(atrium_test_artifacts::INVOICES),
            manifest: PathBuf::from(atrium_test_artifacts::INVOICES_MANIFEST),
        },
        Desk {
            lang: "python",
            component: sdk::python_component("examples/invoices-py"),
            manifest: root.join("examples/invoices-py/atrium.app.yaml"),
        },
        Desk {
            lang: "typescript",
            component: sdk::typescript_component("examples/invoices-ts"),
            manifest: root.join("examples/invoices-ts/atrium.app.yaml"),
        },
    ]
}

fn load(runtime: &Runtime, component: &Path, manifest: &Path) -> App {
    let manifest = atrium_manifest::parse(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    runtime
        .load_file(component, manifest)
        .unwrap_or_else(|e| panic!("{} does not load: {e}", component.display()))
}

/// Every number as a float, so that `10` and `10.0` compare equal across languages.
fn normalised(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.into_iter().map(normalised).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, normalised(v))).collect())
        }
        other => other,
    }
}

/// A call's outcome as JSON: the result, or the error's kind with the parts every language
/// must agree on (a tool error's tool, decision and scopes; not the wording of messages).
fn outcome(result: Result<Value, CallError>) -> Value {
    match result {
        Ok(value) => json!({"ok": normalised(value)}),
        Err(CallError::Tool(e)) => json!({"tool_error": {
            "tool_name": e.tool_name, "decision": e.decision, "needed_scopes": e.needed_scopes,
        }}),
        Err(CallError::InvalidInput(_)) => json!({"error": "invalid_input"}),
        Err(CallError::ScopeDenied { tool, needed }) => {
            json!({"error": "scope_denied", "tool": tool, "needed": needed})
        }
        Err(CallError::NotDeclared(m)) => json!({"error": "not_declared", "message": m}),
        Err(other) => json!({"error": format!("{other:?}")}),
    }
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Every handler of the invoice desk, called once or more: what it answered, which platform
/// tools it called with which arguments, what it emitted, and what its routes served.
async fn transcript(app: &App) -> Vec<(String, Value)> {
    let invoices = json!([
        {"id": "inv-1", "payer": "Beta GmbH", "amount": 120.0, "status": "new", "issued_at": "2026-03-01"},
        {"id": "inv-2", "payer": "Gamma SA", "amount": 80.0, "status": "overdue", "issued_at": "2026-04-01"},
    ]);
    let p = Arc::new(
        MemoryPlatform::new("https://atrium.example")
            .with_tool("records.query", &["invoices.read"], invoices)
            .with_tool("records.update", &["invoices.write"], json!({"ok": true}))
            .with_tool("records.put", &["invoices.write"], json!({"id": "inv-3"}))
            .with_tool("mail.send", &["mail.send"], json!({"sent": true}))
            .with_wire("invoice_approved", 1),
    );
    let settings: Map<String, Value> = json!({
        "company_name": "Acme", "approval_limit": 1000, "currency": "USD", "approver": "u-7",
    })
    .as_object()
    .cloned()
    .unwrap_or_default();
    let all = inv(&p)
        .with_scopes(["invoices.read", "invoices.write"])
        .with_settings(settings.clone());
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut record = |label: &str, value: Value| out.push((label.to_owned(), value));

    let registration = app.health(&all).await.unwrap().unwrap();
    record(
        "health",
        json!({
            "tools": registration.tools, "lifecycle": registration.lifecycle,
            "schedules": registration.schedules, "events": registration.events,
            "room_messages": registration.room_messages, "routes": registration.routes,
        }),
    );
    let tool = |name: &'static str, args: Value| {
        let i = all.clone();
        async move {
            outcome(
                app.call_tool(&i, name, &args.to_string())
                    .await
                    .map(|t| parsed(&t)),
            )
        }
    };
    record("list_invoices", tool("list_invoices", json!({})).await);
    record(
        "list_invoices overdue",
        tool("list_invoices", json!({"status": "overdue"})).await,
    );
    record(
        "approve_invoice",
        tool("approve_invoice", json!({"id": "inv-1", "amount": 10})).await,
    );
    record(
        "approve_invoice over the limit",
        tool("approve_invoice", json!({"id": "inv-9", "amount": 5000.5})).await,
    );
    record(
        "approve_invoice without an amount",
        tool("approve_invoice", json!({"id": "inv-1"})).await,
    );
    record(
        "send_reminder without the mail scope",
        tool(
            "send_reminder",
            json!({"id": "inv-2", "to": "ap@gamma.example"}),
        )
        .await,
    );
    let with_mail = all.clone().with_scopes(["invoices.read", "mail.send"]);
    record(
        "send_reminder",
        outcome(
            app.call_tool(
                &with_mail,
                "send_reminder",
                r#"{"id": "inv-2", "to": "ap@gamma.example"}"#,
            )
            .await
            .map(|t| parsed(&t)),
        ),
    );
    record("undeclared tool", tool("no_such_tool", json!({})).await);

    let unit = |r: Result<(), CallError>| outcome(r.map(|()| Value::Null));
    record("on_install", unit(app.on_install(&all).await));
    let unnamed = inv(&p).with_scopes(["invoices.read", "invoices.write"]);
    record(
        "on_install without company_name",
        unit(app.on_install(&unnamed).await),
    );
    record("on_uninstall", unit(app.on_uninstall(&all).await));
    let envelope = |channel: &str, subject: &str| InboundEnvelope {
        message_id: "msg-1".into(),
        channel: channel.into(),
        from: "billing@beta.example".into(),
        body: "see attached".into(),
        subject: Some(subject.into()),
        received_at: "2026-05-01T09:00:00Z".into(),
        attachment_ids: vec!["att-1".into()],
        metadata: "{}".into(),
    };
    record(
        "on_inbound invoice mail",
        unit(
            app.on_inbound(&all, envelope("email", "Invoice 2026-17"))
                .await,
        ),
    );
    record(
        "on_inbound other channel",
        unit(app.on_inbound(&all, envelope("whatsapp", "Invoice")).await),
    );
    record(
        "nightly_reconcile without BANK_API_KEY",
        unit(app.on_schedule(&all, "nightly_reconcile").await),
    );
    record(
        "monday_digest",
        unit(app.on_schedule(&all, "monday_digest").await),
    );
    let event = |payload: Value| AppEvent {
        event_name: "entry_booked".into(),
        emitter_app_id: "ledger".into(),
        payload: payload.to_string(),
        target_agent_slug: Some("clerk".into()),
    };
    record(
        "entry_booked",
        outcome(
            app.on_event(
                &all,
                event(json!({"invoice_id": "inv-1", "entry_id": "e-9"})),
            )
            .await
            .map(|t| parsed(&t)),
        ),
    );
    record(
        "entry_booked with a bad payload",
        outcome(
            app.on_event(&all, event(json!({"invoice": 1})))
                .await
                .map(|t| parsed(&t)),
        ),
    );

    for (label, method, path, body, public) in [
        ("GET /invoices", "GET", "/invoices?status=new", "", false),
        (
            "PATCH /invoices/{id}",
            "PATCH",
            "/invoices/inv-1",
            r#"{"status": "approved", "amount": 10}"#,
            false,
        ),
        (
            "PATCH /invoices/{id} to paid",
            "PATCH",
            "/invoices/inv-1",
            r#"{"status": "paid", "amount": 10}"#,
            false,
        ),
        (
            "PATCH with a bad body",
            "PATCH",
            "/invoices/inv-1",
            "not json",
            false,
        ),
        ("GET a PDF", "GET", "/files/invoice-42.pdf", "", true),
        ("DELETE /invoices", "DELETE", "/invoices", "", false),
        ("GET an unknown path", "GET", "/nowhere", "", false),
    ] {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(Bytes::from(body.to_owned()))
            .unwrap();
        let i = if public {
            inv(&p).with_settings(settings.clone()).on_public_route()
        } else {
            all.clone()
        };
        let response = match app.handle_http(&i, request).await {
            Ok(response) => response,
            // The host answers for routes the manifest does not declare.
            Err(e) => {
                record(label, outcome(Err(e)));
                continue;
            }
        };
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .to_owned();
        let body = response.body();
        let shown = if content_type == "application/json" {
            normalised(parsed(&String::from_utf8_lossy(body)))
        } else if content_type == "application/pdf" {
            json!({"pdf": body.starts_with(b"%PDF-1.4")})
        } else {
            // Text answers (errors) differ in wording; their status is the contract.
            json!("text")
        };
        record(
            label,
            json!({"status": response.status().as_u16(), "content_type": content_type, "body": shown}),
        );
    }
    out.push((
        "platform tool calls".to_owned(),
        normalised(Value::Array(
            p.tool_calls()
                .into_iter()
                .map(|(name, args)| json!([name, args]))
                .collect(),
        )),
    ));
    out.push((
        "emitted".to_owned(),
        normalised(Value::Array(
            p.emitted()
                .into_iter()
                .map(|(name, payload)| json!([name, payload]))
                .collect(),
        )),
    ));
    out
}

#[tokio::test]
async fn the_python_and_typescript_invoice_desks_answer_every_call_as_the_rust_one_does() {
    let mut transcripts = Vec::new();
    for desk in desks() {
        let app = load(runtime(), &desk.component, &desk.manifest);
        transcripts.push((desk.lang, transcript(&app).await));
    }
    let (_, rust) = &transcripts[0];
    // The Rust desk's answers are the reference; a few of them, checked outright, show that
    // the transcript exercises what it claims to.
    let find = |t: &[(String, Value)], label: &str| {
        t.iter()
            .find(|(l, _)| l == label)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(
        find(rust, "approve_invoice"),
        json!({"ok": {"id": "inv-1", "status": "approved", "subscribers": 1.0}})
    );
    assert_eq!(
        find(rust, "send_reminder without the mail scope"),
        json!({"error": "scope_denied", "tool": "send_reminder", "needed": ["mail.send"]})
    );
    assert_eq!(
        find(rust, "send_reminder")["ok"]["sent"],
        json!({"sent": true})
    );
    assert_eq!(find(rust, "GET a PDF")["body"], json!({"pdf": true}));
    assert_eq!(find(rust, "DELETE /invoices")["error"], "not_declared");
    assert_eq!(find(rust, "GET an unknown path")["error"], "not_declared");
    assert_eq!(
        find(rust, "entry_booked with a bad payload"),
        json!({"error": "invalid_input"})
    );
    assert_eq!(find(rust, "health")["routes"].as_array().unwrap().len(), 3);
    for (lang, transcript) in &transcripts[1..] {
        assert_eq!(transcript.len(), rust.len());
        for ((label, expected), (_, actual)) in rust.iter().zip(transcript) {
            assert_eq!(actual, expected, "{lang}: {label}");
        }
    }
}

fn limits_runtime(deadline: Duration) -> Runtime {
    Runtime::new(RuntimeConfig {
        deadline,
        ..config()
    })
    .unwrap()
}

/// The limits guest `guest` (built by `component`): its memory bomb ends at the manifest's
/// 64 MiB cap, its endless loop at the deadline, and the next call of the same app runs.
async fn limits_hold(guest: &str, component: PathBuf, deadline: Duration) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let runtime = limits_runtime(deadline);
    let app = load(
        &runtime,
        &component,
        &root.join(guest).join("atrium.app.yaml"),
    );
    let p = platform();
    let err = app.call_tool(&inv(&p), "bomb", "{}").await.unwrap_err();
    assert_eq!(err, CallError::MemoryLimit { limit_mb: 64 });
    let err = app.call_tool(&inv(&p), "spin", "{}").await.unwrap_err();
    assert!(matches!(err, CallError::Deadline(_)), "{err:?}");
    let echo = app.call_tool(&inv(&p), "echo", r#"{"a": [1, "b"]}"#).await;
    assert_eq!(parsed(&echo.unwrap()), json!({"a": [1, "b"]}));
}

#[tokio::test]
async fn a_python_memory_bomb_hits_the_cap_an_endless_loop_the_deadline_and_the_next_call_runs() {
    let guest = "tests/guests/python-limits";
    limits_hold(guest, sdk::python_component(guest), Duration::from_secs(3)).await;
}

#[tokio::test]
async fn a_javascript_memory_bomb_hits_the_cap_an_endless_loop_the_deadline_and_the_next_call_runs()
{
    let guest = "tests/guests/ts-limits";
    limits_hold(
        guest,
        sdk::typescript_component(guest),
        Duration::from_millis(1500),
    )
    .await;
}
