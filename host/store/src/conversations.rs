//! Conversations: a tenant user's talk with the tenant's installed apps through the
//! orchestrator. A conversation holds the agent it is with now; its messages are numbered from
//! 1 in the order they were stored, which is the order they are read back.

use jiff::Timestamp;
use serde_json::{Map, Value};
use sqlx::Row;

use crate::{Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, random_hex};

/// A stored conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    /// `cnv_...`.
    pub id: String,
    /// The user whose conversation it is.
    pub user_id: String,
    /// The channel it happens on (`web` unless the client says otherwise).
    pub channel: String,
    /// A title, if given.
    pub title: Option<String>,
    /// The app of the agent it is with now.
    pub app_slug: Option<String>,
    /// That agent.
    pub agent: Option<String>,
    /// How many messages it holds.
    pub messages: i64,
    /// Creation.
    pub created_at: Timestamp,
    /// Last message.
    pub updated_at: Timestamp,
}

/// A message to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    /// `user`, `routing`, `assistant` or `error`.
    pub kind: &'static str,
    /// The text.
    pub content: String,
    /// The app it concerns.
    pub app_slug: Option<String>,
    /// The agent it concerns.
    pub agent: Option<String>,
    /// The rest, by kind: the routing decision, the tool calls.
    pub data: Map<String, Value>,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// Its place in the conversation, from 1.
    pub seq: i64,
    /// `user`, `routing`, `assistant` or `error`.
    pub kind: String,
    /// The text.
    pub content: String,
    /// The app it concerns.
    pub app_slug: Option<String>,
    /// The agent it concerns.
    pub agent: Option<String>,
    /// The rest.
    pub data: Map<String, Value>,
    /// When it was stored.
    pub created_at: Timestamp,
}

const COLUMNS: &str =
    "id, user_id, channel, title, app_slug, agent, next_seq, created_at, updated_at";

fn conversation_from<R: Row>(row: &R) -> Result<Conversation>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let next_seq: i64 = row.try_get("next_seq")?;
    Ok(Conversation {
        id: row.try_get("id")?,
        user_id: row.try_get("user_id")?,
        channel: row.try_get("channel")?,
        title: row.try_get("title")?,
        app_slug: row.try_get("app_slug")?,
        agent: row.try_get("agent")?,
        messages: next_seq - 1,
        created_at: millis(row.try_get("created_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
    })
}

fn message_from<R: Row>(row: &R) -> Result<StoredMessage>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let data: String = row.try_get("data")?;
    Ok(StoredMessage {
        seq: row.try_get("seq")?,
        kind: row.try_get("kind")?,
        content: row.try_get("content")?,
        app_slug: row.try_get("app_slug")?,
        agent: row.try_get("agent")?,
        data: serde_json::from_str(&data)
            .map_err(|e| StoreError::Corrupt(format!("a message's data is not JSON: {e}")))?,
        created_at: millis(row.try_get("created_at")?)?,
    })
}

impl Store {
    /// Starts a conversation of `user_id` in `tenant`.
    pub async fn create_conversation(
        &self,
        tenant: &TenantKey,
        user_id: &str,
        channel: &str,
        title: Option<&str>,
    ) -> Result<Conversation> {
        let now = now_millis();
        let id = format!("cnv_{}", random_hex(12)?);
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO conversations (org_id, tenant_id, id, user_id, channel, title, next_seq, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7)",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(&id).bind(user_id)
            .bind(channel).bind(title).bind(now)
            .execute(pool).await?;
        });
        Ok(Conversation {
            id,
            user_id: user_id.to_owned(),
            channel: channel.to_owned(),
            title: title.map(str::to_owned),
            app_slug: None,
            agent: None,
            messages: 0,
            created_at: millis(now)?,
            updated_at: millis(now)?,
        })
    }

    /// The conversation `id` of `tenant` for `user_id` on `channel`, created when it does not
    /// exist yet (a heartbeat's dedicated thread has a fixed id per agent).
    pub async fn ensure_conversation(
        &self,
        tenant: &TenantKey,
        id: &str,
        user_id: &str,
        channel: &str,
        title: Option<&str>,
    ) -> Result<Conversation> {
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO conversations (org_id, tenant_id, id, user_id, channel, title, next_seq, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7) ON CONFLICT (org_id, tenant_id, id) DO NOTHING",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id).bind(user_id)
            .bind(channel).bind(title).bind(now)
            .execute(pool).await?;
        });
        self.conversation(tenant, id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("the conversation `{id}` vanished")))
    }

    /// The conversation of `tenant` on a user-facing channel (not `heartbeat`) that is with
    /// `agent` of `app_slug` now and was written to last.
    pub async fn latest_conversation_with(
        &self,
        tenant: &TenantKey,
        app_slug: &str,
        agent: &str,
    ) -> Result<Option<Conversation>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM conversations WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 \
             AND agent = $4 AND channel <> 'heartbeat' ORDER BY updated_at DESC, id DESC LIMIT 1"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(app_slug).bind(agent)
                .fetch_optional(pool).await?
                .as_ref()
                .map(conversation_from)
                .transpose()
        })
    }

    /// One conversation of `tenant`, whoever's it is.
    pub async fn conversation(&self, tenant: &TenantKey, id: &str) -> Result<Option<Conversation>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM conversations WHERE org_id = $1 AND tenant_id = $2 AND id = $3"
        );
        on_pool!(self, pool => {
            match sqlx::query(&sql).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
                .fetch_optional(pool).await?
            {
                Some(row) => Ok(Some(conversation_from(&row)?)),
                None => Ok(None),
            }
        })
    }

    /// A page of `user_id`'s conversations, newest first: at most `limit`, after the one
    /// created at `after.0` with id `after.1`.
    pub async fn conversations_page(
        &self,
        tenant: &TenantKey,
        user_id: &str,
        after: Option<(Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<Conversation>> {
        let (at, id) = after.map_or((i64::MAX, "\u{10ffff}"), |(at, key)| {
            (at.as_millisecond(), key)
        });
        let sql = format!(
            "SELECT {COLUMNS} FROM conversations WHERE org_id = $1 AND tenant_id = $2 AND user_id = $3 \
             AND (created_at < $4 OR (created_at = $4 AND id < $5)) \
             ORDER BY created_at DESC, id DESC LIMIT $6"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(user_id)
                .bind(at).bind(id).bind(limit)
                .fetch_all(pool).await?
                .iter()
                .map(conversation_from)
                .collect()
        })
    }

    /// A page of a conversation's messages in order: at most `limit`, after `after` (a seq).
    pub async fn conversation_messages(
        &self,
        tenant: &TenantKey,
        conversation_id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StoredMessage>> {
        on_pool!(self, pool => {
            sqlx::query(
                "SELECT seq, kind, content, app_slug, agent, data, created_at FROM conversation_messages \
                 WHERE org_id = $1 AND tenant_id = $2 AND conversation_id = $3 AND seq > $4 \
                 ORDER BY seq LIMIT $5",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(conversation_id)
            .bind(after).bind(limit)
            .fetch_all(pool).await?
            .iter()
            .map(message_from)
            .collect()
        })
    }

    /// The last `count` messages of a conversation whose kind is one of `kinds`, in order
    /// (the other kinds are neither read nor counted).
    pub async fn last_conversation_messages(
        &self,
        tenant: &TenantKey,
        conversation_id: &str,
        kinds: &[&str],
        count: i64,
    ) -> Result<Vec<StoredMessage>> {
        if kinds.is_empty() {
            // No kind asked for: nothing (and `IN ()` is no SQL PostgreSQL takes).
            return Ok(Vec::new());
        }
        let marks: Vec<String> = (0..kinds.len()).map(|i| format!("${}", i + 4)).collect();
        let sql = format!(
            "SELECT seq, kind, content, app_slug, agent, data, created_at FROM conversation_messages \
             WHERE org_id = $1 AND tenant_id = $2 AND conversation_id = $3 AND kind IN ({}) \
             ORDER BY seq DESC LIMIT ${}",
            marks.join(", "),
            kinds.len() + 4,
        );
        let mut messages: Vec<StoredMessage> = on_pool!(self, pool => {
            let mut query = sqlx::query(&sql)
                .bind(&tenant.org_id)
                .bind(&tenant.tenant_id)
                .bind(conversation_id);
            for kind in kinds {
                query = query.bind(*kind);
            }
            query
                .bind(count)
                .fetch_all(pool)
                .await?
                .iter()
                .map(message_from)
                .collect::<Result<Vec<_>>>()?
        });
        messages.reverse();
        Ok(messages)
    }

    /// Appends `messages` to a conversation of `tenant`, numbered after those it holds, and,
    /// when `agent` is given, records it as the agent the conversation is with now. Answers
    /// the stored messages. Two writers never get the same numbers: the conversation's counter
    /// moves in the same transaction.
    pub async fn append_messages(
        &self,
        tenant: &TenantKey,
        conversation_id: &str,
        messages: &[NewMessage],
        agent: Option<(&str, &str)>,
    ) -> Result<Vec<StoredMessage>> {
        let now = now_millis();
        let count = i64::try_from(messages.len()).unwrap_or(i64::MAX);
        let mut stored = Vec::with_capacity(messages.len());
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let next: Option<i64> = sqlx::query_scalar(
                "UPDATE conversations SET next_seq = next_seq + $1, updated_at = $2 \
                 WHERE org_id = $3 AND tenant_id = $4 AND id = $5 RETURNING next_seq",
            )
            .bind(count).bind(now).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(conversation_id)
            .fetch_optional(&mut *tx).await?;
            let Some(next) = next else {
                return Err(StoreError::NotFound(format!("no conversation `{conversation_id}`")));
            };
            let first = next - count;
            for (i, message) in messages.iter().enumerate() {
                let seq = first + i64::try_from(i).unwrap_or(0);
                let data = serde_json::to_string(&message.data)
                    .map_err(|e| StoreError::Internal(format!("cannot encode a message: {e}")))?;
                sqlx::query(
                    "INSERT INTO conversation_messages (org_id, tenant_id, conversation_id, seq, kind, content, app_slug, agent, data, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(conversation_id).bind(seq)
                .bind(message.kind).bind(&message.content).bind(&message.app_slug).bind(&message.agent)
                .bind(&data).bind(now)
                .execute(&mut *tx).await?;
                stored.push(StoredMessage {
                    seq,
                    kind: message.kind.to_owned(),
                    content: message.content.clone(),
                    app_slug: message.app_slug.clone(),
                    agent: message.agent.clone(),
                    data: message.data.clone(),
                    created_at: millis(now)?,
                });
            }
            if let Some((app_slug, agent)) = agent {
                sqlx::query(
                    "UPDATE conversations SET app_slug = $1, agent = $2 \
                     WHERE org_id = $3 AND tenant_id = $4 AND id = $5",
                )
                .bind(app_slug).bind(agent).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(conversation_id)
                .execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(stored)
    }
}
