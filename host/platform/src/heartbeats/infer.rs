//! The commitment-inference pass after a substantive tick (Appendix A, rule 6): one model call
//! at the `fast` role reads the agent's reply and answers the promises it made, as JSON; each
//! is checked by the sandbox rule of `commitments.add` and stored as the agent's commitment.
//! The call is metered to the tenant with the app and the agent named. A pass that fails (no
//! model, no JSON) adds nothing and is logged: the tick itself succeeded.

use atrium_inference::providers::ChatRequest;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::llm_roles::{self, Role};
use crate::registry::Actor;
use crate::serving::Serving;

/// The most commitments one pass adds.
pub const MAX_INFERRED: usize = 5;

const INSTRUCTIONS: &str = "You read an assistant's message and list the commitments it makes: \
things it promises to do later, with a due time when one is stated. Answer only JSON: \
{\"commitments\": [{\"title\": \"...\", \"content\": \"...\", \"due_at\": \"2026-01-31T17:00:00Z\" or null}]}. \
Answer {\"commitments\": []} when it promises nothing.";

#[derive(Debug, Deserialize)]
struct Answer {
    #[serde(default)]
    commitments: Vec<Inferred>,
}

#[derive(Debug, Deserialize)]
struct Inferred {
    title: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    due_at: Option<String>,
}

/// What a pass added and cost.
#[derive(Debug, Default)]
pub(super) struct Inference {
    /// The ids of the commitments stored.
    pub ids: Vec<String>,
    /// The cost, in micro-dollars.
    pub cost_micros: i64,
}

/// The JSON object in `text` (a model may wrap it in a code fence).
fn json_in(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

/// Runs the pass over `reply` of `agent` of `app_slug`.
pub(super) async fn commitments(
    serving: &Serving,
    tenant: &Actor,
    app_slug: &str,
    agent: &str,
    reply: &str,
) -> Inference {
    let mut inference = Inference::default();
    let Some(chat) = serving.services().chat() else {
        tracing::info!(app = %app_slug, %agent, "no commitment inference: the gateway is not configured");
        return inference;
    };
    let route = match llm_roles::route(serving.registry().store(), tenant, Role::Fast).await {
        Ok(route) => route,
        Err(e) => {
            tracing::warn!(app = %app_slug, %agent, error = %e, "no commitment inference: the role could not be read");
            return inference;
        }
    };
    let mut params = Map::new();
    params.insert("response_format".into(), json!({"type": "json_object"}));
    params.insert("temperature".into(), json!(0));
    let request = ChatRequest {
        messages: vec![
            json!({"role": "system", "content": INSTRUCTIONS}),
            json!({"role": "user", "content": reply}),
        ],
        params,
    };
    let completed = match chat.gateway.chat(&route.selection(false), &request).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(app = %app_slug, %agent, error = %e, "the commitment inference call failed");
            return inference;
        }
    };
    inference.cost_micros = chat
        .meter(tenant, &completed, Some(app_slug), Some(agent))
        .await;
    let text = completed
        .outcome
        .message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let answer: Answer = match json_in(text).map(serde_json::from_str) {
        Some(Ok(answer)) => answer,
        _ => {
            tracing::warn!(app = %app_slug, %agent, "the commitment inference answered no JSON");
            return inference;
        }
    };
    let manifest = match serving.active_install(tenant, app_slug).await {
        Ok(install) => match serving
            .registry()
            .manifest_of(app_slug, &install.version)
            .await
        {
            Ok(m) => m,
            Err(_) => return inference,
        },
        Err(_) => return inference,
    };
    for found in answer.commitments.into_iter().take(MAX_INFERRED) {
        let commitment = atrium_runtime::Commitment {
            title: found.title,
            content: found.content,
            from_agent: agent.to_owned(),
            due_at: found.due_at.filter(|d| !d.trim().is_empty()),
        };
        if let Err(refusal) = atrium_manifest::sandbox::commitment(
            &manifest,
            &commitment.title,
            &commitment.content,
            &commitment.from_agent,
            commitment.due_at.as_deref(),
        ) {
            tracing::info!(app = %app_slug, %agent, reason = %refusal.message, "an inferred commitment was refused");
            continue;
        }
        match serving
            .services()
            .add_commitment(tenant, app_slug, &commitment)
            .await
        {
            Ok(id) => inference.ids.push(id),
            Err(e) => {
                tracing::warn!(app = %app_slug, %agent, error = %e, "storing an inferred commitment failed");
            }
        }
    }
    inference
}
