//! A fake OpenID Connect provider for the tests of developer identity.
//!
//! [`Provider::start`] serves a discovery document and a key set (JWKS) on 127.0.0.1 from a
//! thread of its own, so both async tests and tests that run the `atrium` binary can use it.
//! With [`Provider::sign_in`] it also runs the authorization code flow with PKCE (RFC 7636) of
//! a native app: `/authorize` signs the configured user in at once (the consent a person would
//! give) and redirects to the client's loopback address with a code; `/token` exchanges the
//! code, checking the client, the redirect address and the S256 code verifier, for an ID token
//! that carries the request's nonce.
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

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
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
    login: Mutex<Option<Login>>,
}

impl Published {
    /// The sign-in state: who `/authorize` signs in, and the codes it issued.
    fn signing_in(&self) -> std::sync::MutexGuard<'_, Option<Login>> {
        self.login.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Who `/authorize` signs in, with which key, and the codes it issued.
struct Login {
    key: Arc<SigningKey>,
    email: String,
    codes: HashMap<String, Pending>,
    exchanged: usize,
}

/// An authorization request waiting for its code to be exchanged.
struct Pending {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    nonce: Option<String>,
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
            login: Mutex::new(None),
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

    /// Runs the authorization code flow from now on: `/authorize` signs `email` in and
    /// `/token` answers ID tokens signed with `key` (which should be among the published
    /// keys).
    pub fn sign_in(&self, key: Arc<SigningKey>, email: &str) {
        *self.published.signing_in() = Some(Login {
            key,
            email: email.to_owned(),
            codes: HashMap::new(),
            exchanged: 0,
        });
    }

    /// How many codes were exchanged for ID tokens.
    pub fn codes_exchanged(&self) -> usize {
        self.published
            .signing_in()
            .as_ref()
            .map_or(0, |l| l.exchanged)
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

/// Decodes `application/x-www-form-urlencoded` pairs (a query string or a form body).
fn form(text: &str) -> HashMap<String, String> {
    let decode = |part: &str| {
        let bytes = part.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                    match u8::from_str_radix(hex, 16) {
                        Ok(b) => {
                            out.push(b);
                            i += 2;
                        }
                        Err(_) => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Percent-encodes a query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn random_token() -> String {
    let mut bytes = [0u8; 16];
    aws_lc_rs::rand::fill(&mut bytes).expect("random bytes");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `/authorize`: the configured user signs in; a redirect to the client with a code.
fn authorize(query: &str, published: &Published) -> (String, Vec<(String, String)>, Value) {
    let params = form(query);
    let mut login = published.signing_in();
    let Some(login) = login.as_mut() else {
        return (
            "404 Not Found".into(),
            vec![],
            json!({"error": "no sign-in configured"}),
        );
    };
    let refuse = |error: &str| {
        (
            "400 Bad Request".to_owned(),
            vec![],
            json!({"error": error}),
        )
    };
    let get = |k: &str| params.get(k).cloned().unwrap_or_default();
    if get("response_type") != "code" {
        return refuse("unsupported_response_type");
    }
    let redirect_uri = get("redirect_uri");
    if !redirect_uri.starts_with("http://127.0.0.1:") || get("client_id").is_empty() {
        return refuse("invalid_request");
    }
    if get("code_challenge_method") != "S256" || get("code_challenge").len() != 43 {
        return refuse("invalid_request: PKCE with S256 is required");
    }
    if !get("scope").split(' ').any(|s| s == "openid") {
        return refuse("invalid_scope");
    }
    let code = random_token();
    login.codes.insert(
        code.clone(),
        Pending {
            client_id: get("client_id"),
            redirect_uri: redirect_uri.clone(),
            challenge: get("code_challenge"),
            nonce: params.get("nonce").cloned(),
        },
    );
    let location = format!(
        "{redirect_uri}?code={}&state={}",
        encode(&code),
        encode(&get("state"))
    );
    (
        "302 Found".into(),
        vec![("Location".into(), location)],
        json!({}),
    )
}

/// `/token`: a code, its verifier, the same client and redirect address: an ID token.
fn exchange(body: &str, published: &Published) -> (String, Value) {
    let params = form(body);
    let get = |k: &str| params.get(k).cloned().unwrap_or_default();
    let mut login = published.signing_in();
    let Some(login) = login.as_mut() else {
        return (
            "404 Not Found".into(),
            json!({"error": "no sign-in configured"}),
        );
    };
    let invalid = |why: &str| {
        (
            "400 Bad Request".to_owned(),
            json!({"error": "invalid_grant", "error_description": why}),
        )
    };
    if get("grant_type") != "authorization_code" {
        return (
            "400 Bad Request".into(),
            json!({"error": "unsupported_grant_type"}),
        );
    }
    // A code is used once, whatever happens next.
    let Some(pending) = login.codes.remove(&get("code")) else {
        return invalid("unknown or used code");
    };
    if pending.client_id != get("client_id") || pending.redirect_uri != get("redirect_uri") {
        return invalid("another client or redirect address");
    }
    let verifier = get("code_verifier");
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes());
    if URL_SAFE_NO_PAD.encode(digest.as_ref()) != pending.challenge {
        return invalid("the code verifier does not match the challenge");
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let mut claims = json!({
        "iss": published.issuer,
        "aud": pending.client_id,
        "sub": format!("fake|{}", login.email),
        "email": login.email,
        "email_verified": true,
        "iat": now,
        "exp": now + 600,
    });
    if let Some(nonce) = pending.nonce {
        claims["nonce"] = json!(nonce);
    }
    login.exchanged += 1;
    (
        "200 OK".into(),
        json!({
            "access_token": random_token(),
            "token_type": "Bearer",
            "expires_in": 600,
            "id_token": login.key.sign(&claims),
        }),
    )
}

/// Reads one request and answers it; one request per connection.
fn answer(stream: TcpStream, published: &Published) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
        line.clear();
    }
    let mut body = vec![0u8; length.min(64 * 1024)];
    reader.read_exact(&mut body)?;
    let target = request_line.split_whitespace().nth(1).unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = Vec::new();
    let (status, body) = match path {
        "/.well-known/openid-configuration" => (
            "200 OK".to_owned(),
            json!({
                "issuer": published.issuer,
                "jwks_uri": format!("{}/jwks", published.issuer),
                "authorization_endpoint": format!("{}/authorize", published.issuer),
                "token_endpoint": format!("{}/token", published.issuer),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
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
            ("200 OK".to_owned(), json!({ "keys": keys }))
        }
        "/authorize" => {
            let (status, found, body) = authorize(query, published);
            headers = found;
            (status, body)
        }
        "/token" => exchange(&String::from_utf8_lossy(&body), published),
        _ => ("404 Not Found".to_owned(), json!({ "error": "not_found" })),
    };
    let body = body.to_string();
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let mut stream = reader.into_inner();
    write!(
        stream,
        "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
