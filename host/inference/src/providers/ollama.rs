//! Ollama: the native chat API (`POST {base}/api/chat`; streamed as newline-delimited JSON).
//!
//! Request: sampling fields go into `options` (`max_tokens` is `num_predict`); a JSON
//! `response_format` is `format` (`"json"`, or the schema of a `json_schema` format); tools
//! pass as they are. Answer: `tool_calls` arguments come as objects and are sent on as JSON
//! text; `done_reason` maps to `finish_reason`; `prompt_eval_count` and `eval_count` are the
//! token counts.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{
    ChatOutcome, ChatRequest, DEFAULT_TIMEOUT, Descriptor, Provider, ProviderConfig, Requirement,
    UpstreamError, send_json,
};
use crate::ProviderId;

/// The default API base.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// Ollama's identity: available once its base URL is set (the operator's own server needs no key).
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: ProviderId::Ollama,
    default_base_url: DEFAULT_BASE_URL,
    default_timeout: DEFAULT_TIMEOUT,
    requires: Requirement::BaseUrl,
    build: |client, config| Arc::new(Ollama::new(client, config)),
};

/// Ollama's native chat API.
pub struct Ollama {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl Ollama {
    /// An adapter for `config`.
    pub fn new(client: reqwest::Client, config: ProviderConfig) -> Self {
        Ollama { client, config }
    }

    /// `POST {base}/api/chat`, with a bearer key when one is configured (a proxy in front).
    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let url = format!("{}/api/chat", self.config.base_url.trim_end_matches('/'));
        let http = self.client.post(url).json(body);
        match &self.config.api_key {
            Some(key) => http.bearer_auth(key),
            None => http,
        }
    }
}

/// The `/api/chat` body for an OpenAI-shaped request.
pub(crate) fn request_body(request: &ChatRequest, model: &str) -> Value {
    let mut options = Map::new();
    for (from, to) in [
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("seed", "seed"),
        ("presence_penalty", "presence_penalty"),
        ("frequency_penalty", "frequency_penalty"),
    ] {
        if let Some(v) = request.param(from) {
            options.insert(to.into(), v.clone());
        }
    }
    if let Some(max) = request
        .param("max_tokens")
        .or_else(|| request.param("max_completion_tokens"))
    {
        options.insert("num_predict".into(), max.clone());
    }
    match request.param("stop") {
        Some(Value::String(s)) => {
            options.insert("stop".into(), json!([s]));
        }
        Some(v @ Value::Array(_)) => {
            options.insert("stop".into(), v.clone());
        }
        _ => {}
    }
    let mut body =
        json!({"model": model, "messages": request.messages, "stream": false, "options": options});
    if let Some(tools) = request.param("tools") {
        body["tools"] = tools.clone();
    }
    match request
        .param("response_format")
        .and_then(|f| f.get("type"))
        .and_then(Value::as_str)
    {
        Some("json_object") => body["format"] = json!("json"),
        Some("json_schema") => {
            if let Some(schema) = request
                .param("response_format")
                .and_then(|f| f.pointer("/json_schema/schema"))
            {
                body["format"] = schema.clone();
            }
        }
        _ => {}
    }
    body
}

/// Reads an `/api/chat` answer into OpenAI's shape.
pub(crate) fn outcome(answer: &Value) -> Result<ChatOutcome, UpstreamError> {
    let message = answer
        .get("message")
        .ok_or_else(|| UpstreamError::Protocol("the answer has no message".into()))?;
    let mut out = json!({"role": "assistant", "content": message.get("content").cloned().unwrap_or(json!(""))});
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let arguments = c.pointer("/function/arguments").map_or_else(|| "{}".to_owned(), Value::to_string);
                json!({"id": format!("call_{i}"), "type": "function", "function": {"name": c.pointer("/function/name").cloned().unwrap_or(Value::Null), "arguments": arguments}})
            })
            .collect();
        if !calls.is_empty() {
            out["tool_calls"] = Value::Array(calls);
        }
    }
    let finish_reason = if out.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        match answer.get("done_reason").and_then(Value::as_str) {
            Some("length") => "length",
            _ => "stop",
        }
    };
    Ok(ChatOutcome {
        message: out,
        finish_reason: finish_reason.to_owned(),
        prompt_tokens: answer
            .get("prompt_eval_count")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        completion_tokens: answer
            .get("eval_count")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

#[async_trait]
impl Provider for Ollama {
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
        use super::stream::StreamEvent;
        let mut body = request_body(request, model);
        body["stream"] = json!(true);
        let http = self.post(&body);
        let response = super::stream::open(http, self.config.timeout).await?;
        // Each line is a partial answer; the last one has `done: true` and the counts.
        Ok(super::stream::events(
            super::stream::frames(response.bytes_stream(), true),
            |line| {
                let part: Value = match serde_json::from_str(line) {
                    Ok(v) => v,
                    Err(e) => {
                        return Some(Err(UpstreamError::Protocol(format!(
                            "a stream line is not JSON: {e}"
                        ))));
                    }
                };
                let mut events = Vec::new();
                let text = part
                    .pointer("/message/content")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !text.is_empty() {
                    events.push(StreamEvent::Delta(json!({"content": text})));
                }
                if part.get("done").and_then(Value::as_bool) == Some(true) {
                    let whole = outcome(&part).ok();
                    if let Some(calls) = whole.as_ref().and_then(|o| o.message.get("tool_calls")) {
                        let indexed: Vec<Value> = calls
                            .as_array()
                            .into_iter()
                            .flatten()
                            .enumerate()
                            .map(|(i, c)| {
                                let mut c = c.clone();
                                c["index"] = json!(i);
                                c
                            })
                            .collect();
                        events.push(StreamEvent::Delta(json!({"tool_calls": indexed})));
                    }
                    events.push(StreamEvent::Finish(
                        whole.map_or_else(|| "stop".to_owned(), |o| o.finish_reason),
                    ));
                    events.push(StreamEvent::Usage {
                        prompt_tokens: part.get("prompt_eval_count").and_then(Value::as_u64),
                        completion_tokens: part.get("eval_count").and_then(Value::as_u64),
                    });
                }
                Some(Ok(events))
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_format_are_translated() {
        let request = ChatRequest {
            messages: vec![json!({"role": "user", "content": "hi"})],
            params: json!({"temperature": 0.1, "max_tokens": 50, "stop": "x", "response_format": {"type": "json_object"}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let body = request_body(&request, "qwen2.5:7b");
        assert_eq!(
            body["options"],
            json!({"temperature": 0.1, "num_predict": 50, "stop": ["x"]})
        );
        assert_eq!(
            (body["stream"].clone(), body["format"].clone()),
            (json!(false), json!("json"))
        );
        let answer = json!({"message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}, "done_reason": "stop", "prompt_eval_count": 4, "eval_count": 2});
        let out = outcome(&answer).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.finish_reason, "tool_calls");
        assert_eq!(
            out.message["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!((out.prompt_tokens, out.completion_tokens), (4, 2));
    }
}
