//! Atrium's app platform: who developers are, what they publish, and the secrets their apps
//! read.
//!
//! - [`identity`]: developer tokens, JWTs signed by the host or issued by an external OpenID
//!   Connect provider.
//! - [`registry`]: apps and their immutable versions (manifest, component or image, frontend
//!   bundle, end-user docs, template defaults), registered, promoted and archived by their
//!   owner; the preflight that checks a project before it is deployed.
//! - [`artifacts`]: content-addressed blobs (components, bundle and docs files) on the local
//!   disk or an S3-compatible bucket, through `object_store`.
//! - [`archive`] (the `atrium-archive` crate, apart so that its fuzz target builds alone):
//!   reading an uploaded tar or zip archive without trusting any of its paths, and
//!   [`files`]: writing files under a directory that no path can escape (`cap-std`).
//! - [`sealing`]: the AEAD that encrypts secrets at rest.
//! - [`scopes`]: the platform's scope catalogue.
//! - [`audit`]: the audit log of cross-app calls.
//! - [`grants`]: grants between the apps of a tenant, and whether one is honoured.
//! - [`calls`]: cross-app calls and team delegation (`apps.invoke`, `apps.fetch`,
//!   `team.delegate`), one function each that every entry point calls.
//! - [`composition`]: the platform composed in one place ([`Platform`]): one value per
//!   capability, built once from one configuration read from the environment, with the
//!   capabilities' background jobs.
//! - [`commitments`]: the promises apps' agents make, kept per tenant.
//! - [`llm_roles`]: a tenant's model roles (`fast`, `specialist`, `orchestrator`).
//! - [`tenant_settings`]: the settings of a whole tenant (room member limit, time zone).
//! - [`services`]: the platform's services, built once per host, one function per capability
//!   that every caller (a component's import, a container's callback) goes through.
//! - [`orchestrator`] and [`conversations`]: which agent answers a user, and a conversation's
//!   turns.
//! - [`runner`]: the agent runner, a tool-using model loop through the host's gateway.
//! - [`serving`]: calling installed apps: loaded components shared across installs, and the
//!   runtime's `Platform` over the SQL store (platform tools, secrets).
//! - [`refusal`]: the one type of what the capabilities refuse ([`Refusal`]), which the server
//!   maps to a status and body once.
//! - [`heartbeats`] and [`visions`]: the agents' background routines and long goals, run by
//!   the heartbeat scheduler.
//! - [`containers`]: the compatibility shim, container-image apps served through the
//!   runtime's external apps (runc on this host, or an address the operator registered), and
//!   their calls back to the platform (`/api/mcp/...`) through the runtime's imports.

pub use atrium_archive as archive;
pub use composition::{Platform, PlatformConfig, PlatformParts, Shared};
pub use refusal::Refusal;
pub mod artifacts;
pub mod audit;
pub mod calls;
mod cancel;
mod chat;
pub mod commitments;
pub mod composition;
pub mod containers;
pub mod conversations;
pub mod events;
pub mod fields;
pub mod files;
mod gateway;
pub mod grants;
pub mod heartbeats;
pub mod identity;
pub mod install_platform;
mod keyfile;
mod knowledge;
pub mod llm_roles;
mod memory;
pub mod orchestrator;
mod records;
pub mod refusal;
pub mod registry;
pub mod room_streams;
pub mod rooms;
pub mod runner;
pub mod scopes;
pub mod sealing;
pub mod services;
pub mod serving;
pub mod tenant_settings;
pub mod tools;
pub mod visions;
pub mod wires;

/// `pairs` as the environment's variables are given to the configurations' `from_env`.
#[cfg(test)]
pub(crate) fn test_vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The whole number that variable `name` of `vars` (the environment, as pairs) sets, if any,
/// within `range`; a value that is not one, or out of range, is an error naming the variable.
pub fn env_number(
    vars: &[(String, String)],
    name: &str,
    range: std::ops::RangeInclusive<u64>,
) -> Result<Option<u64>, String> {
    vars.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| {
            let v = v.trim();
            v.parse::<u64>()
                .ok()
                .filter(|n| range.contains(n))
                .ok_or_else(|| {
                    format!(
                        "{name} must be a whole number from {} to {}, got `{v}`",
                        range.start(),
                        range.end()
                    )
                })
        })
        .transpose()
}
