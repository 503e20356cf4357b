//! `POST /v1/embeddings` with the local lexical embedder.

use axum::http::StatusCode;
use base64::Engine;
use serde_json::{Value, json};

use crate::{call_on, stores, unique};

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

#[tokio::test]
async fn strings_and_arrays_get_1024_unit_numbers_as_floats_or_base64() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let state = crate::state(&store, vec![]);
    let body =
        json!({"input": ["invoice overdue", "croissant recipe"], "model": "atrium-local-lexical"})
            .to_string();
    let (status, floats) = call_on(
        &state,
        "POST",
        "/v1/embeddings",
        Some(&key.secret),
        Some("t-e"),
        Some(&body),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{floats}");
    assert_eq!(
        (floats["object"].as_str(), floats["model"].as_str()),
        (Some("list"), Some("atrium-local-lexical"))
    );
    assert_eq!(floats["data"][1]["index"], 1);
    let first: Vec<f64> = serde_json::from_value(floats["data"][0]["embedding"].clone()).unwrap();
    assert_eq!(first.len(), 1024);
    assert!((norm(&first) - 1.0).abs() < 1e-5);
    assert_eq!(
        floats["usage"],
        json!({"prompt_tokens": 4, "total_tokens": 4})
    );

    let body = json!({"input": "invoice overdue", "encoding_format": "base64"}).to_string();
    let (_, encoded) = call_on(
        &state,
        "POST",
        "/v1/embeddings",
        Some(&key.secret),
        None,
        Some(&body),
    )
    .await;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let decoded: Vec<f64> = bytes
        .chunks_exact(4)
        .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        .collect();
    assert_eq!(decoded, first, "base64 carries the same numbers");

    let (_, usage) = call_on(
        &state,
        "GET",
        "/v1/usage?tenant=t-e",
        Some(&key.secret),
        None,
        None,
    )
    .await;
    assert_eq!(usage["tenant"]["calls"], 1);
    assert_eq!(usage["tenant"]["prompt_tokens"], 4);
}

#[tokio::test]
async fn bad_inputs_name_the_field() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let state = crate::state(&store, vec![]);
    let many: Vec<Value> = (0..2049).map(|i| json!(format!("t{i}"))).collect();
    for (body, param) in [
        (json!({}), "input"),
        (json!({"input": []}), "input"),
        (json!({"input": ["ok", ""]}), "input"),
        (json!({"input": [[1, 2, 3]]}), "input"),
        (json!({"input": many}), "input"),
        (
            json!({"input": "x", "model": "text-embedding-3-small"}),
            "model",
        ),
        (
            json!({"input": "x", "encoding_format": "hex"}),
            "encoding_format",
        ),
        (json!({"input": "x", "dimensions": 256}), "dimensions"),
    ] {
        let (status, response) = call_on(
            &state,
            "POST",
            "/v1/embeddings",
            Some(&key.secret),
            None,
            Some(&body.to_string()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {response}");
        assert_eq!(response["error"]["param"], param, "{body}: {response}");
    }
    let (status, _) = call_on(
        &state,
        "POST",
        "/v1/embeddings",
        None,
        None,
        Some(r#"{"input": "x"}"#),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_provider_embedder_answers_and_a_wrong_dimension_is_a_502() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    // A fake Mistral answering vectors of 1024 numbers and 11 prompt tokens.
    let fake = atrium_fake_llm::FakeLlm::start().await;
    let mistral = fake.upstream("mistral");
    mistral.dimensions(1024);
    mistral.usage(11, 0);
    let base = format!("{}/v1", fake.base_url("mistral"));
    let vars = move |name: &str| match name {
        "ATRIUM_MISTRAL_BASE_URL" => Some(base.clone()),
        "ATRIUM_MISTRAL_API_KEY" => Some("k".to_owned()),
        _ => None,
    };
    let embedders = atrium_inference::embed::Embedders::from_config(
        &atrium_inference::InferenceConfig::default(),
        &vars,
    );
    let state = crate::state(&store, vec![]).with_embedders(embedders);
    let call = |body: Value| {
        let state = state.clone();
        let secret = key.secret.clone();
        async move {
            call_on(
                &state,
                "POST",
                "/v1/embeddings",
                Some(&secret),
                Some("t"),
                Some(&body.to_string()),
            )
            .await
        }
    };
    let (status, body) = call(json!({"input": ["a", "b"]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["model"], "mistral-embed");
    assert_eq!(body["usage"]["prompt_tokens"], 11);
    let v: Vec<f64> = serde_json::from_value(body["data"][1]["embedding"].clone()).unwrap();
    assert_eq!(v.len(), 1024);
    assert!((norm(&v) - 1.0).abs() < 1e-5, "scaled to unit length");

    let (status, body) = call(json!({"input": "a", "model": "atrium-local-lexical"})).await;
    assert_eq!(
        (status, body["model"].as_str()),
        (StatusCode::OK, Some("atrium-local-lexical"))
    );
    let (status, body) = call(json!({"input": "a", "model": "bge-m3"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mistral-embed"),
        "{body}"
    );

    mistral.dimensions(768);
    let (status, body) = call(json!({"input": "a"})).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(body["error"]["code"], "embedding_failed");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("768 dimensions"),
        "{body}"
    );
}
