//! Developer tokens from an external OpenID Connect provider, verified against a provider that
//! runs inside the test ([`atrium_test_artifacts::oidc`]): discovery document and key set on
//! 127.0.0.1, ES256 keys generated here.

use std::net::SocketAddr;
use std::time::Duration;

use atrium_platform::identity::{Identity, OidcConfig, TokenError, TokenIssuer, Verified};
use atrium_test_artifacts::oidc::{Provider, SigningKey as TestKey};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const AUDIENCE: &str = "atrium-cli";

/// What the tests need of the provider beyond what it serves.
trait ProviderExt {
    fn identity(&self) -> Identity;
    /// Claims of a valid ID token of this provider for Ada.
    fn ada(&self) -> Value;
}

impl ProviderExt for Provider {
    fn identity(&self) -> Identity {
        identity_for(self.issuer())
    }

    fn ada(&self) -> Value {
        let mut claims = self.claims(AUDIENCE, "ada@example.com");
        claims["sub"] = "google-oauth2|1234".into();
        claims
    }
}

fn identity_for(issuer: &str) -> Identity {
    Identity::new(
        TokenIssuer::from_secret(b"local secret that is 32 bytes ok"),
        Some(OidcConfig::new(issuer, AUDIENCE).unwrap()),
    )
}

fn invalid_message(result: Result<Verified, TokenError>) -> String {
    match result {
        Err(TokenError::Invalid(message)) => message,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[tokio::test]
async fn valid_token_verifies_to_its_email() {
    let key = TestKey::generate("k1");
    let provider = Provider::start(&[&key]);
    let identity = provider.identity();
    let verified = identity.verify(&key.sign(&provider.ada())).await.unwrap();
    assert_eq!(
        verified,
        Verified::External {
            email: "ada@example.com".to_owned(),
            subject: "google-oauth2|1234".to_owned(),
        }
    );
    // The keys are cached: a second token needs no fetch.
    identity.verify(&key.sign(&provider.ada())).await.unwrap();
    assert_eq!(provider.jwks_fetches(), 1);
}

#[tokio::test]
async fn local_tokens_still_verify_with_a_provider_configured() {
    let key = TestKey::generate("k1");
    let provider = Provider::start(&[&key]);
    let identity = provider.identity();
    let token = identity
        .issuer()
        .issue("dev_1", "ada@example.com", Duration::from_secs(60))
        .unwrap();
    let verified = identity.verify(&token).await.unwrap();
    assert!(matches!(verified, Verified::Local { .. }), "{verified:?}");
    assert_eq!(provider.jwks_fetches(), 0);
}

#[tokio::test]
async fn wrong_audience_is_invalid() {
    let key = TestKey::generate("k1");
    let provider = Provider::start(&[&key]);
    let mut claims = provider.ada();
    claims["aud"] = "some-other-app".into();
    let message = invalid_message(provider.identity().verify(&key.sign(&claims)).await);
    assert!(message.contains("aud"), "{message}");
}

#[tokio::test]
async fn expired_token_is_expired() {
    let key = TestKey::generate("k1");
    let provider = Provider::start(&[&key]);
    let mut claims = provider.ada();
    claims["exp"] = 1_700_000_000.into();
    let err = provider
        .identity()
        .verify(&key.sign(&claims))
        .await
        .unwrap_err();
    assert!(matches!(err, TokenError::Expired(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the developer token expired at 2023-11-14T22:13:20Z"
    );
}

#[tokio::test]
async fn missing_or_unverified_email_is_invalid() {
    let key = TestKey::generate("k1");
    let provider = Provider::start(&[&key]);
    let identity = provider.identity();

    let mut claims = provider.ada();
    claims.as_object_mut().unwrap().remove("email");
    let message = invalid_message(identity.verify(&key.sign(&claims)).await);
    assert!(message.contains("`email`"), "{message}");

    let mut claims = provider.ada();
    claims["email_verified"] = false.into();
    let message = invalid_message(identity.verify(&key.sign(&claims)).await);
    assert!(message.contains("not verified"), "{message}");
}

#[tokio::test]
async fn key_the_provider_does_not_publish_is_invalid_after_one_refetch() {
    let published = TestKey::generate("k1");
    let stranger = TestKey::generate("k-stranger");
    let provider = Provider::start(&[&published]);
    let identity = provider
        .identity()
        .with_jwks_refetch_interval(Duration::ZERO);
    identity
        .verify(&published.sign(&provider.ada()))
        .await
        .unwrap();
    assert_eq!(provider.jwks_fetches(), 1);

    let message = invalid_message(identity.verify(&stranger.sign(&provider.ada())).await);
    assert!(message.contains("k-stranger"), "{message}");
    assert_eq!(provider.jwks_fetches(), 2, "an unknown kid refetches once");
}

#[tokio::test]
async fn unknown_kids_refetch_at_most_once_a_minute() {
    let published = TestKey::generate("k1");
    let provider = Provider::start(&[&published]);
    // The default interval: the fetch that verified the first token was moments ago.
    let identity = provider.identity();
    identity
        .verify(&published.sign(&provider.ada()))
        .await
        .unwrap();
    for kid in ["made-up-1", "made-up-2", "made-up-3"] {
        let forged = TestKey::generate(kid);
        invalid_message(identity.verify(&forged.sign(&provider.ada())).await);
    }
    assert_eq!(provider.jwks_fetches(), 1);
}

#[tokio::test]
async fn token_signed_by_a_same_kid_impostor_is_invalid() {
    let published = TestKey::generate("k1");
    let impostor = TestKey::generate("k1");
    let provider = Provider::start(&[&published]);
    let message = invalid_message(
        provider
            .identity()
            .verify(&impostor.sign(&provider.ada()))
            .await,
    );
    assert!(message.contains("signature"), "{message}");
}

#[tokio::test]
async fn rotated_key_verifies_after_a_refetch() {
    let old = TestKey::generate("2024-01");
    let new = TestKey::generate("2024-02");
    let provider = Provider::start(&[&old]);
    let identity = provider
        .identity()
        .with_jwks_refetch_interval(Duration::ZERO);
    identity.verify(&old.sign(&provider.ada())).await.unwrap();

    provider.publish(&[&new]);
    let verified = identity.verify(&new.sign(&provider.ada())).await.unwrap();
    assert!(
        matches!(verified, Verified::External { .. }),
        "{verified:?}"
    );
    assert_eq!(provider.jwks_fetches(), 2);
    // The withdrawn key is gone from the cache with the refetch.
    let err = identity
        .verify(&old.sign(&provider.ada()))
        .await
        .unwrap_err();
    assert!(matches!(err, TokenError::Invalid(_)), "{err:?}");
}

#[tokio::test]
async fn hs256_token_claiming_the_provider_is_refused() {
    let key = TestKey::generate("k1");
    let provider = Provider::start(&[&key]);
    let identity = provider.identity();
    // Signed with the host's own secret, and with the provider's public key bytes as an HMAC
    // secret (the classic algorithm-confusion forgery).
    let public_x = key.jwk()["x"].as_str().unwrap().to_owned();
    for secret in [
        b"local secret that is 32 bytes ok".to_vec(),
        public_x.into_bytes(),
    ] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".to_owned());
        let token =
            jsonwebtoken::encode(&header, &provider.ada(), &EncodingKey::from_secret(&secret))
                .unwrap();
        let message = invalid_message(identity.verify(&token).await);
        assert!(message.contains("HS256"), "{message}");
    }
    assert_eq!(
        provider.jwks_fetches(),
        0,
        "refused before any key is fetched"
    );
}

#[tokio::test]
async fn issuer_down_is_unavailable() {
    // Bind a port and close it again: nothing listens there.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    drop(listener);
    let issuer = format!("http://{addr}");
    let key = TestKey::generate("k1");
    let now = jsonwebtoken::get_current_timestamp();
    let claims = json!({
        "iss": issuer,
        "aud": AUDIENCE,
        "sub": "s",
        "email": "ada@example.com",
        "exp": now + 600,
    });
    let err = identity_for(&issuer)
        .verify(&key.sign(&claims))
        .await
        .unwrap_err();
    assert!(matches!(err, TokenError::IssuerUnavailable(_)), "{err:?}");
    assert!(err.to_string().contains(&issuer), "{err}");
}
