//! The platform's services, built once per host: one place that holds what every capability
//! needs (the registry and its store, managed retrieval, the chat gateway and its metering), and
//! one function per capability that enforces its rules.
//!
//! Every caller of a platform tool goes through [`Services::call_tool`]: a component's
//! `tools.call` ([`crate::install_platform::InstallPlatform`]), the agent runner's tool calls and a
//! heartbeat's pre-filter. The tools themselves are registered by the capabilities that own
//! them, listed by the composition (`composition::platform_tools`).

use std::sync::Arc;

use atrium_runtime::ToolCallError;
use serde_json::Value;

use crate::registry::{Actor, Registry};
use atrium_manifest::sandbox::{Decision, ToolRefusal};

use crate::gateway::Chat;
use crate::tools::{Catalogue, Knowledge, PlatformTool, ToolContext};

/// What the services are built from.
#[derive(Clone)]
pub struct ServicesConfig {
    /// The app registry (its store, artifacts, runtime and secrets key).
    pub registry: Registry,
    /// Managed retrieval, for the knowledge tools; none on a host without it.
    pub retrieval: Option<Arc<atrium_retrieval::Retrieval>>,
    /// The chat gateway, for `chat.complete`; none on a host without providers.
    pub gateway: Option<Arc<atrium_inference::Gateway>>,
    /// The metering writer that bills `chat.complete` to the install's tenant.
    pub metering: Option<atrium_store::Metering>,
    /// The platform tools (`composition::platform_tools`).
    pub tools: Catalogue,
    /// The signer of the `APP_MCP_TOKEN` each call into an app outside the runtime carries;
    /// none on a host that runs components only.
    pub app_tokens: Option<crate::identity::TokenIssuer>,
}

/// The platform's services; cloning shares them.
#[derive(Clone)]
pub struct Services {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    retrieval: Option<Arc<atrium_retrieval::Retrieval>>,
    chat: Option<Chat>,
    tools: Catalogue,
    app_tokens: Option<crate::identity::TokenIssuer>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("registry", &self.inner.registry)
            .field("retrieval", &self.inner.retrieval.is_some())
            .field("chat", &self.inner.chat.is_some())
            .finish()
    }
}

impl Services {
    /// The services of one host.
    #[must_use]
    pub fn new(config: ServicesConfig) -> Self {
        let chat = match (config.gateway, config.metering) {
            (Some(gateway), Some(metering)) => Some(Chat { gateway, metering }),
            _ => None,
        };
        Services {
            inner: Arc::new(Inner {
                registry: config.registry,
                retrieval: config.retrieval,
                chat,
                tools: config.tools,
                app_tokens: config.app_tokens,
            }),
        }
    }

    /// The app registry.
    #[must_use]
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The chat gateway and its metering, when the host has providers.
    pub(crate) fn chat(&self) -> Option<&Chat> {
        self.inner.chat.as_ref()
    }

    /// The `APP_MCP_TOKEN` of `token`'s call, valid for
    /// [`crate::identity::app_token::APP_TOKEN_TTL`].
    ///
    /// # Errors
    ///
    /// The host issues none, or signing failed.
    pub fn app_token(
        &self,
        token: &crate::identity::app_token::AppToken,
    ) -> Result<String, String> {
        let Some(issuer) = &self.inner.app_tokens else {
            return Err("this host issues no app tokens".into());
        };
        issuer.issue_app_token(token, crate::identity::app_token::APP_TOKEN_TTL)
    }

    /// The platform tools.
    #[must_use]
    pub fn tools(&self) -> Catalogue {
        self.inner.tools
    }

    /// The platform tool named `name`.
    #[must_use]
    pub fn tool(&self, name: &str) -> Option<&'static PlatformTool> {
        self.inner.tools.find(name)
    }

    /// Managed retrieval, when the host has it.
    #[must_use]
    pub fn retrieval(&self) -> Option<&Arc<atrium_retrieval::Retrieval>> {
        self.inner.retrieval.as_ref()
    }

    /// `tools.call`: the platform tool `tool` (of [`Services::tools`]) for `app_slug`'s install
    /// of `tenant`, its scopes already checked; `knowledge` is the install's slot bindings and
    /// agents.
    pub async fn call_tool(
        &self,
        tenant: &Actor,
        app_slug: &str,
        knowledge: &Knowledge,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolCallError> {
        let Some(found) = self.tool(tool) else {
            return Err(ToolRefusal::new(
                tool,
                Decision::UnknownTool,
                format!("the platform has no tool `{tool}`"),
            )
            .into());
        };
        let cx = ToolContext {
            store: self.inner.registry.store(),
            retrieval: self.inner.retrieval.as_ref(),
            chat: self.inner.chat.as_ref(),
            tenant,
            app_slug,
            knowledge,
        };
        found.call(&cx, args).await
    }

    /// `commitments.add`: stores the commitment (already checked by the sandbox rule) of
    /// `app_slug`'s install for `tenant` and answers its id.
    pub async fn add_commitment(
        &self,
        tenant: &Actor,
        app_slug: &str,
        commitment: &atrium_runtime::Commitment,
    ) -> Result<String, ToolCallError> {
        crate::commitments::add(self.inner.registry.store(), tenant, app_slug, commitment)
            .await
            .map(|stored| stored.id)
    }

    /// `secrets.get`: the tenant's override of the secret, else the developer's default;
    /// none when neither is set, and a value that does not open reads as unset (logged).
    pub async fn secret(&self, tenant: &Actor, app_slug: &str, key: &str) -> Option<String> {
        let registry = &self.inner.registry;
        match registry
            .open_install_value(
                tenant,
                app_slug,
                atrium_store::InstallValueKind::Override,
                key,
            )
            .await
        {
            Ok(Some(value)) => return Some(value),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(app = %app_slug, key, error = %e, "a tenant secret override does not open");
                return None;
            }
        }
        match registry.open_secret(app_slug, key).await {
            Ok(value) => value,
            Err(e) => {
                tracing::warn!(app = %app_slug, key, error = %e, "a secret does not open");
                None
            }
        }
    }
}
