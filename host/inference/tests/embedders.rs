//! The EU embedding providers against fake upstreams on loopback that speak their protocols:
//! Mistral and OVH (the OpenAI embeddings format) and Ollama (`/api/embed`).
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::result_large_err
)]

use atrium_fake_llm::{FakeLlm, Reply, Upstream, embedding as vector};
use atrium_inference::InferenceConfig;
use atrium_inference::embed::{DIMENSIONS, EmbedError, Embedders};

/// Starts a fake for each provider (Mistral and OVH on OpenAI's embeddings format, Ollama on
/// its own; each answers a deterministic, not normalised vector per text, the OpenAI format's
/// in reverse order); returns them and the embedders configured at them.
async fn start() -> (Upstream, Upstream, Upstream, Embedders) {
    let llm = FakeLlm::start().await;
    let config = InferenceConfig::parse("[providers.ollama]\ntimeout_seconds = 5\n").unwrap();
    let (mistral, ovh, ollama) = (
        llm.base_url("mistral"),
        llm.base_url("ovh"),
        llm.base_url("ollama"),
    );
    let vars = move |name: &str| -> Option<String> {
        Some(match name {
            "ATRIUM_MISTRAL_BASE_URL" => format!("{mistral}/v1"),
            "ATRIUM_MISTRAL_API_KEY" => "mistral-key".into(),
            "ATRIUM_OVH_BASE_URL" => format!("{ovh}/v1"),
            "ATRIUM_OVH_API_KEY" => "ovh-key".into(),
            "ATRIUM_OLLAMA_BASE_URL" => ollama.clone(),
            _ => return None,
        })
    };
    let fakes = ["mistral", "ovh", "ollama"].map(|name| {
        let fake = llm.upstream(name);
        fake.dimensions(DIMENSIONS);
        fake
    });
    let [mistral, ovh, ollama] = fakes;
    (mistral, ovh, ollama, Embedders::from_config(&config, &vars))
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
        assert_eq!(fake.last().unwrap().body["model"], model);
    }
    assert_eq!(
        mistral.last().unwrap().header("authorization"),
        Some("Bearer mistral-key")
    );
    assert_eq!(
        ovh.last().unwrap().header("authorization"),
        Some("Bearer ovh-key")
    );
    assert!(
        ollama_fake
            .requests()
            .iter()
            .all(|r| r.header("authorization").is_none())
    );
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
    assert_eq!(mistral.calls(), 3);
}

#[tokio::test]
async fn another_dimension_is_an_error_never_padded() {
    let (mistral, ovh, ollama_fake, embedders) = start().await;
    for (provider, fake) in [
        ("mistral", &mistral),
        ("ovh", &ovh),
        ("ollama", &ollama_fake),
    ] {
        fake.dimensions(768);
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
    mistral.push(Reply::embeddings_missing(1));
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
    ollama_fake.fail(503);
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
