//! `stream: true`: OpenAI `chat.completion.chunk` server-sent events ending with
//! `data: [DONE]`, metered when the stream ends — also when the client goes away first.
//!
//! Metering uses the token counts the provider reported. When the client disconnects before
//! the provider reported them, the counts are estimated from the characters sent and
//! received (four characters a token, rounded up), and the call is metered with the estimate.

use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use atrium_inference::providers::stream::{EventStream, StreamEvent};
use atrium_inference::{ModelInfo, Streaming};
use axum::response::sse::{Event, Sse};
use futures::{Stream, StreamExt};
use serde_json::{Value, json};

/// What the meter knows when the stream ends.
struct Meter {
    metering: crate::Metering,
    org_id: String,
    tenant: String,
    model: ModelInfo,
    prompt_chars: usize,
    completion_chars: usize,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    recorded: bool,
}

impl Meter {
    fn tokens(&self) -> (u64, u64) {
        let estimate = |chars: usize| u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX);
        (
            self.prompt_tokens
                .unwrap_or_else(|| estimate(self.prompt_chars)),
            self.completion_tokens
                .unwrap_or_else(|| estimate(self.completion_chars)),
        )
    }

    fn record(&mut self) {
        if std::mem::replace(&mut self.recorded, true) {
            return;
        }
        let (prompt, completion) = self.tokens();
        let record = atrium_store::UsageRecord {
            org_id: self.org_id.clone(),
            tenant_id: self.tenant.clone(),
            kind: "chat".into(),
            provider: self.model.provider.as_str().into(),
            model: self.model.id.clone(),
            prompt_tokens: i64::try_from(prompt).unwrap_or(i64::MAX),
            completion_tokens: i64::try_from(completion).unwrap_or(i64::MAX),
            cost_micros: self.model.cost_micros(prompt, completion, false),
            batch: false,
            app_slug: None,
            agent: None,
        };
        let metering = self.metering.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { metering.record(record).await });
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        // The client went away, or the stream ended: either way the call is metered once.
        self.record();
    }
}

enum Phase {
    Events,
    Usage,
    Done,
    Finished,
}

struct State {
    events: EventStream,
    meter: Meter,
    id: String,
    created: u64,
    include_usage: bool,
    phase: Phase,
}

fn chunk(state: &State, choices: Value) -> Value {
    json!({
        "id": state.id, "object": "chat.completion.chunk", "created": state.created,
        "model": state.meter.model.id, "provider": state.meter.model.provider.as_str(),
        "choices": choices,
    })
}

fn characters(delta: &Value) -> usize {
    let content = delta
        .get("content")
        .and_then(Value::as_str)
        .map_or(0, str::len);
    let arguments: usize = delta
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/function/arguments").and_then(Value::as_str))
        .map(str::len)
        .sum();
    content + arguments
}

/// The SSE response for a started stream.
pub fn respond(
    streaming: Streaming,
    metering: crate::Metering,
    org_id: String,
    tenant: String,
    prompt_chars: usize,
    include_usage: bool,
    id: String,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let state = State {
        events: streaming.events,
        meter: Meter {
            metering,
            org_id,
            tenant,
            model: streaming.model,
            prompt_chars,
            completion_chars: 0,
            prompt_tokens: None,
            completion_tokens: None,
            recorded: false,
        },
        id,
        created,
        include_usage,
        phase: Phase::Events,
    };
    let stream = futures::stream::unfold(state, |mut state| async move {
        loop {
            match state.phase {
                Phase::Events => match state.events.next().await {
                    Some(Ok(StreamEvent::Delta(delta))) => {
                        state.meter.completion_chars += characters(&delta);
                        let data = chunk(
                            &state,
                            json!([{"index": 0, "delta": delta, "finish_reason": null, "logprobs": null}]),
                        );
                        return Some((Event::default().data(data.to_string()), state));
                    }
                    Some(Ok(StreamEvent::Finish(reason))) => {
                        let data = chunk(
                            &state,
                            json!([{"index": 0, "delta": {}, "finish_reason": reason, "logprobs": null}]),
                        );
                        return Some((Event::default().data(data.to_string()), state));
                    }
                    Some(Ok(StreamEvent::Usage {
                        prompt_tokens,
                        completion_tokens,
                    })) => {
                        state.meter.prompt_tokens = prompt_tokens.or(state.meter.prompt_tokens);
                        state.meter.completion_tokens =
                            completion_tokens.or(state.meter.completion_tokens);
                    }
                    Some(Err(error)) => {
                        tracing::warn!(%error, "the upstream stream failed");
                        let data = json!({"error": {"message": format!("the provider's stream failed: {error}"), "type": "server_error", "param": null, "code": "upstream_error"}});
                        state.phase = Phase::Done;
                        return Some((Event::default().data(data.to_string()), state));
                    }
                    None => {
                        state.phase = if state.include_usage {
                            Phase::Usage
                        } else {
                            Phase::Done
                        }
                    }
                },
                Phase::Usage => {
                    let (prompt, completion) = state.meter.tokens();
                    let cost = state.meter.model.cost_micros(prompt, completion, false);
                    let mut data = chunk(&state, json!([]));
                    data["usage"] = json!({
                        "prompt_tokens": prompt, "completion_tokens": completion,
                        "total_tokens": prompt + completion, "cost_usd": cost as f64 / 1_000_000.0,
                    });
                    data["tenant"] = json!(state.meter.tenant);
                    state.phase = Phase::Done;
                    return Some((Event::default().data(data.to_string()), state));
                }
                Phase::Done => {
                    state.meter.record();
                    state.phase = Phase::Finished;
                    return Some((Event::default().data("[DONE]"), state));
                }
                Phase::Finished => return None,
            }
        }
    });
    Sse::new(stream.map(Ok))
}
