//! Who is calling: every principal of the API, one extractor each, in one place. A handler
//! names the principal it accepts in its arguments; nothing else authenticates.
//!
//! | Principal | Credential | Extractor |
//! |---|---|---|
//! | an organization (the operator) | organization key `atr_...` | [`Org`] |
//! | a developer | a host-signed JWT or an OpenID Connect token | [`Dev`] |
//! | a tenant admin | tenant token `att_...` with role admin | [`TenantAdmin`] |
//! | a tenant user (or admin) | tenant token `att_...` | [`TenantUser`] |
//! | an organization or its tenant's admin | either | [`OrgOrTenantAdmin`] |
//! | an installed app, outside the runtime | its call's `APP_MCP_TOKEN` | [`AppCaller`] |
//! | nobody | none (public routes) | none |
//!
//! Each one checks its credential (remembered until the change feed says it changed), counts
//! the request against its rate limits, and answers 401 or 403 in the API's error shape.

mod app;
mod developer;
mod org;
mod tenant;

pub use app::AppCaller;
pub use developer::Dev;
pub use org::Org;
pub(crate) use tenant::no_such_tenant;
pub use tenant::{OrgOrTenantAdmin, TenantAdmin, TenantUser, actor};
