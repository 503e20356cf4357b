//! The contract every provider adapter meets, run for every [`ProviderId`] against a fake
//! upstream on loopback that speaks the provider's wire protocol: identity and configuration,
//! request shape and credentials, the answer in OpenAI's shape, streaming, and error mapping.
//!
//! As in TensorZero's `tests/e2e/providers/common.rs`, the checks are written once
//! (`common.rs`) and the providers differ only by their row of [`case`]; each test runs every
//! check for every provider of `ProviderId::ALL`, and a provider without a row does not compile.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::time::Duration;

use atrium_inference::ProviderId;
use atrium_inference::providers::Requirement;
use serde_json::{Value, json};

use common::{Case, Wire};

/// The system prompt and user message of `common::shaped_request`, as sent by the providers
/// that pass messages on unchanged.
fn both_messages() -> Value {
    json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
}

/// Each provider's row: its fake, its identity and what its adapter must send and answer.
fn case(id: ProviderId) -> Case {
    let default_timeout = Duration::from_secs(120);
    match id {
        ProviderId::Openai => Case {
            id,
            wire: Wire::ChatCompletions {
                usage_unasked: false,
            },
            base_path: "/openai/v1",
            default_base_url: "https://api.openai.com/v1",
            default_timeout,
            requires: Requirement::ApiKey,
            api_key: Some("sk-openai"),
            model: "gpt-4.1",
            headers: vec![("authorization", Some("Bearer sk-openai"))],
            sent: vec![
                ("/messages", both_messages()),
                ("/max_tokens", json!(64)),
                ("/seed", json!(7)),
                ("/tool_choice", json!("required")),
                ("/stream", Value::Null),
            ],
            sent_streaming: vec![
                ("/stream", json!(true)),
                ("/stream_options/include_usage", json!(true)),
            ],
            usage: (10, 5),
        },
        ProviderId::Anthropic => Case {
            id,
            wire: Wire::Messages,
            base_path: "/anthropic",
            default_base_url: "https://api.anthropic.com",
            default_timeout,
            requires: Requirement::ApiKey,
            api_key: Some("anthropic-key"),
            model: "claude-sonnet-4-5",
            headers: vec![
                ("x-api-key", Some("anthropic-key")),
                ("anthropic-version", Some("2023-06-01")),
                ("authorization", None),
            ],
            sent: vec![
                ("/system", json!("Be brief.")),
                ("/messages", json!([{"role": "user", "content": "hi"}])),
                ("/max_tokens", json!(64)),
                ("/tool_choice", json!({"type": "any"})),
                ("/seed", Value::Null),
            ],
            sent_streaming: vec![("/stream", json!(true))],
            usage: (20, 8),
        },
        ProviderId::Mistral => Case {
            id,
            wire: Wire::ChatCompletions {
                usage_unasked: true,
            },
            base_path: "/mistral/v1",
            default_base_url: "https://api.mistral.ai/v1",
            default_timeout,
            requires: Requirement::ApiKey,
            api_key: Some("mistral-key"),
            model: "mistral-small-latest",
            headers: vec![("authorization", Some("Bearer mistral-key"))],
            sent: vec![
                ("/messages", both_messages()),
                ("/max_tokens", json!(64)),
                ("/random_seed", json!(7)),
                ("/seed", Value::Null),
                ("/tool_choice", json!("any")),
            ],
            // Mistral reports usage in its last chunk without being asked.
            sent_streaming: vec![("/stream", json!(true)), ("/stream_options", Value::Null)],
            usage: (10, 5),
        },
        ProviderId::Ollama => Case {
            id,
            wire: Wire::OllamaChat,
            base_path: "/ollama",
            default_base_url: "http://127.0.0.1:11434",
            default_timeout,
            requires: Requirement::BaseUrl,
            api_key: None,
            model: "qwen2.5:7b",
            headers: vec![("authorization", None)],
            sent: vec![
                ("/messages", both_messages()),
                ("/stream", json!(false)),
                ("/options", json!({"num_predict": 64, "seed": 7})),
                ("/tool_choice", Value::Null),
            ],
            sent_streaming: vec![("/stream", json!(true))],
            usage: (6, 3),
        },
        ProviderId::Ovh => Case {
            id,
            wire: Wire::ChatCompletions {
                usage_unasked: false,
            },
            base_path: "/ovh/v1",
            default_base_url: "https://oai.endpoints.kepler.ai.cloud.ovh.net/v1",
            default_timeout,
            requires: Requirement::ApiKey,
            api_key: Some("ovh-key"),
            model: "Meta-Llama-3_3-70B-Instruct",
            headers: vec![("authorization", Some("Bearer ovh-key"))],
            sent: vec![
                ("/messages", both_messages()),
                ("/max_tokens", json!(64)),
                ("/seed", json!(7)),
                ("/tool_choice", json!("required")),
            ],
            sent_streaming: vec![
                ("/stream", json!(true)),
                ("/stream_options/include_usage", json!(true)),
            ],
            usage: (10, 5),
        },
    }
}

/// Every provider's row, in the order of `ProviderId::ALL`.
fn cases() -> impl Iterator<Item = Case> {
    ProviderId::ALL.into_iter().map(|id| {
        let case = case(id);
        assert_eq!(case.id, id, "the row of {}", id.as_str());
        case
    })
}

#[test]
fn every_provider_owns_its_identity() {
    for case in cases() {
        common::identity(&case);
    }
}

#[tokio::test]
async fn every_provider_is_configured_by_its_environment_variables() {
    for case in cases() {
        common::configured(&case).await;
    }
}

#[tokio::test]
async fn every_provider_sends_its_request_shape_and_credentials() {
    for case in cases() {
        common::request_shape(&case).await;
    }
}

#[tokio::test]
async fn every_provider_answers_in_openai_shape_with_its_token_counts() {
    for case in cases() {
        common::answer_shape(&case).await;
    }
}

#[tokio::test]
async fn every_provider_streams_openai_deltas_a_finish_reason_and_its_usage() {
    for case in cases() {
        common::streaming(&case).await;
    }
}

#[tokio::test]
async fn every_provider_reports_error_statuses_so_that_only_429_and_5xx_fall_back() {
    for case in cases() {
        common::error_statuses(&case).await;
    }
}

#[tokio::test]
async fn every_provider_reports_unreachable_and_slow_upstreams_as_falling_back() {
    for case in cases() {
        common::unreachable_and_slow(&case).await;
    }
}
