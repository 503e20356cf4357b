//! The EU embedding providers against fake upstreams on loopback that speak their protocols:
//! Mistral and OVH (the OpenAI embeddings format) and Ollama (`/api/embed`).
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::result_large_err
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use atrium_inference::InferenceConfig;
use atrium_inference::embed::{DIMENSIONS, EmbedError, Embedders};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What the fake answers and what it saw.
#[derive(Default)]
struct Fake {
    requests: AtomicUsize,
    dimensions: Mutex<Option<usize>>,
    status: Mutex<Option<u16>>,
    drop_one: Mutex<bool>,
    auth: Mutex<Vec<String>>,
    models: Mutex<Vec<String>>,
}

/// A deterministic, not normalised vector for a text: the fake's "model".
fn vector(text: &str, dims: usize) -> Vec<f32> {
    let seed = text.bytes().map(u32::from).sum::<u32>() as f32;
    (0..dims)
        .map(|i| ((i as f32 + seed) * 0.37).sin() * 3.0)
        .collect()
}

fn observe(
    fake: &Fake,
    headers: &HeaderMap,
    body: &Value,
) -> Result<(Vec<String>, usize), Response> {
    fake.requests.fetch_add(1, Ordering::SeqCst);
    if let Some(a) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        fake.auth.lock().unwrap().push(a.to_owned());
    }
    fake.models
        .lock()
        .unwrap()
        .push(body["model"].as_str().unwrap_or_default().to_owned());
    if let Some(status) = *fake.status.lock().unwrap() {
        return Err((
            StatusCode::from_u16(status).unwrap(),
            Json(json!({"error": {"message": "injected"}})),
        )
            .into_response());
    }
    let mut inputs: Vec<String> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    if *fake.drop_one.lock().unwrap() {
        inputs.pop();
    }
    let dims = fake.dimensions.lock().unwrap().unwrap_or(DIMENSIONS);
    Ok((inputs, dims))
}

async fn openai_wire(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let (inputs, dims) = match observe(&fake, &headers, &body) {
        Ok(x) => x,
        Err(r) => return r,
    };
    // Answer in reverse order: the index field decides.
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector(t, dims)}))
        .collect();
    let tokens = inputs.len() * 7;
    Json(json!({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}))
        .into_response()
}

async fn ollama(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let (inputs, dims) = match observe(&fake, &headers, &body) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let embeddings: Vec<Vec<f32>> = inputs.iter().map(|t| vector(t, dims)).collect();
    Json(json!({"model": body["model"], "embeddings": embeddings, "prompt_eval_count": inputs.len() * 5}))
        .into_response()
}

/// Starts one fake for each provider; returns them and the embedders configured at them.
async fn start() -> (Arc<Fake>, Arc<Fake>, Arc<Fake>, Embedders) {
    let (mistral, ovh, ollama_fake) = (
        Arc::new(Fake::default()),
        Arc::new(Fake::default()),
        Arc::new(Fake::default()),
    );
    let app = axum::Router::new()
        .route(
            "/mistral/v1/embeddings",
            axum::routing::post(openai_wire).with_state(mistral.clone()),
        )
        .route(
            "/ovh/v1/embeddings",
            axum::routing::post(openai_wire).with_state(ovh.clone()),
        )
        .route(
            "/ollama/api/embed",
            axum::routing::post(ollama).with_state(ollama_fake.clone()),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let config = InferenceConfig::parse("[providers.ollama]\ntimeout_seconds = 5\n").unwrap();
    let vars = move |name: &str| -> Option<String> {
        Some(match name {
            "ATRIUM_MISTRAL_BASE_URL" => format!("http://{addr}/mistral/v1"),
            "ATRIUM_MISTRAL_API_KEY" => "mistral-key".into(),
            "ATRIUM_OVH_BASE_URL" => format!("http://{addr}/ovh/v1"),
            "ATRIUM_OVH_API_KEY" => "ovh-key".into(),
            "ATRIUM_OLLAMA_BASE_URL" => format!("http://{addr}/ollama"),
            _ => return None,
        })
    };
    (
        mistral,
        ovh,
        ollama_fake,
        Embedders::from_config(&config, &vars),
    )
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text number {i}")).collect()
}

fn assert_unit(vectors: &[Vec<f32>]) {
    for v in vectors {
        assert_eq!(v.len(), DIMENSIONS);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
}

#[tokio::test]
async fn every_provider_embeds_in_order_with_its_protocol_and_key() {
    let (mistral, ovh, ollama_fake, embedders) = start().await;
    let order: Vec<_> = embedders
        .all()
        .iter()
        .map(|e| (e.provider(), e.model().to_owned()))
        .collect();
    // The EU providers, then the two built-in embedders (the build fetched the semantic one's
    // files), semantic first.
    assert_eq!(
        order,
        [
            ("ovh", "bge-m3".to_owned()),
            ("mistral", "mistral-embed".to_owned()),
            ("ollama", "bge-m3".to_owned()),
            ("local", "all-minilm-l6-v2".to_owned()),
            ("local", "atrium-local-lexical".to_owned())
        ]
    );
    assert_eq!(embedders.default_embedder().provider(), "ovh");
    let input = texts(3);
    for (provider, fake, model, tokens) in [
        ("mistral", &mistral, "mistral-embed", 21),
        ("ovh", &ovh, "bge-m3", 21),
        ("ollama", &ollama_fake, "bge-m3", 15),
    ] {
        let embedder = embedders.by_provider(provider).unwrap();
        assert_eq!(embedder.model(), model);
        let out = embedder.embed(&input).await.unwrap();
        assert_eq!(out.vectors.len(), 3);
        assert_unit(&out.vectors);
        assert_eq!(out.prompt_tokens, tokens, "{provider}");
        // Order follows the inputs even when the answer's order does not.
        let expected = vector(&input[2], DIMENSIONS);
        let norm = expected.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(
            (out.vectors[2][0] - expected[0] / norm).abs() < 1e-5,
            "{provider}"
        );
        assert_eq!(fake.models.lock().unwrap().last().unwrap(), model);
    }
    assert_eq!(
        mistral.auth.lock().unwrap().last().unwrap(),
        "Bearer mistral-key"
    );
    assert_eq!(ovh.auth.lock().unwrap().last().unwrap(), "Bearer ovh-key");
    assert!(ollama_fake.auth.lock().unwrap().is_empty());
    assert_eq!(embedders.find("bge-m3", None).unwrap().provider(), "ovh");
    assert_eq!(
        embedders.find("bge-m3", Some("ollama")).unwrap().provider(),
        "ollama"
    );
    assert!(embedders.find("text-embedding-3-small", None).is_none());
}

#[tokio::test]
async fn long_lists_go_in_batches_of_32() {
    let (mistral, _, _, embedders) = start().await;
    let out = embedders
        .by_provider("mistral")
        .unwrap()
        .embed(&texts(70))
        .await
        .unwrap();
    assert_eq!(out.vectors.len(), 70);
    assert_eq!(mistral.requests.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn another_dimension_is_an_error_never_padded() {
    let (mistral, ovh, ollama_fake, embedders) = start().await;
    for (provider, fake) in [
        ("mistral", &mistral),
        ("ovh", &ovh),
        ("ollama", &ollama_fake),
    ] {
        *fake.dimensions.lock().unwrap() = Some(768);
        let err = embedders
            .by_provider(provider)
            .unwrap()
            .embed(&texts(2))
            .await
            .unwrap_err();
        assert!(
            matches!(err, EmbedError::Dimension { got: 768, .. }),
            "{provider}: {err}"
        );
        assert!(err.to_string().contains("768 dimensions"), "{err}");
        assert!(!err.unavailable());
    }
}

#[tokio::test]
async fn missing_vectors_and_upstream_failures_are_named() {
    let (mistral, _, ollama_fake, embedders) = start().await;
    *mistral.drop_one.lock().unwrap() = true;
    let err = embedders
        .by_provider("mistral")
        .unwrap()
        .embed(&texts(2))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("1 embeddings for 2 inputs"),
        "{err}"
    );
    *ollama_fake.status.lock().unwrap() = Some(503);
    let err = embedders
        .by_provider("ollama")
        .unwrap()
        .embed(&texts(1))
        .await
        .unwrap_err();
    assert!(err.unavailable(), "{err}");
    assert!(
        err.to_string().contains("ollama") && err.to_string().contains("503"),
        "{err}"
    );
}

#[tokio::test]
async fn unreachable_provider_is_unavailable() {
    let config = InferenceConfig::parse("[providers.mistral]\ntimeout_seconds = 2\n").unwrap();
    let vars = |name: &str| match name {
        "ATRIUM_MISTRAL_BASE_URL" => Some("http://127.0.0.1:9/v1".to_owned()),
        "ATRIUM_MISTRAL_API_KEY" => Some("k".to_owned()),
        _ => None,
    };
    let embedders = Embedders::from_config(&config, &vars);
    let err = embedders
        .default_embedder()
        .embed(&texts(1))
        .await
        .unwrap_err();
    assert!(err.unavailable(), "{err}");
}

#[tokio::test]
async fn without_providers_the_local_embedder_is_the_default_and_can_be_chosen() {
    let embedders = Embedders::from_config(&InferenceConfig::default(), &|_| None);
    assert_eq!(embedders.default_embedder().provider(), "local");
    assert_eq!(embedders.default_embedder().model(), "all-minilm-l6-v2");
    let out = embedders.default_embedder().embed(&texts(2)).await.unwrap();
    assert_unit(&out.vectors);
    let vars = |name: &str| match name {
        "ATRIUM_MISTRAL_API_KEY" => Some("k".to_owned()),
        "ATRIUM_EMBEDDER" => Some("local".to_owned()),
        _ => None,
    };
    let chosen = Embedders::from_config(&InferenceConfig::default(), &vars);
    assert_eq!(chosen.default_embedder().provider(), "local");
    assert_eq!(chosen.default_embedder().model(), "all-minilm-l6-v2");
    assert_eq!(chosen.all().len(), 3);
}
