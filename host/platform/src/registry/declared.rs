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
//! Heartbeat rows follow the version in the transaction that writes the install
//! (`crate::heartbeats::declared`: created, kept or retired).

use atrium_manifest::Manifest;
use atrium_store::{Install, InstallStatus};

use super::{Registry, Result};

impl Registry {
    /// Makes the visions and event wires of `install` follow the version of `manifest`, which
    /// the install was just written on (see the module docs). Wires are proposed for an active
    /// install only (an inactive one receives nothing); what the version no longer declares is
    /// retired either way. A store failure of the visions is an error; the wires' failures are
    /// logged, as the install does not depend on them.
    pub(super) async fn follow_declarations(
        &self,
        install: &Install,
        manifest: &Manifest,
    ) -> Result<()> {
        let store = &self.inner.store;
        let key = install.key();
        let tenant = install.tenant();
        crate::visions::create_at_activation(store, &key, manifest, &install.settings).await?;
        crate::visions::retire_undeclared(store, &key, manifest).await?;
        if install.status == InstallStatus::Active {
            crate::wires::propose_declared(self, &tenant, &install.app_slug, manifest).await;
        }
        crate::wires::retire_undeclared(self, &tenant, &install.app_slug, manifest).await;
        Ok(())
    }
}
