//! What an install's version declares beyond the install's own row, made to follow the version
//! each time an install lands on one: an activation (a re-activation, the tenant's upgrade and
//! the developer's dev tenant included, which are activations) and a forced or automatic
//! upgrade all end here, so an upgrade carries what activation does.
//!
//! - **Visions**: created for the agents that declare one when the tenant selected a project
//!   (one retired by an earlier version starts over); those the version no longer declares
//!   are stopped ([`crate::visions::retire_undeclared`]).
//! - **Event wires**: proposed for what the version declares and the tenant's other active
//!   installs make possible ([`crate::wires::propose_declared`]); those the version no longer
//!   declares are revoked ([`crate::wires::retire_undeclared`]).
//!
//! - **Heartbeat rows** follow the version in the transaction that writes the install
//!   (`crate::heartbeats::declared`: created, kept or retired).
//!
//! Each is a hook of its capability ([`InstallHook`]), listed once by the composition.

use atrium_manifest::Manifest;
use atrium_store::{HeartbeatDecl, Install, InstallKey};

use super::{Registry, Result};

/// What a capability does each time an install lands on a version (an activation, an upgrade
/// of any kind): it makes what it keeps for the install follow what the version declares,
/// with rows written in the install's own transaction ([`InstallHook::rows`]), or after it
/// ([`InstallHook::landed`]). A capability with such state implements it in its own module,
/// and the composition lists it once (`composition::INSTALL_HOOKS`); the registry's
/// activation and upgrade code never names a capability.
#[async_trait::async_trait]
pub(crate) trait InstallHook: Sync {
    /// Adds the rows `manifest` declares for `install` that are written with it, in its
    /// transaction.
    fn rows(&self, _install: &InstallKey, _manifest: &Manifest, _rows: &mut DeclaredRows) {}

    /// The install was just written on the version of `manifest`. A store failure is an error
    /// of the activation or upgrade; a capability the install does not depend on logs its
    /// failures instead.
    async fn landed(
        &self,
        _registry: &Registry,
        _install: &Install,
        _manifest: &Manifest,
    ) -> Result<()> {
        Ok(())
    }
}

/// The hooks of a registry, in the order they run.
pub(crate) type InstallHooks = &'static [&'static dyn InstallHook];

/// The rows a version declares that are written in the transaction of its install.
#[derive(Debug, Default)]
pub(crate) struct DeclaredRows {
    /// The heartbeat rows the install's agents declare.
    pub(crate) heartbeats: Vec<HeartbeatDecl>,
}

impl Registry {
    /// Gives the registry the capabilities' hooks (the composition does, once).
    pub(crate) fn set_install_hooks(&self, hooks: InstallHooks) {
        // A second composition over the same registry lists the same hooks.
        let _ = self.inner.hooks.set(hooks);
    }

    fn install_hooks(&self) -> InstallHooks {
        self.inner.hooks.get().copied().unwrap_or_default()
    }

    /// The rows `manifest` declares for `install`, for its transaction.
    pub(super) fn declared_rows(&self, install: &InstallKey, manifest: &Manifest) -> DeclaredRows {
        let mut rows = DeclaredRows::default();
        for hook in self.install_hooks() {
            hook.rows(install, manifest, &mut rows);
        }
        rows
    }

    /// Makes what the capabilities keep for `install` follow the version of `manifest`, which
    /// the install was just written on: each hook in turn (see the module docs).
    pub(super) async fn follow_declarations(
        &self,
        install: &Install,
        manifest: &Manifest,
    ) -> Result<()> {
        for hook in self.install_hooks() {
            hook.landed(self, install, manifest).await?;
        }
        Ok(())
    }
}
