//! The platform tool `chat.complete`: a chat completion through the host's gateway, billed to
//! the install's tenant ([`crate::gateway::Chat`]; docs/platform.md, "Platform tools").

use atrium_manifest::sandbox::Decision;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::scopes::Risk;
use crate::tools::{Fault, PlatformTool, Tool, ToolContext};

/// The chat tools, for the catalogue.
pub(crate) const TOOLS: &[PlatformTool] = &[PlatformTool::of::<Complete>()];

/// The refusal of a gateway failure: a request no backend would take is the app's to mend
/// (`invalid_arguments`); backends that failed or none configured are the platform's.
fn gateway_fault(error: &atrium_inference::GatewayError) -> Fault {
    use atrium_inference::{GatewayError, RouteError};
    match error {
        GatewayError::Route(RouteError::Policy(_) | RouteError::Invalid { .. })
        | GatewayError::Refused(_) => Fault::invalid(error.to_string()),
        GatewayError::Exhausted(_) => Fault::new(Decision::NetworkError, error.to_string()),
        GatewayError::Route(RouteError::Unavailable(_)) => Fault::failed(error),
    }
}

/// `chat.complete`.
pub(crate) struct Complete;

/// The arguments of `chat.complete`: the body of `/v1/chat/completions`. The fields the host
/// routes by are typed; the OpenAI parameters pass through to the gateway, which checks them.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(crate) struct CompleteArgs {
    /// The conversation, as OpenAI's chat messages.
    messages: Vec<Map<String, Value>>,
    /// The tier to route by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tier: Option<String>,
    /// The provider to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provider: Option<String>,
    /// The model to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// Whether the messages hold personal data (routed within the EU only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    contains_pii: Option<bool>,
    /// The OpenAI parameters (`temperature`, `max_tokens`, ...), passed through.
    #[serde(flatten)]
    openai: Map<String, Value>,
}

/// The tokens of a completion and what they cost.
#[derive(Debug, Serialize)]
pub(crate) struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    cost_usd: f64,
}

/// What `chat.complete` answers.
#[derive(Debug, Serialize)]
pub(crate) struct Completion {
    /// The message's `content`.
    content: Value,
    /// The whole assistant message.
    message: Value,
    finish_reason: String,
    model: String,
    provider: &'static str,
    usage: Usage,
}

impl Tool for Complete {
    const NAME: &'static str = "chat.complete";
    const DESCRIPTION: &'static str = "A chat completion through the host's gateway: the body of /v1/chat/completions (`messages`, and `tier`, `provider`, `model`, `contains_pii` and the OpenAI parameters), not streamed. Billed to the install's tenant, the app named in the usage record. Answers `{content, message, finish_reason, model, provider, usage: {prompt_tokens, completion_tokens, total_tokens, cost_usd}}`.";
    const RISK: Risk = Risk::Medium;
    const OFFERED_TO_AGENTS: bool = false;
    type Args = CompleteArgs;
    type Answer = Completion;

    async fn run(cx: &ToolContext<'_>, args: CompleteArgs) -> Result<Completion, Fault> {
        let body = serde_json::to_value(&args).map_err(|e| Fault::failed(&e))?;
        let call = atrium_inference::parse_chat(body).map_err(|e| {
            Fault::invalid(match &e.param {
                Some(param) if !e.message.contains(param.as_str()) => {
                    format!("`{param}`: {}", e.message)
                }
                _ => e.message.clone(),
            })
        })?;
        if call.stream {
            return Err(Fault::invalid(
                "`stream` cannot be true: the platform tool answers with the whole completion",
            ));
        }
        let Some(chat) = cx.chat else {
            return Err(Fault::failed(
                &"the chat gateway is not running on this host",
            ));
        };
        let completed = chat
            .gateway
            .chat(&call.selection, &call.request)
            .await
            .map_err(|e| gateway_fault(&e))?;
        let cost = chat
            .meter(cx.tenant, &completed, Some(cx.app_slug), None)
            .await;
        let outcome = completed.outcome;
        Ok(Completion {
            content: outcome
                .message
                .get("content")
                .cloned()
                .unwrap_or(Value::Null),
            finish_reason: outcome.finish_reason,
            model: completed.model.id,
            provider: completed.model.provider.as_str(),
            usage: Usage {
                prompt_tokens: outcome.prompt_tokens,
                completion_tokens: outcome.completion_tokens,
                total_tokens: outcome.prompt_tokens + outcome.completion_tokens,
                cost_usd: cost as f64 / 1_000_000.0,
            },
            message: outcome.message,
        })
    }
}
