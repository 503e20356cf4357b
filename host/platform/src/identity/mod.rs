//! Developer identity: the tokens developers present to the host's developer API.
//!
//! Two kinds of token are accepted:
//!
//! - tokens the host signs itself ([`TokenIssuer::issue`], HS256, `iss` = [`LOCAL_ISSUER`]),
//!   with the secret from `ATRIUM_JWT_SECRET` or `<data_dir>/jwt.key`;
//! - ID tokens of one external OpenID Connect provider ([`OidcConfig`]), checked against the
//!   keys the provider publishes (RS256, ES256 or EdDSA only).
//!
//! [`Identity::verify`] tells them apart by their `iss` and returns who the token speaks for.
//! It never touches the database: the caller maps [`Verified`] to a developer row (by id for
//! local tokens, by email for external ones) and checks that the developer is not suspended.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use atrium_platform::identity::{Identity, OidcConfig, TokenIssuer, Verified};
//!
//! let issuer = TokenIssuer::load_or_create(std::path::Path::new("/var/lib/atrium"), None)?;
//! let token = issuer.issue("dev_42", "ada@example.com", Duration::from_secs(3600))?;
//! let provider = OidcConfig::new("https://login.example.com", "atrium-cli")?;
//! let identity = Identity::new(issuer, Some(provider));
//! let Verified::Local { developer_id, .. } = identity.verify(&token).await? else {
//!     unreachable!()
//! };
//! assert_eq!(developer_id, "dev_42");
//! # Ok(())
//! # }
//! ```

pub mod app_token;
mod local;
mod oidc;

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;

use crate::keyfile::KeyFileError;

pub use local::TokenIssuer;
pub use oidc::{OidcConfig, OidcVerifier};

/// The `iss` of the tokens the host signs itself.
pub const LOCAL_ISSUER: &str = "atrium";

/// The environment variable that holds the host's JWT secret, when the operator provides one.
pub const JWT_SECRET_ENV: &str = "ATRIUM_JWT_SECRET";

/// The key file's name under the data directory when [`JWT_SECRET_ENV`] is not set.
pub const JWT_KEY_FILE: &str = "jwt.key";

/// The environment variable that names the OpenID Connect provider ([`OidcConfig::issuer`]).
pub const OIDC_ISSUER_ENV: &str = "ATRIUM_OIDC_ISSUER";

/// The environment variable that holds the client id the provider's tokens are issued for
/// ([`OidcConfig::audience`]).
pub const OIDC_AUDIENCE_ENV: &str = "ATRIUM_OIDC_AUDIENCE";

/// Clock skew tolerated between the host and whoever signed a token.
const LEEWAY_SECS: u64 = 30;

/// A failure to set up developer identity: the host's JWT secret or the OpenID Connect
/// provider's settings.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// `ATRIUM_JWT_SECRET` or the key file holds no usable secret, or the key file is
    /// readable by other users. The message names the variable or the file and what to do.
    #[error("{0}")]
    Key(String),
    /// The key file could not be read or created.
    #[error("cannot read or create the key file {}: {source}", path.display())]
    Io {
        /// The key file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// Signing a token failed (the system random generator or the signer failed).
    #[error("issuing the developer token failed: {0}")]
    Issue(String),
    /// The OpenID Connect provider's issuer URL or audience is unusable (see
    /// [`OidcConfig::new`]). The message names the variable and the rule.
    #[error("{0}")]
    Oidc(String),
}

impl From<KeyFileError> for IdentityError {
    fn from(error: KeyFileError) -> Self {
        match error {
            KeyFileError::Refused(message) => IdentityError::Key(message),
            KeyFileError::Io { path, source } => IdentityError::Io { path, source },
        }
    }
}

/// Why a token was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token was genuine but its `exp` has passed; the RFC 3339 time it expired at.
    #[error("the developer token expired at {0}")]
    Expired(String),
    /// The token is forged, malformed, for another audience, signed with an algorithm that is
    /// not accepted, or lacks a required claim; the message says which.
    #[error("{0}")]
    Invalid(String),
    /// The token's `iss` is neither this host nor the configured OpenID Connect provider.
    #[error("the developer token was issued by {0:?}, which this host does not trust")]
    UnknownIssuer(String),
    /// The provider's discovery document or keys could not be fetched, so the token can be
    /// neither accepted nor refused (the server answers 503).
    #[error("the OpenID Connect provider is unavailable: {0}")]
    IssuerUnavailable(String),
}

fn invalid(message: impl Into<String>) -> TokenError {
    TokenError::Invalid(message.into())
}

/// Who a verified token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// A token this host signed.
    Local {
        /// The developer's id (`sub`).
        developer_id: String,
        /// The email address the token was issued for.
        email: String,
    },
    /// An ID token of the configured OpenID Connect provider.
    External {
        /// The verified email address; developers are matched by it.
        email: String,
        /// The provider's subject identifier (`sub`).
        subject: String,
    },
}

/// Decides which tokens the host accepts.
#[derive(Debug)]
pub struct Identity {
    local: TokenIssuer,
    oidc: Option<OidcVerifier>,
}

impl Identity {
    /// Accepts the tokens `local` signs and, when `oidc` is `Some`, the ID tokens of that
    /// provider.
    pub fn new(local: TokenIssuer, oidc: Option<OidcConfig>) -> Self {
        Self {
            local,
            oidc: oidc.map(OidcVerifier::new),
        }
    }

    /// Sets how often an unknown `kid` may trigger a refetch of the provider's keys (see
    /// [`OidcVerifier::with_min_refetch_interval`]); no effect without a provider.
    pub fn with_jwks_refetch_interval(mut self, interval: Duration) -> Self {
        self.oidc = self
            .oidc
            .map(|oidc| oidc.with_min_refetch_interval(interval));
        self
    }

    /// The OpenID Connect provider whose ID tokens the host accepts, if any: where the
    /// developer tool sends a developer to sign in.
    pub fn oidc(&self) -> Option<&OidcConfig> {
        self.oidc.as_ref().map(OidcVerifier::config)
    }

    /// The signer of the host's own tokens.
    pub fn issuer(&self) -> &TokenIssuer {
        &self.local
    }

    /// Verifies `token` and returns who it speaks for.
    ///
    /// The unverified `iss` only chooses the path; each path then verifies everything:
    /// local tokens with HS256 only, `exp` required (30 s leeway) and `iss` =
    /// [`LOCAL_ISSUER`]; external tokens with the published key matching `kid`, RS256, ES256
    /// or EdDSA only (never HS256, never `none`), `iss` and `aud` as configured, `exp`
    /// required, and an `email` the provider has not marked unverified.
    ///
    /// # Errors
    ///
    /// See [`TokenError`].
    pub async fn verify(&self, token: &str) -> Result<Verified, TokenError> {
        let peeked = peek(token)?;
        match (peeked.iss.as_deref(), &self.oidc) {
            (Some(LOCAL_ISSUER), _) => self.local.verify(token, &peeked),
            (Some(iss), Some(oidc)) if oidc.trusts(iss) => oidc.verify_peeked(token, &peeked).await,
            (Some(iss), _) => Err(TokenError::UnknownIssuer(iss.to_owned())),
            (None, _) => Err(invalid("the developer token has no `iss` claim")),
        }
    }
}

/// What a token says about itself before anything is verified: only used to choose how to
/// verify it and to word the errors.
struct Peeked {
    alg: String,
    kid: Option<String>,
    iss: Option<String>,
    exp: Option<u64>,
}

fn peek(token: &str) -> Result<Peeked, TokenError> {
    let malformed = |why: &str| invalid(format!("the developer token is malformed: {why}"));
    let mut parts = token.trim().split('.');
    let (Some(header), Some(payload), Some(_signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed("a JWT has three parts separated by dots"));
    };
    let decode = |part: &str, name: &str| -> Result<serde_json::Value, TokenError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| malformed(&format!("its {name} is not base64url")))?;
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|_| malformed(&format!("its {name} is not JSON")))?;
        if value.is_object() {
            Ok(value)
        } else {
            Err(malformed(&format!("its {name} is not a JSON object")))
        }
    };
    let header = decode(header, "header")?;
    let payload = decode(payload, "payload")?;
    let alg = match header.get("alg").and_then(serde_json::Value::as_str) {
        Some(alg) if alg.eq_ignore_ascii_case("none") => {
            return Err(invalid(
                "the developer token is not signed (`alg` is `none`); unsigned tokens are never accepted",
            ));
        }
        Some(alg) => alg.to_owned(),
        None => return Err(malformed("its header has no `alg`")),
    };
    let string = |value: &serde_json::Value, name: &str| -> Result<Option<String>, TokenError> {
        match value.get(name) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(malformed(&format!("`{name}` is not a string"))),
        }
    };
    Ok(Peeked {
        alg,
        kid: string(&header, "kid")?,
        iss: string(&payload, "iss")?,
        exp: payload.get("exp").and_then(serde_json::Value::as_u64),
    })
}

/// Words a `jsonwebtoken` failure for the developer; `signer` is who should have signed it.
fn map_jwt_error(error: jsonwebtoken::errors::Error, peeked: &Peeked, signer: &str) -> TokenError {
    match error.kind() {
        ErrorKind::ExpiredSignature => {
            let at = peeked
                .exp
                .and_then(|exp| i64::try_from(exp).ok())
                .and_then(|exp| jiff::Timestamp::from_second(exp).ok())
                .map_or_else(|| "an unknown time".to_owned(), |at| at.to_string());
            TokenError::Expired(at)
        }
        ErrorKind::InvalidSignature => invalid(format!(
            "the developer token's signature does not match: it was not signed by {signer} \
             (forged, altered, or signed with a key that has since changed)"
        )),
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => invalid(format!(
            "the developer token is signed with {}, which is not accepted for {signer}",
            peeked.alg
        )),
        ErrorKind::InvalidAudience => invalid(format!(
            "the developer token from {signer} is meant for another application (`aud` does \
             not name this host's client id)"
        )),
        ErrorKind::InvalidIssuer => invalid(format!(
            "the developer token's `iss` does not match {signer}"
        )),
        ErrorKind::MissingRequiredClaim(claim) => {
            invalid(format!("the developer token has no `{claim}` claim"))
        }
        ErrorKind::InvalidClaimFormat(claim) => invalid(format!(
            "the developer token's `{claim}` claim is malformed"
        )),
        ErrorKind::ImmatureSignature => invalid("the developer token is not valid yet"),
        ErrorKind::InvalidToken
        | ErrorKind::Base64(_)
        | ErrorKind::Json(_)
        | ErrorKind::Utf8(_) => invalid(format!("the developer token is malformed: {error}")),
        _ => invalid(format!(
            "the developer token could not be verified: {error}"
        )),
    }
}

/// Helpers shared by the unit tests of this module and its submodules.
#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use jsonwebtoken::{Algorithm, EncodingKey, Header};

    use super::*;

    pub(super) const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    pub(super) fn identity() -> Identity {
        Identity::new(TokenIssuer::from_secret(SECRET), None)
    }

    pub(super) fn sign_hs256(claims: &serde_json::Value, secret: &[u8]) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            claims,
            &EncodingKey::from_secret(secret),
        )
        .unwrap()
    }

    /// The claims of a local token for `dev_42` that expires at `exp`.
    pub(super) fn claims(exp: u64) -> serde_json::Value {
        serde_json::json!({
            "iss": LOCAL_ISSUER,
            "sub": "dev_42",
            "email": "ada@example.com",
            "iat": exp.saturating_sub(3600),
            "exp": exp,
            "jti": "j",
        })
    }

    pub(super) fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    /// The message of a [`TokenError::Invalid`]; panics on anything else.
    pub(super) fn message(result: Result<Verified, TokenError>) -> String {
        match result {
            Err(TokenError::Invalid(message)) => message,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn unsigned_token_is_invalid() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims(now() + 600).to_string());
        let message = message(identity().verify(&format!("{header}.{payload}.")).await);
        assert!(message.contains("none"), "{message}");
    }

    #[tokio::test]
    async fn malformed_tokens_are_invalid() {
        for token in ["", "abc", "a.b", "a.b.c.d", "!!.??.x", "e30.e30.x"] {
            let message = message(identity().verify(token).await);
            assert!(message.contains("malformed"), "{token}: {message}");
        }
    }

    #[tokio::test]
    async fn unknown_issuer_is_reported() {
        let mut other = claims(now() + 600);
        other["iss"] = "https://evil.example".into();
        match identity().verify(&sign_hs256(&other, SECRET)).await {
            Err(TokenError::UnknownIssuer(iss)) => assert_eq!(iss, "https://evil.example"),
            other => panic!("expected UnknownIssuer, got {other:?}"),
        }
        // With a provider configured, other issuers are still unknown.
        let identity = Identity::new(
            TokenIssuer::from_secret(SECRET),
            Some(OidcConfig::new("https://login.example", "atrium").unwrap()),
        );
        let err = identity
            .verify(&sign_hs256(&other, SECRET))
            .await
            .unwrap_err();
        assert!(matches!(err, TokenError::UnknownIssuer(_)), "{err:?}");
    }
}
