//! The tenant principals: a tenant admin and a tenant user, each a bearer token (`att_...`)
//! that an organization key holder issued for one tenant (`POST /api/tenants/{tenant}/tokens`).
//!
//! [`TenantUser`] accepts any valid tenant token, [`TenantAdmin`] only an admin's (a user's gets
//! 403 `admin_required`). No or a malformed header is 401 `missing_token`, an unknown or revoked
//! token 401 `invalid_token`. A successful check is remembered until the change feed says the
//! token or its user changed, like an organization key's (`crate::auth`). [`OrgOrTenantAdmin`] is for the few endpoints both the organization
//! and the tenant's own admin may call: a token that starts with `att_` is judged as a tenant
//! token, anything else as an organization key.

use atrium_store::{TENANT_TOKEN_PREFIX, TenantPrincipal, TenantRole};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::extract::bearer_token;
use crate::{ApiError, HostState, Org};

/// Who acts on the tenant's installs when `principal` calls: its tenant and its user.
pub fn actor(principal: &TenantPrincipal) -> atrium_platform::registry::Actor {
    atrium_platform::registry::Actor::user(principal.key(), &principal.user_id)
}

/// A tenant admin or a tenant user.
#[derive(Debug, Clone)]
pub struct TenantUser(pub TenantPrincipal);

/// A tenant admin.
#[derive(Debug, Clone)]
pub struct TenantAdmin(pub TenantPrincipal);

/// The organization (its key) or a tenant admin (its token).
#[derive(Debug, Clone)]
pub enum OrgOrTenantAdmin {
    /// An organization key.
    Org(Org),
    /// An admin token of one tenant.
    Admin(TenantPrincipal),
}

/// The principal of the request's tenant token.
async fn authenticate(parts: &Parts, state: &HostState) -> Result<TenantPrincipal, ApiError> {
    let token = match bearer_token(parts) {
        None => {
            return Err(ApiError::unauthorized_because(
                "missing_token",
                "missing Authorization header: send `Authorization: Bearer <tenant token>`",
            ));
        }
        Some(None) => {
            return Err(ApiError::unauthorized_because(
                "missing_token",
                "the Authorization header must be `Bearer <tenant token>`",
            ));
        }
        Some(Some(token)) => token,
    };
    match state
        .tenant_tokens
        .authenticate(token, state.store.authenticate_tenant_token(token))
        .await?
    {
        Some(principal) => {
            state.limiter.admit(
                Some(&format!("tenant-token:{}", principal.token_id)),
                &principal.org_id,
                Some(&principal.tenant_id),
            )?;
            Ok(principal)
        }
        None => Err(ApiError::unauthorized_because(
            "invalid_token",
            if token.starts_with(TENANT_TOKEN_PREFIX) {
                "the tenant token is unknown or revoked"
            } else {
                "this is not a tenant token (tenant tokens start with `att_`)"
            },
        )),
    }
}

fn admin(principal: TenantPrincipal) -> Result<TenantPrincipal, ApiError> {
    match principal.role {
        TenantRole::Admin => Ok(principal),
        TenantRole::User => Err(ApiError::forbidden(
            "admin_required",
            "this needs a tenant admin token; the token presented is a tenant user's",
        )),
    }
}

impl FromRequestParts<HostState> for TenantUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &HostState) -> Result<Self, ApiError> {
        authenticate(parts, state).await.map(TenantUser)
    }
}

impl FromRequestParts<HostState> for TenantAdmin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &HostState) -> Result<Self, ApiError> {
        admin(authenticate(parts, state).await?).map(TenantAdmin)
    }
}

impl FromRequestParts<HostState> for OrgOrTenantAdmin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &HostState) -> Result<Self, ApiError> {
        let tenant_token = matches!(
            bearer_token(parts),
            Some(Some(token)) if token.starts_with(TENANT_TOKEN_PREFIX)
        );
        if tenant_token {
            let TenantAdmin(principal) = TenantAdmin::from_request_parts(parts, state).await?;
            return Ok(OrgOrTenantAdmin::Admin(principal));
        }
        Org::from_request_parts(parts, state)
            .await
            .map(OrgOrTenantAdmin::Org)
    }
}

impl OrgOrTenantAdmin {
    /// The organization whose tenant `tenant` the caller may act on: the key's organization,
    /// or the admin's when `tenant` is the admin's own tenant. Another tenant is none of the
    /// admin's business, and answers 404 as a tenant that does not exist does.
    pub fn organization_of(&self, tenant: &str) -> Result<&str, ApiError> {
        match self {
            OrgOrTenantAdmin::Org(org) => Ok(&org.org_id),
            OrgOrTenantAdmin::Admin(p) if p.tenant_id == tenant => Ok(&p.org_id),
            OrgOrTenantAdmin::Admin(_) => Err(no_such_tenant(tenant)),
        }
    }
}

/// The 404 of a tenant that does not exist, or that the caller may not see.
pub(crate) fn no_such_tenant(tenant: &str) -> ApiError {
    ApiError::not_found(format!("there is no tenant `{tenant}`"))
}
