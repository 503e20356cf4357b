//! Collections (created once, listed per tenant) and documents (added, listed, found by a
//! query, deleted, and metered to the tenant).

use atrium_inference::embed::Embedders;
use axum::http::StatusCode;
use serde_json::json;

use super::{add, json_call, rag_state, top};
use crate::{assert_error, call_on, stores, unique};

#[tokio::test]
async fn collections_are_created_once_and_listed_per_tenant() {
    for (store, _keep) in stores().await {
        let dir = tempfile::tempdir().unwrap();
        let state = rag_state(&store, dir.path(), Embedders::default()).await;
        let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
        let (status, created) =
            json_call(&state, "POST", "/v1/rag/handbook", &key, "t1", None).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        assert_eq!(created["name"], "handbook");
        assert_eq!(created["created"], true);
        assert_eq!(created["embedder"]["model"], "atrium-local-lexical");
        assert_eq!(created["dimensions"], 1024);
        let (status, again) = json_call(&state, "POST", "/v1/rag/handbook", &key, "t1", None).await;
        assert_eq!(status, StatusCode::OK, "{again}");
        assert_eq!(again["created"], false);
        assert_eq!(again["created_at"], created["created_at"]);
        json_call(&state, "POST", "/v1/rag/contracts", &key, "t1", None).await;
        add(
            &state,
            &key,
            "t1",
            "handbook",
            "Leave",
            "Employees take leave with two weeks of notice.",
        )
        .await;
        let (status, list) = json_call(&state, "GET", "/v1/rag", &key, "t1", None).await;
        assert_eq!(status, StatusCode::OK, "{list}");
        let names: Vec<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["contracts", "handbook"]);
        assert_eq!(list["data"][1]["documents"], 1);
        assert_eq!(list["data"][1]["chunks"], 1);
        let (_, other) = json_call(&state, "GET", "/v1/rag", &key, "t2", None).await;
        assert_eq!(other["data"], json!([]));
        for bad in ["bad%20name", "a%2Fb", &"x".repeat(129)] {
            let (status, body) =
                json_call(&state, "POST", &format!("/v1/rag/{bad}"), &key, "t1", None).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
            assert_error(&body, "invalid_request");
        }
        let (status, _) = call_on(&state, "POST", "/v1/rag/handbook", None, None, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
}

#[tokio::test]
async fn documents_are_added_listed_found_and_deleted() {
    for (store, _keep) in stores().await {
        let dir = tempfile::tempdir().unwrap();
        let state = rag_state(&store, dir.path(), Embedders::default()).await;
        let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
        json_call(&state, "POST", "/v1/rag/kb", &key, "t", None).await;
        let long =
            "The travel policy covers trains, flights and hotels for business trips. ".repeat(40);
        let (status, added) = json_call(
            &state,
            "POST",
            "/v1/rag/kb/documents",
            &key,
            "t",
            Some(json!({"title": "Travel policy", "text": long})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{added}");
        assert_eq!(added["status"], "indexed");
        assert_eq!(added["chars"], long.chars().count());
        assert!(added["chunks"].as_i64().unwrap() >= 3, "{added}");
        let travel = added["document_id"].as_str().unwrap().to_owned();
        assert!(travel.starts_with("doc_"));
        let espresso = add(
            &state,
            &key,
            "t",
            "kb",
            "Coffee machine",
            "Descale the espresso machine every Friday with citric acid.",
        )
        .await;

        let (_, list) = json_call(&state, "GET", "/v1/rag/kb/documents", &key, "t", None).await;
        let docs = list["data"].as_array().unwrap();
        assert_eq!(docs.len(), 2, "{list}");
        assert_eq!(docs[0]["id"], travel.as_str());
        assert_eq!(docs[0]["title"], "Travel policy");
        assert_eq!(docs[0]["status"], "indexed");
        assert!(docs[0]["created_at"].as_i64().unwrap() > 1_700_000_000);
        assert!(list["next_cursor"].is_null(), "{list}");

        // A page at a time, oldest first, the boundary between the two documents.
        let (_, first) = json_call(
            &state,
            "GET",
            "/v1/rag/kb/documents?limit=1",
            &key,
            "t",
            None,
        )
        .await;
        assert_eq!(first["object"], "list");
        assert_eq!(first["data"].as_array().unwrap().len(), 1, "{first}");
        assert_eq!(first["data"][0]["id"], travel.as_str());
        let cursor = first["next_cursor"].as_str().unwrap();
        let (_, second) = json_call(
            &state,
            "GET",
            &format!("/v1/rag/kb/documents?limit=1&cursor={cursor}"),
            &key,
            "t",
            None,
        )
        .await;
        assert_eq!(second["data"].as_array().unwrap().len(), 1, "{second}");
        assert_eq!(second["data"][0]["id"], espresso.as_str());
        assert!(second["next_cursor"].is_null(), "{second}");
        let (status, body) = json_call(
            &state,
            "GET",
            "/v1/rag/kb/documents?limit=201",
            &key,
            "t",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "limit");

        let matches = top(&state, &key, "t", "kb", "espresso descaling").await;
        assert_eq!(matches[0]["document_id"], espresso.as_str(), "{matches:?}");
        assert_eq!(matches[0]["title"], "Coffee machine");
        assert!(matches[0]["text"].as_str().unwrap().contains("citric acid"));
        let score = matches[0]["score"].as_f64().unwrap();
        assert!(score > 0.0 && score <= 1.0, "{score}");
        assert!(
            matches
                .windows(2)
                .all(|w| w[0]["score"].as_f64() >= w[1]["score"].as_f64())
        );
        assert!(matches.len() <= 5);
        let (_, two) = json_call(
            &state,
            "POST",
            "/v1/rag/kb/query",
            &key,
            "t",
            Some(json!({"query": "policy", "top_k": 2})),
        )
        .await;
        assert_eq!(two["matches"].as_array().unwrap().len(), 2, "{two}");
        assert_eq!(two["model"], "atrium-local-lexical");

        let (status, deleted) = json_call(
            &state,
            "DELETE",
            &format!("/v1/rag/kb/documents/{espresso}"),
            &key,
            "t",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{deleted}");
        assert_eq!(deleted["deleted"], true);
        let after = top(&state, &key, "t", "kb", "espresso descaling citric acid").await;
        assert!(
            after.iter().all(|m| m["document_id"] != espresso.as_str()),
            "{after:?}"
        );
        let (_, list) = json_call(&state, "GET", "/v1/rag/kb/documents", &key, "t", None).await;
        assert_eq!(list["data"].as_array().unwrap().len(), 1);
        let (status, body) = json_call(
            &state,
            "DELETE",
            &format!("/v1/rag/kb/documents/{espresso}"),
            &key,
            "t",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_error(&body, "not_found");

        // Ingestion and queries are metered to the tenant.
        let (_, usage) = call_on(&state, "GET", "/v1/usage?tenant=t", Some(&key), None, None).await;
        // Two documents added and three queries.
        assert_eq!(usage["tenant"]["calls"], 5, "{usage}");
        assert!(
            usage["tenant"]["prompt_tokens"].as_i64().unwrap() > 100,
            "{usage}"
        );
    }
}
