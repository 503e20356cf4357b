//! Anthropic: the Messages API (`POST {base}/v1/messages`), translated both ways.
//!
//! Request: `system` messages become the top-level `system`; assistant `tool_calls` become
//! `tool_use` blocks and `tool` messages `tool_result` blocks; `stop` becomes
//! `stop_sequences`; `max_tokens` (required by Anthropic) defaults to 4096; tools and
//! `tool_choice` take Anthropic's shapes. Answer: text blocks are joined into `content`,
//! `tool_use` blocks become `tool_calls`, and `stop_reason` maps to OpenAI's `finish_reason`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{
    ChatOutcome, ChatRequest, DEFAULT_TIMEOUT, Descriptor, Provider, ProviderConfig, Requirement,
    UpstreamError, count, send_json,
};
use crate::ProviderId;

/// The default API base.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The Messages API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the client sends none (Anthropic requires one).
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Anthropic's identity: a key required.
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: ProviderId::Anthropic,
    default_base_url: DEFAULT_BASE_URL,
    default_timeout: DEFAULT_TIMEOUT,
    requires: Requirement::ApiKey,
    build: |client, config| Arc::new(Anthropic::new(client, config)),
};

/// Anthropic's Messages API.
pub struct Anthropic {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl Anthropic {
    /// An adapter for `config`.
    pub fn new(client: reqwest::Client, config: ProviderConfig) -> Self {
        Anthropic { client, config }
    }

    /// `POST {base}/v1/messages` with the API version and key headers.
    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let url = format!("{}/v1/messages", self.config.base_url.trim_end_matches('/'));
        let http = self
            .client
            .post(url)
            .header("anthropic-version", API_VERSION)
            .json(body);
        match &self.config.api_key {
            Some(key) => http.header("x-api-key", key),
            None => http,
        }
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The Messages API body for an OpenAI-shaped request.
pub(crate) fn request_body(request: &ChatRequest, model: &str) -> Value {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for m in &request.messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        let content = m.get("content").unwrap_or(&Value::Null);
        match role {
            "system" | "developer" => system.push(text_of(content)),
            "assistant" => {
                let mut blocks = Vec::new();
                let text = text_of(content);
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let arguments = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("{}");
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.get("id").cloned().unwrap_or(Value::Null),
                        "name": call.pointer("/function/name").cloned().unwrap_or(Value::Null),
                        "input": serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| json!({})),
                    }));
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            "tool" => messages.push(json!({
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": m.get("tool_call_id").cloned().unwrap_or(Value::Null), "content": text_of(content)}],
            })),
            _ => messages.push(json!({"role": "user", "content": text_of(content)})),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    let max = request
        .param("max_tokens")
        .or_else(|| request.param("max_completion_tokens"))
        .and_then(Value::as_u64);
    body.insert(
        "max_tokens".into(),
        json!(max.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    for field in ["temperature", "top_p"] {
        if let Some(v) = request.param(field) {
            body.insert(field.into(), v.clone());
        }
    }
    match request.param("stop") {
        Some(Value::String(s)) => {
            body.insert("stop_sequences".into(), json!([s]));
        }
        Some(Value::Array(a)) => {
            body.insert("stop_sequences".into(), Value::Array(a.clone()));
        }
        _ => {}
    }
    if let Some(Value::Array(tools)) = request.param("tools") {
        let tools: Vec<Value> = tools
            .iter()
            .filter_map(|t| t.get("function"))
            .map(|f| {
                json!({
                    "name": f.get("name").cloned().unwrap_or(Value::Null),
                    "description": f.get("description").cloned().unwrap_or(json!("")),
                    "input_schema": f.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = request.param("tool_choice") {
        let mapped = match choice {
            Value::String(s) if s == "required" => Some(json!({"type": "any"})),
            Value::String(s) if s == "none" => Some(json!({"type": "none"})),
            Value::String(_) => Some(json!({"type": "auto"})),
            other => other
                .pointer("/function/name")
                .map(|name| json!({"type": "tool", "name": name})),
        };
        if let Some(mapped) = mapped {
            body.insert("tool_choice".into(), mapped);
        }
    }
    if let Some(user) = request.param("user") {
        body.insert("metadata".into(), json!({"user_id": user}));
    }
    Value::Object(body)
}

/// Reads a Messages API answer into OpenAI's shape.
pub(crate) fn outcome(answer: &Value) -> Result<ChatOutcome, UpstreamError> {
    let blocks = answer
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| UpstreamError::Protocol("the answer has no content".into()))?;
    let text: String = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let calls: Vec<Value> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|b| {
            json!({
                "id": b.get("id").cloned().unwrap_or(Value::Null),
                "type": "function",
                "function": {"name": b.get("name").cloned().unwrap_or(Value::Null), "arguments": b.get("input").map_or_else(|| "{}".to_owned(), Value::to_string)},
            })
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let finish_reason = match answer.get("stop_reason").and_then(Value::as_str) {
        Some("max_tokens") => "length",
        Some("tool_use") => "tool_calls",
        Some("refusal") => "content_filter",
        _ => "stop",
    };
    let usage = answer.get("usage");
    Ok(ChatOutcome {
        message,
        finish_reason: finish_reason.to_owned(),
        prompt_tokens: count(usage, "input_tokens"),
        completion_tokens: count(usage, "output_tokens"),
    })
}

#[async_trait]
impl Provider for Anthropic {
    fn id(&self) -> ProviderId {
        DESCRIPTOR.id
    }

    async fn chat(&self, request: &ChatRequest, model: &str) -> Result<ChatOutcome, UpstreamError> {
        let http = self.post(&request_body(request, model));
        outcome(&send_json(http, self.config.timeout).await?)
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        model: &str,
    ) -> Result<super::stream::EventStream, UpstreamError> {
        let mut body = request_body(request, model);
        body["stream"] = json!(true);
        let http = self.post(&body);
        let response = super::stream::open(http, self.config.timeout).await?;
        Ok(super::stream::events(
            super::stream::frames(response.bytes_stream(), false),
            stream_events,
        ))
    }
}

/// The Messages API's stream events, as OpenAI deltas: text deltas become `content`, a
/// `tool_use` block becomes a `tool_calls` entry whose `arguments` arrive as
/// `input_json_delta` pieces; `message_start` and `message_delta` carry the token counts.
pub(crate) fn stream_events(
    frame: &str,
) -> Option<Result<Vec<super::stream::StreamEvent>, UpstreamError>> {
    use super::stream::StreamEvent;
    let event: Value = match serde_json::from_str(frame) {
        Ok(v) => v,
        Err(e) => {
            return Some(Err(UpstreamError::Protocol(format!(
                "a stream event is not JSON: {e}"
            ))));
        }
    };
    let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
    let out = match event.get("type").and_then(Value::as_str) {
        Some("message_start") => vec![
            StreamEvent::Delta(json!({"role": "assistant", "content": ""})),
            StreamEvent::Usage {
                prompt_tokens: event
                    .pointer("/message/usage/input_tokens")
                    .and_then(Value::as_u64),
                completion_tokens: None,
            },
        ],
        Some("content_block_start")
            if event.pointer("/content_block/type").and_then(Value::as_str) == Some("tool_use") =>
        {
            vec![StreamEvent::Delta(json!({"tool_calls": [{
                "index": index,
                "id": event.pointer("/content_block/id").cloned().unwrap_or(Value::Null),
                "type": "function",
                "function": {"name": event.pointer("/content_block/name").cloned().unwrap_or(Value::Null), "arguments": ""},
            }]}))]
        }
        Some("content_block_delta") => match event.pointer("/delta/type").and_then(Value::as_str) {
            Some("text_delta") => vec![StreamEvent::Delta(
                json!({"content": event.pointer("/delta/text").cloned().unwrap_or(json!(""))}),
            )],
            Some("input_json_delta") => vec![StreamEvent::Delta(json!({"tool_calls": [{
                "index": index,
                "function": {"arguments": event.pointer("/delta/partial_json").cloned().unwrap_or(json!(""))},
            }]}))],
            _ => Vec::new(),
        },
        Some("message_delta") => {
            let mut out = Vec::new();
            if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                let reason = match reason {
                    "max_tokens" => "length",
                    "tool_use" => "tool_calls",
                    "refusal" => "content_filter",
                    _ => "stop",
                };
                out.push(StreamEvent::Finish(reason.to_owned()));
            }
            out.push(StreamEvent::Usage {
                prompt_tokens: None,
                completion_tokens: event
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64),
            });
            out
        }
        Some("message_stop") => return None,
        Some("error") => {
            let message = event
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("error event");
            return Some(Err(UpstreamError::Protocol(format!(
                "the stream reported an error: {message}"
            ))));
        }
        _ => Vec::new(),
    };
    Some(Ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_translated_to_the_messages_api() {
        let request = ChatRequest {
            messages: vec![
                json!({"role": "system", "content": "Be brief."}),
                json!({"role": "user", "content": "Weather in Paris?"}),
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]}),
                json!({"role": "tool", "tool_call_id": "c1", "content": "18C"}),
            ],
            params: json!({"stop": "END", "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}], "tool_choice": "required", "temperature": 0.2})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let body = request_body(&request, "claude-sonnet-4-5");
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["stop_sequences"], json!(["END"]));
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(
            body["messages"][1]["content"][0],
            json!({"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}})
        );
        assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
    }

    #[test]
    fn answers_are_translated_to_openai() {
        let answer = json!({
            "content": [{"type": "text", "text": "Calling."}, {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 12, "output_tokens": 7},
        });
        let out = outcome(&answer).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.finish_reason, "tool_calls");
        assert_eq!((out.prompt_tokens, out.completion_tokens), (12, 7));
        assert_eq!(
            out.message["tool_calls"][0]["function"]["arguments"],
            "{\"city\":\"Paris\"}"
        );
        assert_eq!(out.message["content"], "Calling.");
    }
}
