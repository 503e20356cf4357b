//! `atrium call`: a call through the real runtime against the in-memory platform.

use std::path::{Path, PathBuf};

use crate::{atrium, stderr, stdout};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compiled components are cached across tests and runs, as on a developer's machine.
fn shared_cache() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root().join("target"), PathBuf::from)
        .join("atrium-test-cache")
}

/// Runs `atrium call`; the first test to load a component compiles it, the others load it.
fn call(args: &[&str]) -> std::process::Output {
    let cache = shared_cache();
    let cache = cache.to_str().unwrap();
    let mut all = vec!["call", "--cache-dir", cache];
    all.extend_from_slice(args);
    atrium(&root(), &all)
}

fn invoices(extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "--component",
        atrium_test_artifacts::INVOICES,
        "--manifest",
        "examples/invoices/atrium.app.yaml",
        "--mocks",
        "examples/invoices/atrium.dev.json",
    ];
    args.extend_from_slice(extra);
    call(&args)
}

#[test]
fn a_tool_call_prints_its_json_result_and_what_the_app_did() {
    let out = invoices(&["list_invoices", "{}"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["invoices"][0]["id"], "inv-2");
    assert!(
        stderr(&out).contains(r#"platform: tool records.query {"record_type":"invoice"}"#),
        "{}",
        stderr(&out)
    );
}

/// A platform tool the mock file does not mock answers decision `unmocked` (the spec's dev
/// mock), not `unknown_tool`.
#[test]
fn an_unmocked_platform_tool_answers_unmocked() {
    let dir = tempfile::tempdir().unwrap();
    let mocks = dir.path().join("empty.dev.json");
    std::fs::write(&mocks, "{}").unwrap();
    let out = call(&[
        "--component",
        atrium_test_artifacts::INVOICES,
        "--manifest",
        "examples/invoices/atrium.app.yaml",
        "--mocks",
        mocks.to_str().unwrap(),
        "list_invoices",
        "{}",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("unmocked"), "{}", stderr(&out));
}

#[test]
fn scopes_settings_and_events() {
    let denied = invoices(&[
        "--grant",
        "invoices.read",
        "approve_invoice",
        r#"{"id":"inv-1","amount":5}"#,
    ]);
    assert_eq!(denied.status.code(), Some(2));
    assert!(
        stderr(&denied).contains("needs scopes the install has not granted: invoices.write"),
        "{}",
        stderr(&denied)
    );

    let over = invoices(&[
        "--setting",
        "approval_limit=1",
        "approve_invoice",
        r#"{"id":"inv-1","amount":5}"#,
    ]);
    assert_eq!(over.status.code(), Some(2));
    assert!(
        stderr(&over).contains("above the approval limit of 1"),
        "{}",
        stderr(&over)
    );

    let ok = invoices(&["approve_invoice", r#"{"id":"inv-1","amount":5}"#]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(
        stderr(&ok).contains("platform: event invoice_approved"),
        "{}",
        stderr(&ok)
    );

    let hidden = invoices(&[
        "--as-agent",
        "send_reminder",
        r#"{"id":"inv-1","to":"a@b.example"}"#,
    ]);
    assert_eq!(hidden.status.code(), Some(2));
    assert!(
        stderr(&hidden).contains("is not agent-visible"),
        "{}",
        stderr(&hidden)
    );

    let event = invoices(&[
        "--event",
        "entry_booked",
        r#"{"invoice_id":"inv-1","entry_id":"e-1"}"#,
    ]);
    assert_eq!(event.status.code(), Some(0), "{}", stderr(&event));
    assert!(
        stdout(&event).contains(r#""from": "ledger""#),
        "{}",
        stdout(&event)
    );
}

#[test]
fn routes_lifecycle_schedules_and_health() {
    let pdf = invoices(&["--route", "GET", "/files/invoice-9.pdf", "--public"]);
    assert_eq!(pdf.status.code(), Some(0), "{}", stderr(&pdf));
    assert!(
        stdout(&pdf).starts_with("200 OK\ncontent-type: application/pdf\n\n%PDF-1.4"),
        "{}",
        stdout(&pdf)
    );

    let install = invoices(&[
        "--lifecycle",
        "on_install",
        "--setting",
        r#"company_name="Acme""#,
    ]);
    assert_eq!(install.status.code(), Some(0), "{}", stderr(&install));
    let missing = invoices(&["--lifecycle", "on_install"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("company_name is required"));

    let schedule = invoices(&["--schedule", "monday_digest"]);
    assert_eq!(schedule.status.code(), Some(0), "{}", stderr(&schedule));
    assert_eq!(
        stderr(&schedule)
            .matches("platform: event invoice_overdue")
            .count(),
        2,
        "{}",
        stderr(&schedule)
    );

    let health = invoices(&["--health"]);
    assert!(
        stdout(&health).starts_with(
            "healthy: tools [approve_invoice, chase_overdue, list_invoices, send_reminder]"
        ),
        "{}",
        stdout(&health)
    );
}

#[test]
fn a_room_message_reaches_the_bot() {
    let out = call(&[
        "--component",
        atrium_test_artifacts::ROOM_BOT,
        "--manifest",
        "examples/room-bot/atrium.app.yaml",
        "--room",
        "r1",
        "--member",
        "room-bot:concierge",
        "--message",
        "concierge",
        "@room-bot:concierge hello there",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("room-bot:concierge posted to room r1:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_input_exits_1_and_a_failed_call_exits_2() {
    let bad_json = invoices(&["list_invoices", "{oops"]);
    assert_eq!(bad_json.status.code(), Some(1));
    assert!(stderr(&bad_json).contains("the tool argument object is not valid JSON"));
    let no_tool = invoices(&[]);
    assert_eq!(no_tool.status.code(), Some(1));
    let bad_setting = invoices(&["--setting", "nokey", "list_invoices"]);
    assert_eq!(bad_setting.status.code(), Some(1));
    let undeclared = invoices(&["drop_tables", "{}"]);
    assert_eq!(undeclared.status.code(), Some(2));
    assert!(
        stderr(&undeclared).contains("tool `drop_tables` is not declared"),
        "{}",
        stderr(&undeclared)
    );
    let missing = call(&[
        "--component",
        "/no/such.wasm",
        "--manifest",
        "examples/minimal/atrium.app.yaml",
        "--health",
    ]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("/no/such.wasm"));
    let bad_manifest = call(&[
        "--component",
        atrium_test_artifacts::MINIMAL,
        "--manifest",
        "Cargo.toml",
        "--health",
    ]);
    assert_eq!(bad_manifest.status.code(), Some(1));
}
