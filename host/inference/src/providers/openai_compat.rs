//! The OpenAI chat-completions wire format, which OpenAI, Mistral and OVH AI Endpoints speak
//! (each with its own differences, handled in its own file).

use serde_json::{Map, Value, json};

use super::{ChatOutcome, ChatRequest, ProviderConfig, UpstreamError, count, send_json};

/// The request body for `POST {base}/chat/completions`.
pub(crate) fn body(request: &ChatRequest, model: &str) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(request.messages.clone()));
    for (k, v) in &request.params {
        body.insert(k.clone(), v.clone());
    }
    body
}

/// Sends the body and reads the first choice.
pub(crate) async fn complete(
    client: &reqwest::Client,
    config: &ProviderConfig,
    body: Map<String, Value>,
) -> Result<ChatOutcome, UpstreamError> {
    let request = post(client, config, body);
    let answer = send_json(request, config.timeout).await?;
    outcome(&answer)
}

/// Reads an OpenAI-shaped answer.
pub(crate) fn outcome(answer: &Value) -> Result<ChatOutcome, UpstreamError> {
    let choice = answer
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| UpstreamError::Protocol("the answer has no choices".into()))?;
    let message = choice
        .get("message")
        .cloned()
        .ok_or_else(|| UpstreamError::Protocol("the choice has no message".into()))?;
    let usage = answer.get("usage");
    Ok(ChatOutcome {
        message,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .unwrap_or("stop")
            .to_owned(),
        prompt_tokens: count(usage, "prompt_tokens"),
        completion_tokens: count(usage, "completion_tokens"),
    })
}

/// Streams `body` (which gets `stream: true`) as events.
pub(crate) async fn stream(
    client: &reqwest::Client,
    config: &ProviderConfig,
    mut body: Map<String, Value>,
    ask_usage: bool,
) -> Result<super::stream::EventStream, UpstreamError> {
    use super::stream::{StreamEvent, events, frames, open};
    body.insert("stream".into(), json!(true));
    if ask_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    let request = post(client, config, body);
    let response = open(request, config.timeout).await?;
    Ok(events(frames(response.bytes_stream(), false), |frame| {
        if frame.trim() == "[DONE]" {
            return None;
        }
        let chunk: Value = match serde_json::from_str(frame) {
            Ok(v) => v,
            Err(e) => {
                return Some(Err(UpstreamError::Protocol(format!(
                    "a stream chunk is not JSON: {e}"
                ))));
            }
        };
        let mut out = Vec::new();
        if let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) {
            if let Some(delta) = choice
                .get("delta")
                .filter(|d| d.as_object().is_some_and(|o| !o.is_empty()))
            {
                out.push(StreamEvent::Delta(delta.clone()));
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                out.push(StreamEvent::Finish(reason.to_owned()));
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            out.push(StreamEvent::Usage {
                prompt_tokens: usage.get("prompt_tokens").and_then(Value::as_u64),
                completion_tokens: usage.get("completion_tokens").and_then(Value::as_u64),
            });
        }
        Some(Ok(out))
    }))
}

/// `POST {base}/chat/completions` with the bearer key.
fn post(
    client: &reqwest::Client,
    config: &ProviderConfig,
    body: Map<String, Value>,
) -> reqwest::RequestBuilder {
    let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
    let request = client.post(url).json(&Value::Object(body));
    match &config.api_key {
        Some(key) => request.bearer_auth(key),
        None => request,
    }
}
