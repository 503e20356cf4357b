//! The organization principal: the holder of an organization key (`atr_...`), for /v1, tenants
//! and tenant tokens.

use atrium_store::TENANT_TOKEN_PREFIX;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::extract::{TENANT_HEADER, bearer_token};
use crate::{ApiError, HostState};

/// The organization of the presented key.
#[derive(Debug, Clone)]
pub struct Org {
    /// The organization's id.
    pub org_id: String,
    /// The key's id.
    pub key_id: String,
}

impl FromRequestParts<HostState> for Org {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &HostState) -> Result<Self, ApiError> {
        let secret = match bearer_token(parts) {
            None => {
                return Err(ApiError::unauthorized(
                    "missing Authorization header: send `Authorization: Bearer <key>`",
                ));
            }
            Some(None) => {
                return Err(ApiError::unauthorized(
                    "the Authorization header must be `Bearer <key>`",
                ));
            }
            Some(Some(secret)) => secret,
        };
        match state
            .keys
            .authenticate(secret, state.store.authenticate(secret))
            .await?
        {
            Some(owner) => {
                // The tenant the request is for, as named (checked later by the handler); a
                // name no handler would accept is not counted.
                let tenant = match parts.headers.get(TENANT_HEADER) {
                    None => Some(crate::DEFAULT_TENANT),
                    Some(value) => value.to_str().ok().filter(|t| t.len() <= 128),
                };
                state.limiter.admit(
                    Some(&format!("key:{}", owner.key_id)),
                    &owner.org_id,
                    tenant,
                )?;
                Ok(Org {
                    org_id: owner.org_id,
                    key_id: owner.key_id,
                })
            }
            None => Err(ApiError::unauthorized(refused_key(secret))),
        }
    }
}

/// Why a credential is not a live organization key: another principal's, told by its prefix
/// or shape, or an unknown or revoked key.
fn refused_key(secret: &str) -> &'static str {
    if secret.starts_with(TENANT_TOKEN_PREFIX) {
        "this is a tenant token (`att_...`), not an organization key: it opens the tenant's own endpoints under /api; /v1 and the tenants' administration take an organization key (`atr_...`, which `atrium keys create` prints)"
    } else if secret.starts_with("eyJ") && secret.split('.').count() == 3 {
        "this is a developer token (a JWT), not an organization key: it opens /api/dev; /v1 and the tenants' administration take an organization key (`atr_...`, which `atrium keys create` prints)"
    } else {
        "the API key is unknown or revoked"
    }
}
