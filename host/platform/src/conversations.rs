//! A conversation's turn: the user's message is stored, the orchestrator routes it
//! ([`crate::orchestrator`]), the chosen agent answers in the agent runner with the
//! conversation's recent history, and the decision and the answer (with every tool call) are
//! stored after it. What a turn stores is what the conversation's history shows.

use atrium_store::{Conversation, NewMessage, StoredMessage};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::llm_roles::Role;
use crate::orchestrator::{self, Choice};
use crate::registry::Actor;
use crate::runner::{AgentRun, RunEvent};
use crate::serving::Serving;

/// The longest user message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 20_000;
/// How many earlier user messages and answers the agent is shown.
pub const HISTORY_MESSAGES: i64 = 20;

/// What a turn reports as it goes, for a client that streams it.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// The user's message is stored.
    Stored(StoredMessage),
    /// The orchestrator decided (the routing message, stored).
    Routed(StoredMessage),
    /// The agent is working: a piece of text, a tool call, a tool's answer.
    Run(RunEvent),
}

/// A turn: the user's message, the routing decision and the answer (or, kind `error`, why
/// there is none).
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The user's message.
    pub user: StoredMessage,
    /// The routing decision.
    pub routing: Option<StoredMessage>,
    /// The answer, or the error.
    pub reply: StoredMessage,
}

/// Why a turn could not be stored at all.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct TurnError(#[from] atrium_store::StoreError);

fn message(
    kind: &'static str,
    content: String,
    app: Option<&str>,
    agent: Option<&str>,
    data: Value,
) -> NewMessage {
    NewMessage {
        kind,
        content,
        app_slug: app.map(str::to_owned),
        agent: agent.map(str::to_owned),
        data: match data {
            Value::Object(map) => map,
            _ => Map::new(),
        },
    }
}

/// The conversation's earlier messages as the agent reads them: the user's and the answers.
fn history(messages: &[StoredMessage]) -> Vec<Value> {
    messages
        .iter()
        .filter_map(|m| match m.kind.as_str() {
            "user" => Some(json!({"role": "user", "content": m.content})),
            "assistant" => Some(json!({"role": "assistant", "content": m.content})),
            _ => None,
        })
        .collect()
}

fn send(events: Option<&UnboundedSender<TurnEvent>>, event: TurnEvent) {
    if let Some(events) = events {
        let _ = events.send(event);
    }
}

/// Runs one turn of `conversation` for `tenant` (its user): `content` is already checked.
pub async fn turn(
    serving: &Serving,
    tenant: &Actor,
    conversation: &Conversation,
    content: &str,
    events: Option<UnboundedSender<TurnEvent>>,
) -> Result<Turn, TurnError> {
    let store = serving.registry().store();
    let key = &tenant.tenant;
    let earlier = store
        .last_conversation_messages(key, &conversation.id, HISTORY_MESSAGES)
        .await?;
    let user = store
        .append_messages(
            key,
            &conversation.id,
            &[message("user", content.to_owned(), None, None, json!({}))],
            None,
        )
        .await?
        .remove(0);
    send(events.as_ref(), TurnEvent::Stored(user.clone()));
    let current = conversation
        .app_slug
        .as_deref()
        .zip(conversation.agent.as_deref());
    let choice: Choice =
        match orchestrator::route(serving, tenant, content, &conversation.channel, current).await {
            Ok(choice) => choice,
            Err(e) => {
                let reply = store
                    .append_messages(
                        key,
                        &conversation.id,
                        &[message(
                            "error",
                            e.reason,
                            None,
                            None,
                            json!({"stage": "routing"}),
                        )],
                        None,
                    )
                    .await?
                    .remove(0);
                return Ok(Turn {
                    user,
                    routing: None,
                    reply,
                });
            }
        };
    let decision = serde_json::to_value(&choice).unwrap_or(Value::Null);
    let routing = store
        .append_messages(
            key,
            &conversation.id,
            &[message(
                "routing",
                choice.reason.clone(),
                Some(&choice.app),
                Some(&choice.agent),
                decision,
            )],
            Some((&choice.app, &choice.agent)),
        )
        .await?
        .remove(0);
    send(events.as_ref(), TurnEvent::Routed(routing.clone()));

    let (runs, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let forward = events.clone().map(|events| {
        tokio::spawn(async move {
            while let Some(event) = reports.recv().await {
                if events.send(TurnEvent::Run(event)).is_err() {
                    break;
                }
            }
        })
    });
    let mut run = AgentRun::new(
        tenant.clone(),
        &choice.app,
        Some(choice.agent.clone()),
        content,
    );
    run.history = history(&earlier);
    run.role = Role::Specialist;
    run.workflow = choice.workflow.clone();
    run.channel = Some(conversation.channel.clone());
    run.events = events.is_some().then_some(runs);
    let outcome = serving.run_agent(run).await;
    if let Some(forward) = forward {
        // The run's sender is gone with the run: the forwarder ends once it has passed on all.
        let _ = forward.await;
    }
    let reply = match outcome {
        Ok(reply) => {
            let steps: Vec<Value> = reply
                .tool_steps
                .iter()
                .map(|s| json!({"id": s.id, "name": s.name, "arguments": s.arguments, "ok": s.ok, "result": s.result}))
                .collect();
            message(
                "assistant",
                reply.content,
                Some(&reply.app_slug),
                Some(&reply.agent),
                json!({
                    "tool_calls": steps,
                    "model": reply.model,
                    "provider": reply.provider,
                    "usage": {
                        "steps": reply.usage.steps,
                        "prompt_tokens": reply.usage.prompt_tokens,
                        "completion_tokens": reply.usage.completion_tokens,
                        "cost_usd": reply.usage.cost_micros as f64 / 1_000_000.0,
                    },
                }),
            )
        }
        Err(e) => message(
            "error",
            e.reason,
            Some(&choice.app),
            Some(&choice.agent),
            json!({"stage": "agent"}),
        ),
    };
    let reply = store
        .append_messages(key, &conversation.id, &[reply], None)
        .await?
        .remove(0);
    Ok(Turn {
        user,
        routing: Some(routing),
        reply,
    })
}
