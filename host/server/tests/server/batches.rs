//! Batches: background items with mixed outcomes, half-price metering, restart recovery.

use atrium_store::{ItemStatus, TenantKey};
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::chat::{gateway, start_fakes};
use crate::host::Host;
use crate::{assert_error, call_on, stores, unique};

async fn poll(state: &atrium_server::HostState, key: &str, id: &str) -> Value {
    for _ in 0..500 {
        let (status, body) = call_on(
            state,
            "GET",
            &format!("/v1/batches/{id}"),
            Some(key),
            None,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["status"] == "completed" {
            return body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the batch did not complete");
}

#[tokio::test]
async fn items_run_in_the_background_and_one_failure_never_fails_the_others() {
    for (store, _dir) in stores().await {
        let fakes = start_fakes().await;
        let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
        state
            .jobs
            .start(Box::new(atrium_server::batches::Runner(state.clone())));
        let key = store.create_key(&unique("acme"), "k").await.unwrap();
        let body = json!({"requests": [
            {"custom_id": "a", "tier": "eu-sovereign", "messages": [{"role": "user", "content": "one"}]},
            {"custom_id": "b", "tier": "frontier", "contains_pii": true, "messages": [{"role": "user", "content": "two"}]},
            {"custom_id": "c", "tier": "eu-sovereign"},
            {"custom_id": "d", "provider": "mistral", "messages": [{"role": "user", "content": "four"}]},
        ]});
        let (status, created) = call_on(
            &state,
            "POST",
            "/v1/batches",
            Some(&key.secret),
            Some("t-batch"),
            Some(&body.to_string()),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{created}");
        let id = created["id"].as_str().unwrap();
        assert!(id.starts_with("batch_"));
        assert_eq!(created["results"].as_array().unwrap().len(), 4);

        let done = poll(&state, &key.secret, id).await;
        assert_eq!(
            done["request_counts"],
            json!({"total": 4, "completed": 2, "failed": 2})
        );
        let results = done["results"].as_array().unwrap();
        let by_id = |cid: &str| {
            results
                .iter()
                .find(|r| r["custom_id"] == cid)
                .unwrap()
                .clone()
        };
        assert_eq!(by_id("a")["status"], "completed");
        assert_eq!(by_id("a")["response"]["provider"], "ovh");
        assert_eq!(by_id("a")["response"]["tenant"], "t-batch");
        // Half price: 15 tokens at $0.74 per million is 11.1 micro-dollars; half is 5.55, rounded to 6.
        assert_eq!(by_id("a")["response"]["usage"]["cost_usd"], 0.000006);
        assert_eq!(by_id("b")["status"], "failed");
        assert_eq!(by_id("b")["error"]["code"], "policy_violation");
        assert_eq!(by_id("b")["error"]["status"], 403);
        assert_eq!(by_id("c")["error"]["param"], "messages");
        assert_eq!(by_id("d")["response"]["provider"], "mistral");
        assert_eq!(fakes.calls("anthropic") + fakes.calls("openai"), 0);

        let usage = store
            .tenant_usage(&TenantKey::new(&key.org_id, "t-batch"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(usage.calls, 2, "failed items are not metered");

        let other = store.create_key(&unique("globex"), "k").await.unwrap();
        let (status, body) = call_on(
            &state,
            "GET",
            &format!("/v1/batches/{id}"),
            Some(&other.secret),
            None,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_error(&body, "not_found");
        state.jobs.stop(std::time::Duration::from_secs(10)).await;
    }
}

#[tokio::test]
async fn a_batch_survives_a_restart_and_no_item_is_recorded_twice() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let items: Vec<(String, String)> = (0..5)
        .map(|i| {
            (
                format!("item-{i}"),
                json!({"messages": [{"role": "user", "content": format!("q{i}")}]}).to_string(),
            )
        })
        .collect();
    let id = store
        .create_batch(&TenantKey::new(&key.org_id, "t"), &items)
        .await
        .unwrap();
    // A host claimed one item and stopped before writing its result.
    let interrupted = store.claim_batch_item().await.unwrap().unwrap();
    assert_eq!(interrupted.item.status, ItemStatus::Running);

    // The host starts again: the runner re-queues the interrupted item and finishes the batch.
    let fakes = start_fakes().await;
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    state
        .jobs
        .start(Box::new(atrium_server::batches::Runner(state.clone())));
    let done = poll(&state, &key.secret, &id).await;
    assert_eq!(
        done["request_counts"],
        json!({"total": 5, "completed": 5, "failed": 0})
    );
    state.jobs.stop(std::time::Duration::from_secs(10)).await;

    // The old claim is dead: its late result cannot be written, nothing is recorded twice.
    let late = store
        .finish_batch_item(&interrupted, ItemStatus::Completed, "{}", None)
        .await;
    assert!(late.is_err());
    assert_eq!(
        store
            .tenant_usage(&TenantKey::new(&key.org_id, "t"))
            .await
            .unwrap()
            .unwrap()
            .calls,
        5
    );
    assert_eq!(fakes.calls("ovh"), 5);
}

#[tokio::test]
async fn malformed_batches_are_refused_whole() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let state = crate::state(&store, vec![]);
    let too_many = json!({"requests": (0..1001).map(|i| json!({"custom_id": format!("{i}")})).collect::<Vec<_>>()}).to_string();
    for (body, param) in [
        (r#"{}"#.to_owned(), "requests"),
        (r#"{"requests": []}"#.to_owned(), "requests"),
        (r#"{"requests": {}}"#.to_owned(), "requests"),
        (
            r#"{"requests": [{"messages": []}]}"#.to_owned(),
            "requests[0].custom_id",
        ),
        (
            r#"{"requests": [{"custom_id": "x"}, {"custom_id": "x"}]}"#.to_owned(),
            "requests[1].custom_id",
        ),
        (too_many, "requests"),
    ] {
        let (status, response) = call_on(
            &state,
            "POST",
            "/v1/batches",
            Some(&key.secret),
            None,
            Some(&body),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{response}");
        assert_eq!(response["error"]["param"], param, "{response}");
    }
    let (status, _) = call_on(
        &state,
        "GET",
        "/v1/batches/batch_nope",
        Some(&key.secret),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn batches_are_listed_newest_first_a_page_at_a_time_to_their_organization_only() {
    for (store, _dir) in stores().await {
        // The host runs the batch runner like every host: with the same fake providers as the
        // other batch tests, whose queued items it may claim on a shared PostgreSQL.
        let fakes = start_fakes().await;
        let host = Host::start(atrium_server::HostState::new(
            store.clone(),
            gateway(&fakes),
        ))
        .await;
        let acme = store.create_key(&unique("acme"), "k").await.unwrap();
        let globex = store.create_key(&unique("globex"), "k").await.unwrap();
        let items: Vec<(String, String)> = ["x", "y"]
            .iter()
            .map(|id| ((*id).to_owned(), json!({"messages": []}).to_string()))
            .collect();
        let mut created = Vec::new();
        for tenant in ["t-1", "t-2", "t-1"] {
            let key = TenantKey::new(&acme.org_id, tenant);
            created.push(store.create_batch(&key, &items).await.unwrap());
        }
        let theirs = TenantKey::new(&globex.org_id, "t-1");
        let other = store.create_batch(&theirs, &items).await.unwrap();

        // Two pages of two and one; the batches are created within the same millisecond or
        // not, and the page boundary holds either way (ties are broken by id).
        let pages = host.pages("/v1/batches", &acme.secret, "data", 2).await;
        assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 1]);
        let listed: Vec<&Value> = pages.iter().flatten().collect();
        let mut ids: Vec<&str> = listed.iter().map(|b| b["id"].as_str().unwrap()).collect();
        let times: Vec<i64> = listed
            .iter()
            .map(|b| b["created_at"].as_i64().unwrap())
            .collect();
        assert!(
            times.windows(2).all(|w| w[0] >= w[1]),
            "newest first: {times:?}"
        );
        ids.sort_unstable();
        let mut expected: Vec<&str> = created.iter().map(String::as_str).collect();
        expected.sort_unstable();
        assert_eq!(
            ids, expected,
            "each batch once, none of another organization"
        );
        let first = listed[0];
        assert_eq!(first["object"], "batch");
        // The runner may have run the items already (they fail: no messages).
        let counts = &first["request_counts"];
        assert_eq!(counts["total"], 2, "{first}");
        let finished = counts["completed"].as_i64().unwrap() + counts["failed"].as_i64().unwrap();
        let status = if finished == 2 {
            "completed"
        } else {
            "in_progress"
        };
        assert_eq!(first["status"], status, "{first}");
        assert!(
            first.get("results").is_none(),
            "a list leaves the results out: {first}"
        );
        let (status, whole) = host.get("/v1/batches", &acme.secret).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(whole["object"], "list");
        assert_eq!(whole["data"].as_array().unwrap().len(), 3);

        // The other organization sees its own batch only.
        let (_, theirs) = host.get("/v1/batches", &globex.secret).await;
        assert_eq!(theirs["data"].as_array().unwrap().len(), 1, "{theirs}");
        assert_eq!(theirs["data"][0]["id"], other.as_str());

        for (query, param) in [
            ("limit=0", "limit"),
            ("limit=201", "limit"),
            ("cursor=eHl6", "cursor"),
        ] {
            let (status, body) = host
                .get(&format!("/v1/batches?{query}"), &acme.secret)
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
            assert_eq!(body["error"]["param"], param, "{body}");
        }
        let (status, _) = host.get("/v1/batches", "sk-nobody").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        host.stop().await;
    }
}
