//! The platform's services, built once per host: one place that holds what every capability
//! needs (the registry and its store, managed retrieval, the chat gateway and its metering), and
//! one function per capability that enforces its rules.
//!
//! Every caller of a capability goes through these functions: [`crate::serving::InstallPlatform`]
//! (a component's imports; each of its methods is one call here), and the container shim's
//! callback endpoints to come. So a rule is enforced once, for components and containers
//! alike. A capability that the next issues add (grants, events, rooms, agents, heartbeats,
//! containers) adds its state to [`ServicesConfig`] and its functions here or in a module of
//! its own.

use std::sync::Arc;

use atrium_runtime::ToolCallError;
use serde_json::Value;

use crate::registry::{Actor, Registry};
use crate::serving::tools::{self, Chat, Knowledge};

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

    /// Managed retrieval, when the host has it.
    #[must_use]
    pub fn retrieval(&self) -> Option<&Arc<atrium_retrieval::Retrieval>> {
        self.inner.retrieval.as_ref()
    }

    /// `tools.call`: a platform tool (records, knowledge, chat) for `app_slug`'s install of
    /// `tenant`, its scopes already checked; `knowledge` is the install's slot bindings.
    pub async fn call_tool(
        &self,
        tenant: &Actor,
        app_slug: &str,
        knowledge: &Knowledge,
        tool: &str,
        args: &Value,
    ) -> Result<Value, ToolCallError> {
        if tool.starts_with("knowledge.") {
            let retrieval = self.inner.retrieval.as_ref();
            return tools::knowledge(retrieval, knowledge, tenant, tool, args).await;
        }
        if tool == "chat.complete" {
            let chat = self.inner.chat.as_ref();
            return tools::chat(chat, tenant, app_slug, tool, args).await;
        }
        let install = tenant.install(app_slug);
        if tool == "rooms.messages" {
            return tools::room_messages(self.inner.registry.store(), &install, tool, args).await;
        }
        if tool.starts_with("memory.") {
            let store = self.inner.registry.store();
            return tools::memory(store, &install, &knowledge.agents, tool, args).await;
        }
        tools::records(self.inner.registry.store(), &install, tool, args).await
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
