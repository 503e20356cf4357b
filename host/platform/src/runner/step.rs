//! One model step of a run: the whole answer, or the streamed one with its pieces reported.

use serde_json::{Value, json};

use super::{RunError, RunEvent};

pub(super) fn report(
    events: Option<&tokio::sync::mpsc::UnboundedSender<RunEvent>>,
    event: impl FnOnce() -> RunEvent,
) {
    if let Some(events) = events {
        // A listener that went away (a client that disconnected) does not stop the run: its
        // answer is still stored.
        let _ = events.send(event());
    }
}

/// One model call: the whole answer, or, when the run reports as it goes, the streamed answer
/// with each piece of text reported and the tool calls put together from their pieces.
pub(super) async fn model_step(
    chat: &crate::gateway::Chat,
    selection: &atrium_inference::Selection,
    request: &atrium_inference::providers::ChatRequest,
    agent: &str,
    events: Option<&tokio::sync::mpsc::UnboundedSender<RunEvent>>,
) -> Result<atrium_inference::Completed, RunError> {
    use atrium_inference::providers::ChatOutcome;
    use atrium_inference::providers::stream::StreamEvent;
    use futures::StreamExt;

    let unavailable =
        |e: &dyn std::fmt::Display| RunError::new(format!("the model is unavailable: {e}"));
    let Some(events) = events else {
        return chat
            .gateway
            .chat(selection, request)
            .await
            .map_err(|e| unavailable(&e));
    };
    let mut streaming = chat
        .gateway
        .chat_stream(selection, request)
        .await
        .map_err(|e| unavailable(&e))?;
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finish_reason = String::from("stop");
    let (mut prompt_tokens, mut completion_tokens) = (0, 0);
    while let Some(event) = streaming.events.next().await {
        match event.map_err(|e| RunError::new(format!("the model's answer broke off: {e}")))? {
            StreamEvent::Delta(delta) => {
                if let Some(text) = delta.get("content").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    content.push_str(text);
                    let _ = events.send(RunEvent::Delta {
                        agent: agent.to_owned(),
                        text: text.to_owned(),
                    });
                }
                for piece in delta
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let index = piece.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                    while calls.len() <= index {
                        calls.push(json!({"id": "", "type": "function", "function": {"name": "", "arguments": ""}}));
                    }
                    let call = &mut calls[index];
                    if let Some(id) = piece.get("id").and_then(Value::as_str) {
                        call["id"] = json!(id);
                    }
                    for field in ["name", "arguments"] {
                        if let Some(text) = piece["function"].get(field).and_then(Value::as_str) {
                            let joined =
                                format!("{}{text}", call["function"][field].as_str().unwrap_or(""));
                            call["function"][field] = json!(joined);
                        }
                    }
                }
            }
            StreamEvent::Finish(reason) => finish_reason = reason,
            StreamEvent::Usage {
                prompt_tokens: p,
                completion_tokens: c,
            } => {
                prompt_tokens = p.unwrap_or(prompt_tokens);
                completion_tokens = c.unwrap_or(completion_tokens);
            }
        }
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Ok(atrium_inference::Completed {
        outcome: ChatOutcome {
            message,
            finish_reason,
            prompt_tokens,
            completion_tokens,
        },
        model: streaming.model,
        failed: streaming.failed,
    })
}
