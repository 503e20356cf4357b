//! Work cut off on a running host, on SQLite and PostgreSQL. A deadline, a client that
//! disconnects or a shutdown drops a future at whichever await point it reached: each
//! store-writing path of the agent runner, conversation turns (the orchestrator), grants and
//! cross-app calls, events, rooms and heartbeats is dropped at each of its await points in turn
//! (`cut_everywhere`), and after every cut the store still takes writes on every connection of
//! its pool and nothing is half-written: every delegation and every event delivery that ran has
//! its audit entry, every question of a conversation its answer or the reason there is none,
//! every claimed heartbeat run its end, every room post its place in the room's count. Then the
//! reported failure itself: a lead agent past its deadline in `team-delegate`, tried again and
//! again, and a client that disconnects from a conversation turn.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use atrium_fake_llm::{Reply, ToolCall};
use atrium_platform::registry::Actor;
use atrium_platform::runner::{AgentRun, Limits, Runner};
use atrium_runtime::ChainContext;
use atrium_store::{AuditFilter, Store, TenantKey};
use reqwest::StatusCode;
use serde_json::json;

use super::heartbeats::own_stores;
use super::rooms::{ROOMS, manifest, user_id};
use super::{Body, Host, slug};
use crate::unique;

/// Past this many cuts, a path is cut at every few await points only: a model step streams in
/// many small reads, and each try replays the whole path.
const EVERY_CUT_UP_TO: usize = 60;

/// Drops the future `make` builds at its first await point, then a new one at its second, and
/// so on, until one completes before its cut; `check` runs after each cut with its number.
/// Answers how many cuts there were.
async fn cut_everywhere<F: Future>(
    what: &str,
    mut make: impl FnMut() -> F,
    mut check: impl AsyncFnMut(usize),
) -> usize {
    let mut at = 1;
    let mut cuts = 0;
    let mut whole_at_once = 0;
    loop {
        // Boxed, so that the drop below drops the future itself, there and then.
        let mut future = Box::pin(make());
        let mut pending = 0;
        let completed = std::future::poll_fn(|cx| match future.as_mut().poll(cx) {
            Poll::Ready(_) => Poll::Ready(true),
            Poll::Pending => {
                pending += 1;
                if pending >= at {
                    Poll::Ready(false)
                } else {
                    Poll::Pending
                }
            }
        })
        .await;
        // Cut here, at its `at`th await point, unless it completed.
        drop(future);
        if completed && cuts == 0 && whole_at_once < 20 {
            // Every answer it waited for was there by its first poll (a database's worker
            // thread on the other core can answer that fast): try again, until it waits.
            whole_at_once += 1;
            continue;
        }
        if completed {
            assert!(cuts > 0, "{what} never awaited anything: nothing was cut");
            return cuts;
        }
        cuts += 1;
        check(at).await;
        at += if at < EVERY_CUT_UP_TO { 1 } else { at / 10 };
    }
}

/// The store takes a write on every connection of its pool: as many writes at once as it has
/// connections and more, each beginning a write transaction (on SQLite, with the write lock).
/// A connection left inside a transaction by a cut makes some of them fail or never end.
async fn writes(store: &Store, after: &str) {
    let probes = (0..20).map(|_| store.probe_write());
    let done = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(probes))
        .await
        .unwrap_or_else(|_| panic!("after {after}: the store takes no writes"));
    for result in done {
        result.unwrap_or_else(|e| panic!("after {after}: a write failed: {e}"));
    }
}

/// Lets what a cut left running (tasks of their own, guards' closing writes) finish.
async fn settle(store: &Store, after: &str) {
    tokio::time::sleep(Duration::from_millis(150)).await;
    writes(store, after).await;
}

/// Waits (at most 30 s) until `done` holds.
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) -> Result<(), String> {
    for _ in 0..300 {
        if done().await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("{what} never came true"))
}

async fn audit_count(store: &Store, key: &TenantKey, kind: &str, callee: Option<&str>) -> usize {
    let filter = AuditFilter {
        kind: Some(kind),
        callee_app: callee,
        ..AuditFilter::default()
    };
    store
        .audit_page(key, &filter, None, 1000)
        .await
        .unwrap()
        .len()
}

/// Model requests whose system prompt is `prompt` (which agent they were for).
fn asked(model: &atrium_fake_llm::Upstream, prompt: &str) -> usize {
    model
        .requests()
        .iter()
        .filter(|r| r.body["messages"][0]["content"] == prompt)
        .count()
}

#[tokio::test]
async fn work_cut_off_at_any_await_point_leaves_the_store_writing_and_nothing_half_written() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, _dir, _url) in own_stores("cancel").await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let user = host.tenant_token(&acme.secret, "shop", "user").await;
        let key = TenantKey::new(&acme.org_id, "shop");
        let uid = user_id(&host, &user).await;
        let who = Actor::user(key.clone(), &uid);
        let (status, body) = host
            .put(
                "/api/llm-settings",
                &admin,
                Body::Json(json!({"roles": {"specialist": {"provider": "mistral"}, "fast": {"provider": "mistral"}, "orchestrator": {"provider": "mistral"}}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let model = host.fakes.upstream("mistral");

        let app = slug("cut");
        // It emits `entry_booked` too, the one event the probe handles (the events' cuts).
        let text = manifest(&app, true)
            .replace("emits: [probe_event]", "emits: [probe_event, entry_booked]");
        host.publish(&app, &dev, &text, &component).await;
        host.activate(&app, &admin, &ROOMS).await;

        runner(&host, &store, &key, &app).await;
        the_deadline_in_team_delegate(&host, &store, &key, &app).await;
        conversations(&host, &store, &key, &who, &app).await;
        a_client_that_disconnects(&host, &store, &key, &user, &app).await;
        grants_and_calls(&host, &store, &key, &who, &dev, &component, &app, &admin).await;
        events(&host, &store, &key, &who, &dev, &component, &app, &admin).await;
        rooms(&host, &store, &key, &who, &uid, &app).await;
        heartbeats(&host, &store, &key, &dev, &component, &admin).await;
        writes(&store, "everything").await;
        model.forget_script();
        host.stop().await;
    }
}

/// The runner: a model step, an app tool that writes a record, a delegation to the helper, the
/// answer. Every delegation whose helper was asked has its entry.
async fn runner(host: &Host, store: &Store, key: &TenantKey, app: &str) {
    let model = host.fakes.upstream("mistral");
    model.forget_requests();
    let before = audit_count(store, key, "delegate", None).await;
    let runner = Runner::of(&host.serving);
    let make = || {
        model.forget_script();
        model.script([
            Reply::tool_calls([ToolCall::new(
                "call_1",
                "records-put",
                json!({"record_type": "note", "record": {"id": "n-1", "title": "x"}}),
            )]),
            Reply::tool_call(
                "team-delegate",
                json!({"agent": "helper", "prompt": "Check"}),
            ),
            Reply::text("Checked."),
            Reply::text("Done."),
        ]);
        let mut run = AgentRun::new(
            Actor::host(key.clone()),
            app,
            Some("lead".into()),
            "Note it, then ask the helper",
        );
        run.limits = Some(Limits {
            max_steps: 8,
            budget_micros: 1_000_000,
            timeout: Duration::from_secs(30),
        });
        runner.run_agent(run)
    };
    let cuts = cut_everywhere("an agent run", make, async |at| {
        settle(store, &format!("an agent run cut at {at}")).await;
        let entries = audit_count(store, key, "delegate", None).await - before;
        let helped = asked(&model, "Helps.");
        assert!(
            entries >= helped,
            "cut at {at}: the helper was asked {helped} times and {entries} delegations are recorded"
        );
    })
    .await;
    assert!(cuts > 3, "{cuts}");
    let record = store
        .record(&key.install(app), "n-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.data["title"], "x");
}

/// The failure reported from outside: a lead past its deadline while its teammate's model
/// takes longer, again and again. The run ends as it should, every later write of the host
/// works, and each delegation is recorded.
async fn the_deadline_in_team_delegate(host: &Host, store: &Store, key: &TenantKey, app: &str) {
    let model = host.fakes.upstream("mistral");
    let before = audit_count(store, key, "delegate", None).await;
    for attempt in 0..6 {
        model.forget_script();
        model.script([
            Reply::tool_call(
                "team-delegate",
                json!({"agent": "helper", "prompt": "Slowly"}),
            ),
            Reply::text("too late").after(Duration::from_secs(5)),
        ]);
        let mut run = AgentRun::new(
            Actor::host(key.clone()),
            app,
            Some("lead".into()),
            "Ask the helper",
        );
        run.limits = Some(Limits {
            max_steps: 8,
            budget_micros: 1_000_000,
            timeout: Duration::from_millis(300 + 40 * attempt),
        });
        let error = Runner::of(&host.serving).run_agent(run).await.unwrap_err();
        assert!(error.reason.contains("deadline"), "{}", error.reason);
        writes(store, "a deadline in team-delegate").await;
    }
    eventually("every cut delegation recorded", async || {
        audit_count(store, key, "delegate", None).await - before == 6
    })
    .await
    .unwrap();
    // The settings, the agents' edits and the usage answer as before.
    let usage = store.tenant_usage(key).await.unwrap();
    assert!(usage.is_some());
}

/// Conversation turns: every question ends with its answer, or an error saying why there is
/// none, and the routing agrees with the conversation.
async fn conversations(host: &Host, store: &Store, key: &TenantKey, who: &Actor, app: &str) {
    let model = host.fakes.upstream("mistral");
    let conversation = store
        .create_conversation(key, who.user_id.as_deref().unwrap(), "web", None)
        .await
        .unwrap();
    let make = || {
        model.forget_script();
        model.script([Reply::text("An answer.")]);
        atrium_platform::conversations::turn(&host.serving, who, &conversation, "A question", None)
    };
    cut_everywhere("a conversation turn", make, async |at| {
        settle(store, &format!("a turn cut at {at}")).await;
        eventually(&format!("the turn cut at {at} closed"), async || {
            let messages = store
                .conversation_messages(key, &conversation.id, 0, 1000)
                .await
                .unwrap();
            turns_closed(&messages)
        })
        .await
        .unwrap();
    })
    .await;
    let messages = store
        .conversation_messages(key, &conversation.id, 0, 1000)
        .await
        .unwrap();
    assert!(turns_closed(&messages));
    assert_eq!(messages.last().unwrap().kind, "assistant");
    assert_eq!(messages.last().unwrap().app_slug.as_deref(), Some(app));
    let seqs: Vec<i64> = messages.iter().map(|m| m.seq).collect();
    assert_eq!(
        seqs,
        (1..=i64::try_from(seqs.len()).unwrap()).collect::<Vec<_>>()
    );
}

/// Whether every user message is answered before the next: `user`, then an `error` of the
/// routing, or the `routing` and then the `assistant`'s answer or an `error`.
fn turns_closed(messages: &[atrium_store::StoredMessage]) -> bool {
    let kinds: Vec<&str> = messages.iter().map(|m| m.kind.as_str()).collect();
    let mut i = 0;
    while i < kinds.len() {
        match kinds[i..] {
            ["user", "error", ..] => i += 2,
            ["user", "routing", "assistant" | "error", ..] => i += 3,
            _ => return false,
        }
    }
    true
}

/// A client that sends a conversation message and disconnects before the answer: the turn is
/// stored all the same.
async fn a_client_that_disconnects(
    host: &Host,
    store: &Store,
    key: &TenantKey,
    user: &str,
    app: &str,
) {
    let model = host.fakes.upstream("mistral");
    let (status, created) = host
        .post("/api/conversations", user, Body::Json(json!({})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    // The orchestrator's decision (the same upstream), then the agent's slow answer.
    model.forget_script();
    model.script([
        Reply::text(json!({"app": app, "agent": "lead"}).to_string()),
        Reply::text("Answered after you left.").after(Duration::from_secs(1)),
    ]);
    let before = model.calls();
    let client = reqwest::Client::new();
    let sent = client
        .post(format!("{}/api/conversations/{id}/messages", host.base()))
        .bearer_auth(user)
        .json(&json!({"content": "Are you there?"}))
        .send();
    let mut sent = Box::pin(sent);
    // The client leaves while the agent waits for its model.
    loop {
        tokio::select! {
            answered = &mut sent => panic!("answered before the client left: {answered:?}"),
            () = tokio::time::sleep(Duration::from_millis(10)) => {
                if model.calls() >= before + 2 {
                    break;
                }
            }
        }
    }
    drop(sent);
    eventually("the turn of a client that left stored", async || {
        let messages = store.conversation_messages(key, &id, 0, 100).await.unwrap();
        messages
            .last()
            .is_some_and(|m| m.content == "Answered after you left.")
    })
    .await
    .unwrap();
}

/// A grant's request and approval cut anywhere leave a grant in one of its states; an
/// `apps.invoke` cut anywhere leaves its entry whenever the callee's agent was asked.
#[allow(clippy::too_many_arguments)]
async fn grants_and_calls(
    host: &Host,
    store: &Store,
    key: &TenantKey,
    who: &Actor,
    dev: &str,
    component: &[u8],
    caller: &str,
    admin: &str,
) {
    let callee = slug("callee");
    let text =
        manifest(&callee, true).replace("system_prompt: Leads.", "system_prompt: Callee leads.");
    host.publish(&callee, dev, &text, component).await;
    host.activate(&callee, admin, &ROOMS).await;
    let lead = vec!["lead".to_owned()];
    let valid = async || {
        if let Some(grant) = store.grant(key, caller, &callee).await.unwrap() {
            assert!(grant.caller_approved_at.is_some(), "{grant:?}");
            assert!(!grant.allowed_agents.is_empty(), "{grant:?}");
        }
    };
    cut_everywhere(
        "a grant request",
        || atrium_platform::grants::request(&host.serving, who, caller, &callee, &lead),
        async |at| {
            settle(store, &format!("a grant request cut at {at}")).await;
            valid().await;
        },
    )
    .await;
    cut_everywhere(
        "a grant approval",
        || atrium_platform::grants::approve(&host.serving, who, caller, &callee, &lead),
        async |at| {
            settle(store, &format!("a grant approval cut at {at}")).await;
            valid().await;
        },
    )
    .await;

    let model = host.fakes.upstream("mistral");
    model.forget_requests();
    let before = audit_count(store, key, "invoke", Some(&callee)).await;
    let op = json!({"op": "invoke", "app": callee, "agent": "lead", "prompt": "Please"});
    let make = || {
        model.forget_script();
        model.script([Reply::text("Invoked.")]);
        host.serving.call_tool(who, caller, "platform", &op)
    };
    cut_everywhere("an apps.invoke", make, async |at| {
        settle(store, &format!("an invoke cut at {at}")).await;
        let asked = asked(&model, "Callee leads.");
        eventually(&format!("the invoke cut at {at} recorded"), async || {
            audit_count(store, key, "invoke", Some(&callee)).await - before >= asked
        })
        .await
        .unwrap();
    })
    .await;
}

/// An emit cut anywhere: every delivery that ran (each stores a `delivery` record) has its
/// audit entry.
#[allow(clippy::too_many_arguments)]
async fn events(
    host: &Host,
    store: &Store,
    key: &TenantKey,
    who: &Actor,
    dev: &str,
    component: &[u8],
    emitter: &str,
    admin: &str,
) {
    let subscriber = slug("listener");
    let text = manifest(&subscriber, true).replace(
        "subscribes_to:\n",
        &format!(
            "subscribes_to:\n  - {{ emitter_app: {emitter}, event_name: entry_booked, target_agent: lead }}\n"
        ),
    );
    host.publish(&subscriber, dev, &text, component).await;
    host.activate(&subscriber, admin, &ROOMS).await;
    for wire in store
        .wires_page(key, &Default::default(), None, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|w| w.emitter_app == emitter)
    {
        atrium_platform::wires::approve(&host.serving, who, &wire.id)
            .await
            .unwrap();
    }
    let before = audit_count(store, key, "event", Some(&subscriber)).await;
    let listener = key.install(&subscriber);
    let mut n = 0;
    let make = || {
        n += 1;
        let payload = json!({"behave": {subscriber.as_str(): format!("record:d-{n}")}});
        async move {
            atrium_platform::events::Events::of(&host.serving)
                .emit(
                    who,
                    emitter,
                    "entry_booked",
                    &payload,
                    &ChainContext::root(),
                )
                .await
        }
    };
    cut_everywhere("an events.emit", make, async |at| {
        settle(store, &format!("an emit cut at {at}")).await;
        let mut seen = String::new();
        eventually(
            &format!("the deliveries of the emit cut at {at} recorded"),
            async || {
                let delivered: Vec<String> = store
                    .records(&listener, "delivery", 1000)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|r| r.id)
                    .collect();
                let filter = AuditFilter {
                    kind: Some("event"),
                    callee_app: Some(&subscriber),
                    ..AuditFilter::default()
                };
                let audited = store.audit_page(key, &filter, None, 1000).await.unwrap();
                seen = format!(
                    "records {delivered:?}; audit entries {:?}",
                    audited
                        .iter()
                        .map(|e| (&e.outcome, &e.reason))
                        .collect::<Vec<_>>()
                );
                // Each delivery ran its handler (a failed one stores no record).
                audited.len() - before == delivered.len()
                    && audited.iter().all(|e| e.outcome == "ok")
            },
        )
        .await
        .unwrap_or_else(|what| panic!("{what}: {seen}"));
    })
    .await;
    // The emit that ran to its end delivered too.
    eventually("the uncut emit's delivery recorded", async || {
        store
            .records(&listener, "delivery", 1000)
            .await
            .unwrap()
            .iter()
            .any(|r| r.id == format!("d-{n}"))
    })
    .await
    .unwrap();
}

/// A post cut anywhere is in the room whole or not at all: the room's count is its messages.
async fn rooms(host: &Host, store: &Store, key: &TenantKey, who: &Actor, uid: &str, app: &str) {
    use atrium_platform::rooms::{MessageSender, Participant};
    let me = Participant::User {
        user_id: uid.to_owned(),
        display_name: "Ada".into(),
        admin: false,
    };
    let room = atrium_platform::rooms::Rooms::of(&host.serving)
        .create_room(who, &me, "ops", &[format!("{app}:lead")])
        .await
        .unwrap();
    let sender = MessageSender::User {
        user_id: uid.to_owned(),
        display_name: "Ada".into(),
    };
    let metadata = serde_json::Map::new();
    let root = ChainContext::root();
    let rooms = atrium_platform::rooms::Rooms::of(&host.serving);
    let make = || {
        rooms.post_message(
            who,
            &room.id,
            &sender,
            "A note for the room",
            &metadata,
            &root,
        )
    };
    let whole = async || {
        let stored = store.room(key, &room.id).await.unwrap().unwrap();
        let messages = store
            .room_messages_before(key, &room.id, None, 1000)
            .await
            .unwrap();
        let mut seqs: Vec<i64> = messages.iter().map(|m| m.seq).collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=stored.last_seq).collect::<Vec<_>>());
    };
    cut_everywhere("a room post", make, async |at| {
        settle(store, &format!("a post cut at {at}")).await;
        whole().await;
    })
    .await;
    whole().await;
}

/// A heartbeat run claimed by `run-now` or by a tick, cut anywhere, ends: none stays
/// `running`, and each one that answered has its pair in the agent's thread.
async fn heartbeats(
    host: &Host,
    store: &Store,
    key: &TenantKey,
    dev: &str,
    component: &[u8],
    admin: &str,
) {
    let app = slug("beats");
    let text = manifest(&app, true).replace(
        "    is_default: true\n",
        "    is_default: true\n    heartbeats:\n      - {slug: beat, skill: _internal_app_records, tool: query, params: {record_type: invoice}, interval_minutes: 60, invoke_always: true}\n",
    );
    host.publish(&app, dev, &text, component).await;
    host.activate(&app, admin, &ROOMS).await;
    let install = key.install(&app);
    let feed = atrium_platform::heartbeats::feed_id(&install, "lead", "beat");
    let model = host.fakes.upstream("mistral");
    let ended = async |at: usize| {
        eventually(
            &format!("the heartbeat runs cut at {at} ended"),
            async || {
                store
                    .heartbeat_runs(&install, 1000)
                    .await
                    .unwrap()
                    .iter()
                    .all(|r| r.outcome != "running")
            },
        )
        .await
        .unwrap();
    };
    let make = || {
        model.forget_script();
        model.script([Reply::text("All quiet here."), Reply::text("[]")]);
        host.scheduler.run_now(key, &feed)
    };
    cut_everywhere("a heartbeat run-now", make, async |at| {
        settle(store, &format!("a run-now cut at {at}")).await;
        ended(at).await;
    })
    .await;
    // Ticks an hour apart, each with the heartbeat due.
    let start = jiff::Timestamp::now();
    host.scheduler.tick(start).await.unwrap();
    let mut hour = 0;
    let make = || {
        hour += 2;
        model.forget_script();
        model.script([Reply::text("All quiet here."), Reply::text("[]")]);
        host.scheduler
            .tick(start + jiff::SignedDuration::from_hours(hour))
    };
    cut_everywhere("a heartbeat tick", make, async |at| {
        settle(store, &format!("a tick cut at {at}")).await;
        ended(at).await;
    })
    .await;
}
