//! [`InstallPlatform`]: the runtime's `Platform` for calls into one install, over the SQL
//! store. Platform tools (records, knowledge, chat) and secrets are served here; the
//! capabilities this host does not offer yet (rooms, agents, events, commitments) keep the
//! trait's default, decision `not_available` naming the capability.

use async_trait::async_trait;
use atrium_runtime::{CallInfo, Platform, ToolCallError};
use atrium_store::RecordScope;
use serde_json::Value;

use super::tools::{self, TOOLS};
use crate::registry::{Registry, TenantRef};

/// The platform of one install: the tenant (of its organization) and the app are fixed when
/// the call starts, so nothing the app sends can name another tenant or app.
pub struct InstallPlatform {
    registry: Registry,
    tenant: TenantRef,
    app_slug: String,
    knowledge: tools::Knowledge,
    chat: Option<tools::Chat>,
}

impl InstallPlatform {
    /// The platform of `app_slug`'s install for `tenant`.
    pub(crate) fn new(
        registry: Registry,
        tenant: TenantRef,
        app_slug: String,
        knowledge: tools::Knowledge,
        chat: Option<tools::Chat>,
    ) -> Self {
        InstallPlatform {
            registry,
            tenant,
            app_slug,
            knowledge,
            chat,
        }
    }

    fn scope(&self) -> RecordScope<'_> {
        RecordScope {
            org_id: &self.tenant.org_id,
            tenant_id: &self.tenant.tenant_id,
            app_slug: &self.app_slug,
        }
    }
}

#[async_trait]
impl Platform for InstallPlatform {
    fn tool_scopes(&self, tool: &str) -> Option<Vec<String>> {
        TOOLS
            .iter()
            .find(|t| t.name == tool)
            .map(|t| t.scopes.iter().map(|s| (*s).to_owned()).collect())
    }

    async fn call_tool(
        &self,
        _call: &CallInfo,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolCallError> {
        if tool.starts_with("knowledge.") {
            let t = &self.tenant;
            return tools::knowledge(&self.knowledge, &t.org_id, &t.tenant_id, tool, &args).await;
        }
        if tool == "chat.complete" {
            let chat = self.chat.as_ref();
            return tools::chat(chat, &self.tenant, &self.app_slug, tool, &args).await;
        }
        tools::records(self.registry.store(), self.scope(), tool, &args).await
    }

    async fn secret(&self, _call: &CallInfo, key: &str) -> Option<String> {
        // The tenant's override wins over the developer's default; a failure reads as unset.
        match self
            .registry
            .open_install_value(
                &self.tenant,
                &self.app_slug,
                atrium_store::InstallValueKind::Override,
                key,
            )
            .await
        {
            Ok(Some(value)) => return Some(value),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(app = %self.app_slug, key, error = %e, "a tenant secret override does not open");
                return None;
            }
        }
        match self.registry.open_secret(&self.app_slug, key).await {
            Ok(value) => value,
            Err(e) => {
                tracing::warn!(app = %self.app_slug, key, error = %e, "a secret does not open");
                None
            }
        }
    }

    fn public_callback_url(&self, _call: &CallInfo, path: &str) -> String {
        super::routes::public_route_path(&self.app_slug, &self.tenant, path)
    }
}
