//! An agent's memory: entries by kind, per (tenant, install, agent). Every query names the
//! organization, the tenant, the app and the agent: nothing crosses tenants, apps or agents.

use jiff::Timestamp;
use serde_json::{Map, Value};
use sqlx::Row;

use crate::{InstallKey, Result, Store, StoreError, millis, now_millis, on_pool, random_hex};

/// A stored memory entry.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEntry {
    /// `mem_...`.
    pub id: String,
    /// The agent it belongs to.
    pub agent: String,
    /// Its kind.
    pub kind: String,
    /// The text.
    pub content: String,
    /// Structured data (an object).
    pub data: Map<String, Value>,
    /// When it was written.
    pub created_at: Timestamp,
}

impl Store {
    /// Writes a memory entry of `agent` of `install`; answers it.
    pub async fn put_memory(
        &self,
        install: &InstallKey,
        agent: &str,
        kind: &str,
        content: &str,
        data: &Map<String, Value>,
    ) -> Result<MemoryEntry> {
        let now = now_millis();
        let id = format!("mem_{}", random_hex(10)?);
        let text = serde_json::to_string(data)
            .map_err(|e| StoreError::Internal(format!("cannot encode the memory's data: {e}")))?;
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO agent_memory (org_id, tenant_id, app_slug, agent, id, kind, content, data, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
            .bind(agent).bind(&id).bind(kind).bind(content).bind(&text).bind(now)
            .execute(pool).await?;
        });
        Ok(MemoryEntry {
            id,
            agent: agent.to_owned(),
            kind: kind.to_owned(),
            content: content.to_owned(),
            data: data.clone(),
            created_at: millis(now)?,
        })
    }

    /// The newest `limit` entries of `agent` of `install`, of `kind` when one is named, newest
    /// first.
    pub async fn memories(
        &self,
        install: &InstallKey,
        agent: &str,
        kind: Option<&str>,
        limit: i64,
    ) -> Result<Vec<MemoryEntry>> {
        on_pool!(self, pool => {
            sqlx::query(
                "SELECT agent, id, kind, content, data, created_at FROM agent_memory \
                 WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND agent = $4 \
                   AND ($5 = '' OR kind = $5) \
                 ORDER BY created_at DESC, id DESC LIMIT $6",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
            .bind(agent).bind(kind.unwrap_or_default()).bind(limit)
            .fetch_all(pool).await?
            .iter()
            .map(|r| {
                let data: String = r.try_get("data")?;
                Ok(MemoryEntry {
                    id: r.try_get("id")?,
                    agent: r.try_get("agent")?,
                    kind: r.try_get("kind")?,
                    content: r.try_get("content")?,
                    data: serde_json::from_str(&data).map_err(|e| {
                        StoreError::Corrupt(format!("a memory entry's data is not JSON: {e}"))
                    })?,
                    created_at: millis(r.try_get("created_at")?)?,
                })
            })
            .collect()
        })
    }
}
