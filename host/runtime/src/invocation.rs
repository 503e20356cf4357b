//! What the platform says about a call: who it is for, what the install granted, the chain.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use crate::{ChainContext, Platform};

/// Who asks the app to run a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Caller {
    /// The platform itself (a heartbeat, the local runner, an admin run-now).
    #[default]
    Platform,
    /// An agent planner: tools with `agent_visible: false` are refused.
    Agent,
    /// The app's own handlers (via the platform).
    App,
}

/// The context of one call into an app.
#[derive(Clone)]
pub struct Invocation {
    /// The tenant the call is for.
    pub tenant_id: String,
    /// A call id for logs; one is generated when none is given.
    pub call_id: Option<String>,
    /// The scopes the tenant granted to this install.
    pub granted_scopes: BTreeSet<String>,
    /// The install settings the tenant filled in.
    pub settings: Map<String, Value>,
    /// The chain this call is part of.
    pub chain: ChainContext,
    /// Who asks.
    pub caller: Caller,
    /// The call arrives on a public route: no tenant principal.
    pub public_route: bool,
    /// The platform behind the app's imports.
    pub platform: Arc<dyn Platform>,
}

impl Invocation {
    /// A call for `tenant_id` from the platform, with no scopes, no settings and a fresh chain.
    pub fn new(tenant_id: impl Into<String>, platform: Arc<dyn Platform>) -> Self {
        Invocation {
            tenant_id: tenant_id.into(),
            call_id: None,
            granted_scopes: BTreeSet::new(),
            settings: Map::new(),
            chain: ChainContext::root(),
            caller: Caller::Platform,
            public_route: false,
            platform,
        }
    }

    /// Grants scopes.
    #[must_use]
    pub fn with_scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.granted_scopes
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Sets the install settings.
    #[must_use]
    pub fn with_settings(mut self, settings: Map<String, Value>) -> Self {
        self.settings = settings;
        self
    }

    /// Sets the caller.
    #[must_use]
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// Sets the chain.
    #[must_use]
    pub fn with_chain(mut self, chain: ChainContext) -> Self {
        self.chain = chain;
        self
    }

    /// Marks the call as arriving on a public route.
    #[must_use]
    pub fn on_public_route(mut self) -> Self {
        self.public_route = true;
        self
    }

    /// The facts of this call of the app `manifest` describes (`context.current`): with a
    /// call id generated once here when the invocation names none.
    #[must_use]
    pub fn info(&self, manifest: &atrium_manifest::Manifest) -> crate::CallInfo {
        crate::CallInfo {
            tenant_id: self.tenant_id.clone(),
            app_id: manifest.app_id.clone(),
            app_version: manifest.version.clone(),
            call_id: self.call_id(),
            chain_depth: self.chain.depth,
            visited_agents: self.chain.visited.clone(),
            public_route: self.public_route,
        }
    }

    pub(crate) fn call_id(&self) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        self.call_id.clone().unwrap_or_else(|| {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            format!("call-{:x}-{n}", std::process::id())
        })
    }
}
