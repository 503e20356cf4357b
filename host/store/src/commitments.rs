//! Commitments: promises an install's agent made (`commitments.add`), kept per tenant until a
//! user marks them done or dismissed. The platform checks what an app sends
//! (`atrium_manifest::sandbox::commitment`); the store keeps it and answers the tenant's lists.

use jiff::Timestamp;
use sqlx::Row;

use crate::{
    InstallKey, Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, opt_millis,
    random_hex,
};

/// Where a commitment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitmentStatus {
    /// Promised, not yet kept.
    Open,
    /// Kept.
    Done,
    /// Dropped by a user.
    Dismissed,
}

impl CommitmentStatus {
    /// Every status, in the order the docs list them.
    pub const ALL: [CommitmentStatus; 3] = [
        CommitmentStatus::Open,
        CommitmentStatus::Done,
        CommitmentStatus::Dismissed,
    ];

    /// `open`, `done` or `dismissed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CommitmentStatus::Open => "open",
            CommitmentStatus::Done => "done",
            CommitmentStatus::Dismissed => "dismissed",
        }
    }

    /// The status named `text`.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// A commitment to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCommitment<'a> {
    /// The promising agent's slug.
    pub agent: &'a str,
    /// The user the call that made it served, if any.
    pub user_id: Option<&'a str>,
    /// A short title.
    pub title: &'a str,
    /// The details.
    pub content: &'a str,
    /// When it is due.
    pub due_at: Option<Timestamp>,
}

/// A stored commitment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCommitment {
    /// `cmt_...`, unique within the tenant.
    pub id: String,
    /// The app whose agent made it.
    pub app_slug: String,
    /// The agent's slug.
    pub agent: String,
    /// The user the call served, if any.
    pub user_id: Option<String>,
    /// The title.
    pub title: String,
    /// The details.
    pub content: String,
    /// When it is due, if given.
    pub due_at: Option<Timestamp>,
    /// Where it stands.
    pub status: CommitmentStatus,
    /// When the agent made it.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// The user who marked it done or dismissed, while it is.
    pub closed_by: Option<String>,
}

/// Which of a tenant's commitments a list shows; `None` matches all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitmentFilter<'a> {
    /// Only this app's.
    pub app_slug: Option<&'a str>,
    /// Only this agent's (of any app, unless `app_slug` is set).
    pub agent: Option<&'a str>,
    /// Only those in this status.
    pub status: Option<CommitmentStatus>,
}

const COLUMNS: &str = "id, app_slug, agent, user_id, title, content, due_at, status, \
                       created_at, updated_at, closed_by";

fn commitment_from<R: Row>(row: &R) -> Result<StoredCommitment>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let status: String = row.try_get("status")?;
    Ok(StoredCommitment {
        id: row.try_get("id")?,
        app_slug: row.try_get("app_slug")?,
        agent: row.try_get("agent")?,
        user_id: row.try_get("user_id")?,
        title: row.try_get("title")?,
        content: row.try_get("content")?,
        due_at: opt_millis(row.try_get("due_at")?)?,
        status: CommitmentStatus::parse(&status).ok_or_else(|| {
            StoreError::Corrupt(format!("a commitment has the unknown status `{status}`"))
        })?,
        created_at: millis(row.try_get("created_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
        closed_by: row.try_get("closed_by")?,
    })
}

impl Store {
    /// Stores an open commitment of `install`'s agent and answers it.
    pub async fn add_commitment(
        &self,
        install: &InstallKey,
        new: &NewCommitment<'_>,
    ) -> Result<StoredCommitment> {
        let now = now_millis();
        let id = format!("cmt_{}", random_hex(12)?);
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO commitments (org_id, tenant_id, id, app_slug, agent, user_id, title, \
                 content, due_at, status, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&id).bind(&install.app_slug)
            .bind(new.agent).bind(new.user_id).bind(new.title).bind(new.content)
            .bind(new.due_at.map(|t| t.as_millisecond())).bind(CommitmentStatus::Open.as_str()).bind(now)
            .execute(pool).await?;
        });
        Ok(StoredCommitment {
            id,
            app_slug: install.app_slug.clone(),
            agent: new.agent.to_owned(),
            user_id: new.user_id.map(str::to_owned),
            title: new.title.to_owned(),
            content: new.content.to_owned(),
            due_at: new.due_at.map(|t| millis(t.as_millisecond())).transpose()?,
            status: CommitmentStatus::Open,
            created_at: millis(now)?,
            updated_at: millis(now)?,
            closed_by: None,
        })
    }

    /// A page of `tenant`'s commitments that `filter` matches, oldest first: at most `limit`,
    /// after the one made at `after.0` with id `after.1`.
    pub async fn commitments_page(
        &self,
        tenant: &TenantKey,
        filter: &CommitmentFilter<'_>,
        after: Option<(Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<StoredCommitment>> {
        let (at, id) = after.map_or((i64::MIN, ""), |(at, key)| (at.as_millisecond(), key));
        let sql = format!(
            "SELECT {COLUMNS} FROM commitments WHERE org_id = $1 AND tenant_id = $2 \
             AND ($3 IS NULL OR app_slug = $3) AND ($4 IS NULL OR agent = $4) \
             AND ($5 IS NULL OR status = $5) \
             AND (created_at > $6 OR (created_at = $6 AND id > $7)) \
             ORDER BY created_at, id LIMIT $8"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id)
                .bind(filter.app_slug).bind(filter.agent).bind(filter.status.map(CommitmentStatus::as_str))
                .bind(at).bind(id).bind(limit)
                .fetch_all(pool).await?
                .iter()
                .map(commitment_from)
                .collect()
        })
    }

    /// One commitment of `tenant`.
    pub async fn commitment(
        &self,
        tenant: &TenantKey,
        id: &str,
    ) -> Result<Option<StoredCommitment>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM commitments WHERE org_id = $1 AND tenant_id = $2 AND id = $3"
        );
        on_pool!(self, pool => {
            match sqlx::query(&sql).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
                .fetch_optional(pool).await?
            {
                Some(row) => Ok(Some(commitment_from(&row)?)),
                None => Ok(None),
            }
        })
    }

    /// Sets the status of `tenant`'s commitment `id`, by `user_id`, and answers it:
    /// [`StoreError::NotFound`] for one that is not the tenant's. Marking done or dismissed
    /// records the user; reopening forgets them. Setting the status it has changes nothing.
    pub async fn set_commitment_status(
        &self,
        tenant: &TenantKey,
        id: &str,
        status: CommitmentStatus,
        user_id: &str,
    ) -> Result<StoredCommitment> {
        let now = now_millis();
        let closed_by = (status != CommitmentStatus::Open).then_some(user_id);
        on_pool!(self, pool => {
            sqlx::query(
                "UPDATE commitments SET status = $1, updated_at = $2, closed_by = $3 \
                 WHERE org_id = $4 AND tenant_id = $5 AND id = $6 AND status <> $1",
            )
            .bind(status.as_str()).bind(now).bind(closed_by)
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .execute(pool).await?;
        });
        self.commitment(tenant, id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("no commitment `{id}`")))
    }
}
