//! A tenant's edits of an installed app's agents and its workflow overrides: one row per
//! (install, agent or workflow id), merged over the manifest by the registry and kept across
//! re-activations and upgrades.

use serde_json::{Map, Value};
use sqlx::Row;

use crate::installs::{json_object, to_json};
use crate::{InstallKey, Result, Store, now_millis, on_pool};

/// The tenant-edited parts of an install.
#[derive(Debug, Clone, Copy)]
enum Edited {
    Agents,
    Workflows,
}

impl Edited {
    /// The table, its item column and its edits column (constants: never from input).
    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Edited::Agents => ("install_agents", "agent_id", "edits"),
            Edited::Workflows => ("install_workflows", "workflow_id", "overrides"),
        }
    }
}

impl Store {
    /// A tenant's edits of an install's agents: agent id to the edited fields.
    pub async fn agent_edits(&self, install: &InstallKey) -> Result<Map<String, Value>> {
        self.install_edits(Edited::Agents, install).await
    }

    /// Replaces the edits of one agent of an install.
    pub async fn put_agent_edits(
        &self,
        install: &InstallKey,
        agent_id: &str,
        edits: &Map<String, Value>,
    ) -> Result<()> {
        self.put_install_edits(Edited::Agents, install, agent_id, edits)
            .await
    }

    /// A tenant's overrides of an install's workflows: workflow id to the overridden fields.
    pub async fn workflow_overrides(&self, install: &InstallKey) -> Result<Map<String, Value>> {
        self.install_edits(Edited::Workflows, install).await
    }

    /// Replaces the overrides of one workflow of an install.
    pub async fn put_workflow_overrides(
        &self,
        install: &InstallKey,
        workflow_id: &str,
        overrides: &Map<String, Value>,
    ) -> Result<()> {
        self.put_install_edits(Edited::Workflows, install, workflow_id, overrides)
            .await
    }

    async fn install_edits(
        &self,
        what: Edited,
        install: &InstallKey,
    ) -> Result<Map<String, Value>> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let (table, id, column) = what.names();
        on_pool!(self, pool => {
            let rows = sqlx::query(&format!(
                "SELECT {id} AS id, {column} AS edits FROM {table} WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3"
            ))
            .bind(org_id).bind(tenant_id).bind(app_slug)
            .fetch_all(pool).await?;
            let mut out = Map::new();
            for row in &rows {
                let edits: String = row.try_get("edits")?;
                out.insert(row.try_get("id")?, Value::Object(json_object(&edits)?));
            }
            Ok(out)
        })
    }

    async fn put_install_edits(
        &self,
        what: Edited,
        install: &InstallKey,
        item: &str,
        edits: &Map<String, Value>,
    ) -> Result<()> {
        let (table, id, column) = what.names();
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let now = now_millis();
        let text = to_json(edits)?;
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "INSERT INTO {table} (org_id, tenant_id, app_slug, {id}, {column}, updated_at) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (org_id, tenant_id, app_slug, {id}) DO UPDATE SET {column} = excluded.{column}, updated_at = excluded.updated_at"
            ))
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(item).bind(&text).bind(now)
            .execute(pool).await?;
        });
        Ok(())
    }
}
