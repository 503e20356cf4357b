//! The developer principal of `/api/dev`: a bearer JWT, signed by this host or by the
//! configured OpenID Connect provider, mapped to a developer account that is not suspended.

use atrium_platform::identity::Verified;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::{ApiError, HostState};

/// The developer a request is authenticated as.
#[derive(Debug, Clone)]
pub struct Dev(pub atrium_store::Developer);

fn bearer(parts: &Parts) -> Result<&str, ApiError> {
    match crate::extract::bearer_token(parts) {
        None => Err(ApiError::unauthorized_because(
            "missing_token",
            "missing Authorization header: send `Authorization: Bearer <developer token>`",
        )),
        Some(None) => Err(ApiError::unauthorized_because(
            "missing_token",
            "the Authorization header must be `Bearer <developer token>`",
        )),
        Some(Some(token)) => Ok(token),
    }
}

/// The refusal of another principal's credential, told by its prefix: what it is and how to
/// get a developer token (the JWT checks would only say it is not a JWT).
fn not_a_developer_token(token: &str) -> Option<ApiError> {
    let kind = if token.starts_with(atrium_store::KEY_PREFIX) {
        "an organization key (`atr_...`, for /v1 and the tenants' administration)"
    } else if token.starts_with(atrium_store::TENANT_TOKEN_PREFIX) {
        "a tenant token (`att_...`, for a tenant's own endpoints under /api)"
    } else {
        return None;
    };
    Some(ApiError::unauthorized_because(
        "invalid_token",
        format!(
            "this is {kind}, not a developer token: /api/dev takes a developer token, which the host's operator prints with `atrium developers create` or `atrium developers token`, or which `atrium login` gets by signing in with a browser"
        ),
    ))
}

impl FromRequestParts<HostState> for Dev {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &HostState) -> Result<Self, ApiError> {
        let identity = state.identity()?;
        let token = bearer(parts)?;
        if let Some(refusal) = not_a_developer_token(token) {
            return Err(refusal);
        }
        let developer = match identity.verify(token).await? {
            Verified::Local { developer_id, .. } => {
                state.store.developer(&developer_id).await?.ok_or_else(|| {
                    ApiError::unauthorized_because(
                        "unknown_developer",
                        "the developer account of this token no longer exists",
                    )
                })?
            }
            Verified::External { email, .. } => {
                state.store.developer_by_email(&email).await?.ok_or_else(|| {
                    ApiError::unauthorized_because(
                        "unknown_developer",
                        format!(
                            "there is no developer account for {email}; ask the host's administrator to create one (`atrium developers create`)"
                        ),
                    )
                })?
            }
        };
        if developer.suspended_at.is_some() {
            return Err(ApiError::unauthorized_because(
                "account_suspended",
                format!("the developer account {} is suspended", developer.login),
            ));
        }
        state
            .limiter
            .admit(Some(&format!("developer:{}", developer.id)), "", None)?;
        Ok(Dev(developer))
    }
}
