//! Heartbeats and visions on a running host, ticked with a clock the test chooses, against the
//! fake model upstream: rows created at activation, kept and retired across an upgrade, the
//! schedule types in the tenant's zone (a daylight-saving night), active hours across
//! midnight, cooldown, each pre-filter (a non-LOW skill denied), suppression and escalation,
//! the dedicated thread, the isolated call and the main conversation, memory and commitment
//! inference, failures counted to disabling, run-now and re-enabling, the wake by an event,
//! the vision loop with approval and both budgets, and every endpoint tried from another
//! tenant and another organization. Claims by several hosts: `heartbeat_claims`.
//!
//! Each rule is a test of its own. A tick scans every tenant's rows, so a test that ticks keeps
//! a host and a database of its own ([`Beats::start`]) rather than the binary's shared hosts.

use atrium_fake_llm::Reply;
use atrium_platform::heartbeats::{Scheduler, TickReport};
use jiff::{SignedDuration, Timestamp};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, slug};
use crate::host::code;
use crate::unique;
use atrium_store::Store;

const AGENTS: &str = r#"agents:
  - id: lead
    name: Lead
    system_prompt: Leads.
    is_default: true
    team: [helper]
    heartbeats:
      - slug: overdue
        skill: _internal_app_records
        tool: query
        params: {record_type: invoice, status: overdue}
        interval_minutes: 60
        model_tier: standard
        prompt: Chase the overdue invoices.
      - slug: nightly
        skill: _internal_agent_memory
        tool: query
        params: {kind: note}
        schedule_type: daily
        time_of_day: "02:30"
        active_hours: {start: "22:00", end: "06:00", timezone: user}
        invoke_always: true
        conversation_mode: isolated
      - slug: daytime
        skill: records
        tool: query
        params: {record_type: nothing}
        interval_minutes: 5
        active_hours: {start: "09:00", end: "17:00", timezone: UTC}
        cooldown_seconds: 900
      - slug: risky
        skill: knowledge
        tool: add
        schedule_type: weekly
        time_of_day: "08:00"
        day_of_week: 0
      - slug: ping
        skill: _internal_app_records
        tool: query
        params: {record_type: ping}
        schedule_type: cron
        cron_expression: "0 9 * * 1-5"
        invoke_always: true
        conversation_mode: main
    vision:
      text: Ship the product.
      success_criteria: [It ships]
      budget_max_goals: 2
  - id: helper
    name: Helper
    system_prompt: Helps.
    vision:
      text: Keep the docs current.
      autonomy_mode: full_autonomy
      budget_max_cost_cents: 1
emits: [probe_event]
install_settings:
  - {id: project, type: project_picker, label: Project}
"#;

/// The scopes the app asks for.
pub(super) const SCOPES: &[&str] = &[
    "tasks.read",
    "tasks.write",
    "memory.read",
    "memory.write",
    "knowledge.write",
];

/// The probe with the agents above, subscribed to `emitter`'s `probe_event` to wake `ping`.
pub(super) fn manifest(app: &str, emitter: &str) -> String {
    let probe = std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST).unwrap();
    let head = &probe[..probe.find("agents:").unwrap()];
    let routes = &probe[probe.find("http_routes:").unwrap()..];
    format!(
        "{}{AGENTS}subscribes_to:\n  - {{emitter_app: ledger, event_name: entry_booked, target_agent: lead}}\n  - {{emitter_app: ledger, event_name: entry_voided, target_agent: lead}}\n  - {{emitter_app: {emitter}, event_name: probe_event, target_heartbeat: \"lead:ping\"}}\n{routes}",
        head.replace("app_id: probe", &format!("app_id: {app}"))
            .replace(
                "required_scopes: [probe.read, probe.write]",
                "required_scopes: [tasks.read, tasks.write, memory.read, memory.write, knowledge.write]"
            )
            .replace("probe.read", "tasks.read")
            .replace("probe.write", "tasks.write")
    )
}

pub(super) fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

pub(super) fn minutes(n: i64) -> SignedDuration {
    SignedDuration::from_mins(n)
}

/// The install's heartbeat rows, by slug.
pub(super) async fn rows(host: &Host, token: &str, app: &str) -> Vec<Value> {
    let (status, body) = host
        .get(&format!("/api/installs/{app}/heartbeats"), token)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["heartbeats"].as_array().unwrap().clone()
}

async fn row(host: &Host, token: &str, app: &str, slug: &str) -> Value {
    rows(host, token, app)
        .await
        .into_iter()
        .find(|r| r["slug"] == slug)
        .unwrap_or_else(|| panic!("no heartbeat {slug}"))
}

async fn next_run(host: &Host, token: &str, app: &str, slug: &str) -> Timestamp {
    let row = row(host, token, app, slug).await;
    at(row["next_run_at"]
        .as_str()
        .unwrap_or_else(|| panic!("{row}")))
}

/// The run of `slug` in a tick's report.
fn ran<'r>(report: &'r TickReport, slug: &str) -> &'r atrium_platform::heartbeats::RunSummary {
    report
        .runs
        .iter()
        .find(|r| r.slug == slug)
        .unwrap_or_else(|| panic!("{slug} did not run: {report:?}"))
}

fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}: {}", m["role"], m["content"]))
        .collect()
}

/// The stores of a test that ticks: SQLite in a temporary directory and, with
/// `ATRIUM_TEST_DATABASE_URL`, a PostgreSQL database of the test's own on that server (created
/// afresh), with its URL. A tick scans every tenant's rows, as it should: a test that ticks
/// must not share its database with another test's heartbeats.
pub(super) async fn own_stores(
    name: &str,
) -> Vec<(Store, Option<tempfile::TempDir>, Option<String>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut stores = vec![(
        Store::open_sqlite(dir.path()).await.unwrap(),
        Some(dir),
        None,
    )];
    if let Ok(url) = std::env::var("ATRIUM_TEST_DATABASE_URL") {
        let (server, rest) = url.rsplit_once('/').unwrap();
        let (db, query) = rest.split_once('?').map_or((rest, ""), |(d, q)| (d, q));
        let own = format!("{db}_{name}");
        let admin: sqlx::PgPool = sqlx::PgPool::connect(&url).await.unwrap();
        sqlx::query(&format!("DROP DATABASE IF EXISTS \"{own}\" WITH (FORCE)"))
            .execute(&admin)
            .await
            .unwrap();
        // Two tests creating databases at once can meet on the template: try again.
        for attempt in 0.. {
            match sqlx::query(&format!("CREATE DATABASE \"{own}\""))
                .execute(&admin)
                .await
            {
                Ok(_) => break,
                Err(e) if attempt < 20 => {
                    eprintln!("CREATE DATABASE {own}: {e}; again");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(e) => panic!("CREATE DATABASE {own}: {e}"),
            }
        }
        let own_url = if query.is_empty() {
            format!("{server}/{own}")
        } else {
            format!("{server}/{own}?{query}")
        };
        stores.push((
            Store::open_url(&own_url).await.unwrap(),
            None,
            Some(own_url),
        ));
    }
    stores
}

/// Stores invoice `id` with `status` as the app's record (`records.put`).
async fn set_invoice(host: &Host, app: &str, token: &str, id: &str, status: &str) -> Value {
    host.probe(
        app,
        token,
        json!({"op": "tool", "name": "records.put", "args": {"record_type": "invoice", "record": {"id": id, "status": status, "payer": "payer@example.com"}}}),
    )
    .await
}

async fn tick(scheduler: &Scheduler, now: Timestamp) -> TickReport {
    scheduler.tick(now).await.unwrap()
}

/// A host on a database of its own with the probe published twice: an emitter, and the app
/// whose agents declare the heartbeats and visions above; both installed for tenant `shop`
/// (Berlin time, its model roles on Mistral, the fake), with its admin and user, and an admin
/// of another tenant and of another organization.
struct Beats {
    host: Host,
    dev: String,
    component: Vec<u8>,
    app: String,
    emitter: String,
    admin: String,
    user: String,
    other_tenant: String,
    other_org: String,
}

/// The first tick's instant: Saturday 29 March 2031, noon UTC.
fn t0() -> Timestamp {
    at("2031-03-29T12:00:00Z")
}

impl Beats {
    /// One for each store, each database named after `name` (unique per test).
    async fn start(name: &str) -> Vec<(Beats, Option<tempfile::TempDir>)> {
        let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
        let mut all = Vec::new();
        for (store, dir, _) in own_stores(name).await {
            let host = Host::start(&store).await;
            let (_, dev) = host.sign_up("ada", true).await;
            let (app, emitter) = (slug("beats"), slug("emitter"));
            let probe = std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
                .unwrap()
                .replace("app_id: probe", &format!("app_id: {emitter}"))
                .replace("probe.read", "tasks.read")
                .replace("probe.write", "tasks.write");
            host.publish(&emitter, &dev, &probe, &component).await;
            host.publish(&app, &dev, &manifest(&app, &emitter), &component)
                .await;
            let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
            let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
            let user = host.tenant_token(&acme.secret, "shop", "user").await;
            let other_tenant = host.tenant_token(&acme.secret, "kiosk", "admin").await;
            let globex = store.create_key(&unique("globex"), "ops").await.unwrap();
            let other_org = host.tenant_token(&globex.secret, "shop", "admin").await;
            let (status, body) = host
                .put(
                    "/api/llm-settings",
                    &admin,
                    Body::Json(json!({"roles": {
                        "fast": {"provider": "mistral"}, "specialist": {"provider": "mistral"},
                        "orchestrator": {"provider": "mistral"},
                    }})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let (status, body) = host
                .put(
                    "/api/tenant/settings",
                    &admin,
                    Body::Json(json!({"time_zone": "Europe/Berlin"})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            host.activate(&emitter, &admin, &["tasks.read", "tasks.write"])
                .await;
            // No project yet: no vision.
            host.activate(&app, &admin, SCOPES).await;
            let beats = Beats {
                host,
                dev,
                component: component.clone(),
                app,
                emitter,
                admin,
                user,
                other_tenant,
                other_org,
            };
            all.push((beats, dir));
        }
        all
    }

    fn sched(&self) -> &Scheduler {
        &self.host.scheduler
    }

    fn model(&self) -> atrium_fake_llm::Upstream {
        self.host.fakes.upstream("mistral")
    }

    async fn row(&self, slug: &str) -> Value {
        row(&self.host, &self.user, &self.app, slug).await
    }

    async fn next_run(&self, slug: &str) -> Timestamp {
        next_run(&self.host, &self.user, &self.app, slug).await
    }

    /// The first tick, which computes every row's next run.
    async fn first_tick(&self) -> TickReport {
        tick(self.sched(), t0()).await
    }

    /// `POST /api/admin/data-feeds/{feed}/{action}` as `token`.
    async fn feed(&self, feed: &str, action: &str, token: &str) -> (StatusCode, Value) {
        self.host
            .post(
                &format!("/api/admin/data-feeds/{feed}/{action}"),
                token,
                Body::None,
            )
            .await
    }

    async fn stop(self) {
        self.host.stop().await;
    }
}

#[tokio::test]
async fn rows_made_at_activation_are_scheduled_by_the_first_tick_in_the_tenant_s_zone() {
    for (beats, _dir) in Beats::start("heartbeat_schedule").await {
        let (host, app) = (&beats.host, &beats.app);
        // Rows at activation, active, not yet scheduled; another tenant and another
        // organization see no install.
        let listed = rows(host, &beats.user, app).await;
        let slugs: Vec<&str> = listed.iter().map(|r| r["slug"].as_str().unwrap()).collect();
        assert_eq!(slugs, ["daytime", "nightly", "overdue", "ping", "risky"]);
        for r in &listed {
            assert_eq!(r["state"], "active", "{r}");
            assert_eq!(r["failing"], false, "{r}");
            assert!(r["next_run_at"].is_null(), "{r}");
            assert!(r["id"].as_str().unwrap().starts_with("hb_"), "{r}");
        }
        for token in [&beats.other_tenant, &beats.other_org] {
            let (status, body) = host
                .get(&format!("/api/installs/{app}/heartbeats"), token)
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        }
        let (status, _) = host
            .get(&format!("/api/installs/{app}/heartbeats"), "nope")
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);

        // The first tick computes every next run, in the tenant's zone. Sunday 30 March 2031
        // is the night Berlin's clocks go forward: 02:30 does not exist and runs once, at
        // 03:00 CEST (01:00 UTC).
        let t0 = t0();
        let report = beats.first_tick().await;
        assert_eq!(report.scheduled, 5, "{report:?}");
        assert!(report.runs.is_empty(), "{report:?}");
        assert_eq!(beats.next_run("nightly").await, at("2031-03-30T01:00:00Z"));
        assert_eq!(beats.next_run("risky").await, at("2031-03-31T06:00:00Z"));
        assert_eq!(beats.next_run("ping").await, at("2031-03-31T07:00:00Z"));
        let overdue_at = beats.next_run("overdue").await;
        assert!(
            overdue_at > t0 && overdue_at <= t0 + minutes(60),
            "{overdue_at}"
        );
        let daytime_at = beats.next_run("daytime").await;
        assert!(
            daytime_at > t0 && daytime_at <= t0 + minutes(5),
            "{daytime_at}"
        );
        // The same tick on another instant: nothing runs before its time.
        assert!(tick(beats.sched(), t0).await.runs.is_empty());
        beats.stop().await;
    }
}

#[tokio::test]
async fn a_pre_filter_that_finds_nothing_calls_no_model_and_cooldown_skips_runs_silently() {
    for (beats, _dir) in Beats::start("heartbeat_cooldown").await {
        let model = beats.model();
        beats.first_tick().await;
        model.forget_requests();
        let calls = model.calls();
        // An idle run, no model call. Cooldown (900 s) skips the next two five-minute runs
        // silently; the third runs.
        let daytime_at = beats.next_run("daytime").await;
        let report = tick(beats.sched(), daytime_at).await;
        assert_eq!(ran(&report, "daytime").outcome, "idle");
        assert_eq!(ran(&report, "daytime").records, Some(0));
        for n in [5, 10] {
            let report = tick(beats.sched(), daytime_at + minutes(n)).await;
            assert!(
                report.runs.iter().all(|r| r.slug != "daytime"),
                "{report:?}"
            );
            assert!(report.skipped >= 1, "{report:?}");
        }
        let report = tick(beats.sched(), daytime_at + minutes(15)).await;
        assert_eq!(ran(&report, "daytime").outcome, "idle");
        assert_eq!(model.calls(), calls);
        beats.stop().await;
    }
}

#[tokio::test]
async fn a_run_with_records_answers_in_its_thread_and_suppression_escalation_and_outages_hold() {
    for (beats, _dir) in Beats::start("heartbeat_overdue").await {
        let (host, app, admin, user) = (&beats.host, &beats.app, &beats.admin, &beats.user);
        let (model, sched) = (beats.model(), beats.sched());
        beats.first_tick().await;
        // An overdue invoice: the agent runs with it as context, at the standard tier's role,
        // in its dedicated thread; the reply is kept, remembered, and a commitment inferred.
        let put = set_invoice(host, app, admin, "inv-7", "overdue").await;
        assert_eq!(put["ok"]["id"], "inv-7", "{put}");
        let overdue_at = beats.next_run("overdue").await;
        model.forget_requests();
        model.script([
            Reply::text("Invoice inv-7 is overdue. I will call the payer by Friday."),
            Reply::text(
                r#"{"commitments": [{"title": "Call the payer", "content": "About inv-7", "due_at": "2031-04-04T17:00:00Z"}]}"#,
            ),
        ]);
        let report = tick(sched, overdue_at).await;
        let run = ran(&report, "overdue");
        assert_eq!(
            (run.outcome.as_str(), run.records, run.commitments.len()),
            ("ok", Some(1), 1),
            "{run:?}"
        );
        let requests = model.requests();
        assert_eq!(requests.len(), 2);
        let asked = user_texts(&requests[0].body).join("\n");
        assert!(asked.contains("Chase the overdue invoices."), "{asked}");
        assert!(asked.contains("inv-7"), "{asked}");
        assert!(asked.contains("payer@example.com"), "{asked}");
        let (_, body) = host.get("/api/commitments?agent=lead", user).await;
        assert_eq!(body["commitments"][0]["title"], "Call the payer", "{body}");
        assert_eq!(body["commitments"][0]["app"], app.as_str(), "{body}");
        // Memory: the reply, under the agent, read back by the memory tool.
        let memory = host
            .probe(
                app,
                admin,
                json!({"op": "tool", "name": "memory.query", "args": {"agent": "lead", "kind": "heartbeat"}}),
            )
            .await;
        assert_eq!(
            memory["ok"]["entries"][0]["content"],
            "Invoice inv-7 is overdue. I will call the payer by Friday.",
            "{memory}"
        );

        // HEARTBEAT_OK at the start with a short remainder: suppressed, nothing stored, no
        // inference; the dedicated thread shows the first exchange.
        model.forget_requests();
        model.script([Reply::text(
            "HEARTBEAT_OK nothing changed since the last check",
        )]);
        let report = tick(sched, overdue_at + minutes(60)).await;
        assert_eq!(ran(&report, "overdue").outcome, "suppressed");
        let requests = model.requests();
        assert_eq!(requests.len(), 1, "no inference after a suppressed reply");
        let history = user_texts(&requests[0].body);
        assert!(
            history
                .iter()
                .any(|m| m.contains("I will call the payer by Friday")),
            "{history:?}"
        );
        let overdue = beats.row("overdue").await;
        assert!(overdue["last_ok_at"].is_string(), "{overdue}");

        // The token in the middle has no effect; the escalation marker keeps the reply. The
        // suppressed reply never reached the thread.
        model.forget_requests();
        model.script([
            Reply::text("The payer answered; HEARTBEAT_OK would be wrong here."),
            Reply::text(r#"{"commitments": []}"#),
            Reply::text("The backlog doubled. <escalate-to-vision/>"),
            Reply::text(r#"{"commitments": []}"#),
        ]);
        let report = tick(sched, overdue_at + minutes(120)).await;
        assert_eq!(ran(&report, "overdue").outcome, "ok");
        let report = tick(sched, overdue_at + minutes(180)).await;
        let run = ran(&report, "overdue");
        assert_eq!((run.outcome.as_str(), run.escalated), ("ok", true));
        let history = user_texts(&model.requests()[2].body);
        assert!(
            !history.iter().any(|m| m.contains("nothing changed since")),
            "{history:?}"
        );
        assert!(
            history.iter().any(|m| m.contains("The payer answered")),
            "{history:?}"
        );

        // A model outage fails the run (counted); the next success resets the count.
        model.fail(503);
        let report = tick(sched, overdue_at + minutes(240)).await;
        let run = ran(&report, "overdue");
        assert_eq!(run.outcome, "failed");
        assert_eq!(run.consecutive_failures, Some(1));
        assert!(
            run.error
                .as_deref()
                .unwrap()
                .contains("the agent did not answer"),
            "{run:?}"
        );
        model.recover();
        model.script([Reply::text("HEARTBEAT_OK")]);
        let report = tick(sched, overdue_at + minutes(300)).await;
        assert_eq!(ran(&report, "overdue").consecutive_failures, Some(0));

        // The runs are listed, newest first; not to another tenant.
        let (status, body) = host
            .get(
                &format!("/api/installs/{app}/heartbeat-runs?limit=200"),
                user,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let outcomes: Vec<&str> = body["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["outcome"].as_str().unwrap())
            .collect();
        for outcome in ["ok", "suppressed", "failed"] {
            assert!(outcomes.contains(&outcome), "{outcomes:?}");
        }
        for token in [&beats.other_tenant, &beats.other_org] {
            let (status, _) = host
                .get(&format!("/api/installs/{app}/heartbeat-runs"), token)
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
        }
        beats.stop().await;
    }
}

#[tokio::test]
async fn an_isolated_run_across_midnight_has_no_history_and_active_hours_hold() {
    for (beats, _dir) in Beats::start("heartbeat_nightly").await {
        let model = beats.model();
        beats.first_tick().await;
        // Isolated, across midnight, on the daylight-saving night: the run at 03:00 CEST is
        // inside 22:00-06:00; invoke_always runs the agent with no records and no history.
        let nightly = at("2031-03-30T01:00:00Z");
        model.forget_requests();
        model.script([
            Reply::text("A quiet night."),
            Reply::text(r#"{"commitments": []}"#),
        ]);
        let report = tick(beats.sched(), nightly).await;
        let run = ran(&report, "nightly");
        assert_eq!((run.outcome.as_str(), run.records), ("ok", Some(0)));
        let first = &model.requests()[0].body;
        assert_eq!(first["messages"].as_array().unwrap().len(), 2, "{first}");
        // The next night is an ordinary one: 02:30 CEST.
        assert_eq!(beats.next_run("nightly").await, at("2031-03-31T00:30:00Z"));
        // Outside its active hours (09:00-17:00 UTC) the daytime heartbeat does not run: its
        // next run is the first time of its five-minute grid inside them, the next morning.
        assert!(
            report.runs.iter().all(|r| r.slug != "daytime"),
            "{report:?}"
        );
        let daytime_next = beats.next_run("daytime").await;
        assert!(
            daytime_next >= at("2031-03-30T09:00:00Z") && daytime_next < at("2031-03-30T09:05:00Z"),
            "{daytime_next}"
        );
        beats.stop().await;
    }
}

#[tokio::test]
async fn a_non_low_skill_is_denied_and_failures_disable_it_until_an_admin_enables_it() {
    for (beats, _dir) in Beats::start("heartbeat_failures").await {
        let (admin, user) = (&beats.admin, &beats.user);
        // Run-now (a tenant admin's) runs it and it fails with the reason; at 3 failures it is
        // failing, at 5 disabled.
        let risky = beats.row("risky").await;
        let feed = risky["id"].as_str().unwrap().to_owned();
        for n in 1..=5 {
            let (status, body) = beats.feed(&feed, "run-now", admin).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["outcome"], "failed", "{body}");
            assert!(
                body["error"].as_str().unwrap().contains("MEDIUM-risk"),
                "{body}"
            );
            assert_eq!(body["consecutive_failures"], n, "{body}");
            let listed = beats.row("risky").await;
            assert_eq!(listed["failing"], (3..5).contains(&n), "{n}: {listed}");
        }
        let listed = beats.row("risky").await;
        assert_eq!(listed["state"], "disabled", "{listed}");
        let (status, body) = beats.feed(&feed, "run-now", admin).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(code(&body), "heartbeat_disabled");
        // Not from a user token, another tenant or another organization.
        let (status, _) = beats.feed(&feed, "run-now", user).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        for token in [&beats.other_tenant, &beats.other_org] {
            for action in ["run-now", "enable", "disable"] {
                let (status, body) = beats.feed(&feed, action, token).await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{action}: {body}");
            }
        }
        let (status, body) = beats.feed(&feed, "enable", admin).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            (body["state"].clone(), body["consecutive_failures"].clone()),
            (json!("active"), json!(0))
        );
        let (status, body) = beats.feed(&feed, "run-now", admin).await;
        assert_eq!(
            (status, body["outcome"].clone()),
            (StatusCode::OK, json!("failed"))
        );
        let (status, body) = beats.feed("hb_0000", "run-now", admin).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        beats.stop().await;
    }
}

#[tokio::test]
async fn an_event_wakes_a_heartbeat_that_runs_in_the_main_conversation() {
    for (beats, _dir) in Beats::start("heartbeat_wake").await {
        let (host, admin) = (&beats.host, &beats.admin);
        let model = beats.model();
        beats.first_tick().await;
        // The emitter's side approves the wire, an event sets the next run to now, and the
        // next tick runs it (trigger `wake`) in `main` mode: a conversation of the user who
        // activated the install.
        let (_, wires) = host
            .get(&format!("/api/wires?emitter_app={}", beats.emitter), admin)
            .await;
        let wire = wires["wires"][0]["id"].as_str().unwrap().to_owned();
        let (status, body) = host
            .post(&format!("/api/wires/{wire}/approve"), admin, Body::None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let emitted = host
            .probe(
                &beats.emitter,
                admin,
                json!({"op": "emit", "name": "probe_event", "payload": {"n": 1}}),
            )
            .await;
        assert!(emitted.get("ok").is_some(), "{emitted}");
        let ping = beats.row("ping").await;
        assert_eq!(
            ping["woken_by"],
            format!("{}/probe_event", beats.emitter),
            "{ping}"
        );
        model.forget_requests();
        model.script([
            Reply::text("Pinged by the emitter."),
            Reply::text(r#"{"commitments": []}"#),
        ]);
        // Before any other row that calls the model is due.
        let report = tick(beats.sched(), t0() + minutes(1)).await;
        let run = ran(&report, "ping");
        assert_eq!(
            (run.trigger, run.outcome.as_str()),
            (atrium_platform::heartbeats::Trigger::Wake, "ok")
        );
        let (_, conversations) = host.get("/api/conversations", admin).await;
        let with_lead = conversations["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["agent"] == "lead")
            .unwrap_or_else(|| panic!("{conversations}"))
            .clone();
        let id = with_lead["id"].as_str().unwrap();
        let (_, messages) = host.get(&format!("/api/conversations/{id}"), admin).await;
        assert!(
            messages.to_string().contains("Pinged by the emitter."),
            "{messages}"
        );
        beats.stop().await;
    }
}

#[tokio::test]
async fn a_vision_runs_its_phases_with_approval_and_stops_at_either_budget() {
    for (beats, _dir) in Beats::start("heartbeat_visions").await {
        let (host, app, admin, user) = (&beats.host, &beats.app, &beats.admin, &beats.user);
        let (model, sched) = (beats.model(), beats.sched());
        beats.first_tick().await;
        // Re-activation with a project creates one per agent that declares one.
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/activate"),
                admin,
                Body::Json(json!({"settings": {"project": "apollo"}})),
            )
            .await;
        assert!(status.is_success(), "{body}");
        let (_, listed) = host.get("/api/visions", user).await;
        let visions = listed["visions"].as_array().unwrap().clone();
        assert_eq!(visions.len(), 2, "{listed}");
        let vision_of = |agent: &str| {
            visions.iter().find(|v| v["agent"] == agent).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let (lead, helper) = (vision_of("lead"), vision_of("helper"));
        for token in [&beats.other_tenant, &beats.other_org] {
            let (_, theirs) = host.get("/api/visions", token).await;
            assert_eq!(theirs["visions"], json!([]), "{theirs}");
            let (status, _) = host.get(&format!("/api/visions/{lead}"), token).await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            for decision in ["approve", "reject"] {
                let (status, _) = host
                    .post(
                        &format!("/api/visions/{lead}/{decision}"),
                        token,
                        Body::None,
                    )
                    .await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{decision}");
            }
        }
        let vision = |id: String| async move {
            let (status, body) = host.get(&format!("/api/visions/{id}"), user).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body
        };
        // Every phase costs 100,000 prompt tokens: the helper's first phase spends more than
        // its 1 cent, and it stops with the reason; the lead has no cost cap.
        model.usage(100_000, 10);
        model.answer_by_default(Reply::text("Noted."));
        let mut clock = t0() + minutes(10);
        tick(sched, clock).await;
        let helper_now = vision(helper.clone()).await;
        assert_eq!(helper_now["state"], "stopped", "{helper_now}");
        assert!(
            helper_now["stop_reason"]
                .as_str()
                .unwrap()
                .starts_with("budget_max_cost_cents"),
            "{helper_now}"
        );
        assert_eq!(helper_now["phases"][0]["phase"], "assess", "{helper_now}");
        assert_eq!(helper_now["phases"][0]["output"], "Noted.", "{helper_now}");
        model.usage(10, 5);
        // The lead (supervised): debate, plan, then it waits for a user.
        for _ in 0..3 {
            clock += minutes(1);
            tick(sched, clock).await;
        }
        let waiting = vision(lead.clone()).await;
        assert_eq!(
            (waiting["state"].clone(), waiting["phase"].clone()),
            (json!("awaiting_approval"), json!("execute")),
            "{waiting}"
        );
        let phases: Vec<&str> = waiting["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["phase"].as_str().unwrap())
            .collect();
        assert_eq!(phases, ["assess", "debate", "plan"]);
        clock += minutes(1);
        tick(sched, clock).await;
        assert_eq!(
            vision(lead.clone()).await["phases"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
        let (status, body) = host
            .post(
                &format!("/api/visions/{lead}/approve"),
                user,
                Body::Json(json!({"note": "go"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, body) = host
            .post(&format!("/api/visions/{lead}/approve"), user, Body::None)
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(code(&body), "vision_not_awaiting_approval");
        // Execute, review: one goal done; the next cycle waits for the pause (an hour).
        for _ in 0..2 {
            clock += minutes(1);
            tick(sched, clock).await;
        }
        let reviewed = vision(lead.clone()).await;
        assert_eq!(
            (
                reviewed["goals_done"].clone(),
                reviewed["cycle"].clone(),
                reviewed["phase"].clone()
            ),
            (json!(1), json!(2), json!("assess")),
            "{reviewed}"
        );
        let next = at(reviewed["next_action_at"].as_str().unwrap());
        assert!(next >= clock + minutes(59), "{reviewed}");
        // An escalation brings it forward to 30 seconds after the run.
        set_invoice(host, app, admin, "inv-8", "overdue").await;
        model.script([
            Reply::text("Urgent. <escalate-to-vision/>"),
            Reply::text(r#"{"commitments": []}"#),
        ]);
        let overdue = beats.row("overdue").await;
        let (status, body) = beats
            .feed(overdue["id"].as_str().unwrap(), "run-now", admin)
            .await;
        assert_eq!(
            (status, body["escalated"].clone()),
            (StatusCode::OK, json!(true)),
            "{body}"
        );
        set_invoice(host, app, admin, "inv-8", "paid").await;
        let hastened = at(vision(lead.clone()).await["next_action_at"]
            .as_str()
            .unwrap());
        assert!(
            hastened < next && hastened <= Timestamp::now() + SignedDuration::from_secs(31),
            "{hastened}"
        );
        // Cycle 2: assess, debate, plan; a user rejects the plan: cycle 3 after the pause.
        for _ in 0..3 {
            clock += minutes(1);
            tick(sched, clock).await;
        }
        let (status, body) = host
            .post(
                &format!("/api/visions/{lead}/reject"),
                user,
                Body::Json(json!({"note": "not this one"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            (body["cycle"].clone(), body["phase"].clone()),
            (json!(3), json!("assess"))
        );
        // Cycle 3 runs to its review: the second goal spends budget_max_goals (2).
        clock += minutes(120);
        for _ in 0..3 {
            tick(sched, clock).await;
            clock += minutes(1);
        }
        host.post(&format!("/api/visions/{lead}/approve"), user, Body::None)
            .await;
        for _ in 0..3 {
            tick(sched, clock).await;
            clock += minutes(1);
        }
        let done = vision(lead.clone()).await;
        assert_eq!(done["state"], "stopped", "{done}");
        assert_eq!(done["goals_done"], 2, "{done}");
        assert!(
            done["stop_reason"]
                .as_str()
                .unwrap()
                .starts_with("budget_max_goals"),
            "{done}"
        );
        let decisions: Vec<(&str, &str)> = done["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["phase"] == "approval")
            .map(|p| {
                (
                    p["outcome"].as_str().unwrap(),
                    p["output"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            decisions,
            [
                ("approved", "go"),
                ("rejected", "not this one"),
                ("approved", "")
            ]
        );
        model.answer_by_default(Reply::greeting());
        beats.stop().await;
    }
}

#[tokio::test]
async fn an_upgrade_that_drops_a_heartbeat_retires_it() {
    for (beats, _dir) in Beats::start("heartbeat_upgrade").await {
        let (host, app, admin) = (&beats.host, &beats.app, &beats.admin);
        let dropped = manifest(app, &beats.emitter)
            .replace("version: 1.0.0", "version: 1.1.0")
            .replace("      - slug: risky\n        skill: knowledge\n        tool: add\n        schedule_type: weekly\n        time_of_day: \"08:00\"\n        day_of_week: 0\n", "");
        let (status, body) = host
            .register(
                app,
                &beats.dev,
                &[
                    ("manifest", None, dropped.as_bytes()),
                    ("component", None, &beats.component),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        host.post(
            &format!("/api/dev/apps/{app}/versions/1.1.0/promote"),
            &beats.dev,
            Body::None,
        )
        .await;
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/upgrade"),
                admin,
                Body::Json(json!({"version": "1.1.0"})),
            )
            .await;
        assert!(status.is_success(), "{body}");
        let risky = beats.row("risky").await;
        assert_eq!(risky["state"], "retired", "{risky}");
        assert!(risky["schedule"].is_null(), "{risky}");
        let (status, body) = beats
            .feed(risky["id"].as_str().unwrap(), "run-now", admin)
            .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::CONFLICT, "heartbeat_retired")
        );
        assert_eq!(beats.row("overdue").await["state"], "active");
        beats.stop().await;
    }
}
