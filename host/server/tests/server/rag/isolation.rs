//! Isolation: another tenant of the organization, or a tenant of the same name in another
//! organization, never sees, finds or deletes a tenant's collections and documents.

use atrium_inference::embed::Embedders;
use axum::http::StatusCode;
use serde_json::json;

use super::{add, json_call, rag_state, send, top};
use crate::{stores, unique};

#[tokio::test]
async fn tenants_and_organizations_never_see_each_other() {
    for (store, _keep) in stores().await {
        let dir = tempfile::tempdir().unwrap();
        let state = rag_state(&store, dir.path(), Embedders::default()).await;
        let acme = store.create_key(&unique("acme"), "k").await.unwrap().secret;
        let globex = store
            .create_key(&unique("globex"), "k")
            .await
            .unwrap()
            .secret;
        json_call(&state, "POST", "/v1/rag/docs", &acme, "alice", None).await;
        let secret = add(
            &state,
            &acme,
            "alice",
            "docs",
            "Merger",
            "Project zephyr: the merger closes on the ninth of March.",
        )
        .await;

        // Same organization, another tenant: the collection does not exist for it.
        let (status, _) = json_call(
            &state,
            "POST",
            "/v1/rag/docs/query",
            &acme,
            "bob",
            Some(json!({"query": "zephyr merger"})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) =
            json_call(&state, "GET", "/v1/rag/docs/documents", &acme, "bob", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // Its own collection of the same name is a different one.
        json_call(&state, "POST", "/v1/rag/docs", &acme, "bob", None).await;
        add(
            &state,
            &acme,
            "bob",
            "docs",
            "Menu",
            "Soup of the day is tomato.",
        )
        .await;
        let found = top(&state, &acme, "bob", "docs", "zephyr merger March").await;
        assert!(
            found.iter().all(|m| m["document_id"] != secret.as_str()),
            "{found:?}"
        );
        let (status, _) = json_call(
            &state,
            "DELETE",
            &format!("/v1/rag/docs/documents/{secret}"),
            &acme,
            "bob",
            None,
        )
        .await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "bob cannot delete alice's document"
        );
        let (_, listed) =
            json_call(&state, "GET", "/v1/rag/docs/documents", &acme, "bob", None).await;
        assert_eq!(listed["data"].as_array().unwrap().len(), 1);

        // Another organization with a tenant of the same name sees nothing either.
        let (status, _) = json_call(
            &state,
            "POST",
            "/v1/rag/docs/query",
            &globex,
            "alice",
            Some(json!({"query": "zephyr"})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = send(
            &state,
            "POST",
            "/v1/rag/docs/files",
            &globex,
            Some("alice"),
            Some("text/plain"),
            b"intrusion".to_vec(),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (_, none) = json_call(&state, "GET", "/v1/rag", &globex, "alice", None).await;
        assert_eq!(none["data"], json!([]));

        // Alice's document is intact.
        let mine = top(&state, &acme, "alice", "docs", "zephyr merger").await;
        assert_eq!(mine[0]["document_id"], secret.as_str());
        assert_eq!(mine.len(), 1);
    }
}
