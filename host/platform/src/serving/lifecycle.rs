//! Lifecycle hooks fanned out to a tenant's installs: `on_inbound` for a message arriving on a
//! channel, `on_user_added` for a new user of the tenant. Every active install of a component
//! app whose manifest sets the flag is called, each in its own instance: one app's failure is
//! reported for that app and the others still run.

use atrium_runtime::{Caller, InboundEnvelope, UserAdded};
use serde::Serialize;

use super::{ServeError, Serving};
use crate::registry::Actor;

/// How one install's hook ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookOutcome {
    /// The app.
    pub app: String,
    /// Whether the hook succeeded.
    pub ok: bool,
    /// Why it failed.
    pub error: Option<String>,
}

/// Which hook to fan out.
enum Hook<'a> {
    Inbound(&'a InboundEnvelope),
    UserAdded(&'a UserAdded),
}

impl Serving {
    /// Runs `on_inbound` in every install of the tenant that declares it.
    pub async fn fan_out_inbound(
        &self,
        tenant: &Actor,
        envelope: &InboundEnvelope,
    ) -> Result<Vec<HookOutcome>, ServeError> {
        self.fan_out(tenant, Hook::Inbound(envelope)).await
    }

    /// Runs `on_user_added` in every install of the tenant that declares it.
    pub async fn fan_out_user_added(
        &self,
        tenant: &Actor,
        user: &UserAdded,
    ) -> Result<Vec<HookOutcome>, ServeError> {
        self.fan_out(tenant, Hook::UserAdded(user)).await
    }

    async fn fan_out(
        &self,
        tenant: &Actor,
        hook: Hook<'_>,
    ) -> Result<Vec<HookOutcome>, ServeError> {
        let store = self.registry().store();
        let mut outcomes = Vec::new();
        for install in store.installs(&tenant.tenant).await? {
            if install.status != atrium_store::InstallStatus::Active {
                continue;
            }
            let wants = |m: &atrium_manifest::Manifest| match hook {
                Hook::Inbound(_) => m.lifecycle.on_inbound,
                Hook::UserAdded(_) => m.lifecycle.on_user_added,
            };
            let app = match self.hook_app(&install, wants).await {
                Ok(Some(app)) => app,
                Ok(None) => continue,
                Err(e) => {
                    outcomes.push(HookOutcome {
                        app: install.app_slug.clone(),
                        ok: false,
                        error: Some(e.to_string()),
                    });
                    continue;
                }
            };
            let inv = self
                .invocation(tenant, &install, &app, Caller::Platform)
                .await?;
            let result = match hook {
                Hook::Inbound(envelope) => app.on_inbound(&inv, envelope.clone()).await,
                Hook::UserAdded(user) => app.on_user_added(&inv, user.clone()).await,
            };
            if let Err(e) = &result {
                tracing::warn!(app = %install.app_slug, tenant = %tenant.tenant_id, error = %e, "a lifecycle hook failed");
            }
            outcomes.push(HookOutcome {
                app: install.app_slug.clone(),
                ok: result.is_ok(),
                error: result.err().map(|e| e.to_string()),
            });
        }
        Ok(outcomes)
    }
}
