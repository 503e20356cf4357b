//! [`InstallPlatform`]: the runtime's `Platform` for calls into one install, a thin adapter:
//! the install's identity and a handle on the [`Services`], each method one call into the
//! capability's service. The capabilities this host does not offer yet (rooms, agents, events,
//! commitments) keep the trait's default, decision `not_available` naming the capability.

use async_trait::async_trait;
use atrium_runtime::{CallInfo, Platform, ToolCallError};
use serde_json::Value;

use super::tools::{Knowledge, TOOLS};
use crate::registry::Actor;
use crate::services::Services;

/// The platform of one install: the tenant (of its organization) and the app are fixed when
/// the call starts, so nothing the app sends can name another tenant or app.
pub struct InstallPlatform {
    services: Services,
    tenant: Actor,
    app_slug: String,
    knowledge: Knowledge,
}

impl InstallPlatform {
    /// The platform of `app_slug`'s install for `tenant`, whose knowledge slots are bound as
    /// `knowledge` says.
    pub(crate) fn new(
        services: Services,
        tenant: Actor,
        app_slug: String,
        knowledge: Knowledge,
    ) -> Self {
        InstallPlatform {
            services,
            tenant,
            app_slug,
            knowledge,
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
        self.services
            .call_tool(&self.tenant, &self.app_slug, &self.knowledge, tool, &args)
            .await
    }

    async fn secret(&self, _call: &CallInfo, key: &str) -> Option<String> {
        self.services
            .secret(&self.tenant, &self.app_slug, key)
            .await
    }

    fn public_callback_url(&self, _call: &CallInfo, path: &str) -> String {
        super::routes::public_route_path(&self.app_slug, &self.tenant, path)
    }
}
