//! Group rooms of a tenant: the rooms, their members by canonical key, and the timeline.
//!
//! A post is one write transaction that advances the room's `last_seq` and `last_at` (the row
//! lock orders posts on PostgreSQL, the write lock on SQLite), checks the sender's membership
//! against the membership of that instant, and stores the message with the next sequence and
//! a time strictly after the room's last (a microsecond later when the clock has not moved or
//! went back): a room's messages are numbered 1, 2, ... in commit order and no two share a
//! time, so the timeline's `before` cursor and the stream's `Last-Event-ID` are exact. On
//! PostgreSQL the same transaction notifies channel [`ROOM_CHANNEL`] with the room and the
//! sequence (delivered to listeners on commit); [`RoomNotifications`] listens to it.

use jiff::Timestamp;
use serde_json::{Map, Value};
use sqlx::Row;

use crate::installs::{json_list, json_object};
use crate::tenant_tokens::random_uuid;
use crate::{Pool, Result, Store, StoreError, TenantKey, micros, millis, now_millis, on_pool};

/// The PostgreSQL channel a post notifies: the payload is `<room_id> <seq>`.
pub const ROOM_CHANNEL: &str = "atrium_rooms";

/// The second word of a [`ROOM_CHANNEL`] payload when a member left the room (instead of a
/// message's sequence).
const MEMBERS_CHANGED: &str = "members";

/// Who a member is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberKind {
    /// An agent of an installed app.
    Agent {
        /// The app.
        app_id: String,
        /// The agent.
        agent_slug: String,
    },
    /// A user of the tenant.
    User {
        /// The user's UUID.
        user_id: String,
    },
}

impl MemberKind {
    /// The canonical key: `<app_id>:<agent_slug>` or `user:<user_id>`.
    #[must_use]
    pub fn key(&self) -> String {
        match self {
            MemberKind::Agent { app_id, agent_slug } => format!("{app_id}:{agent_slug}"),
            MemberKind::User { user_id } => format!("user:{user_id}"),
        }
    }

    /// `agent` or `user`.
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        match self {
            MemberKind::Agent { .. } => "agent",
            MemberKind::User { .. } => "user",
        }
    }
}

/// A member to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRoomMember {
    /// Who.
    pub kind: MemberKind,
    /// The name shown.
    pub display_name: String,
}

/// A member of a room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomMember {
    /// The canonical key.
    pub key: String,
    /// Who.
    pub kind: MemberKind,
    /// The name shown.
    pub display_name: String,
    /// Who added it (a canonical key).
    pub added_by: String,
    /// When.
    pub added_at: Timestamp,
}

/// A stored room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// A UUID.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Who created it (a canonical key).
    pub created_by: String,
    /// How many members it has.
    pub member_count: i64,
    /// Its members, oldest first (empty in a list).
    pub members: Vec<RoomMember>,
    /// The sequence of its last message, 0 for none.
    pub last_seq: i64,
    /// The time of its last message, none before the first.
    pub last_message_at: Option<Timestamp>,
    /// Creation.
    pub created_at: Timestamp,
    /// Last change of the room or its members.
    pub updated_at: Timestamp,
}

/// A message to store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewRoomMessage<'a> {
    /// `agent`, `user` or `system`.
    pub sender_type: &'a str,
    /// The sender's canonical key; it must be a member (but for `system`).
    pub sender_ref: &'a str,
    /// The sender's name shown.
    pub sender_display: &'a str,
    /// The text.
    pub content: &'a str,
    /// The canonical keys the text mentions, each once.
    pub mentions: &'a [String],
    /// A JSON object.
    pub metadata: &'a Map<String, Value>,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomMessage {
    /// The room.
    pub room_id: String,
    /// Its place in the room, from 1.
    pub seq: i64,
    /// A UUID.
    pub id: String,
    /// `agent`, `user` or `system`.
    pub sender_type: String,
    /// The sender's canonical key.
    pub sender_ref: String,
    /// The sender's name shown.
    pub sender_display: String,
    /// The text.
    pub content: String,
    /// The canonical keys the text mentions.
    pub mentions: Vec<String>,
    /// A JSON object.
    pub metadata: Map<String, Value>,
    /// When it was stored (to the microsecond), strictly increasing with `seq`.
    pub created_at: Timestamp,
}

/// How a post went.
#[derive(Debug, Clone, PartialEq)]
pub enum Posted {
    /// Stored: the message and the room's member keys at that instant.
    Stored {
        /// The message.
        message: Box<RoomMessage>,
        /// The members when it was stored.
        members: Vec<String>,
    },
    /// The tenant has no such room.
    UnknownRoom,
    /// The sender is not a member.
    NotMember,
}

/// How adding a member went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberAdded {
    /// Added (`true`) or already a member (`false`).
    Added(bool),
    /// The room has `limit` members already.
    Full {
        /// The room's limit.
        limit: i64,
    },
    /// The tenant has no such room.
    UnknownRoom,
}

const ROOM_COLUMNS: &str = "r.id, r.name, r.created_by, r.last_seq, r.last_at, r.created_at, \
    r.updated_at, (SELECT COUNT(*) FROM room_members m WHERE m.org_id = r.org_id \
    AND m.tenant_id = r.tenant_id AND m.room_id = r.id) AS member_count";

const MESSAGE_COLUMNS: &str = "room_id, seq, id, sender_type, sender_ref, sender_display, \
    content, mentions, metadata, created_at";

fn room_from<R: Row>(row: &R) -> Result<Room>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let last_seq: i64 = row.try_get("last_seq")?;
    Ok(Room {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        created_by: row.try_get("created_by")?,
        member_count: row.try_get("member_count")?,
        members: Vec::new(),
        last_seq,
        last_message_at: if last_seq > 0 {
            Some(micros(row.try_get("last_at")?)?)
        } else {
            None
        },
        created_at: millis(row.try_get("created_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
    })
}

fn member_from<R: Row>(row: &R) -> Result<RoomMember>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let kind: String = row.try_get("member_type")?;
    let app_id: Option<String> = row.try_get("app_id")?;
    let agent_slug: Option<String> = row.try_get("agent_slug")?;
    let user_id: Option<String> = row.try_get("user_id")?;
    let kind = match (kind.as_str(), app_id, agent_slug, user_id) {
        ("agent", Some(app_id), Some(agent_slug), _) => MemberKind::Agent { app_id, agent_slug },
        ("user", _, _, Some(user_id)) => MemberKind::User { user_id },
        (other, ..) => {
            return Err(StoreError::Corrupt(format!(
                "a room member of type `{other}` lacks its columns"
            )));
        }
    };
    Ok(RoomMember {
        key: row.try_get("member_key")?,
        kind,
        display_name: row.try_get("display_name")?,
        added_by: row.try_get("added_by")?,
        added_at: millis(row.try_get("added_at")?)?,
    })
}

fn message_from<R: Row>(row: &R) -> Result<RoomMessage>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let mentions: String = row.try_get("mentions")?;
    let metadata: String = row.try_get("metadata")?;
    Ok(RoomMessage {
        room_id: row.try_get("room_id")?,
        seq: row.try_get("seq")?,
        id: row.try_get("id")?,
        sender_type: row.try_get("sender_type")?,
        sender_ref: row.try_get("sender_ref")?,
        sender_display: row.try_get("sender_display")?,
        content: row.try_get("content")?,
        mentions: json_list(&mentions)?,
        metadata: json_object(&metadata)?,
        created_at: micros(row.try_get("created_at")?)?,
    })
}

fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Internal(format!("a value does not encode as JSON: {e}")))
}

/// The parts of a member's row.
fn member_columns(kind: &MemberKind) -> (Option<&str>, Option<&str>, Option<&str>) {
    match kind {
        MemberKind::Agent { app_id, agent_slug } => (Some(app_id), Some(agent_slug), None),
        MemberKind::User { user_id } => (None, None, Some(user_id)),
    }
}

const INSERT_MEMBER: &str = "INSERT INTO room_members (org_id, tenant_id, room_id, member_key, \
    member_type, app_id, agent_slug, user_id, display_name, added_by, added_at, ordinal) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
    ON CONFLICT (org_id, tenant_id, room_id, member_key) DO NOTHING";

impl Store {
    /// Creates a room named `name` by `created_by` with `members` (each once): its id a new
    /// UUID.
    pub async fn create_room(
        &self,
        tenant: &TenantKey,
        name: &str,
        created_by: &str,
        members: &[NewRoomMember],
    ) -> Result<Room> {
        let id = random_uuid()?;
        let now = now_millis();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            sqlx::query(
                "INSERT INTO rooms (org_id, tenant_id, id, name, created_by, last_seq, last_at, \
                   created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 0, 0, $6, $6)",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(&id).bind(name).bind(created_by)
            .bind(now)
            .execute(&mut *tx).await?;
            for (ordinal, member) in (0i64..).zip(members) {
                let (app_id, agent_slug, user_id) = member_columns(&member.kind);
                sqlx::query(INSERT_MEMBER)
                    .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(&id)
                    .bind(member.kind.key()).bind(member.kind.type_name())
                    .bind(app_id).bind(agent_slug).bind(user_id).bind(&member.display_name)
                    .bind(created_by).bind(now).bind(ordinal)
                    .execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        self.room(tenant, &id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("the new room `{id}` vanished")))
    }

    /// The room `id` of a tenant with its members.
    pub async fn room(&self, tenant: &TenantKey, id: &str) -> Result<Option<Room>> {
        let sql = format!(
            "SELECT {ROOM_COLUMNS} FROM rooms r WHERE r.org_id = $1 AND r.tenant_id = $2 AND r.id = $3"
        );
        let members_sql = "SELECT member_key, member_type, app_id, agent_slug, user_id, \
             display_name, added_by, added_at FROM room_members \
             WHERE org_id = $1 AND tenant_id = $2 AND room_id = $3 ORDER BY ordinal";
        on_pool!(self, pool => {
            let Some(row) = sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
                .fetch_optional(pool).await?
            else {
                return Ok(None);
            };
            let mut room = room_from(&row)?;
            room.members = sqlx::query(members_sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
                .fetch_all(pool).await?
                .iter()
                .map(member_from)
                .collect::<Result<_>>()?;
            Ok(Some(room))
        })
    }

    /// A page of a tenant's rooms, newest first: every room, or those `member` (a canonical
    /// key) belongs to; at most `limit`, after the room with creation time and id `after`.
    /// The rooms come without their members.
    pub async fn rooms_page(
        &self,
        tenant: &TenantKey,
        member: Option<&str>,
        after: Option<(Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<Room>> {
        let (at, id) = after.map_or((i64::MAX, "\u{10ffff}"), |(at, key)| {
            (at.as_millisecond(), key)
        });
        let sql = format!(
            "SELECT {ROOM_COLUMNS} FROM rooms r WHERE r.org_id = $1 AND r.tenant_id = $2 \
             AND ($3 IS NULL OR EXISTS (SELECT 1 FROM room_members k WHERE k.org_id = r.org_id \
               AND k.tenant_id = r.tenant_id AND k.room_id = r.id AND k.member_key = $3)) \
             AND (r.created_at < $4 OR (r.created_at = $4 AND r.id < $5)) \
             ORDER BY r.created_at DESC, r.id DESC LIMIT $6"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(member)
                .bind(at).bind(id).bind(limit)
                .fetch_all(pool).await?
                .iter()
                .map(room_from)
                .collect()
        })
    }

    /// Adds `member` to room `room` by `added_by`, unless the room holds `limit` members.
    pub async fn add_room_member(
        &self,
        tenant: &TenantKey,
        room: &str,
        member: &NewRoomMember,
        added_by: &str,
        limit: i64,
    ) -> Result<MemberAdded> {
        let now = now_millis();
        let key = member.kind.key();
        let (app_id, agent_slug, user_id) = member_columns(&member.kind);
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            // The room's row first: it orders this change with posts and other changes.
            let touched = sqlx::query(
                "UPDATE rooms SET updated_at = $1 WHERE org_id = $2 AND tenant_id = $3 AND id = $4",
            )
            .bind(now).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room)
            .execute(&mut *tx).await?
            .rows_affected();
            if touched == 0 {
                return Ok(MemberAdded::UnknownRoom);
            }
            let present = sqlx::query(
                "SELECT member_key, ordinal FROM room_members \
                 WHERE org_id = $1 AND tenant_id = $2 AND room_id = $3",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room)
            .fetch_all(&mut *tx).await?;
            let (mut count, mut next) = (0i64, 0i64);
            for row in &present {
                let existing: String = row.try_get("member_key")?;
                if existing == key {
                    return Ok(MemberAdded::Added(false));
                }
                count += 1;
                next = next.max(row.try_get::<i64, _>("ordinal")? + 1);
            }
            if count >= limit {
                return Ok(MemberAdded::Full { limit });
            }
            sqlx::query(INSERT_MEMBER)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room)
                .bind(&key).bind(member.kind.type_name())
                .bind(app_id).bind(agent_slug).bind(user_id).bind(&member.display_name)
                .bind(added_by).bind(now).bind(next)
                .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(MemberAdded::Added(true))
        })
    }

    /// Removes the member `key` from room `room`: whether it was a member, or none when the
    /// tenant has no such room.
    pub async fn remove_room_member(
        &self,
        tenant: &TenantKey,
        room: &str,
        key: &str,
    ) -> Result<Option<bool>> {
        let now = now_millis();
        let is_pg = matches!(self.pool, Pool::Postgres(_));
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let touched = sqlx::query(
                "UPDATE rooms SET updated_at = $1 WHERE org_id = $2 AND tenant_id = $3 AND id = $4",
            )
            .bind(now).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room)
            .execute(&mut *tx).await?
            .rows_affected();
            if touched == 0 {
                return Ok(None);
            }
            let removed = sqlx::query(
                "DELETE FROM room_members WHERE org_id = $1 AND tenant_id = $2 AND room_id = $3 \
                 AND member_key = $4",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room).bind(key)
            .execute(&mut *tx).await?
            .rows_affected();
            if removed > 0 && is_pg {
                // Every host re-checks the access of its open streams of the room.
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(ROOM_CHANNEL).bind(format!("{room} {MEMBERS_CHANGED}"))
                    .execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(Some(removed > 0))
        })
    }

    /// Posts `message` to room `room` at `now` (the caller's clock): the next sequence,
    /// a time strictly after the room's last message, the sender's membership checked in the
    /// same transaction (a `system` sender needs none). On PostgreSQL the commit notifies
    /// [`ROOM_CHANNEL`] when `notify` is set.
    pub async fn post_room_message(
        &self,
        tenant: &TenantKey,
        room: &str,
        message: &NewRoomMessage<'_>,
        now: Timestamp,
        notify: bool,
    ) -> Result<Posted> {
        let id = random_uuid()?;
        let mentions = to_json(&message.mentions)?;
        let metadata = to_json(message.metadata)?;
        let sql = format!(
            "INSERT INTO room_messages ({MESSAGE_COLUMNS}, org_id, tenant_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
        );
        let is_pg = matches!(self.pool, Pool::Postgres(_));
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let Some(row) = sqlx::query(
                "UPDATE rooms SET last_seq = last_seq + 1, \
                   last_at = CASE WHEN $1 > last_at THEN $1 ELSE last_at + 1 END \
                 WHERE org_id = $2 AND tenant_id = $3 AND id = $4 RETURNING last_seq, last_at",
            )
            .bind(now.as_microsecond()).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room)
            .fetch_optional(&mut *tx).await?
            else {
                return Ok(Posted::UnknownRoom);
            };
            let seq: i64 = row.try_get("last_seq")?;
            let at = micros(row.try_get("last_at")?)?;
            let members: Vec<String> = sqlx::query(
                "SELECT member_key FROM room_members WHERE org_id = $1 AND tenant_id = $2 \
                 AND room_id = $3 ORDER BY ordinal",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room)
            .fetch_all(&mut *tx).await?
            .iter()
            .map(|row| row.try_get("member_key"))
            .collect::<Result<_, sqlx::Error>>()?;
            if message.sender_type != "system" && !members.iter().any(|m| m == message.sender_ref) {
                // Dropping the transaction rolls the sequence back.
                return Ok(Posted::NotMember);
            }
            sqlx::query(&sql)
                .bind(room).bind(seq).bind(&id).bind(message.sender_type)
                .bind(message.sender_ref).bind(message.sender_display).bind(message.content)
                .bind(&mentions).bind(&metadata).bind(at.as_microsecond())
                .bind(&tenant.org_id).bind(&tenant.tenant_id)
                .execute(&mut *tx).await?;
            if notify && is_pg {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(ROOM_CHANNEL).bind(format!("{room} {seq}"))
                    .execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(Posted::Stored {
                message: Box::new(RoomMessage {
                    room_id: room.to_owned(),
                    seq,
                    id,
                    sender_type: message.sender_type.to_owned(),
                    sender_ref: message.sender_ref.to_owned(),
                    sender_display: message.sender_display.to_owned(),
                    content: message.content.to_owned(),
                    mentions: message.mentions.to_vec(),
                    metadata: message.metadata.clone(),
                    created_at: at,
                }),
                members,
            })
        })
    }

    /// The timeline of room `room`, newest first: at most `limit` messages stored before
    /// `before` (all when none).
    pub async fn room_messages_before(
        &self,
        tenant: &TenantKey,
        room: &str,
        before: Option<Timestamp>,
        limit: i64,
    ) -> Result<Vec<RoomMessage>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM room_messages WHERE org_id = $1 AND tenant_id = $2 \
             AND room_id = $3 AND created_at < $4 ORDER BY created_at DESC LIMIT $5"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room)
                .bind(before.map_or(i64::MAX, Timestamp::as_microsecond)).bind(limit)
                .fetch_all(pool).await?
                .iter()
                .map(message_from)
                .collect()
        })
    }

    /// The messages of room `room` after sequence `after`, oldest first: at most `limit`.
    pub async fn room_messages_after(
        &self,
        tenant: &TenantKey,
        room: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<RoomMessage>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM room_messages WHERE org_id = $1 AND tenant_id = $2 \
             AND room_id = $3 AND seq > $4 ORDER BY seq LIMIT $5"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(room).bind(after).bind(limit)
                .fetch_all(pool).await?
                .iter()
                .map(message_from)
                .collect()
        })
    }

    /// The display name of user `user_id` of a tenant, if the tenant has such a user.
    pub async fn tenant_user_name(
        &self,
        tenant: &TenantKey,
        user_id: &str,
    ) -> Result<Option<String>> {
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "SELECT display_name FROM tenant_users WHERE org_id = $1 AND tenant_id = $2 AND user_id = $3",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(user_id)
            .fetch_optional(pool).await?
            .map(|row| row.try_get::<String, _>("display_name"))
            .transpose()?)
        })
    }

    /// Listens to the notifications of posts, on PostgreSQL; none on SQLite, where every post
    /// is taken by the one host.
    pub async fn room_notifications(&self) -> Result<Option<RoomNotifications>> {
        match &self.pool {
            Pool::Sqlite(_) => Ok(None),
            Pool::Postgres(pool) => {
                let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
                listener.listen(ROOM_CHANNEL).await?;
                Ok(Some(RoomNotifications { listener }))
            }
        }
    }
}

/// A notification of the room listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoomNotification {
    /// Message `seq` was stored in room `room_id`.
    Posted {
        /// The room.
        room_id: String,
        /// The message's sequence.
        seq: i64,
    },
    /// A member was removed from room `room_id`: the streams of the room check again that
    /// their reader may read it.
    MembersChanged {
        /// The room.
        room_id: String,
    },
    /// The listening connection was lost: what is notified until a new listener listens is
    /// lost, so the listener listens again and catches up from the timeline.
    Lost,
}

/// The notifications of posts on PostgreSQL, from a connection of their own.
pub struct RoomNotifications {
    listener: sqlx::postgres::PgListener,
}

impl std::fmt::Debug for RoomNotifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoomNotifications").finish_non_exhaustive()
    }
}

impl RoomNotifications {
    /// The next notification. A payload that is neither `<room> <seq>` nor `<room> members`
    /// is skipped; an error is the connection failing, which the caller treats as
    /// [`RoomNotification::Lost`].
    pub async fn next(&mut self) -> Result<RoomNotification> {
        loop {
            match self.listener.try_recv().await? {
                None => return Ok(RoomNotification::Lost),
                Some(n) => match parse_notification(n.payload()) {
                    Some(notification) => return Ok(notification),
                    None => tracing::warn!(
                        payload = n.payload(),
                        "a room notification that is neither `<room> <seq>` nor `<room> members`"
                    ),
                },
            }
        }
    }
}

/// A [`ROOM_CHANNEL`] payload: `<room> <seq>` or `<room> members`.
fn parse_notification(payload: &str) -> Option<RoomNotification> {
    let (room, what) = payload.split_once(' ')?;
    let room_id = room.to_owned();
    if what == MEMBERS_CHANGED {
        return Some(RoomNotification::MembersChanged { room_id });
    }
    Some(RoomNotification::Posted {
        room_id,
        seq: what.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::{RoomNotification, parse_notification};

    #[test]
    fn notifications_name_a_message_or_a_change_of_members() {
        assert_eq!(
            parse_notification("r-1 42"),
            Some(RoomNotification::Posted {
                room_id: "r-1".into(),
                seq: 42
            })
        );
        assert_eq!(
            parse_notification("r-1 members"),
            Some(RoomNotification::MembersChanged {
                room_id: "r-1".into()
            })
        );
        for bad in ["r-1", "r-1 x", "r-1 4 2", ""] {
            assert_eq!(parse_notification(bad), None, "{bad}");
        }
    }
}
