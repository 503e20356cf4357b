//! `/api/conversations`: a tenant user's conversations with the tenant's installed apps. A
//! message is routed by the orchestrator to one agent, which answers in the agent runner
//! (`atrium_platform::conversations`); with `Accept: text/event-stream` the turn is streamed as
//! it happens.

use std::convert::Infallible;

use crate::routing::{Routes, get, post};
use atrium_platform::conversations::{self, MAX_MESSAGE_CHARS, Turn, TurnEvent};
use atrium_platform::runner::RunEvent;
use atrium_store::{Conversation, StoredMessage};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::views::time;
use crate::page::{Listed, Page, PageRequest, SortedBy, time_and_id};
use crate::principals::TenantUser;
use crate::{ApiError, HostState, JsonBody, OptionalJsonBody, QueryParams};

/// `POST /api/conversations`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateConversation {
    /// The channel (the workflows' `channels`); default `web`.
    #[serde(default)]
    pub channel: Option<String>,
    /// A title.
    #[serde(default)]
    pub title: Option<String>,
}

/// A conversation as answered.
#[derive(Debug, Serialize)]
pub struct ConversationView {
    /// `cnv_...`.
    pub id: String,
    /// The channel.
    pub channel: String,
    /// The title, if given.
    pub title: Option<String>,
    /// The app of the agent it is with now (none before the first message).
    pub app: Option<String>,
    /// That agent.
    pub agent: Option<String>,
    /// How many messages it holds.
    pub message_count: i64,
    /// Creation.
    pub created_at: String,
    /// Last message.
    pub updated_at: String,
}

impl From<Conversation> for ConversationView {
    fn from(c: Conversation) -> Self {
        ConversationView {
            id: c.id,
            channel: c.channel,
            title: c.title,
            app: c.app_slug,
            agent: c.agent,
            message_count: c.messages,
            created_at: time(c.created_at),
            updated_at: time(c.updated_at),
        }
    }
}

impl Listed for ConversationView {
    const KEY: &'static str = "conversations";
}

/// A message as answered.
#[derive(Debug, Clone, Serialize)]
pub struct MessageView {
    /// Its place in the conversation, from 1.
    pub seq: i64,
    /// `user`, `routing`, `assistant` or `error`.
    pub kind: String,
    /// The text (for `routing`, the reason of the decision).
    pub content: String,
    /// The app it concerns.
    pub app: Option<String>,
    /// The agent it concerns.
    pub agent: Option<String>,
    /// `routing`: `{app, agent, workflow, switched, decided_by, reason}`; `assistant`:
    /// `{tool_calls: [{id, name, arguments, ok, result}], model, provider, usage}`; `error`:
    /// `{stage}` (`routing` or `agent`).
    pub data: Map<String, Value>,
    /// When it was stored.
    pub created_at: String,
}

impl From<StoredMessage> for MessageView {
    fn from(m: StoredMessage) -> Self {
        MessageView {
            seq: m.seq,
            kind: m.kind,
            content: m.content,
            app: m.app_slug,
            agent: m.agent,
            data: m.data,
            created_at: time(m.created_at),
        }
    }
}

impl Listed for MessageView {
    const KEY: &'static str = "messages";
}

impl SortedBy for MessageView {
    fn sort_key(&self) -> String {
        self.seq.to_string()
    }
}

/// `GET /api/conversations/{id}`: the conversation and a page of its messages, oldest first.
#[derive(Debug, Serialize)]
pub struct ConversationDetail {
    /// The conversation.
    #[serde(flatten)]
    pub conversation: ConversationView,
    /// Its messages (`messages` and `next_cursor`).
    #[serde(flatten)]
    pub messages: Page<MessageView>,
}

/// `POST /api/conversations/{id}/messages`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// The user's message: 1 to 20,000 characters, not blank.
    pub content: String,
}

/// The answer of `POST /api/conversations/{id}/messages`: the turn's stored messages.
#[derive(Debug, Serialize)]
pub struct TurnView {
    /// The user's message.
    pub message: MessageView,
    /// The routing decision (none when no agent could be chosen).
    pub routing: Option<MessageView>,
    /// The agent's answer (`assistant`), or why there is none (`error`).
    pub reply: MessageView,
}

impl From<Turn> for TurnView {
    fn from(t: Turn) -> Self {
        TurnView {
            message: t.user.into(),
            routing: t.routing.map(Into::into),
            reply: t.reply.into(),
        }
    }
}

/// The caller's own conversation `id`; 404 for any other.
async fn own(
    state: &HostState,
    user: &atrium_store::TenantPrincipal,
    id: &str,
) -> Result<Conversation, ApiError> {
    state
        .store
        .conversation(&user.key(), id)
        .await?
        .filter(|c| c.user_id == user.user_id)
        .ok_or_else(|| ApiError::not_found(format!("you have no conversation `{id}`")))
}

/// Starts a conversation of the caller: 201.
pub async fn create(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    OptionalJsonBody(body): OptionalJsonBody<CreateConversation>,
) -> Result<(StatusCode, Json<ConversationView>), ApiError> {
    let created = atrium_platform::conversations::start(
        &state.store,
        &user.key(),
        &user.user_id,
        body.channel,
        body.title,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(created.into())))
}

/// The caller's conversations, newest first.
pub async fn list(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    page: PageRequest,
) -> Result<Json<Page<ConversationView>>, ApiError> {
    let rows = state
        .store
        .conversations_page(
            &user.key(),
            &user.user_id,
            page.after_time_and_id()?,
            page.fetch(),
        )
        .await?;
    Ok(Json(Page::keyed(
        rows,
        &page,
        |c| time_and_id(c.created_at, &c.id),
        ConversationView::from,
    )))
}

/// `GET /api/conversations/{id}`'s page.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetailQuery {
    /// The page size (1 to 200, default 50).
    #[serde(default)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One conversation of the caller with a page of its messages, oldest first.
pub async fn detail(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<DetailQuery>,
) -> Result<Json<ConversationDetail>, ApiError> {
    let page = PageRequest::parse(query.limit.as_deref(), query.cursor.as_deref())?;
    let conversation = own(&state, &user, &id).await?;
    let after = match &page.after {
        None => 0,
        Some(key) => key.parse::<i64>().map_err(|_| {
            ApiError::field(
                "cursor",
                "cursor is not one this API gave: pass back `next_cursor` as it came",
            )
        })?,
    };
    let rows = state
        .store
        .conversation_messages(&user.key(), &conversation.id, after, page.fetch())
        .await?;
    let messages = Page::of(rows.into_iter().map(MessageView::from).collect(), &page);
    Ok(Json(ConversationDetail {
        conversation: conversation.into(),
        messages,
    }))
}

fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"))
}

fn sse(name: &str, data: &impl Serialize) -> Event {
    Event::default()
        .event(name)
        .data(serde_json::to_string(data).unwrap_or_else(|_| "null".into()))
}

fn turn_event(event: TurnEvent) -> Event {
    match event {
        TurnEvent::Stored(m) => sse("message", &MessageView::from(m)),
        TurnEvent::Routed(m) => sse("routing", &MessageView::from(m)),
        TurnEvent::Run(RunEvent::Delta { agent, text }) => {
            sse("delta", &json!({"agent": agent, "text": text}))
        }
        TurnEvent::Run(RunEvent::ToolCall {
            agent,
            id,
            name,
            arguments,
        }) => sse(
            "tool_call",
            &json!({"agent": agent, "id": id, "name": name, "arguments": arguments}),
        ),
        TurnEvent::Run(RunEvent::ToolResult {
            agent,
            id,
            name,
            ok,
            result,
        }) => sse(
            "tool_result",
            &json!({"agent": agent, "id": id, "name": name, "ok": ok, "result": result}),
        ),
    }
}

/// Sends the caller's message: the orchestrator routes it, the chosen agent answers, and the
/// turn is stored. 200 with the turn; with `Accept: text/event-stream`, the events `message`,
/// `routing`, `tool_call`, `tool_result`, `delta` as they happen, then `done` with the turn
/// (or `error`). A client that disconnects does not stop the turn: it is stored all the same.
pub async fn post_message(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<PostMessage>,
) -> Result<Response, ApiError> {
    let chars = body.content.chars().count();
    if body.content.trim().is_empty() || chars > MAX_MESSAGE_CHARS {
        return Err(ApiError::field(
            "content",
            format!(
                "content must be 1 to {MAX_MESSAGE_CHARS} characters, not blank (it has {chars})"
            ),
        ));
    }
    let conversation = own(&state, &user, &id).await?;
    let serving = state.serving()?.clone();
    let actor = crate::principals::actor(&user);
    if !wants_stream(&headers) {
        // The request runs in a task of its own (`error::to_the_end`): a client that
        // disconnects stops waiting, not the turn.
        let turn = conversations::turn(&serving, &actor, &conversation, &body.content, None)
            .await
            .map_err(|e| ApiError::internal("storing the conversation failed", &e))?;
        return Ok(Json(TurnView::from(turn)).into_response());
    }
    let (events, receiver) = tokio::sync::mpsc::unbounded_channel();
    let (done, finished) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let turn =
            conversations::turn(&serving, &actor, &conversation, &body.content, Some(events)).await;
        let _ = done.send(turn);
    });
    let progress = tokio_stream_from(receiver).map(turn_event);
    let last = futures::stream::once(async move {
        match finished.await {
            Ok(Ok(turn)) => sse("done", &TurnView::from(turn)),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "a streamed conversation turn failed");
                sse(
                    "error",
                    &json!({"message": "the turn could not be stored; try again"}),
                )
            }
            Err(_) => sse("error", &json!({"message": "the turn was interrupted"})),
        }
    });
    let stream = progress.chain(last).map(Ok::<_, Infallible>);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The events of `receiver`, until every sender is gone.
fn tokio_stream_from<T: Send + 'static>(
    receiver: tokio::sync::mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    })
}

/// The routes of conversations.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/conversations", post(create).get(list))
        .route("/conversations/{id}", get(detail))
        .route("/conversations/{id}/messages", post(post_message))
}
