//! Event wires over HTTP and `events.emit` fanning out over them: the wires activation
//! proposes, every state of a wire (pending the emitter, active, revoked, proposed again),
//! each refusal of a proposal, a fan-out to several subscribers with one failing, one trapping
//! and one slow, `no_handler`, the payload bound, the audit trail of every delivery, an event
//! loop stopped at chain depth 8, nothing of it for a user, another tenant, another
//! organization or an app, and, with two hosts on PostgreSQL, an approval made through one
//! host honoured by the other. The Python invoice desk files a booked entry its `on_event`
//! handler receives, and a heartbeat target is woken.

use std::path::Path;

use atrium_platform::artifacts::Artifacts;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, slug};
use crate::{stores, unique};

/// The probe as `app`, emitting `entry_booked` and `entry_voided` besides its own event, and
/// subscribing to both of `emitter`'s (a handler for `entry_booked` only).
fn manifest(app: &str, emitter: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace("app_id: probe", &format!("app_id: {app}"))
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
        .replace(
            "emits: [probe_event]",
            "emits: [probe_event, entry_booked, entry_voided, customer_updated]",
        )
        .replace("emitter_app: ledger", &format!("emitter_app: {emitter}"))
}

/// `events.emit` from `app`'s probe: its `ok` answer or its `err` reason.
async fn emit(host: &Host, token: &str, app: &str, name: &str, payload: Value) -> Value {
    host.probe(
        app,
        token,
        json!({"op": "emit", "name": name, "payload": payload}),
    )
    .await
}

/// `apps.fetch` of `GET /echo/hi` from `caller`'s probe to `callee`.
async fn fetch_echo(host: &Host, token: &str, caller: &str, callee: &str) -> Value {
    let fetch = json!({"op": "fetch_app", "app": callee, "path": "/echo/hi", "method": "GET"});
    host.probe(caller, token, fetch).await
}

/// The newest invoice of the desk, as `list_invoices` answers it.
async fn first_invoice(host: &Host, token: &str, desk: &str) -> Value {
    let (status, body) = host
        .post(
            &format!("/api/apps/{desk}/tools/list_invoices"),
            token,
            Body::Json(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["result"]["invoices"][0].clone()
}

fn counts(wire_count: u32, dispatched: u32, failures: u32) -> Value {
    json!({"ok": {"wire_count": wire_count, "dispatched": dispatched, "failures": failures}})
}

/// The tenant's wires of `subscriber` for `event`.
async fn wire_of(host: &Host, admin: &str, subscriber: &str, event: &str) -> Value {
    let (status, body) = host
        .get(
            &format!("/api/wires?subscriber_app={subscriber}&event_name={event}"),
            admin,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let wires = body["wires"].as_array().unwrap();
    assert_eq!(wires.len(), 1, "{body}");
    wires[0].clone()
}

async fn approve(host: &Host, admin: &str, id: &str) -> (StatusCode, Value) {
    host.post(&format!("/api/wires/{id}/approve"), admin, Body::None)
        .await
}

/// The event deliveries in the audit log, newest first.
async fn deliveries(host: &Host, admin: &str, query: &str) -> Vec<Value> {
    let (status, body) = host
        .get(&format!("/api/audit?kind=event&limit=200{query}"), admin)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["entries"].as_array().unwrap().clone()
}

#[tokio::test]
async fn wires_gate_events_that_fan_out_to_every_subscriber() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let tag = slug("w");
        let emitter = format!("em-{tag}");
        let subs: Vec<String> = (1..=4).map(|i| format!("sub{i}-{tag}")).collect();
        let lone = format!("lone-{tag}");
        // The emitter and `lone` subscribe to an app nobody installs.
        for (app, from) in [(&emitter, "nowhere-app"), (&lone, "nowhere-app")]
            .into_iter()
            .chain(subs.iter().map(|s| (s, emitter.as_str())))
        {
            host.publish(app, &dev, &manifest(app, from), &component)
                .await;
        }
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let user = host.tenant_token(&acme.secret, "shop", "user").await;
        let scopes = ["tasks.read", "tasks.write"];
        // A subscriber activated before its emitter and others after: activation proposes
        // each declared wire either way, approved on the subscriber's side.
        host.activate(&subs[0], &admin, &scopes).await;
        host.activate(&emitter, &admin, &scopes).await;
        for app in subs[1..].iter().chain([&lone]) {
            host.activate(app, &admin, &scopes).await;
        }
        let (status, listed) = host.get("/api/wires", &admin).await;
        assert_eq!(status, StatusCode::OK, "{listed}");
        let wires = listed["wires"].as_array().unwrap();
        assert_eq!(wires.len(), 8, "two events for four subscribers: {listed}");
        for wire in wires {
            assert_eq!(wire["state"], "pending_emitter_approval", "{wire}");
            assert_eq!(wire["emitter_app"], emitter.as_str(), "{wire}");
            assert_eq!(wire["target_agent"], "lead", "{wire}");
            assert!(wire["target_heartbeat"].is_null(), "{wire}");
            assert!(wire["subscriber_approved_at"].is_string(), "{wire}");
            assert!(wire["emitter_approved_at"].is_null(), "{wire}");
        }
        // Paged in creation order.
        let (_, first) = host.get("/api/wires?limit=5", &admin).await;
        let cursor = first["next_cursor"].as_str().unwrap().to_owned();
        let (_, rest) = host
            .get(&format!("/api/wires?limit=5&cursor={cursor}"), &admin)
            .await;
        assert_eq!(rest["wires"].as_array().unwrap().len(), 3, "{rest}");
        assert!(rest["next_cursor"].is_null(), "{rest}");

        // Nothing flows before the emitter's side approves.
        let result = emit(&host, &user, &emitter, "entry_booked", json!({})).await;
        assert_eq!(result, counts(0, 0, 0), "{result}");

        // Proposing: an existing wire is left as it is; each mistake is named.
        let propose = |body: Value| {
            let host = &host;
            let admin = admin.clone();
            async move { host.post("/api/wires", &admin, Body::Json(body)).await }
        };
        let wire = wire_of(&host, &admin, &subs[0], "entry_booked").await;
        let ask = json!({"emitter_app": emitter, "event_name": "entry_booked", "subscriber_app": subs[0]});
        let (status, again) = propose(ask.clone()).await;
        assert_eq!(status, StatusCode::OK, "{again}");
        assert_eq!(again["id"], wire["id"], "{again}");
        for (body, param) in [
            (
                json!({"emitter_app": emitter, "event_name": "entry_lost", "subscriber_app": subs[0]}),
                "event_name",
            ),
            (
                json!({"emitter_app": emitter, "event_name": "probe_event", "subscriber_app": subs[0]}),
                "subscriber_app",
            ),
            (
                json!({"emitter_app": emitter, "event_name": "entry_booked", "subscriber_app": subs[0], "target_agent": "helper"}),
                "target_agent",
            ),
            (
                json!({"emitter_app": emitter, "event_name": "entry_booked", "subscriber_app": subs[0], "target_agent": "lead", "target_heartbeat": "x"}),
                "target_heartbeat",
            ),
            (
                json!({"emitter_app": emitter, "event_name": "entry_booked", "subscriber_app": subs[0], "extra": 1}),
                "extra",
            ),
        ] {
            let (status, answer) = propose(body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
            assert!(
                answer["error"]["param"] == param
                    || answer["error"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(param)),
                "{param}: {answer}"
            );
        }
        let (status, answer) = propose(
            json!({"emitter_app": "nowhere-app", "event_name": "entry_booked", "subscriber_app": lone}),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");

        // The emitter's side approves: the event reaches every subscriber at once, one
        // failing, one trapping and one slow, each counted, none stopping the others.
        for sub in &subs {
            let wire = wire_of(&host, &admin, sub, "entry_booked").await;
            let (status, approved) = approve(&host, &admin, wire["id"].as_str().unwrap()).await;
            assert_eq!(status, StatusCode::OK, "{approved}");
            assert_eq!(approved["state"], "active", "{approved}");
            assert!(approved["emitter_approved_at"].is_string(), "{approved}");
        }
        let behave = json!({"behave": {subs[1].as_str(): "fail", subs[2].as_str(): "trap", subs[3].as_str(): "sleep:300"}});
        let result = emit(&host, &user, &emitter, "entry_booked", behave).await;
        assert_eq!(result, counts(4, 2, 2), "{result}");
        let log = deliveries(&host, &admin, "").await;
        assert_eq!(log.len(), 4, "{log:?}");
        let entry = |sub: &str| {
            log.iter()
                .find(|e| e["callee_app"] == sub)
                .unwrap_or_else(|| panic!("no delivery to {sub}: {log:?}"))
                .clone()
        };
        for (sub, outcome) in [
            (&subs[0], "ok"),
            (&subs[1], "failed"),
            (&subs[2], "failed"),
            (&subs[3], "ok"),
        ] {
            let e = entry(sub);
            assert_eq!(e["outcome"], outcome, "{e}");
            assert_eq!(e["caller_app"], emitter.as_str(), "{e}");
            assert_eq!(e["target"], "entry_booked -> lead", "{e}");
            // The tenant's tool call is hop 1, the delivery hop 2.
            assert_eq!(e["chain_depth"], 2, "{e}");
        }
        assert!(
            entry(&subs[1])["reason"]
                .as_str()
                .is_some_and(|r| r.contains("told to fail")),
            "{log:?}"
        );

        // A subscriber that registers no handler: dispatched, and a failure in the audit log.
        let voided = wire_of(&host, &admin, &subs[0], "entry_voided").await;
        approve(&host, &admin, voided["id"].as_str().unwrap()).await;
        let result = emit(&host, &user, &emitter, "entry_voided", json!({"n": 1})).await;
        assert_eq!(result, counts(1, 1, 0), "{result}");
        let log = deliveries(&host, &admin, "&outcome=failed").await;
        let no_handler = log
            .iter()
            .find(|e| e["target"] == "entry_voided -> lead")
            .unwrap_or_else(|| panic!("{log:?}"));
        assert!(
            no_handler["reason"].as_str().is_some_and(
                |r| r.starts_with("no_handler: ") && r.contains("\"no_handler\": true")
            ),
            "{no_handler}"
        );

        // The payload is bounded.
        let big = json!({"pad": "x".repeat(70_000)});
        let result = emit(&host, &user, &emitter, "entry_booked", big).await;
        assert!(
            result["err"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("at most 65536")),
            "{result}"
        );

        // Revoked by either side: the event no longer flows; approving needs a new proposal.
        let id = wire["id"].as_str().unwrap();
        let (status, revoked) = host
            .post(&format!("/api/wires/{id}/revoke"), &admin, Body::None)
            .await;
        assert_eq!(status, StatusCode::OK, "{revoked}");
        assert_eq!(revoked["state"], "revoked", "{revoked}");
        let result = emit(&host, &user, &emitter, "entry_booked", json!({})).await;
        assert_eq!(result, counts(3, 3, 0), "{result}");
        let (status, body) = approve(&host, &admin, id).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["error"]["code"], "wire_revoked", "{body}");
        // Re-activation does not undo the revoke.
        let (status, _) = host
            .post(
                &format!("/api/installs/{}/activate", subs[0]),
                &admin,
                Body::Json(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let (_, kept) = host.get(&format!("/api/wires/{id}"), &admin).await;
        assert_eq!(kept["state"], "revoked", "{kept}");
        let (status, restarted) = propose(ask.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{restarted}");
        assert_eq!(restarted["state"], "pending_emitter_approval");
        assert_eq!(restarted["id"], wire["id"], "{restarted}");

        // Only the tenant's admins: not its users, not an app, not another tenant or
        // organization.
        let (status, _) = host.get("/api/wires", &user).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) = approve(&host, &user, id).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let app_token = host
            .issuer
            .issue_app_token(
                &atrium_platform::identity::app_token::AppToken {
                    org_id: acme.org_id.clone(),
                    tenant_id: "shop".into(),
                    user_id: None,
                    app_slug: emitter.clone(),
                    version: "1.0.0".into(),
                    call_id: "call-1".into(),
                    chain_depth: 0,
                    visited_agents: Vec::new(),
                    public_route: false,
                },
                atrium_platform::identity::app_token::APP_TOKEN_TTL,
            )
            .unwrap();
        let (status, _) = approve(&host, &app_token, id).await;
        assert!(
            status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN,
            "an app cannot approve: {status}"
        );
        let umbrella = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        for stranger in [
            host.tenant_token(&acme.secret, "depot", "admin").await,
            host.tenant_token(&umbrella.secret, "shop", "admin").await,
        ] {
            let (_, listed) = host.get("/api/wires", &stranger).await;
            assert_eq!(listed["wires"], json!([]), "{listed}");
            let (status, _) = host.get(&format!("/api/wires/{id}"), &stranger).await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (status, _) = approve(&host, &stranger, id).await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (status, _) = host
                .post(&format!("/api/wires/{id}/revoke"), &stranger, Body::None)
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (status, _) = host
                .post("/api/wires", &stranger, Body::Json(ask.clone()))
                .await;
            assert_eq!(
                status,
                StatusCode::NOT_FOUND,
                "its tenant has none of the apps"
            );
            assert!(deliveries(&host, &stranger, "").await.is_empty());
        }
        // The emitter installed by another tenant reaches none of this tenant's subscribers.
        let depot = host.tenant_token(&acme.secret, "depot", "admin").await;
        host.activate(&emitter, &depot, &scopes).await;
        let result = emit(&host, &depot, &emitter, "entry_booked", json!({})).await;
        assert_eq!(result, counts(0, 0, 0), "{result}");
        let (_, kept) = host.get(&format!("/api/wires/{id}"), &admin).await;
        assert_eq!(
            kept["state"], "pending_emitter_approval",
            "untouched: {kept}"
        );

        // Two hosts on one database: an approval made through one is honoured by the other.
        let other = Host::start_with(
            &crate::reopen(&store, dir.as_ref()).await,
            Some(Artifacts::local(&host.data().join("artifacts")).unwrap()),
        )
        .await;
        let result = emit(&other, &user, &emitter, "entry_booked", json!({})).await;
        assert_eq!(result, counts(3, 3, 0), "{result}");
        let (status, _) = approve(&host, &admin, id).await;
        assert_eq!(status, StatusCode::OK);
        let result = emit(&other, &user, &emitter, "entry_booked", json!({})).await;
        assert_eq!(result, counts(4, 4, 0), "{result}");
        // So is a grant: `apps.fetch` through the other host once the callee side approved.
        let ask =
            json!({"caller_app": emitter, "callee_app": subs[0], "allowed_agents": ["__route__"]});
        let (status, _) = host.post("/api/grants", &admin, Body::Json(ask)).await;
        assert_eq!(status, StatusCode::CREATED);
        let refused = fetch_echo(&other, &user, &emitter, &subs[0]).await;
        assert!(
            refused["err"]["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("pending callee approval: ")),
            "{refused}"
        );
        let (status, _) = host
            .post(
                &format!("/api/grants/{emitter}/{}/approve", subs[0]),
                &admin,
                Body::Json(json!({"allowed_agents": ["__route__"]})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let answer = fetch_echo(&other, &user, &emitter, &subs[0]).await;
        assert_eq!(answer["ok"]["status"], 200, "{answer}");
        other.stop().await;
        host.stop().await;
    }
}

/// A emits, B relays to A, A relays to B, ...: each hop goes one deeper. The tenant's tool call
/// is hop 1, so the deliveries happen at depths 2 to 8 and the emit that would be hop 9 is
/// refused.
#[tokio::test]
async fn an_event_loop_stops_at_chain_depth_8() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    let (store, _dir) = stores().await.remove(0);
    let host = Host::start(&store).await;
    let (_, dev) = host.sign_up("ada", true).await;
    let tag = slug("loop");
    let (a, b) = (format!("a-{tag}"), format!("b-{tag}"));
    host.publish(&a, &dev, &manifest(&a, &b), &component).await;
    host.publish(&b, &dev, &manifest(&b, &a), &component).await;
    let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
    let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
    for app in [&a, &b] {
        host.activate(app, &admin, &["tasks.read", "tasks.write"])
            .await;
    }
    for sub in [&a, &b] {
        let wire = wire_of(&host, &admin, sub, "entry_booked").await;
        let (status, _) = approve(&host, &admin, wire["id"].as_str().unwrap()).await;
        assert_eq!(status, StatusCode::OK);
    }
    let payload = json!({"behave": {a.as_str(): "relay", b.as_str(): "relay"}});
    let result = emit(&host, &admin, &a, "entry_booked", payload).await;
    assert_eq!(result, counts(1, 1, 0), "{result}");
    let log = deliveries(&host, &admin, "").await;
    let mut depths: Vec<i64> = log
        .iter()
        .map(|e| e["chain_depth"].as_i64().unwrap())
        .collect();
    depths.sort_unstable();
    assert_eq!(depths, (2..=8).collect::<Vec<i64>>(), "{log:?}");
    assert!(log.iter().all(|e| e["outcome"] == "ok"), "{log:?}");
    // Even depths reach b (a emitted first), odd ones a.
    let deepest = log.iter().find(|e| e["chain_depth"] == 8).unwrap();
    assert_eq!(deepest["callee_app"], b.as_str(), "{deepest}");
    host.stop().await;
}

/// The Python invoice desk: a booked entry of the ledger reaches its clerk's `on_event`, which
/// files it on the invoice; a customer update of the CRM wakes its `overdue` heartbeat.
#[tokio::test]
async fn the_python_desk_files_booked_entries_and_wakes_its_heartbeat() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let desk_component = std::fs::read(atrium_test_artifacts::sdk::python_component(
        "examples/invoices-py",
    ))
    .unwrap();
    let probe = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    let (store, _dir) = stores().await.remove(0);
    let host = Host::start(&store).await;
    let (_, dev) = host.sign_up("ada", true).await;
    let tag = slug("py");
    let (desk, ledger, crm) = (
        format!("desk-{tag}"),
        format!("ledger-{tag}"),
        format!("crm-{tag}"),
    );
    let text = std::fs::read_to_string(root.join("examples/invoices-py/atrium.app.yaml"))
        .unwrap()
        .replace("app_id: invoice-desk-py", &format!("app_id: {desk}"))
        .replace("app_id: ledger", &format!("app_id: {ledger}"))
        .replace("emitter_app: ledger", &format!("emitter_app: {ledger}"))
        .replace("emitter_app: crm-lite", &format!("emitter_app: {crm}"));
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("version: "))
        .unwrap()
        .trim()
        .to_owned();
    for app in [&ledger, &crm] {
        host.publish(app, &dev, &manifest(app, "nowhere-app"), &probe)
            .await;
    }
    let (status, body) = host
        .register(
            &desk,
            &dev,
            &[
                ("manifest", None, text.as_bytes()),
                ("component", None, &desk_component),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = host
        .post(
            &format!("/api/dev/apps/{desk}/versions/{version}/promote"),
            &dev,
            Body::None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
    let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
    host.put(
        "/api/integrations/gmail",
        &admin,
        Body::Json(json!({"config": {"primary_email": "a@shop.example"}})),
    )
    .await;
    for app in [&ledger, &crm] {
        host.activate(app, &admin, &["tasks.read", "tasks.write"])
            .await;
    }
    store
        .create_collection(
            &atrium_store::TenantKey::new(&acme.org_id, "shop"),
            "contracts",
            "lexical",
            "lexical-v1",
        )
        .await
        .unwrap();
    let (status, body) = host
        .post(
            &format!("/api/installs/{desk}/activate"),
            &admin,
            Body::Json(json!({
                "granted_scopes": ["invoices.read", "invoices.write", "mail.send"],
                "settings": {"company_name": "Acme"},
                "rag_bindings": {"contracts": "contracts"},
            })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // An invoice arrives by email; the desk files it.
    let (status, body) = host
        .post(
            "/api/inbound/email",
            &admin,
            Body::Json(json!({
                "message_id": "m-1", "from": "payer@example.com", "subject": "Invoice 7",
                "body": "Please pay.", "received_at": "2026-11-28T10:00:00Z",
            })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let invoice = first_invoice(&host, &admin, &desk).await;
    assert_eq!(invoice["payer"], "payer@example.com", "{invoice}");
    let invoice_id = invoice["id"].as_str().unwrap().to_owned();

    // Both wires were proposed at the desk's activation; the emitters' side approves.
    for emitter in [&ledger, &crm] {
        let (_, listed) = host
            .get(&format!("/api/wires?emitter_app={emitter}"), &admin)
            .await;
        let wire = &listed["wires"][0];
        assert_eq!(wire["subscriber_app"], desk.as_str(), "{listed}");
        let (status, _) = approve(&host, &admin, wire["id"].as_str().unwrap()).await;
        assert_eq!(status, StatusCode::OK);
    }
    let (_, listed) = host
        .get(&format!("/api/wires?emitter_app={crm}"), &admin)
        .await;
    assert_eq!(
        (
            listed["wires"][0]["target_agent"].clone(),
            listed["wires"][0]["target_heartbeat"].clone()
        ),
        (Value::Null, json!("collector:overdue")),
        "{listed}"
    );

    // The handler files the entry on the invoice (`records.update`, which fails for an
    // invoice that does not exist) and refuses a payload without the fields it needs.
    let booked =
        json!({"invoice_id": invoice_id, "entry_id": "e-42", "account": "4000", "amount": 120.5});
    let result = emit(&host, &admin, &ledger, "entry_booked", booked).await;
    assert_eq!(result, counts(1, 1, 0), "{result}");
    let unknown = json!({"invoice_id": "rec_missing", "entry_id": "e-43"});
    let result = emit(&host, &admin, &ledger, "entry_booked", unknown).await;
    assert_eq!(result, counts(1, 0, 1), "{result}");
    let result = emit(
        &host,
        &admin,
        &ledger,
        "entry_booked",
        json!({"entry_id": "e-44"}),
    )
    .await;
    assert_eq!(result, counts(1, 0, 1), "{result}");
    let failed = deliveries(&host, &admin, "&outcome=failed").await;
    assert!(
        failed[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("missing field `invoice_id`")),
        "{failed:?}"
    );

    let result = emit(
        &host,
        &admin,
        &crm,
        "customer_updated",
        json!({"id": "c-1"}),
    )
    .await;
    assert_eq!(result, counts(1, 1, 0), "{result}");
    let wakes = store
        .heartbeat_wakes(&atrium_store::TenantKey::new(&acme.org_id, "shop").install(&desk))
        .await
        .unwrap();
    // Every declared heartbeat has its row since the activation; the event woke one.
    assert_eq!(wakes.len(), 4, "{wakes:?}");
    let woken: Vec<_> = wakes.iter().filter(|w| w.woken_at.is_some()).collect();
    assert_eq!(woken.len(), 1, "{wakes:?}");
    assert_eq!(
        (woken[0].agent.as_str(), woken[0].slug.as_str()),
        ("collector", "overdue")
    );
    assert_eq!(woken[0].next_run_at, woken[0].woken_at, "{wakes:?}");
    assert_eq!(
        woken[0].woken_by.as_deref(),
        Some(format!("{crm}/customer_updated").as_str())
    );
    let log = deliveries(&host, &admin, "&outcome=ok").await;
    assert!(
        log.iter()
            .any(|e| e["target"] == "customer_updated -> heartbeat collector:overdue"),
        "{log:?}"
    );
    assert!(
        log.iter().any(|e| e["target"] == "entry_booked -> clerk"),
        "{log:?}"
    );
    host.stop().await;
}
