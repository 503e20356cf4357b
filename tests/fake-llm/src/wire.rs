//! How each protocol puts a reply on the wire.

use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::Protocol;
use crate::reply::{Kind, Reply, ToolCall, words};

/// What a reply needs to know of its request and upstream.
pub(crate) struct Context {
    /// The upstream's name (the greeting's first word).
    pub(crate) name: String,
    /// The request body.
    pub(crate) body: Value,
    /// Whether the request asked for a stream.
    pub(crate) streams: bool,
    /// Whether OpenAI streams report usage unasked.
    pub(crate) always_report_usage: bool,
    /// The upstream's token counts, if set.
    pub(crate) usage: Option<(u64, u64)>,
    /// The embeddings' size.
    pub(crate) dimensions: usize,
}

/// The fake's embedding of `text` in `dimensions` numbers: deterministic (a function of the
/// text's bytes) and not normalised, so that a client's scaling shows.
pub fn embedding(text: &str, dimensions: usize) -> Vec<f32> {
    let seed = text.bytes().map(u32::from).sum::<u32>() as f32;
    (0..dimensions)
        .map(|i| ((i as f32 + seed) * 0.37).sin() * 3.0)
        .collect()
}

/// The answer to a path the fake does not serve.
pub(crate) fn no_route() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": {"message": "no such route"}})),
    )
        .into_response()
}

/// An error status with a body in `protocol`'s shape.
pub(crate) fn error(protocol: Protocol, status: u16, message: &str) -> Response {
    let body = match protocol {
        Protocol::ChatCompletions | Protocol::Embeddings => {
            let kind = match status {
                429 => "rate_limit_error",
                500.. => "server_error",
                _ => "invalid_request_error",
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
        Protocol::Messages => {
            let kind = match status {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                500.. => "api_error",
                _ => "invalid_request_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Protocol::OllamaChat | Protocol::OllamaEmbed => json!({"error": message}),
    };
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        Json(body),
    )
        .into_response()
}

/// What a chat reply says.
enum Said {
    Text(Vec<String>),
    ToolCalls(Vec<ToolCall>),
}

/// Answers `reply` to a request of `protocol`.
pub(crate) async fn render(protocol: Protocol, reply: Reply, context: &Context) -> Response {
    if let Some(delay) = reply.delay {
        tokio::time::sleep(delay).await;
    }
    let said = match reply.kind.clone() {
        Kind::Hang => return std::future::pending::<Response>().await,
        Kind::Status { status, message } => return error(protocol, status, &message),
        Kind::EmbeddingsMissing(missing) if protocol.embeds() => {
            return embeddings(protocol, missing, &reply, context);
        }
        _ if protocol.embeds() => return embeddings(protocol, 0, &reply, context),
        Kind::Greeting | Kind::EmbeddingsMissing(_) => {
            Said::Text(vec![context.name.clone(), " says hi".to_owned()])
        }
        Kind::Text(pieces) => Said::Text(pieces),
        Kind::Echo => Said::Text(words(
            &crate::last_user_text(&context.body).unwrap_or_default(),
        )),
        Kind::ToolCalls(calls) => Said::ToolCalls(calls),
    };
    match protocol {
        Protocol::Messages => messages(said, &reply, context),
        Protocol::OllamaChat => ollama_chat(said, &reply, context),
        _ => chat_completions(said, &reply, context),
    }
}

/// The token counts to report: the reply's, the upstream's or the protocol's.
fn usage(reply: &Reply, context: &Context, default: (u64, u64)) -> (u64, u64) {
    reply.usage.or(context.usage).unwrap_or(default)
}

/// OpenAI's finish reason of the reply.
fn finish_reason(said: &Said, reply: &Reply) -> String {
    reply.finish_reason.clone().unwrap_or_else(|| {
        match said {
            Said::Text(_) => "stop",
            Said::ToolCalls(_) => "tool_calls",
        }
        .to_owned()
    })
}

/// `text` in two pieces, split at a character boundary near its middle.
fn halves(text: &str) -> [String; 2] {
    let mut middle = text.len() / 2;
    while !text.is_char_boundary(middle) {
        middle += 1;
    }
    [text[..middle].to_owned(), text[middle..].to_owned()]
}

fn chat_completions(said: Said, reply: &Reply, context: &Context) -> Response {
    let body = &context.body;
    let model = body["model"].as_str().unwrap_or_default();
    let (prompt, completion) = usage(reply, context, (10, 5));
    let usage = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
    let finish = finish_reason(&said, reply);
    if context.streams {
        let chunk = |delta: Value, finish: Value| json!({"id": "up", "object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        let mut events = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        match &said {
            Said::Text(pieces) => {
                events.extend(
                    pieces
                        .iter()
                        .map(|piece| chunk(json!({"content": piece}), Value::Null)),
                );
            }
            Said::ToolCalls(calls) => {
                for (index, call) in calls.iter().enumerate() {
                    events.push(chunk(
                        json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
                        Value::Null,
                    ));
                    for piece in halves(&call.arguments.to_string()) {
                        events.push(chunk(
                            json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                            Value::Null,
                        ));
                    }
                }
            }
        }
        events.push(chunk(json!({}), json!(finish)));
        if body["stream_options"]["include_usage"] == true || context.always_report_usage {
            events.push(json!({"id": "up", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage}));
        }
        let mut pieces: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        pieces.push("data: [DONE]\n\n".into());
        return delivered(pieces, "text/event-stream", reply);
    }
    let message = match &said {
        Said::Text(pieces) => json!({"role": "assistant", "content": pieces.concat()}),
        Said::ToolCalls(calls) => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        }
    };
    plain(
        json!({
            "id": "up-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }),
        reply,
    )
}

fn messages(said: Said, reply: &Reply, context: &Context) -> Response {
    let body = &context.body;
    let (input, output) = usage(reply, context, (20, 8));
    let stop_reason = match finish_reason(&said, reply).as_str() {
        "stop" => "end_turn".to_owned(),
        "tool_calls" => "tool_use".to_owned(),
        "length" => "max_tokens".to_owned(),
        other => other.to_owned(),
    };
    if context.streams {
        let mut events = vec![(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": [], "usage": {"input_tokens": input, "output_tokens": 1}}}),
        )];
        let mut block = |index: usize, start: Value, deltas: Vec<Value>| {
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            if index == 0 {
                events.push(("ping", json!({"type": "ping"})));
            }
            for delta in deltas {
                events.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
            }
            events.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        };
        match &said {
            Said::Text(pieces) => block(
                0,
                json!({"type": "text", "text": ""}),
                pieces
                    .iter()
                    .map(|piece| json!({"type": "text_delta", "text": piece}))
                    .collect(),
            ),
            Said::ToolCalls(calls) => {
                for (index, call) in calls.iter().enumerate() {
                    block(
                        index,
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
                        halves(&call.arguments.to_string())
                            .into_iter()
                            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                            .collect(),
                    );
                }
            }
        }
        events.push((
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": output}}),
        ));
        events.push(("message_stop", json!({"type": "message_stop"})));
        let pieces = events
            .iter()
            .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
            .collect();
        return delivered(pieces, "text/event-stream", reply);
    }
    let content = match &said {
        Said::Text(pieces) => json!([{"type": "text", "text": pieces.concat()}]),
        Said::ToolCalls(calls) => Value::Array(
            calls
                .iter()
                .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}))
                .collect(),
        ),
    };
    plain(
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": content,
            "stop_reason": stop_reason,
            "usage": {"input_tokens": input, "output_tokens": output},
        }),
        reply,
    )
}

fn ollama_chat(said: Said, reply: &Reply, context: &Context) -> Response {
    let model = &context.body["model"];
    let (prompt, completion) = usage(reply, context, (6, 3));
    let done_reason = match finish_reason(&said, reply).as_str() {
        "tool_calls" => "stop".to_owned(),
        other => other.to_owned(),
    };
    let tool_calls = |calls: &[ToolCall]| -> Vec<Value> {
        calls
            .iter()
            .map(|c| json!({"function": {"name": c.name, "arguments": c.arguments}}))
            .collect()
    };
    if context.streams {
        let mut lines: Vec<Value> = match &said {
            Said::Text(pieces) => pieces
                .iter()
                .map(|piece| json!({"model": model, "message": {"role": "assistant", "content": piece}, "done": false}))
                .collect(),
            Said::ToolCalls(calls) => vec![
                json!({"model": model, "message": {"role": "assistant", "content": "", "tool_calls": tool_calls(calls)}, "done": false}),
            ],
        };
        lines.push(json!({"model": model, "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": done_reason, "prompt_eval_count": prompt, "eval_count": completion}));
        return delivered(
            lines.iter().map(|l| format!("{l}\n")).collect(),
            "application/x-ndjson",
            reply,
        );
    }
    let message = match &said {
        Said::Text(pieces) => json!({"role": "assistant", "content": pieces.concat()}),
        Said::ToolCalls(calls) => {
            json!({"role": "assistant", "content": "", "tool_calls": tool_calls(calls)})
        }
    };
    plain(
        json!({
            "model": model, "created_at": "2026-01-01T00:00:00Z",
            "message": message,
            "done": true, "done_reason": done_reason, "prompt_eval_count": prompt, "eval_count": completion,
        }),
        reply,
    )
}

fn embeddings(protocol: Protocol, missing: usize, reply: &Reply, context: &Context) -> Response {
    let body = &context.body;
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let mut inputs: Vec<String> = match &body["input"] {
        Value::Array(inputs) => inputs.iter().map(text).collect(),
        Value::Null => Vec::new(),
        other => vec![text(other)],
    };
    inputs.truncate(inputs.len().saturating_sub(missing));
    let vectors = inputs.iter().map(|t| embedding(t, context.dimensions));
    let answer = if protocol == Protocol::OllamaEmbed {
        let (tokens, _) = usage(reply, context, (inputs.len() as u64 * 5, 0));
        json!({"model": body["model"], "embeddings": vectors.collect::<Vec<_>>(), "prompt_eval_count": tokens})
    } else {
        let (tokens, _) = usage(reply, context, (inputs.len() as u64 * 7, 0));
        // In reverse order: the index field decides.
        let data: Vec<Value> = vectors
            .enumerate()
            .rev()
            .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
            .collect();
        json!({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
    };
    plain(answer, reply)
}

/// A plain JSON answer: whole, or in two halves when the reply stalls or drops.
fn plain(answer: Value, reply: &Reply) -> Response {
    if reply.stall.is_none() && reply.cut_after.is_none() {
        return Json(answer).into_response();
    }
    delivered(
        halves(&answer.to_string()).into(),
        "application/json",
        reply,
    )
}

/// How long a body that drops waits for its last pieces to leave first.
const FLUSH: Duration = Duration::from_millis(20);

/// A body sent in `pieces`, pausing and dropping the connection as `reply` says.
fn delivered(pieces: Vec<String>, content_type: &'static str, reply: &Reply) -> Response {
    let stall: Option<(usize, Duration)> = reply.stall;
    let sent = reply
        .cut_after
        .map_or(pieces.len(), |n| n.min(pieces.len()));
    let mut items: Vec<Result<String, std::io::Error>> =
        pieces.into_iter().take(sent).map(Ok).collect();
    if reply.cut_after.is_some() {
        items.push(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "the fake LLM dropped the connection",
        )));
    }
    let stream =
        futures::stream::iter(items.into_iter().enumerate()).then(move |(i, item)| async move {
            if let Some((after, pause)) = stall
                && i == after
            {
                tokio::time::sleep(pause).await;
            }
            if item.is_err() {
                // Let the pieces before reach the client before the connection drops.
                tokio::time::sleep(FLUSH).await;
            }
            item
        });
    ([("content-type", content_type)], Body::from_stream(stream)).into_response()
}
