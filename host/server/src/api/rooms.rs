//! `/api/agent-rooms`: the tenant's group rooms for its users (a tenant token; a member, or
//! the tenant's admin, who sees every room): list, create, detail, members, the timeline,
//! posting as the caller, and the live stream (server-sent events). The rules are the
//! platform's (`atrium_platform::rooms`); docs/platform.md, "Group rooms", documents the
//! payloads.

use std::convert::Infallible;
use std::sync::Arc;

use crate::routing::{Routes, delete, get};
use atrium_manifest::sandbox::ChainContext;
use atrium_platform::Refusal;
use atrium_platform::rooms::{
    self, Delivery, MessageSender, Next, Participant, PostedMessage, Rooms, Subscription,
};
use atrium_store::{MemberKind, Room, RoomMember, RoomMessage, TenantPrincipal, TenantRole};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::views::time;
use crate::page::{Listed, Page, PageRequest, time_and_id};
use crate::principals::{TenantUser, actor};
use crate::{ApiError, HostState, JsonBody, QueryParams};

/// The default and the largest page of the timeline.
pub const TIMELINE_PAGE: usize = 100;
/// The largest page of the timeline.
pub const MAX_TIMELINE_PAGE: usize = 500;

/// A member as answered.
#[derive(Debug, Clone, Serialize)]
pub struct MemberView {
    /// `agent` or `user`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The canonical key: `<app_id>:<agent_slug>` or `user:<user_id>`.
    pub key: String,
    /// An agent's app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_id: Option<String>,
    /// An agent's slug.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_slug: Option<String>,
    /// A user's UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The name shown.
    pub display_name: String,
    /// Who added it.
    pub added_by: String,
    /// When.
    pub added_at: String,
}

impl From<RoomMember> for MemberView {
    fn from(m: RoomMember) -> Self {
        let kind = m.kind.type_name();
        let (app_id, agent_slug, user_id) = match m.kind {
            MemberKind::Agent { app_id, agent_slug } => (Some(app_id), Some(agent_slug), None),
            MemberKind::User { user_id } => (None, None, Some(user_id)),
        };
        MemberView {
            kind,
            key: m.key,
            app_id,
            agent_slug,
            user_id,
            display_name: m.display_name,
            added_by: m.added_by,
            added_at: time(m.added_at),
        }
    }
}

/// A room as answered.
#[derive(Debug, Clone, Serialize)]
pub struct RoomView {
    /// A UUID.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Who created it (a canonical key).
    pub created_by: String,
    /// How many members it has.
    pub member_count: i64,
    /// Its members (in the detail, not in the list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<MemberView>>,
    /// How many messages it holds (the sequence of the last).
    pub message_count: i64,
    /// When its last message was posted.
    pub last_message_at: Option<String>,
    /// Creation.
    pub created_at: String,
    /// Last change of the room or its members.
    pub updated_at: String,
}

impl RoomView {
    fn of(room: Room, with_members: bool) -> Self {
        RoomView {
            id: room.id,
            name: room.name,
            created_by: room.created_by,
            member_count: room.member_count,
            members: with_members.then(|| room.members.into_iter().map(Into::into).collect()),
            message_count: room.last_seq,
            last_message_at: room.last_message_at.map(rooms::iso_micros),
            created_at: time(room.created_at),
            updated_at: time(room.updated_at),
        }
    }
}

impl Listed for RoomView {
    const KEY: &'static str = "rooms";
}

/// A room message as answered (the spec's room message, with its place in the room).
#[derive(Debug, Clone, Serialize)]
pub struct MessageView {
    /// A UUID.
    pub id: String,
    /// The room.
    pub room_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// Its place in the room, from 1 (the stream's event id).
    pub seq: i64,
    /// `agent`, `user` or `system`.
    pub sender_type: String,
    /// The sender's canonical key.
    pub sender_ref: String,
    /// The sender's name shown.
    pub sender_display: String,
    /// The text.
    pub content: String,
    /// The canonical keys the text mentions, each once, in order.
    pub mentions: Vec<String>,
    /// A JSON object.
    pub metadata: Map<String, Value>,
    /// When it was posted, ISO-8601 with microseconds; no two messages of a room share it.
    pub created_at: String,
}

impl MessageView {
    /// The view of `m`, a message of `tenant_id`.
    pub fn of(tenant_id: &str, m: RoomMessage) -> Self {
        MessageView {
            id: m.id,
            room_id: m.room_id,
            tenant_id: tenant_id.to_owned(),
            seq: m.seq,
            sender_type: m.sender_type,
            sender_ref: m.sender_ref,
            sender_display: m.sender_display,
            content: m.content,
            mentions: m.mentions,
            metadata: m.metadata,
            created_at: rooms::iso_micros(m.created_at),
        }
    }
}

/// `POST /api/agent-rooms`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRoom {
    /// 1 to 200 characters.
    pub name: String,
    /// Canonical keys of the members besides the creator.
    #[serde(default)]
    pub members: Vec<String>,
}

/// `POST /api/agent-rooms/{id}/members`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddMember {
    /// The canonical key of the member: `user:<uuid>` or `<app_id>:<agent_slug>`.
    pub key: String,
}

/// The answer of adding a member.
#[derive(Debug, Serialize)]
pub struct MemberAdded {
    /// False when it was a member already.
    pub added: bool,
    /// The room after.
    pub room: RoomView,
}

/// `GET /api/agent-rooms/{id}/messages`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineQuery {
    /// The page size: 1 to 500, default 100.
    #[serde(default)]
    pub limit: Option<String>,
    /// Only messages posted before this time (ISO-8601): the `next_before` of the previous
    /// page.
    #[serde(default)]
    pub before: Option<String>,
}

/// A page of the timeline, newest first.
#[derive(Debug, Serialize)]
pub struct Timeline {
    /// The messages.
    pub messages: Vec<MessageView>,
    /// The `before` of the next (older) page: the oldest `created_at` of this one, when more
    /// messages follow.
    pub next_before: Option<String>,
}

/// `POST /api/agent-rooms/{id}/messages`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// 1 to 20,000 characters, not blank.
    pub content: String,
    /// A JSON object stored with the message.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// The answer of a post (also of `POST /api/mcp/rooms-post`).
#[derive(Debug, Serialize)]
pub struct PostedView {
    /// The stored message.
    pub message: MessageView,
    /// The mentioned members it was routed to.
    pub routed_targets: Vec<String>,
}

impl PostedView {
    /// The view of `posted`, a post of `tenant_id`.
    pub fn of(tenant_id: &str, posted: PostedMessage) -> Self {
        PostedView {
            message: MessageView::of(tenant_id, posted.message),
            routed_targets: posted.routed_targets,
        }
    }
}

fn participant(user: &TenantPrincipal) -> Participant {
    Participant::User {
        user_id: user.user_id.clone(),
        display_name: user.display_name.clone(),
        admin: user.role == TenantRole::Admin,
    }
}

/// The rooms the caller is a member of (every room of the tenant for its admin), newest
/// first.
pub async fn list(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    page: PageRequest,
) -> Result<Json<Page<RoomView>>, ApiError> {
    let key = participant(&user).key();
    let member = (user.role != TenantRole::Admin).then_some(key.as_str());
    let rows = state
        .store
        .rooms_page(&user.key(), member, page.after_time_and_id()?, page.fetch())
        .await?;
    Ok(Json(Page::keyed(
        rows,
        &page,
        |r| time_and_id(r.created_at, &r.id),
        |r| RoomView::of(r, false),
    )))
}

/// Creates a room with the caller and the members named: 201 with the room.
pub async fn create(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    JsonBody(body): JsonBody<CreateRoom>,
) -> Result<(StatusCode, Json<RoomView>), ApiError> {
    let room = Rooms::of(state.serving()?)
        .create_room(
            &actor(&user),
            &participant(&user),
            &body.name,
            &body.members,
        )
        .await
        .map_err(ApiError::from)?;
    Ok((StatusCode::CREATED, Json(RoomView::of(room, true))))
}

/// One room with its members.
pub async fn detail(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
) -> Result<Json<RoomView>, ApiError> {
    let room = Rooms::of(state.serving()?)
        .room_for(&user.key(), &participant(&user), &id)
        .await
        .map_err(ApiError::from)?;
    Ok(Json(RoomView::of(room, true)))
}

/// Adds a member: 201 when added, 200 when it was one already.
pub async fn add_member(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AddMember>,
) -> Result<(StatusCode, Json<MemberAdded>), ApiError> {
    let (added, room) = Rooms::of(state.serving()?)
        .add_room_member(&actor(&user), &participant(&user), &id, &body.key)
        .await
        .map_err(ApiError::from)?;
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(MemberAdded {
            added,
            room: RoomView::of(room, true),
        }),
    ))
}

/// Removes the member `key`: 200 with the room after.
pub async fn remove_member(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path((id, key)): Path<(String, String)>,
) -> Result<Json<RoomView>, ApiError> {
    let room = Rooms::of(state.serving()?)
        .remove_room_member(&actor(&user), &participant(&user), &id, &key)
        .await
        .map_err(ApiError::from)?;
    Ok(Json(RoomView::of(room, true)))
}

/// The page size of `limit`.
fn timeline_limit(limit: Option<&str>) -> Result<usize, ApiError> {
    match limit {
        None => Ok(TIMELINE_PAGE),
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_TIMELINE_PAGE).contains(n))
            .ok_or_else(|| {
                ApiError::field(
                    "limit",
                    format!(
                        "limit must be a whole number from 1 to {MAX_TIMELINE_PAGE}, got `{text}`"
                    ),
                )
            }),
    }
}

/// A page of the timeline, newest first.
pub async fn timeline(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<TimelineQuery>,
) -> Result<Json<Timeline>, ApiError> {
    let limit = timeline_limit(query.limit.as_deref())?;
    let before = query
        .before
        .as_deref()
        .map(|text| {
            text.parse::<jiff::Timestamp>().map_err(|_| {
                    ApiError::field(
                        "before",
                        format!("before must be an ISO-8601 time such as 2026-11-28T21:30:00.123456Z (a message's created_at), got `{text}`"),
                    )
                })
        })
        .transpose()?;
    let tenant = user.key();
    Rooms::of(state.serving()?)
        .room_for(&tenant, &participant(&user), &id)
        .await
        .map_err(ApiError::from)?;
    let mut rows = state
        .store
        .room_messages_before(
            &tenant,
            &id,
            before,
            i64::try_from(limit + 1).unwrap_or(501),
        )
        .await?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next_before = more
        .then(|| rows.last().map(|m| rooms::iso_micros(m.created_at)))
        .flatten();
    Ok(Json(Timeline {
        messages: rows
            .into_iter()
            .map(|m| MessageView::of(&tenant.tenant_id, m))
            .collect(),
        next_before,
    }))
}

/// Posts as the caller (a member): 201 with the message and where it was routed.
pub async fn post_message(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<PostMessage>,
) -> Result<(StatusCode, Json<PostedView>), ApiError> {
    let sender = MessageSender::User {
        user_id: user.user_id.clone(),
        display_name: user.display_name.clone(),
    };
    let posted = Rooms::of(state.serving()?)
        .post_message(
            &actor(&user),
            &id,
            &sender,
            &body.content,
            &body.metadata.unwrap_or_default(),
            &ChainContext::root(),
        )
        .await
        .map_err(ApiError::from)?;
    Ok((
        StatusCode::CREATED,
        Json(PostedView::of(&user.tenant_id, posted)),
    ))
}

/// The `Last-Event-ID` of a reconnecting client: the sequence of the last message it got.
fn last_event_id(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    headers
        .get("last-event-id")
        .map(|v| {
            v.to_str()
                .ok()
                .and_then(|t| t.trim().parse::<i64>().ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "Last-Event-ID must be the id of an event this stream sent (a message's seq)",
                        Some("Last-Event-ID"),
                    )
                })
        })
        .transpose()
}

fn message_event(tenant_id: &str, delivery: &Arc<Delivery>) -> Event {
    let data = delivery.encoded(|m| {
        serde_json::to_string(&MessageView::of(tenant_id, m.clone()))
            .unwrap_or_else(|_| "null".into())
    });
    Event::default()
        .event("message")
        .id(delivery.message.seq.to_string())
        .data(data)
}

/// The last event of a stream whose reader may no longer read the room (`event: closed`).
#[derive(Debug, Serialize)]
pub struct StreamClosed {
    /// `not_member` (the reader was removed) or `unknown_room`.
    pub code: &'static str,
    /// What happened, in words.
    pub message: String,
}

/// A stream's reader, checked again when a member leaves the room.
struct Reader {
    serving: atrium_platform::serving::Serving,
    tenant: atrium_store::TenantKey,
    tenant_id: String,
    who: Participant,
    room: String,
}

impl Reader {
    /// The next event of the stream: a message, or the `closed` event that ends it when the
    /// reader may no longer read the room; none when the stream ends otherwise.
    async fn next(&self, subscription: &mut Subscription) -> Option<(Event, bool)> {
        loop {
            match subscription.next().await? {
                Next::Message(delivery) => {
                    return Some((message_event(&self.tenant_id, &delivery), true));
                }
                Next::MembersChanged => {
                    let (code, message) = match Rooms::of(&self.serving)
                        .room_for(&self.tenant, &self.who, &self.room)
                        .await
                    {
                        Ok(_) => continue,
                        Err(
                            Refusal::Forbidden { code, message }
                            | Refusal::NotFound { code, message },
                        ) => (code, message),
                        Err(e) => {
                            // The client reconnects, and is checked again then.
                            tracing::warn!(error = %e, room = %self.room, "checking a stream's reader failed; the stream ends");
                            return None;
                        }
                    };
                    let data = serde_json::to_string(&StreamClosed { code, message })
                        .unwrap_or_else(|_| "null".into());
                    return Some((Event::default().event("closed").data(data), false));
                }
            }
        }
    }
}

/// The live stream of a room: an `event: message` block (id: the message's seq, data: the
/// message) for each new post, a `: keepalive` comment when idle, and with `Last-Event-ID`
/// first what the client missed. Ends when the client goes away or the host stops; when a
/// member leaves, the reader is checked again, and a reader removed from the room gets a last
/// `event: closed` (`{"code": "not_member", "message"}`) before any later message.
pub async fn stream(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = last_event_id(&headers)?;
    let tenant = user.key();
    let serving = state.serving()?;
    Rooms::of(serving)
        .room_for(&tenant, &participant(&user), &id)
        .await
        .map_err(ApiError::from)?;
    let hub = serving.rooms();
    let subscription = hub.subscribe(&tenant, &id, after).await?;
    let reader = Arc::new(Reader {
        serving: serving.clone(),
        tenant,
        tenant_id: user.tenant_id.clone(),
        who: participant(&user),
        room: id,
    });
    let events = futures::stream::unfold(Some(subscription), move |open| {
        let reader = reader.clone();
        async move {
            let mut subscription = open?;
            let (event, goes_on) = reader.next(&mut subscription).await?;
            Some((event, goes_on.then_some(subscription)))
        }
    })
    .map(Ok::<_, Infallible>);
    Ok(Sse::new(events)
        .keep_alive(
            KeepAlive::new()
                .interval(hub.config().keepalive)
                .text("keepalive"),
        )
        .into_response())
}

/// The routes of rooms (the spec's paths end in `/`; both forms are served).
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/agent-rooms", get(list).post(create))
        .route("/agent-rooms/", get(list).post(create))
        .route("/agent-rooms/{id}", get(detail))
        .route(
            "/agent-rooms/{id}/members",
            crate::routing::post(add_member),
        )
        .route("/agent-rooms/{id}/members/{key}", delete(remove_member))
        .route(
            "/agent-rooms/{id}/messages",
            get(timeline).post(post_message),
        )
        .route("/agent-rooms/{id}/stream", get(stream))
}
