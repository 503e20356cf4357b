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

impl FromRequestParts<HostState> for Dev {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &HostState) -> Result<Self, ApiError> {
        let identity = state.identity()?;
        let token = bearer(parts)?;
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
