//! Conversations over HTTP: the orchestrator routes each message among the agents of the
//! tenant's apps (by the model at the `orchestrator` role, or by the documented fallback when
//! it fails), a headless app is never chosen, a follow-up stays with its agent, the agent's
//! answer and tool calls are stored and paged, a turn streams as server-sent events, and
//! nobody else reads or writes a user's conversation.

use atrium_fake_llm::{Reply, ToolCall};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, slug};
use crate::{stores, unique};

/// The probe's manifest as app `app`, with `workflows` appended.
fn manifest(app: &str, workflows: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace("app_id: probe", &format!("app_id: {app}"))
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
        + workflows
}

/// A headless app (the echo component: no agent) whose workflow would match a greeting.
fn headless(app: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::ECHO_MANIFEST)
        .unwrap()
        .replace("app_id: echo", &format!("app_id: {app}"))
        + "workflows:\n  - {id: greet, name: Greet, intent: Greets., flow: [Greet], triggers: [hello]}\n"
}

const CHASE: &str = "workflows:
  - id: chase
    name: Chase
    intent: Chase overdue invoices.
    flow: [Find the invoice, Send a reminder]
    triggers: [overdue invoice, reminder]
    non_triggers: [refund]
    specifics: Be polite.
";

const ENTRY: &str = "workflows:
  - id: entry
    name: Entry
    intent: Book ledger entries.
    flow: [Book the entry]
    triggers: [book an entry, ledger]
";

/// The body of a turn.
async fn say(host: &Host, token: &str, id: &str, content: &str) -> Value {
    let (status, body) = host
        .post(
            &format!("/api/conversations/{id}/messages"),
            token,
            Body::Json(json!({"content": content})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn routed(turn: &Value) -> (String, String, Value, String) {
    let routing = &turn["routing"];
    (
        routing["app"]
            .as_str()
            .unwrap_or_else(|| panic!("{turn}"))
            .to_owned(),
        routing["agent"].as_str().unwrap().to_owned(),
        routing["data"]["workflow"].clone(),
        routing["data"]["decided_by"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn conversations_route_each_message_and_keep_the_history() {
    let probe = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    let echo = std::fs::read(atrium_test_artifacts::ECHO).unwrap();
    for (store, _dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        // Slugs in this order: books < desk < quiet.
        let tag = slug("c");
        let (books, desk, quiet) = (
            format!("books-{tag}"),
            format!("desk-{tag}"),
            format!("quiet-{tag}"),
        );
        for (app, text, component) in [
            (&books, manifest(&books, ENTRY), &probe),
            (&desk, manifest(&desk, CHASE), &probe),
            (&quiet, headless(&quiet), &echo),
        ] {
            host.publish(app, &dev, &text, component).await;
        }
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let user = host.tenant_token(&acme.secret, "shop", "user").await;
        for app in [&books, &desk] {
            host.activate(app, &admin, &["tasks.read", "tasks.write"])
                .await;
        }
        host.activate(&quiet, &admin, &[]).await;
        let (status, body) = host
            .put(
                "/api/llm-settings",
                &admin,
                Body::Json(json!({"roles": {
                    "specialist": {"provider": "mistral"},
                    "orchestrator": {"provider": "ovh"},
                }})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (agents, orchestrator) = (host.fakes.upstream("mistral"), host.fakes.upstream("ovh"));

        let (status, conversation) = host.post("/api/conversations", &user, Body::None).await;
        assert_eq!(status, StatusCode::CREATED, "{conversation}");
        assert_eq!(conversation["channel"], "web");
        assert_eq!(conversation["message_count"], 0);
        assert!(conversation["agent"].is_null());
        let id = conversation["id"].as_str().unwrap().to_owned();

        // The orchestrator model chooses; it is shown the triggers and never the headless app.
        orchestrator.forget_requests();
        orchestrator.push(Reply::text(
            json!({"app": desk, "agent": "lead", "workflow": "chase", "reason": "an invoice to chase"}).to_string(),
        ));
        agents.forget_requests();
        agents.push(Reply::text("Reminder sent."));
        let turn = say(
            &host,
            &user,
            &id,
            "Please chase the overdue invoice of Acme",
        )
        .await;
        assert_eq!(
            routed(&turn),
            (desk.clone(), "lead".into(), json!("chase"), "model".into())
        );
        assert_eq!(turn["routing"]["content"], "an invoice to chase");
        assert_eq!(turn["message"]["kind"], "user");
        assert_eq!(turn["reply"]["kind"], "assistant");
        assert_eq!(turn["reply"]["content"], "Reminder sent.");
        let asked = orchestrator.last().unwrap().body;
        assert_eq!(asked["response_format"]["type"], "json_object");
        let question: Value =
            serde_json::from_str(asked["messages"][1]["content"].as_str().unwrap()).unwrap();
        let apps: Vec<&str> = question["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["app"].as_str().unwrap())
            .collect();
        assert!(
            apps.contains(&desk.as_str()) && apps.contains(&books.as_str()),
            "{question}"
        );
        assert!(
            !apps.contains(&quiet.as_str()),
            "a headless app is no candidate: {question}"
        );
        let chase = question["workflows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == "chase")
            .unwrap();
        assert_eq!(chase["non_triggers"], json!(["refund"]));
        let system = agents.last().unwrap().body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            system.starts_with("Leads.\n\n## Workflow: Chase\nWhen: Chase overdue invoices."),
            "{system}"
        );
        assert!(
            system.contains("\n2. Send a reminder\nSpecifics: Be polite."),
            "{system}"
        );

        // The model is down: the fallback keeps a follow-up with its agent, with the history.
        orchestrator.fail(503);
        agents.push(Reply::text("You're welcome."));
        let turn = say(&host, &user, &id, "Thanks!").await;
        assert_eq!(
            routed(&turn),
            (desk.clone(), "lead".into(), Value::Null, "fallback".into())
        );
        assert_eq!(turn["routing"]["data"]["switched"], false);
        assert!(
            turn["routing"]["content"]
                .as_str()
                .unwrap()
                .contains("follow-up"),
            "{turn}"
        );
        let history = &agents.last().unwrap().body["messages"];
        assert_eq!(
            history[1]["content"], "Please chase the overdue invoice of Acme",
            "{history}"
        );
        assert_eq!(history[2]["content"], "Reminder sent.", "{history}");
        assert_eq!(history[3]["content"], "Thanks!", "{history}");
        // A trigger of another app moves the conversation there.
        agents.push(Reply::text("Booked."));
        let turn = say(&host, &user, &id, "Book an entry in the ledger").await;
        assert_eq!(
            routed(&turn),
            (
                books.clone(),
                "lead".into(),
                json!("entry"),
                "fallback".into()
            )
        );
        assert_eq!(turn["routing"]["data"]["switched"], true);
        // A non-trigger rules its workflow out: the follow-up stays.
        agents.push(Reply::text("Noted."));
        let turn = say(&host, &user, &id, "A reminder about the refund").await;
        assert_eq!(
            routed(&turn),
            (books.clone(), "lead".into(), Value::Null, "fallback".into())
        );
        orchestrator.recover();
        // A choice that is not a candidate (the headless app) is not followed.
        orchestrator.push(Reply::text(
            json!({"app": quiet, "agent": "default"}).to_string(),
        ));
        agents.push(Reply::tool_calls([ToolCall::new(
            "t1",
            "echo",
            json!({"n": 7}),
        )]));
        agents.push(Reply::text("Echoed."));
        let turn = say(&host, &user, &id, "hello there").await;
        assert_eq!(routed(&turn).0, books, "{turn}");
        assert!(
            turn["routing"]["content"]
                .as_str()
                .unwrap()
                .contains("not a candidate"),
            "{turn}"
        );
        let calls = &turn["reply"]["data"]["tool_calls"];
        assert_eq!(calls[0]["name"], "echo", "{turn}");
        assert_eq!(calls[0]["ok"], true, "{turn}");
        assert_eq!(calls[0]["result"], json!({"n": 7}), "{turn}");
        assert_eq!(turn["reply"]["data"]["usage"]["steps"], 2, "{turn}");
        // A model outage in the agent's run is stored as the turn's error.
        orchestrator.push(Reply::text(
            json!({"app": books, "agent": "lead"}).to_string(),
        ));
        agents.fail(503);
        let turn = say(&host, &user, &id, "anything").await;
        assert_eq!(turn["reply"]["kind"], "error", "{turn}");
        assert!(
            turn["reply"]["content"]
                .as_str()
                .unwrap()
                .starts_with("the model is unavailable"),
            "{turn}"
        );
        agents.recover();

        // Streamed: the user's message, the routing, the text as it comes, then the turn.
        orchestrator.push(Reply::text(
            json!({"app": books, "agent": "helper"}).to_string(),
        ));
        agents.push(Reply::pieces(["Hel", "lo ", "there"]));
        let response = reqwest::Client::new()
            .post(format!("{}/api/conversations/{id}/messages", host.base()))
            .bearer_auth(&user)
            .header("accept", "text/event-stream")
            .json(&json!({"content": "Stream it"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let text = response.text().await.unwrap();
        let events: Vec<(String, Value)> = text
            .split("\n\n")
            .filter_map(|block| {
                let name = block.lines().find_map(|l| l.strip_prefix("event: "))?;
                let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
                Some((name.to_owned(), serde_json::from_str(data).unwrap()))
            })
            .collect();
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["message", "routing", "delta", "delta", "delta", "done"],
            "{text}"
        );
        let deltas: String = events
            .iter()
            .filter(|(n, _)| n == "delta")
            .map(|(_, d)| d["text"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, "Hello there");
        assert_eq!(events[5].1["reply"]["content"], "Hello there", "{text}");
        assert_eq!(events[1].1["agent"], "helper", "{text}");

        // The history, re-read in pages: 7 turns of 3 messages.
        let (status, detail) = host
            .get(&format!("/api/conversations/{id}?limit=10"), &user)
            .await;
        assert_eq!(status, StatusCode::OK, "{detail}");
        assert_eq!(detail["message_count"], 21, "{detail}");
        assert_eq!(detail["app"], books.as_str(), "{detail}");
        assert_eq!(detail["agent"], "helper", "{detail}");
        let mut seqs: Vec<i64> = detail["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["seq"].as_i64().unwrap())
            .collect();
        let mut cursor = detail["next_cursor"].as_str().map(str::to_owned);
        while let Some(next) = cursor {
            let (_, page) = host
                .get(
                    &format!("/api/conversations/{id}?limit=10&cursor={next}"),
                    &user,
                )
                .await;
            seqs.extend(
                page["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["seq"].as_i64().unwrap()),
            );
            cursor = page["next_cursor"].as_str().map(str::to_owned);
        }
        assert_eq!(seqs, (1..=21).collect::<Vec<_>>());
        let (_, second) = host
            .post(
                "/api/conversations",
                &user,
                Body::Json(json!({"channel": "email", "title": "Later"})),
            )
            .await;
        let (_, listed) = host.get("/api/conversations", &user).await;
        let listed: Vec<&str> = listed["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            listed,
            [second["id"].as_str().unwrap(), id.as_str()],
            "newest first"
        );

        // The 23rd turn is shown the last 20 user messages and answers: turns 13 to 22 whole,
        // neither the routing messages nor the message being answered counted.
        let later = second["id"].as_str().unwrap();
        orchestrator.recover();
        orchestrator.forget_script();
        orchestrator.answer_by_default(Reply::text(
            json!({"app": books, "agent": "lead"}).to_string(),
        ));
        agents.recover();
        agents.forget_script();
        for n in 1..=23 {
            agents.push(Reply::text(format!("answer {n}")));
            let turn = say(&host, &user, later, &format!("question {n}")).await;
            assert_eq!(turn["reply"]["content"], format!("answer {n}"), "{turn}");
        }
        let sent = agents.last().unwrap().body["messages"].clone();
        let shown: Vec<(String, String)> = sent.as_array().unwrap()[1..]
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap().to_owned(),
                    m["content"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let mut expected: Vec<(String, String)> = (13..=22)
            .flat_map(|n| {
                [
                    ("user".to_owned(), format!("question {n}")),
                    ("assistant".to_owned(), format!("answer {n}")),
                ]
            })
            .collect();
        expected.push(("user".to_owned(), "question 23".to_owned()));
        assert_eq!(shown, expected, "{sent}");

        // Bad input, named.
        for (path, body, param) in [
            (
                format!("/api/conversations/{id}/messages"),
                json!({"content": " "}),
                Some("content"),
            ),
            (
                format!("/api/conversations/{id}/messages"),
                json!({"content": "x".repeat(20_001)}),
                Some("content"),
            ),
            (
                format!("/api/conversations/{id}/messages"),
                json!({"text": "hi"}),
                None,
            ),
            (
                "/api/conversations".to_owned(),
                json!({"channel": ""}),
                Some("channel"),
            ),
        ] {
            let (status, answer) = host.post(&path, &user, Body::Json(body)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
            if let Some(param) = param {
                assert_eq!(answer["error"]["param"], param, "{answer}");
            }
        }

        // Nobody else: another user of the tenant (even its admin), another tenant, another
        // organization; and no organization key.
        let other_org = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        let strangers = [
            host.tenant_token(&acme.secret, "shop", "user").await,
            admin.clone(),
            host.tenant_token(&acme.secret, "depot", "user").await,
            host.tenant_token(&other_org.secret, "shop", "admin").await,
        ];
        for stranger in &strangers {
            let (status, body) = host.get("/api/conversations", stranger).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["conversations"], json!([]), "{body}");
            let (status, _) = host
                .get(&format!("/api/conversations/{id}"), stranger)
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (status, _) = host
                .post(
                    &format!("/api/conversations/{id}/messages"),
                    stranger,
                    Body::Json(json!({"content": "hi"})),
                )
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
        }
        let (status, _) = host.get("/api/conversations", &acme.secret).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (_, detail) = host.get(&format!("/api/conversations/{id}"), &user).await;
        assert_eq!(detail["message_count"], 21, "untouched: {detail}");
        host.stop().await;
    }
}
