//! A conversation's turn: the user's message is stored, the orchestrator routes it
//! ([`crate::orchestrator`]), the chosen agent answers in the agent runner with the
//! conversation's recent history, and the decision and the answer (with every tool call) are
//! stored after it. What a turn stores is what the conversation's history shows.

use atrium_store::{Conversation, NewMessage, Store, StoredMessage, TenantKey};
use futures::FutureExt;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::cancel::OnCut;
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

/// The longest channel name and title of a conversation, in characters.
pub const MAX_LABEL_CHARS: usize = 200;

/// `value` of field `field` when it is a label: 1 to [`MAX_LABEL_CHARS`] characters, not blank.
fn label(field: &'static str, value: Option<String>) -> Result<Option<String>, crate::Refusal> {
    match value {
        Some(v) if v.trim().is_empty() || v.chars().count() > MAX_LABEL_CHARS => {
            Err(crate::Refusal::invalid(
                field,
                format!("{field} must be 1 to {MAX_LABEL_CHARS} characters, not blank"),
            ))
        }
        other => Ok(other),
    }
}

/// Starts a conversation of user `user_id` of `tenant` on `channel` (default `web`), titled
/// `title` if given: the stored conversation, or the field that breaks its rule.
pub async fn start(
    store: &Store,
    tenant: &TenantKey,
    user_id: &str,
    channel: Option<String>,
    title: Option<String>,
) -> Result<Conversation, crate::Refusal> {
    let channel = label("channel", channel)?.unwrap_or_else(|| "web".to_owned());
    let title = label("title", title)?;
    Ok(store
        .create_conversation(tenant, user_id, &channel, title.as_deref())
        .await?)
}

/// What an agent reads of a conversation before its turn: the last [`HISTORY_MESSAGES`]
/// messages of the kinds `asked` (what the agent is asked: `user`, and `heartbeat` for a
/// heartbeat's thread) and `assistant` (the answers), as `user` and `assistant` messages.
/// Routing messages, errors and tool calls are neither shown nor counted, and a pair is never
/// cut in half: an answer whose question fell outside the window is left out too.
pub async fn history(
    store: &Store,
    key: &TenantKey,
    conversation: &str,
    asked: &[&str],
) -> Result<Vec<Value>, atrium_store::StoreError> {
    let mut kinds = asked.to_vec();
    kinds.push("assistant");
    let messages = store
        .last_conversation_messages(key, conversation, &kinds, HISTORY_MESSAGES)
        .await?;
    Ok(as_read(&messages))
}

/// The messages as the model reads them, from the first that is not an answer.
fn as_read(messages: &[StoredMessage]) -> Vec<Value> {
    let first = messages
        .iter()
        .position(|m| m.kind != "assistant")
        .unwrap_or(messages.len());
    messages[first..]
        .iter()
        .map(|m| {
            let role = if m.kind == "assistant" {
                "assistant"
            } else {
                "user"
            };
            json!({"role": role, "content": m.content})
        })
        .collect()
}

fn send(events: Option<&UnboundedSender<TurnEvent>>, event: TurnEvent) {
    if let Some(events) = events {
        let _ = events.send(event);
    }
}

/// What the `error` message of a turn that was cut off says.
pub const CUT_OFF: &str = "the turn was cut off before it answered (a deadline, a client that disconnected, or a shutdown); ask again";

/// Appends one message to the conversation in a task of its own ([`crate::cancel`]): a turn cut
/// off while it waits leaves the write whole.
async fn append(
    store: &Store,
    key: &TenantKey,
    conversation: &str,
    new: NewMessage,
    agent: Option<(String, String)>,
) -> Result<StoredMessage, atrium_store::StoreError> {
    let (store, key, conversation) = (store.clone(), key.clone(), conversation.to_owned());
    crate::cancel::to_the_end(async move {
        let agent = agent
            .as_ref()
            .map(|(app, agent)| (app.as_str(), agent.as_str()));
        store
            .append_messages(&key, &conversation, std::slice::from_ref(&new), agent)
            .await
            .map(|mut stored| stored.remove(0))
    })
    .await
}

/// The write that closes a turn cut off at `stage` (`routing`, or `agent` with the chosen
/// agent): an `error` message, so that every question of the conversation has its answer or
/// the reason there is none.
fn close_cut_turn(
    store: &Store,
    key: &TenantKey,
    conversation: &str,
    stage: &'static str,
    agent: Option<(&str, &str)>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let (store, key, conversation) = (store.clone(), key.clone(), conversation.to_owned());
    let error = message(
        "error",
        CUT_OFF.to_owned(),
        agent.map(|(app, _)| app),
        agent.map(|(_, agent)| agent),
        json!({"stage": stage, "cancelled": true}),
    );
    async move {
        if let Err(e) = store
            .append_messages(&key, &conversation, std::slice::from_ref(&error), None)
            .await
        {
            tracing::error!(error = %e, conversation, "closing a cut-off turn failed");
        }
    }
}

/// Runs one turn of `conversation` for `tenant` (its user): `content` is already checked.
///
/// A turn cut off anywhere (its caller dropped) still ends with a message answering the
/// user's: the user's message is written in a task of its own, and from the moment it is
/// under way a guard closes the turn with an `error` message (`{"stage", "cancelled": true}`)
/// unless the turn reaches its own answer, which is written to its end too.
pub async fn turn(
    serving: &Serving,
    tenant: &Actor,
    conversation: &Conversation,
    content: &str,
    events: Option<UnboundedSender<TurnEvent>>,
) -> Result<Turn, TurnError> {
    let store = serving.registry().store();
    let key = &tenant.tenant;
    let earlier = history(store, key, &conversation.id, &["user"]).await?;
    // The user's message, shared by the turn and its guard: a turn cut off while the write
    // is under way is closed once the write has stored it.
    let stored = {
        let (store, key, id) = (store.clone(), key.clone(), conversation.id.clone());
        let new = message("user", content.to_owned(), None, None, json!({}));
        tokio::spawn(async move {
            store
                .append_messages(&key, &id, std::slice::from_ref(&new), None)
                .await
                .map(|mut stored| stored.remove(0))
                .map_err(|e| e.to_string())
        })
        .map(|joined| joined.unwrap_or_else(|e| Err(e.to_string())))
        .shared()
    };
    let mut guard = {
        let stored = stored.clone();
        let close = close_cut_turn(store, key, &conversation.id, "routing", None);
        OnCut::arm("a conversation turn", async move {
            if stored.await.is_ok() {
                close.await;
            }
        })
    };
    let user = stored
        .await
        .map_err(|e| TurnError(atrium_store::StoreError::Internal(e)))?;
    send(events.as_ref(), TurnEvent::Stored(user.clone()));
    let current = conversation
        .app_slug
        .as_deref()
        .zip(conversation.agent.as_deref());
    let choice: Choice =
        match orchestrator::route(serving, tenant, content, &conversation.channel, current).await {
            Ok(choice) => choice,
            Err(e) => {
                guard.disarm();
                let error = message("error", e.reason, None, None, json!({"stage": "routing"}));
                let reply = append(store, key, &conversation.id, error, None).await?;
                return Ok(Turn {
                    user,
                    routing: None,
                    reply,
                });
            }
        };
    let decision = serde_json::to_value(&choice).unwrap_or(Value::Null);
    let routed = message(
        "routing",
        choice.reason.clone(),
        Some(&choice.app),
        Some(&choice.agent),
        decision,
    );
    let chosen = (choice.app.clone(), choice.agent.clone());
    // The routing message is written to its end, and a turn cut off while that write is
    // under way is closed after it, so that the error follows the routing it answers.
    let routed = {
        let (store, key, id) = (store.clone(), key.clone(), conversation.id.clone());
        tokio::spawn(async move {
            let agent = Some((chosen.0.as_str(), chosen.1.as_str()));
            store
                .append_messages(&key, &id, std::slice::from_ref(&routed), agent)
                .await
                .map(|mut stored| stored.remove(0))
                .map_err(|e| e.to_string())
        })
        .map(|joined| joined.unwrap_or_else(|e| Err(e.to_string())))
        .shared()
    };
    {
        let routed = routed.clone();
        let close = close_cut_turn(
            store,
            key,
            &conversation.id,
            "agent",
            Some((&choice.app, &choice.agent)),
        );
        guard.rearm(async move {
            let _ = routed.await;
            close.await;
        });
    }
    let routing = routed
        .await
        .map_err(|e| TurnError(atrium_store::StoreError::Internal(e)))?;
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
    run.history = earlier;
    run.role = Role::Specialist;
    run.workflow = choice.workflow.clone();
    run.channel = Some(conversation.channel.clone());
    run.events = events.is_some().then_some(runs);
    let outcome = crate::runner::Runner::of(serving).run_agent(run).await;
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
    // From here the turn closes itself: the answer is written to its end.
    guard.disarm();
    let reply = append(store, key, &conversation.id, reply, None).await?;
    Ok(Turn {
        user,
        routing: Some(routing),
        reply,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(seq: i64, kind: &str) -> StoredMessage {
        StoredMessage {
            seq,
            kind: kind.to_owned(),
            content: format!("{kind} {seq}"),
            app_slug: None,
            agent: None,
            data: Map::new(),
            created_at: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    #[test]
    fn an_answer_whose_question_fell_outside_the_window_is_left_out() {
        let read = as_read(&[
            stored(4, "assistant"),
            stored(5, "user"),
            stored(7, "assistant"),
            stored(8, "heartbeat"),
            stored(9, "user"),
            stored(11, "assistant"),
        ]);
        assert_eq!(
            read,
            [
                json!({"role": "user", "content": "user 5"}),
                json!({"role": "assistant", "content": "assistant 7"}),
                json!({"role": "user", "content": "heartbeat 8"}),
                json!({"role": "user", "content": "user 9"}),
                json!({"role": "assistant", "content": "assistant 11"}),
            ]
        );
        assert!(as_read(&[stored(1, "assistant")]).is_empty());
        assert!(as_read(&[]).is_empty());
    }
}
