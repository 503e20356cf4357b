use atrium_sdk::http::Response;
use atrium_sdk::testing::TestClient;
use atrium_sdk::{Capability, HandlerError, InboundEnvelope};
use serde_json::json;

use super::app;

const ALL_SCOPES: &[&str] = &["invoices.read", "invoices.write", "mail.send"];

fn client() -> TestClient {
    TestClient::new(app())
        .unwrap()
        .grant(ALL_SCOPES)
        .setting("company_name", json!("Acme"))
        .setting("approval_limit", json!(1000))
        .setting("approver", json!("user-7"))
        .mock_tool_with_scopes(
            "records.query",
            &["invoices.read"],
            json!([
                {"id": "inv-1", "payer": "Beta", "amount": 120.0, "status": "new", "issued_at": "2026-03-01"},
                {"id": "inv-2", "payer": "Gamma", "amount": 80.0, "status": "overdue", "issued_at": "2026-04-01"}
            ]),
        )
        .mock_tool_with_scopes("records.update", &["invoices.write"], json!({"ok": true}))
        .mock_tool_with_scopes("records.put", &["invoices.write"], json!({"id": "inv-9"}))
        .mock_tool_with_scopes("mail.send", &["mail.send"], json!({"message_id": "m-1"}))
}

#[test]
fn list_invoices_is_newest_first_in_the_install_currency() {
    let result = client()
        .setting("currency", json!("GBP"))
        .call_tool("list_invoices", json!({}))
        .unwrap();
    assert_eq!(result["currency"], "GBP");
    assert_eq!(result["invoices"][0]["id"], "inv-2");
    assert_eq!(result["invoices"][1]["id"], "inv-1");
}

#[test]
fn a_missing_scope_is_reported_with_the_scopes_needed() {
    let client = TestClient::new(app()).unwrap().mock_tool_with_scopes(
        "records.query",
        &["invoices.read"],
        json!([]),
    );
    let err = client.call_tool("list_invoices", json!({})).unwrap_err();
    let HandlerError::Tool(e) = err else {
        panic!("{err:?}")
    };
    assert_eq!(e.decision, "scope_denied");
    assert_eq!(e.needed_scopes, vec!["invoices.read".to_owned()]);
}

#[test]
fn approval_updates_the_record_and_emits_the_event() {
    let client = client();
    let result = client
        .call_tool("approve_invoice", json!({"id": "inv-1", "amount": 120.0}))
        .unwrap();
    assert_eq!(result["status"], "approved");
    assert_eq!(
        client.tool_calls().last().unwrap(),
        &(
            "records.update".to_owned(),
            json!({"id": "inv-1", "fields": {"status": "approved", "approved_by": "user-7"}})
        )
    );
    assert_eq!(
        client.emitted(),
        vec![(
            "invoice_approved".to_owned(),
            json!({"id": "inv-1", "amount": 120.0, "currency": "EUR"})
        )]
    );
}

#[test]
fn approval_above_the_limit_is_refused_before_any_change() {
    let client = client();
    let err = client
        .call_tool("approve_invoice", json!({"id": "inv-1", "amount": 5000.0}))
        .unwrap_err();
    assert!(
        matches!(&err, HandlerError::InvalidInput(m) if m.contains("above the approval limit of 1000")),
        "{err:?}"
    );
    assert!(client.tool_calls().is_empty());
    assert!(client.emitted().is_empty());
}

#[test]
fn bad_arguments_name_the_field() {
    let err = client()
        .call_tool("approve_invoice", json!({"id": "inv-1"}))
        .unwrap_err();
    assert!(
        matches!(&err, HandlerError::InvalidInput(m) if m.contains("amount")),
        "{err:?}"
    );
}

#[test]
fn reminders_use_the_install_text() {
    let client = client().setting("reminder_text", json!("Please pay."));
    client
        .call_tool(
            "send_reminder",
            json!({"id": "inv-2", "to": "ap@gamma.example"}),
        )
        .unwrap();
    let (tool, args) = client.tool_calls().pop().unwrap();
    assert_eq!(tool, "mail.send");
    assert_eq!(
        args,
        json!({"to": "ap@gamma.example", "subject": "Invoice inv-2 from Acme", "body": "Please pay."})
    );
}

#[test]
fn install_needs_the_company_name_and_logs_the_public_link() {
    let client = client();
    client.install().unwrap();
    let logs = client.logs();
    assert!(
        logs[0]
            .1
            .contains("/api/apps/invoice-desk/public/t/tenant-test/files/invoice-example.pdf"),
        "{logs:?}"
    );
    let bare = TestClient::new(app()).unwrap();
    assert!(
        matches!(bare.install(), Err(HandlerError::InvalidInput(m)) if m.contains("company_name"))
    );
}

#[test]
fn inbound_invoice_mail_is_filed_and_other_mail_ignored() {
    let client = client();
    let envelope = InboundEnvelope {
        message_id: "msg-1".into(),
        channel: "email".into(),
        from: "billing@beta.example".into(),
        body: "see attached".into(),
        subject: Some("Invoice 2026-004".into()),
        received_at: "2026-05-01T10:00:00Z".into(),
        attachment_ids: vec!["att-1".into()],
        metadata: "{}".into(),
    };
    client.inbound(envelope.clone()).unwrap();
    client
        .inbound(InboundEnvelope {
            subject: Some("Lunch?".into()),
            ..envelope
        })
        .unwrap();
    let calls = client.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "records.put");
    assert_eq!(calls[0].1["record"]["attachment_ids"], json!(["att-1"]));
}

#[test]
fn nightly_reconcile_reads_the_bank_with_the_secret() {
    let client = client().mock_secret("BANK_API_KEY", "k-123").mock_http(
        "https://api.bank.example/v1/payments?status=settled",
        Response {
            status: 200,
            headers: vec![],
            body: br#"[{"invoice_id":"inv-1"}]"#.to_vec(),
        },
    );
    client.schedule("nightly_reconcile").unwrap();
    assert_eq!(
        client.http_requests()[0].headers,
        vec![("authorization".to_owned(), "Bearer k-123".to_owned())]
    );
    assert_eq!(
        client.tool_calls(),
        vec![(
            "records.update".to_owned(),
            json!({"id": "inv-1", "fields": {"status": "paid"}})
        )]
    );
}

#[test]
fn nightly_reconcile_without_the_secret_does_nothing() {
    let client = client();
    client.schedule("nightly_reconcile").unwrap();
    assert!(client.http_requests().is_empty());
}

#[test]
fn monday_digest_emits_one_event_per_overdue_invoice() {
    let client = client();
    client.schedule("monday_digest").unwrap();
    assert_eq!(client.emitted().len(), 2);
    assert_eq!(client.emitted()[0].0, "invoice_overdue");
}

#[test]
fn entry_booked_is_handled_and_tells_emitters_apart() {
    let client = client();
    let result = client
        .simulate_event(
            "entry_booked",
            json!({"invoice_id": "inv-1", "entry_id": "e-5"}),
            None,
        )
        .unwrap();
    assert_eq!(
        result,
        json!({"filed": true, "invoice_id": "inv-1", "from": "ledger"})
    );
    let err = client
        .simulate_event("customer_updated", json!({}), None)
        .unwrap_err();
    assert_eq!(
        err,
        HandlerError::NoHandler("event `customer_updated`".into())
    );
}

#[test]
fn routes_serve_json_the_patch_and_a_public_pdf() {
    let client = client();
    let list = client.request("GET", "/invoices?status=new", b"");
    assert_eq!(list.status, 200);
    let body: serde_json::Value = serde_json::from_slice(&list.body).unwrap();
    assert_eq!(body["currency"], "EUR");

    let patched = client.request(
        "PATCH",
        "/invoices/inv-1",
        br#"{"status":"approved","amount":10}"#,
    );
    assert_eq!(
        patched.status,
        200,
        "{}",
        String::from_utf8_lossy(&patched.body)
    );
    assert_eq!(
        client
            .request("PATCH", "/invoices/inv-1", b"not json")
            .status,
        400
    );
    assert_eq!(client.request("DELETE", "/invoices/inv-1", b"").status, 405);
    assert_eq!(client.request("GET", "/nothing", b"").status, 404);

    let pdf = client.request("GET", "/files/invoice-inv-1.pdf", b"");
    assert_eq!(pdf.status, 200);
    assert!(pdf.body.starts_with(b"%PDF-1.4"));
    assert!(String::from_utf8_lossy(&pdf.body).contains("Acme - invoice inv-1"));
}

#[test]
fn every_declared_handler_is_registered() {
    let registration = app().unwrap().registration();
    assert_eq!(
        registration.tools,
        vec![
            "approve_invoice",
            "chase_overdue",
            "list_invoices",
            "send_reminder"
        ]
    );
    assert_eq!(
        registration.lifecycle,
        vec!["on_install", "on_uninstall", "on_inbound"]
    );
    assert_eq!(
        registration.schedules,
        vec!["monday_digest", "nightly_reconcile"]
    );
    assert_eq!(registration.events, vec!["entry_booked"]);
    assert_eq!(registration.routes.len(), 3);
}

#[test]
fn the_dev_mock_file_drives_a_local_run() {
    let client = TestClient::new(app())
        .unwrap()
        .grant(ALL_SCOPES)
        .mock_file(include_str!("../atrium.dev.json"))
        .unwrap();
    let listed = client.call_tool("list_invoices", json!({})).unwrap();
    assert_eq!(listed["invoices"][0]["payer"], "Gamma SA");
    let err = client
        .call_tool(
            "send_reminder",
            json!({"id": "inv-2", "to": "ap@gamma.example"}),
        )
        .unwrap_err();
    let HandlerError::Tool(e) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (e.decision.as_str(), e.needed_scopes),
        ("scope_denied", vec!["mail.send".to_owned()])
    );
}

#[test]
fn chasing_asks_the_collector_or_promises_a_follow_up() {
    let answer = client()
        .call_tool("chase_overdue", json!({"id": "inv-2"}))
        .unwrap();
    assert_eq!(
        answer["draft"],
        "[invoice-desk:collector] Invoice inv-2 is overdue. Draft a short, polite and firm payment reminder."
    );
    // Without a collector to answer, the typed error becomes a commitment.
    let client = client().without(Capability::TeamDelegate);
    let answer = client
        .call_tool("chase_overdue", json!({"id": "inv-2"}))
        .unwrap();
    assert!(answer["draft"].is_null(), "{answer}");
    assert_eq!(
        answer["reason"],
        "not_available: `team.delegate` is not available on this host"
    );
    assert_eq!(answer["commitment"], "commitment-1");
    let (title, _, agent, due) = client.commitments().pop().unwrap();
    assert_eq!(
        (title.as_str(), agent.as_str(), due),
        ("Chase invoice inv-2", "collector", None)
    );
}
