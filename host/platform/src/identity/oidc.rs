//! ID tokens of an external OpenID Connect provider, verified against the keys the provider
//! publishes (its JWKS), which are cached and refetched when the provider rotates them.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::{
    IdentityError, LEEWAY_SECS, OIDC_AUDIENCE_ENV, OIDC_ISSUER_ENV, Peeked, TokenError, Verified,
    invalid, map_jwt_error, peek,
};

/// How often an unknown `kid` may trigger a refetch of the provider's keys by default: often
/// enough to pick up a rotation quickly, rarely enough that tokens with made-up `kid`s cannot
/// make the host hammer the provider.
const DEFAULT_MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(60);

/// Cached keys older than this are refreshed on the next use, so a key the provider withdrew
/// stops verifying tokens even if no new `kid` ever shows up.
const JWKS_MAX_AGE: Duration = Duration::from_secs(3600);

/// After a failed fetch, requests fail fast for this long instead of each waiting on the
/// provider again.
const FETCH_FAILURE_BACKOFF: Duration = Duration::from_secs(5);

/// Discovery documents and key sets are small; anything bigger is not one.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// The external OpenID Connect provider whose ID tokens the host accepts.
///
/// Built by [`OidcConfig::new`], which refuses an issuer the host could be tricked by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcConfig {
    issuer: String,
    audience: String,
}

impl OidcConfig {
    /// The provider at `issuer` whose tokens are issued for `audience` (the client id
    /// registered for Atrium). Surrounding whitespace is ignored.
    ///
    /// The issuer must be an `https://` URL with a host and no user name, password, query or
    /// fragment, as OpenID Connect Discovery requires: the host fetches the provider's keys
    /// from it, and over plain HTTP anyone on the path could substitute their own keys and
    /// sign in as any developer. `http://` is accepted only for a loopback host (127.0.0.1,
    /// `::1`, `localhost`), where a provider run for development or tests listens.
    ///
    /// # Errors
    ///
    /// [`IdentityError::Oidc`], naming `ATRIUM_OIDC_ISSUER` or `ATRIUM_OIDC_AUDIENCE` and
    /// the rule broken.
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, IdentityError> {
        let issuer = issuer.into().trim().to_owned();
        let audience = audience.into().trim().to_owned();
        check_issuer(&issuer)?;
        if audience.is_empty() {
            return Err(IdentityError::Oidc(format!(
                "{OIDC_AUDIENCE_ENV} is empty: set it to the client id the provider's tokens are \
                 issued for"
            )));
        }
        Ok(Self { issuer, audience })
    }

    /// The provider's issuer URL, exactly as its tokens' `iss` (a trailing `/` is ignored
    /// when comparing).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The `aud` the tokens must carry: the client id registered for Atrium.
    pub fn audience(&self) -> &str {
        &self.audience
    }
}

/// Checks an issuer URL against the rules of [`OidcConfig::new`].
fn check_issuer(issuer: &str) -> Result<(), IdentityError> {
    let refuse = |rule: &str| Err(IdentityError::Oidc(format!("{OIDC_ISSUER_ENV} {rule}")));
    if issuer.is_empty() {
        return refuse(
            "is empty: set it to the provider's issuer URL, such as https://login.example.com",
        );
    }
    let url = match url::Url::parse(issuer) {
        Ok(url) => url,
        Err(e) => {
            return refuse(&format!(
                "`{issuer}` is not a URL ({e}): set it to the provider's issuer URL, such as \
                 https://login.example.com"
            ));
        }
    };
    // Checked first so that no message below repeats a password.
    if !url.username().is_empty() || url.password().is_some() {
        return refuse("must not hold a user name or password");
    }
    let loopback = match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" if url.host().is_some() => {}
        "http" if loopback => {}
        "http" => {
            return refuse(&format!(
                "`{issuer}` must be an https:// URL: the provider's keys fetched over plain \
                 http could be replaced on the way (http:// is accepted only for 127.0.0.1, \
                 ::1 and localhost)"
            ));
        }
        _ => {
            return refuse(&format!(
                "`{issuer}` must be an https:// URL with a host, such as https://login.example.com"
            ));
        }
    }
    if url.query().is_some() || url.fragment().is_some() {
        return refuse(&format!(
            "`{issuer}` must not have a query (`?`) or a fragment (`#`): an OpenID Connect \
             issuer is a scheme, a host and an optional path"
        ));
    }
    Ok(())
}

/// Verifies ID tokens of one OpenID Connect provider against the keys it publishes.
///
/// The keys come from the `jwks_uri` of `<issuer>/.well-known/openid-configuration` and are
/// cached. A token whose `kid` is not in the cache triggers a refetch (the provider may have
/// rotated its keys), at most once per minute.
#[derive(Debug)]
pub struct OidcVerifier {
    config: OidcConfig,
    /// `Err` holds why the HTTP client could not be built; every fetch reports it.
    http: Result<reqwest::Client, String>,
    min_refetch_interval: Duration,
    /// Held across a fetch, so concurrent requests with a new `kid` cause one fetch, not many.
    cache: tokio::sync::Mutex<KeyCache>,
}

#[derive(Debug, Default)]
struct KeyCache {
    keys: Option<CachedKeys>,
    last_attempt: Option<Instant>,
    last_failure: Option<(Instant, String)>,
}

#[derive(Debug)]
struct CachedKeys {
    keys: Vec<Jwk>,
    fetched_at: Instant,
}

/// The part of `/.well-known/openid-configuration` the host reads.
#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

/// The claims of a provider's ID token that the host reads.
#[derive(Deserialize)]
struct ExternalClaims {
    sub: String,
    email: Option<String>,
    /// A boolean in the spec, but some providers send the string `"false"`.
    email_verified: Option<serde_json::Value>,
}

impl OidcVerifier {
    /// A verifier for `config`'s provider. Nothing is fetched until the first token arrives.
    pub fn new(config: OidcConfig) -> Self {
        // Short timeouts: a developer request waits on these fetches.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(3))
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("cannot create an HTTP client: {e}"));
        Self {
            config,
            http,
            min_refetch_interval: DEFAULT_MIN_REFETCH_INTERVAL,
            cache: tokio::sync::Mutex::new(KeyCache::default()),
        }
    }

    /// Sets how often an unknown `kid` may trigger a refetch (one minute by default; tests
    /// that rotate keys use zero).
    pub fn with_min_refetch_interval(mut self, interval: Duration) -> Self {
        self.min_refetch_interval = interval;
        self
    }

    /// The provider this verifier trusts.
    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// Verifies an ID token of the provider: signature by the published key named by `kid`
    /// (RS256, ES256 or EdDSA), `iss`, `aud`, `exp` and a verified `email`.
    ///
    /// # Errors
    ///
    /// See [`TokenError`].
    pub async fn verify(&self, token: &str) -> Result<Verified, TokenError> {
        let peeked = peek(token)?;
        self.verify_peeked(token, &peeked).await
    }

    /// Whether a token's `iss` names this provider.
    pub(super) fn trusts(&self, iss: &str) -> bool {
        same_issuer(iss, &self.config.issuer)
    }

    /// [`OidcVerifier::verify`] of a token already peeked at.
    pub(super) async fn verify_peeked(
        &self,
        token: &str,
        peeked: &Peeked,
    ) -> Result<Verified, TokenError> {
        let issuer = &self.config.issuer;
        // Checked before anything else: an HS256 token "from the provider" would otherwise be
        // verified with whatever key bytes the JWKS holds, the classic algorithm confusion.
        let algorithm = match peeked.alg.as_str() {
            "RS256" => Algorithm::RS256,
            "ES256" => Algorithm::ES256,
            "EdDSA" => Algorithm::EdDSA,
            other => {
                return Err(invalid(format!(
                    "the developer token claims to come from {issuer} but is signed with \
                     {other}; tokens from the OpenID Connect provider must be signed with \
                     RS256, ES256 or EdDSA"
                )));
            }
        };
        match peeked.iss.as_deref() {
            Some(iss) if self.trusts(iss) => {}
            Some(iss) => return Err(TokenError::UnknownIssuer(iss.to_owned())),
            None => return Err(invalid("the developer token has no `iss` claim")),
        }
        let key = self.key_for(peeked.kid.as_deref(), algorithm).await?;

        let mut validation = Validation::new(algorithm);
        validation.leeway = LEEWAY_SECS;
        let trimmed = issuer.trim_end_matches('/');
        validation.set_issuer(&[trimmed.to_owned(), format!("{trimmed}/")]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<ExternalClaims>(token, &key, &validation)
            .map_err(|e| map_jwt_error(e, peeked, issuer))?;

        let claims = data.claims;
        let email = match claims.email {
            Some(email) if !email.trim().is_empty() => email,
            _ => {
                return Err(invalid(format!(
                    "the token from {issuer} has no `email` claim; the provider must include \
                     the `email` scope in the developer's ID token"
                )));
            }
        };
        let unverified = match &claims.email_verified {
            Some(serde_json::Value::Bool(verified)) => !verified,
            Some(serde_json::Value::String(verified)) => verified.eq_ignore_ascii_case("false"),
            _ => false,
        };
        if unverified {
            return Err(invalid(format!(
                "{issuer} has not verified the email address {email}; verify it with the \
                 provider and sign in again"
            )));
        }
        Ok(Verified::External {
            email,
            subject: claims.sub,
        })
    }

    /// The published key that verifies a token with this `kid` and algorithm, fetching the
    /// key set when there is none yet, when it is old, or when the `kid` is new to it.
    async fn key_for(
        &self,
        kid: Option<&str>,
        algorithm: Algorithm,
    ) -> Result<DecodingKey, TokenError> {
        let mut cache = self.cache.lock().await;
        let must_fetch = cache
            .keys
            .as_ref()
            .is_none_or(|keys| keys.fetched_at.elapsed() >= JWKS_MAX_AGE);
        let mut fetch_error = None;
        if must_fetch && let Err(e) = self.refresh(&mut cache).await {
            if cache.keys.is_none() {
                return Err(e);
            }
            // Old keys are better than none while the provider is down.
            tracing::warn!(issuer = %self.config.issuer, error = %e, "using the cached OpenID Connect keys");
            fetch_error = Some(e);
        }
        if let Some(key) = self.find_key(&cache, kid, algorithm)? {
            return Ok(key);
        }
        // The key may be one the provider published after our copy; we cannot tell.
        if let Some(e) = fetch_error {
            return Err(e);
        }
        // An unknown `kid` may mean the provider rotated its keys since the last fetch.
        let fetched_recently = cache
            .last_attempt
            .is_some_and(|at| at.elapsed() < self.min_refetch_interval);
        if !must_fetch && !fetched_recently {
            self.refresh(&mut cache).await?;
            if let Some(key) = self.find_key(&cache, kid, algorithm)? {
                return Ok(key);
            }
        }
        Err(invalid(match kid {
            Some(kid) => format!(
                "the developer token is signed with key {kid:?}, which {} does not publish",
                self.config.issuer
            ),
            None => format!(
                "the developer token names no key (`kid`) and {} publishes no single {algorithm:?} key",
                self.config.issuer
            ),
        }))
    }

    fn find_key(
        &self,
        cache: &KeyCache,
        kid: Option<&str>,
        algorithm: Algorithm,
    ) -> Result<Option<DecodingKey>, TokenError> {
        let Some(cached) = &cache.keys else {
            return Ok(None);
        };
        let jwk = match kid {
            Some(kid) => {
                let mut named = cached
                    .keys
                    .iter()
                    .filter(|jwk| jwk.common.key_id.as_deref() == Some(kid))
                    .peekable();
                if named.peek().is_none() {
                    return Ok(None);
                }
                match named.find(|jwk| fits(jwk, algorithm)) {
                    Some(jwk) => jwk,
                    None => {
                        return Err(invalid(format!(
                            "key {kid:?} of {} cannot verify an {algorithm:?} signature",
                            self.config.issuer
                        )));
                    }
                }
            }
            // Without a `kid` the key is unambiguous only when the provider has one that fits.
            None => {
                let mut fitting = cached.keys.iter().filter(|jwk| fits(jwk, algorithm));
                match (fitting.next(), fitting.next()) {
                    (Some(jwk), None) => jwk,
                    (None, _) => return Ok(None),
                    (Some(_), Some(_)) => {
                        return Err(invalid(format!(
                            "the developer token names no key (`kid`) and {} publishes several \
                             {algorithm:?} keys",
                            self.config.issuer
                        )));
                    }
                }
            }
        };
        DecodingKey::from_jwk(jwk).map(Some).map_err(|e| {
            invalid(format!(
                "the key published by {} is unusable: {e}",
                self.config.issuer
            ))
        })
    }

    /// Fetches the key set into the cache, unless a fetch failed moments ago.
    async fn refresh(&self, cache: &mut KeyCache) -> Result<(), TokenError> {
        if let Some((at, message)) = &cache.last_failure
            && at.elapsed() < FETCH_FAILURE_BACKOFF
        {
            return Err(TokenError::IssuerUnavailable(message.clone()));
        }
        cache.last_attempt = Some(Instant::now());
        match self.fetch_keys().await {
            Ok(keys) => {
                tracing::debug!(issuer = %self.config.issuer, keys = keys.len(), "fetched the OpenID Connect keys");
                cache.keys = Some(CachedKeys {
                    keys,
                    fetched_at: Instant::now(),
                });
                cache.last_failure = None;
                Ok(())
            }
            Err(message) => {
                tracing::warn!(issuer = %self.config.issuer, error = %message, "cannot fetch the OpenID Connect keys");
                cache.last_failure = Some((Instant::now(), message.clone()));
                Err(TokenError::IssuerUnavailable(message))
            }
        }
    }

    async fn fetch_keys(&self) -> Result<Vec<Jwk>, String> {
        let http = self.http.as_ref().map_err(Clone::clone)?;
        let issuer = self.config.issuer.trim_end_matches('/');
        let discovery_url = format!("{issuer}/.well-known/openid-configuration");
        let discovery: Discovery = fetch_json(http, &discovery_url).await?;
        // The spec requires the document to name the issuer it was fetched for; a mismatch
        // means a misconfigured issuer URL, and its keys would sign for someone else.
        if !same_issuer(&discovery.issuer, issuer) {
            return Err(format!(
                "{discovery_url} names the issuer {:?}, not {:?}",
                discovery.issuer, self.config.issuer
            ));
        }
        #[derive(Deserialize)]
        struct RawKeySet {
            keys: Vec<serde_json::Value>,
        }
        let raw: RawKeySet = fetch_json(http, &discovery.jwks_uri).await?;
        // Keys of kinds the host cannot use (encryption keys, unknown curves) are skipped one
        // by one rather than failing the whole set.
        Ok(raw
            .keys
            .into_iter()
            .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
            .collect())
    }
}

async fn fetch_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
) -> Result<T, String> {
    let mut response = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("cannot fetch {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("cannot read {url}: {e}"))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("{url} is larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url} is not the expected JSON: {e}"))
}

fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}
/// Whether `jwk` may verify a signature made with `algorithm`: the right key type and curve,
/// meant for signatures, and not restricted to another algorithm.
fn fits(jwk: &Jwk, algorithm: Algorithm) -> bool {
    if matches!(
        &jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return false;
    }
    if let Some(declared) = jwk.common.key_algorithm
        && declared.to_string() != format!("{algorithm:?}")
    {
        return false;
    }
    match (&jwk.algorithm, algorithm) {
        (AlgorithmParameters::RSA(_), Algorithm::RS256) => true,
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => {
            okp.curve == EllipticCurve::Ed25519
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use super::*;

    fn refused(issuer: &str) -> String {
        match OidcConfig::new(issuer, "atrium-cli") {
            Err(IdentityError::Oidc(message)) => message,
            other => panic!("{issuer}: expected IdentityError::Oidc, got {other:?}"),
        }
    }

    #[test]
    fn https_issuers_are_accepted_as_given() {
        for issuer in [
            "https://login.example.com",
            "https://login.example.com/",
            "https://example.com/realms/atrium",
            "https://login.example.com:8443",
        ] {
            let config = OidcConfig::new(format!(" {issuer}\n"), " atrium-cli ").unwrap();
            // Kept as written, not normalized: tokens' `iss` are compared with it.
            assert_eq!(config.issuer(), issuer);
            assert_eq!(config.audience(), "atrium-cli");
        }
    }

    #[test]
    fn plain_http_is_accepted_only_for_loopback_hosts() {
        for issuer in [
            "http://127.0.0.1:8080",
            "http://127.0.0.1",
            "http://[::1]:9000/issuer",
            "http://localhost:3000",
            "http://LOCALHOST",
        ] {
            OidcConfig::new(issuer, "atrium-cli").unwrap();
        }
        for issuer in [
            "http://login.example.com",
            "http://127.0.0.1.example.com",
            "http://localhost.example.com",
            "http://10.0.0.1",
            "http://[::2]",
        ] {
            let message = refused(issuer);
            assert!(message.starts_with("ATRIUM_OIDC_ISSUER "), "{message}");
            assert!(message.contains("https://"), "{message}");
            assert!(message.contains(issuer), "{message}");
        }
    }

    #[test]
    fn issuers_that_are_not_plain_urls_are_refused() {
        for (issuer, rule) in [
            ("", "is empty"),
            ("login.example.com", "is not a URL"),
            ("ftp://login.example.com", "must be an https:// URL"),
            ("file:///etc/issuer", "must be an https:// URL"),
            ("https://login.example.com/?tenant=a", "query"),
            ("https://login.example.com/#a", "fragment"),
        ] {
            let message = refused(issuer);
            assert!(message.starts_with("ATRIUM_OIDC_ISSUER "), "{message}");
            assert!(message.contains(rule), "{issuer}: {message}");
        }
        let message = refused("https://ada:hunter2@login.example.com");
        assert!(message.contains("user name or password"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn empty_audience_is_refused() {
        let err = OidcConfig::new("https://login.example.com", "  ").unwrap_err();
        assert!(matches!(err, IdentityError::Oidc(_)), "{err:?}");
        assert!(err.to_string().contains("ATRIUM_OIDC_AUDIENCE"), "{err}");
    }

    #[test]
    fn trailing_slashes_name_the_same_issuer() {
        let verifier =
            OidcVerifier::new(OidcConfig::new("https://login.example.com/", "a").unwrap());
        assert!(verifier.trusts("https://login.example.com"));
        assert!(verifier.trusts("https://login.example.com/"));
        assert!(!verifier.trusts("https://login.example.com.evil"));
        assert!(!verifier.trusts("https://login.example.com/other"));
    }
}
