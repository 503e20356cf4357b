//! `APP_MCP_TOKEN`: the credential of an app that calls the platform from outside the runtime
//! (a container, through the compatibility shim; `POST /api/mcp/agent-invoke`,
//! `POST /api/mcp/rooms-post`). A component needs none: the host knows who calls.
//!
//! The host issues one per install and call ([`TokenIssuer::issue_app_token`]): an HS256 JWT
//! naming the organization, the tenant, the app, its version, the call and the chain that call
//! runs on, which expires after [`APP_TOKEN_TTL`]. It is signed with a key derived from the
//! host's JWT secret (HMAC-SHA256 of [`KEY_PURPOSE`]), so every host that shares the secret
//! verifies it and a developer token never passes for one (nor one for a developer token). The
//! chain it carries is a floor: a caller's chain headers may go deeper, never shallower, so an
//! app cannot escape the depth limit or the cycle check by resetting them.

use std::time::Duration;

use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};

use super::TokenIssuer;
use crate::registry::Actor;

/// What the derived key is for; a later format gets another.
pub(super) const KEY_PURPOSE: &[u8] = b"atrium app-mcp token v1";
/// The issuer claim of an app token.
pub const APP_TOKEN_ISSUER: &str = "atrium-app-mcp";
/// How long an app token is valid: longer than any call's time limit.
pub const APP_TOKEN_TTL: Duration = Duration::from_secs(15 * 60);

/// Who an app token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppToken {
    /// The organization.
    pub org_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The user the call serves, if any.
    pub user_id: Option<String>,
    /// The app.
    pub app_slug: String,
    /// Its version serving the call.
    pub version: String,
    /// The call the token was issued for.
    pub call_id: String,
    /// The chain depth of that call.
    pub chain_depth: u32,
    /// The agents on that call's chain.
    pub visited_agents: Vec<String>,
    /// That call arrived on a public route: the calls back that need a caller's identity
    /// (`team`, `apps`, `events`) are refused, as a component's are.
    pub public_route: bool,
}

impl AppToken {
    /// The tenant (and user) the token speaks for.
    #[must_use]
    pub fn actor(&self) -> Actor {
        Actor {
            tenant: atrium_store::TenantKey::new(&self.org_id, &self.tenant_id),
            user_id: self.user_id.clone(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct AppClaims {
    iss: String,
    org: String,
    tenant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    app: String,
    version: String,
    call: String,
    depth: u32,
    visited: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    public: bool,
    iat: u64,
    exp: u64,
}

impl TokenIssuer {
    /// Signs the app token of `token`, valid for `ttl`.
    ///
    /// # Errors
    ///
    /// A message when the signer fails.
    pub fn issue_app_token(&self, token: &AppToken, ttl: Duration) -> Result<String, String> {
        let now = jsonwebtoken::get_current_timestamp();
        let claims = AppClaims {
            iss: APP_TOKEN_ISSUER.to_owned(),
            org: token.org_id.clone(),
            tenant: token.tenant_id.clone(),
            user: token.user_id.clone(),
            app: token.app_slug.clone(),
            version: token.version.clone(),
            call: token.call_id.clone(),
            depth: token.chain_depth,
            visited: token.visited_agents.clone(),
            public: token.public_route,
            iat: now,
            exp: now.saturating_add(ttl.as_secs()),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.app_encoding)
            .map_err(|e| format!("signing an app token failed: {e}"))
    }

    /// The app token `text` speaks for, or why it is refused (a sentence for a 401).
    ///
    /// # Errors
    ///
    /// A bad signature, another kind of token, an expired token.
    pub fn verify_app_token(&self, text: &str) -> Result<AppToken, String> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = super::LEEWAY_SECS;
        validation.set_issuer(&[APP_TOKEN_ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss"]);
        validation.validate_aud = false;
        let data = jsonwebtoken::decode::<AppClaims>(text, &self.app_decoding, &validation)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => {
                    "the app token has expired: the host issues a new one with each call".to_owned()
                }
                _ => "the bearer credential is not an app token this host issued".to_owned(),
            })?;
        let c = data.claims;
        Ok(AppToken {
            org_id: c.org,
            tenant_id: c.tenant,
            user_id: c.user,
            app_slug: c.app,
            version: c.version,
            call_id: c.call,
            chain_depth: c.depth,
            visited_agents: c.visited,
            public_route: c.public,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use super::*;

    fn token() -> AppToken {
        AppToken {
            org_id: "org_1".into(),
            tenant_id: "shop".into(),
            user_id: None,
            app_slug: "ledger".into(),
            version: "1.0.0".into(),
            call_id: "call-1".into(),
            chain_depth: 2,
            visited_agents: vec!["ledger:lead".into()],
            public_route: false,
        }
    }

    #[test]
    fn an_app_token_round_trips_and_is_no_developer_token() {
        let issuer = TokenIssuer::from_secret(&[7u8; 32]);
        let text = issuer.issue_app_token(&token(), APP_TOKEN_TTL).unwrap();
        assert_eq!(issuer.verify_app_token(&text).unwrap(), token());
        let other = TokenIssuer::from_secret(&[8u8; 32]);
        assert!(
            other.verify_app_token(&text).is_err(),
            "another host's secret"
        );
        let developer = issuer
            .issue("dev_1", "ada@example.com", APP_TOKEN_TTL)
            .unwrap();
        assert!(issuer.verify_app_token(&developer).is_err());
        let now = jsonwebtoken::get_current_timestamp();
        let past = AppClaims {
            iss: APP_TOKEN_ISSUER.into(),
            org: "org_1".into(),
            tenant: "shop".into(),
            user: None,
            app: "ledger".into(),
            version: "1.0.0".into(),
            call: "call-1".into(),
            depth: 1,
            visited: Vec::new(),
            public: false,
            iat: now - 3_600,
            exp: now - 600,
        };
        let expired =
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &past, &issuer.app_encoding)
                .unwrap();
        assert!(
            issuer
                .verify_app_token(&expired)
                .unwrap_err()
                .contains("expired"),
            "an expired token"
        );
    }
}
