//! A fake OpenID Connect provider for the tests of developer identity.
//!
//! [`Provider::start`] serves a discovery document and a key set (JWKS) on 127.0.0.1 from a
//! thread of its own, so both async tests and tests that run the `atrium` binary can use it.
//! [`SigningKey`] is an ES256 key (aws-lc-rs) whose public half the provider publishes and
//! whose private half signs ID tokens.
//!
//! ```no_run
//! use atrium_test_artifacts::oidc::{Provider, SigningKey};
//!
//! let key = SigningKey::generate("k1");
//! let provider = Provider::start(&[&key]);
//! let token = key.sign(&provider.claims("atrium-cli", "ada@example.com"));
//! // Configure the host with `provider.issuer()` and the audience "atrium-cli".
//! # let _ = token;
//! ```

// A helper of tests: a failure to bind, generate or sign means the test cannot go on.
#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// An ES256 (P-256) key pair: the private half signs ID tokens, the public half is published
/// as a JWK.
pub struct SigningKey {
    kid: String,
    pair: EcdsaKeyPair,
    jwk: Value,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new random key named `kid`.
    ///
    /// # Panics
    ///
    /// When the system random generator fails.
    pub fn generate(kid: &str) -> Self {
        let pair =
            EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("generate a P-256 key");
        // An uncompressed P-256 point: 0x04 || x (32 bytes) || y (32 bytes).
        let public = pair.public_key().as_ref();
        assert_eq!(
            (public.len(), public[0]),
            (65, 0x04),
            "an uncompressed point"
        );
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
            "kid": kid,
            "alg": "ES256",
            "use": "sig",
        });
        Self {
            kid: kid.to_owned(),
            pair,
            jwk,
        }
    }

    /// The key's id, the `kid` of the tokens it signs.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as the provider publishes it.
    pub fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// A compact JWS of `claims`: ES256, with this key's `kid` in the header.
    ///
    /// # Panics
    ///
    /// When signing fails (the system random generator failed).
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "typ": "JWT", "kid": self.kid});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        // The FIXED encoding is r || s, 32 bytes each: exactly JWS's ES256 signature.
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .expect("sign with ES256");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}

struct Published {
    issuer: String,
    keys: Mutex<Vec<Value>>,
    jwks_fetches: AtomicUsize,
    stop: AtomicBool,
}

/// An OpenID Connect provider listening on 127.0.0.1: `/.well-known/openid-configuration`
/// and `/jwks`. It stops when dropped.
pub struct Provider {
    addr: SocketAddr,
    published: Arc<Published>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("issuer", &self.published.issuer)
            .finish_non_exhaustive()
    }
}

impl Provider {
    /// Starts a provider that publishes `keys`; its issuer is `http://127.0.0.1:<port>`.
    ///
    /// # Panics
    ///
    /// When no port can be bound.
    pub fn start(keys: &[&SigningKey]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("the bound address");
        let published = Arc::new(Published {
            issuer: format!("http://{addr}"),
            keys: Mutex::new(keys.iter().map(|key| key.jwk.clone()).collect()),
            jwks_fetches: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let serving = Arc::clone(&published);
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if serving.stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    // A client that hangs up mid-request only loses its own answer.
                    let _ = answer(stream, &serving);
                }
            }
        });
        Self {
            addr,
            published,
            thread: Some(thread),
        }
    }

    /// The issuer URL, the `iss` of its tokens.
    pub fn issuer(&self) -> &str {
        &self.published.issuer
    }

    /// Publishes exactly `keys` from now on (a key rotation).
    pub fn publish(&self, keys: &[&SigningKey]) {
        *self
            .published
            .keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner) =
            keys.iter().map(|key| key.jwk.clone()).collect();
    }

    /// How many times the key set was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.published.jwks_fetches.load(Ordering::SeqCst)
    }

    /// The claims of a valid ID token of this provider for `email` (verified), issued for
    /// `audience`, expiring in ten minutes; `sub` is `fake|<email>`.
    pub fn claims(&self, audience: &str, email: &str) -> Value {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs();
        json!({
            "iss": self.published.issuer,
            "aud": audience,
            "sub": format!("fake|{email}"),
            "email": email,
            "email_verified": true,
            "iat": now,
            "exp": now + 600,
        })
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.published.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so it sees `stop`.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request and answers it; one request per connection.
fn answer(stream: TcpStream, published: &Published) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The headers are read and ignored; these GETs have no body.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or_default();
    let (status, body) = match path {
        "/.well-known/openid-configuration" => (
            "200 OK",
            json!({
                "issuer": published.issuer,
                "jwks_uri": format!("{}/jwks", published.issuer),
                "id_token_signing_alg_values_supported": ["ES256"],
            }),
        ),
        "/jwks" => {
            published.jwks_fetches.fetch_add(1, Ordering::SeqCst);
            let keys = published
                .keys
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            ("200 OK", json!({ "keys": keys }))
        }
        _ => ("404 Not Found", json!({ "error": "not_found" })),
    };
    let body = body.to_string();
    let mut stream = reader.into_inner();
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
