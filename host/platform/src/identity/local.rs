//! The host's own developer tokens: HS256 JWTs signed with the secret from
//! `ATRIUM_JWT_SECRET` or `<data_dir>/jwt.key`.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::{
    IdentityError, JWT_KEY_FILE, JWT_SECRET_ENV, LEEWAY_SECS, LOCAL_ISSUER, Peeked, TokenError,
    Verified, invalid, map_jwt_error,
};
use crate::keyfile::read_or_create_key_file;

/// HS256 is only as strong as its secret; 32 bytes matches the hash's own strength.
const MIN_SECRET_LEN: usize = 32;

/// Signs the host's own developer tokens (HS256).
///
/// `Debug` never prints the secret.
#[derive(Clone)]
pub struct TokenIssuer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// The keys of `APP_MCP_TOKEN`s ([`super::app_token`]): derived from the same secret, so
    /// every host that shares it verifies them, and different from the developer tokens' key,
    /// so neither kind of token passes for the other.
    pub(super) app_encoding: EncodingKey,
    pub(super) app_decoding: DecodingKey,
}

impl fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("algorithm", &"HS256")
            .finish_non_exhaustive()
    }
}

/// The claims of a token the host signs.
#[derive(Debug, Serialize, Deserialize)]
struct LocalClaims {
    iss: String,
    sub: String,
    email: String,
    iat: u64,
    exp: u64,
    jti: String,
}

impl TokenIssuer {
    /// The secret from `configured` (the value of `ATRIUM_JWT_SECRET`, at least 32 bytes,
    /// used as is) when it is `Some`; otherwise the one in `<data_dir>/jwt.key`, generated
    /// on first start (32 random bytes written as hex, mode 0600).
    ///
    /// The file's text is the secret, exactly as a configured value would be, so an operator
    /// can move it into `ATRIUM_JWT_SECRET` without invalidating the tokens already issued.
    /// A key file that group or others can read is refused.
    ///
    /// # Errors
    ///
    /// [`IdentityError::Key`] for a secret that is too short or a key file with loose
    /// permissions, [`IdentityError::Io`] when the file cannot be read or created.
    pub fn load_or_create(
        data_dir: &Path,
        configured: Option<&str>,
    ) -> Result<Self, IdentityError> {
        let (secret, source) = match configured {
            Some(secret) => (secret.to_owned(), JWT_SECRET_ENV.to_owned()),
            None => {
                let path = data_dir.join(JWT_KEY_FILE);
                let secret = read_or_create_key_file(&path)?;
                (secret, format!("the key file {}", path.display()))
            }
        };
        if secret.len() < MIN_SECRET_LEN {
            // Never echo the value: it may be a real secret pasted into the wrong place.
            return Err(IdentityError::Key(format!(
                "{source} must hold a JWT secret of at least {MIN_SECRET_LEN} bytes (for example \
                 the output of `openssl rand -hex 32`); it holds {}",
                secret.len()
            )));
        }
        Ok(Self::from_secret(secret.as_bytes()))
    }

    /// An issuer with the given HS256 secret.
    pub fn from_secret(secret: &[u8]) -> Self {
        let app_key = aws_lc_rs::hmac::sign(
            &aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, secret),
            super::app_token::KEY_PURPOSE,
        );
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            app_encoding: EncodingKey::from_secret(app_key.as_ref()),
            app_decoding: DecodingKey::from_secret(app_key.as_ref()),
        }
    }

    /// Signs a token for `developer_id` that expires after `ttl`.
    ///
    /// The claims are `iss` = [`LOCAL_ISSUER`], `sub` = `developer_id`, `email`, `iat`, `exp`
    /// and a random `jti` (so two tokens issued in the same second differ and one can be
    /// revoked on its own).
    ///
    /// # Errors
    ///
    /// [`IdentityError::Issue`] when the random generator or the signer fails.
    pub fn issue(
        &self,
        developer_id: &str,
        email: &str,
        ttl: Duration,
    ) -> Result<String, IdentityError> {
        let mut jti = [0u8; 16];
        getrandom::fill(&mut jti).map_err(|e| {
            IdentityError::Issue(format!("the system random generator failed: {e}"))
        })?;
        let now = jsonwebtoken::get_current_timestamp();
        let claims = LocalClaims {
            iss: LOCAL_ISSUER.to_owned(),
            sub: developer_id.to_owned(),
            email: email.to_owned(),
            iat: now,
            exp: now.saturating_add(ttl.as_secs()),
            jti: URL_SAFE_NO_PAD.encode(jti),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| IdentityError::Issue(e.to_string()))
    }

    /// Verifies a token whose unverified `iss` is [`LOCAL_ISSUER`].
    pub(super) fn verify(&self, token: &str, peeked: &Peeked) -> Result<Verified, TokenError> {
        if peeked.alg != "HS256" {
            return Err(invalid(format!(
                "the developer token claims to come from this host but is signed with {}; this \
                 host signs its tokens with HS256 only",
                peeked.alg
            )));
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = LEEWAY_SECS;
        validation.set_issuer(&[LOCAL_ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        // Local tokens carry no audience: the host is the only party that reads them.
        validation.validate_aud = false;
        let data = jsonwebtoken::decode::<LocalClaims>(token, &self.decoding, &validation)
            .map_err(|e| map_jwt_error(e, peeked, "this host"))?;
        Ok(Verified::Local {
            developer_id: data.claims.sub,
            email: data.claims.email,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use super::super::Identity;
    use super::super::tests::{SECRET, claims, identity, message, now, sign_hs256};
    use super::*;

    #[tokio::test]
    async fn issued_token_verifies() {
        let identity = identity();
        let token = identity
            .issuer()
            .issue("dev_42", "ada@example.com", Duration::from_secs(600))
            .unwrap();
        let verified = identity.verify(&token).await.unwrap();
        assert_eq!(
            verified,
            Verified::Local {
                developer_id: "dev_42".to_owned(),
                email: "ada@example.com".to_owned(),
            }
        );
        // Each token gets its own `jti`.
        let again = identity
            .issuer()
            .issue("dev_42", "ada@example.com", Duration::from_secs(600))
            .unwrap();
        assert_ne!(token, again);
    }

    #[tokio::test]
    async fn expired_token_is_reported_with_its_time() {
        let token = sign_hs256(&claims(1_700_000_000), SECRET);
        match identity().verify(&token).await {
            Err(e @ TokenError::Expired(_)) => {
                assert_eq!(
                    e.to_string(),
                    "the developer token expired at 2023-11-14T22:13:20Z"
                );
            }
            other => panic!("expected Expired, got {other:?}"),
        }
        // Within the leeway the token still passes.
        let token = sign_hs256(&claims(now() - 10), SECRET);
        identity().verify(&token).await.unwrap();
    }

    #[tokio::test]
    async fn token_signed_with_another_secret_is_invalid() {
        let token = sign_hs256(&claims(now() + 600), b"another secret, also 32 bytes long!");
        let message = message(identity().verify(&token).await);
        assert!(message.contains("signature"), "{message}");
    }

    #[tokio::test]
    async fn tampered_payload_is_invalid() {
        let token = sign_hs256(&claims(now() + 600), SECRET);
        let mut parts: Vec<&str> = token.split('.').collect();
        let mut forged = claims(now() + 600);
        forged["sub"] = "dev_1".into();
        let payload = URL_SAFE_NO_PAD.encode(forged.to_string());
        parts[1] = &payload;
        let message = message(identity().verify(&parts.join(".")).await);
        assert!(message.contains("signature"), "{message}");
    }

    #[tokio::test]
    async fn local_token_with_another_algorithm_is_invalid() {
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &claims(now() + 600),
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap();
        let message = message(identity().verify(&token).await);
        assert!(message.contains("HS512"), "{message}");
    }

    #[tokio::test]
    async fn local_token_without_exp_is_invalid() {
        let mut no_exp = claims(now() + 600);
        no_exp.as_object_mut().unwrap().remove("exp");
        let message = message(identity().verify(&sign_hs256(&no_exp, SECRET)).await);
        assert!(message.contains("`exp`"), "{message}");
    }

    #[test]
    fn short_configured_secret_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = TokenIssuer::load_or_create(dir.path(), Some("too short")).unwrap_err();
        assert!(matches!(err, IdentityError::Key(_)), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(JWT_SECRET_ENV), "{message}");
        assert!(!message.contains("too short"), "{message}");
        TokenIssuer::load_or_create(dir.path(), Some(std::str::from_utf8(SECRET).unwrap()))
            .unwrap();
        assert!(!dir.path().join(JWT_KEY_FILE).exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn key_file_is_created_0600_and_reused() {
        use std::os::unix::fs::PermissionsExt as _;

        let dir = tempfile::tempdir().unwrap();
        let first = TokenIssuer::load_or_create(dir.path(), None).unwrap();
        let path = dir.path().join(JWT_KEY_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let token = first
            .issue("dev_42", "ada@example.com", Duration::from_secs(600))
            .unwrap();
        let second = TokenIssuer::load_or_create(dir.path(), None).unwrap();
        Identity::new(second, None).verify(&token).await.unwrap();
        // The file's text works as ATRIUM_JWT_SECRET too.
        let text = std::fs::read_to_string(&path).unwrap();
        let configured = TokenIssuer::load_or_create(dir.path(), Some(text.trim())).unwrap();
        Identity::new(configured, None)
            .verify(&token)
            .await
            .unwrap();

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = TokenIssuer::load_or_create(dir.path(), None).unwrap_err();
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }

    #[test]
    fn debug_hides_the_secret() {
        let printed = format!("{:?}", identity());
        assert!(!printed.contains("0123456789abcdef"), "{printed}");
        assert!(!printed.contains("48, 49, 50"), "{printed}");
    }
}
