//! The browser sign-in of `atrium login`: OpenID Connect's authorization code flow for a
//! native app, with PKCE (RFC 7636, S256) and a loopback redirect (RFC 8252).
//!
//! The platform names its provider and client id (`GET /api/dev/login`); the provider's
//! discovery document names its endpoints. The tool listens on `127.0.0.1:<free port>`,
//! opens the provider's authorization page in a browser (and always prints its address, for a
//! machine without one), waits for the redirect with the code (five minutes at most), checks
//! the `state`, exchanges the code and the verifier for an ID token and checks its `nonce`. The
//! ID token is the developer token: the platform verifies its signature, issuer, audience and
//! lifetime on every request.

use std::time::Duration;

use atrium_server::views::LoginProvider;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::Digest as _;
use tokio::io::{AsyncWriteExt as _, BufReader};

use crate::client::{Failure, http, unreachable};

/// How long the tool waits for the browser to come back.
const WAIT: Duration = Duration::from_secs(300);

/// The provider's discovery document (the fields used).
#[derive(serde::Deserialize)]
struct Discovery {
    authorization_endpoint: String,
    token_endpoint: String,
}

/// The token endpoint's answer (the fields used).
#[derive(serde::Deserialize)]
struct TokenAnswer {
    id_token: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// The claims checked here (the platform checks the rest).
#[derive(serde::Deserialize)]
struct Claims {
    #[serde(default)]
    nonce: Option<String>,
}

fn random() -> Result<String, Failure> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Failure::Platform(format!("the system's random source failed: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Signs in through the platform's provider; returns the ID token.
pub async fn sign_in(platform: &str, open_browser: bool) -> Result<String, Failure> {
    let client = http()?;
    let response = client
        .get(format!("{platform}/api/dev/login"))
        .send()
        .await
        .map_err(|e| unreachable(platform, &e))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Err(Failure::BadInput(format!(
            "{platform} offers no browser sign-in: use `atrium login --token <DEVELOPER_TOKEN>` with a token from its operator"
        )));
    }
    if !response.status().is_success() {
        return Err(Failure::Platform(format!(
            "{platform}/api/dev/login answered {}",
            response.status()
        )));
    }
    let provider: LoginProvider = response.json().await.map_err(|e| {
        Failure::Platform(format!("{platform}/api/dev/login is not understood: {e}"))
    })?;
    let discovery_url = format!(
        "{}/.well-known/openid-configuration",
        provider.issuer.trim_end_matches('/')
    );
    let discovery: Discovery = client
        .get(&discovery_url)
        .send()
        .await
        .map_err(|e| unreachable(&provider.issuer, &e))?
        .error_for_status()
        .map_err(|e| Failure::Platform(format!("{discovery_url}: {e}")))?
        .json()
        .await
        .map_err(|e| Failure::Platform(format!("{discovery_url} is not understood: {e}")))?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| {
            Failure::Platform(format!("cannot listen on 127.0.0.1 for the sign-in: {e}"))
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| Failure::Platform(format!("cannot listen on 127.0.0.1: {e}")))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let verifier = random()?;
    let challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    let state = random()?;
    let nonce = random()?;
    let mut authorize = url::Url::parse(&discovery.authorization_endpoint).map_err(|e| {
        Failure::Platform(format!(
            "the provider's authorization endpoint `{}` is not a URL: {e}",
            discovery.authorization_endpoint
        ))
    })?;
    authorize
        .query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &provider.client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("scope", "openid email profile")
        .append_pair("state", &state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");

    let opened = open_browser && open(authorize.as_str());
    println!(
        "{} sign in at:\n\n  {authorize}\n\nWaiting for the browser to come back to {redirect_uri} ...",
        if opened {
            "A browser was opened; if nothing shows up,"
        } else {
            "Open this address in a browser and"
        }
    );
    let code = tokio::time::timeout(WAIT, callback(&listener, &state))
        .await
        .map_err(|_| {
            Failure::Auth(format!(
                "no sign-in came back within {} minutes: run `atrium login` again",
                WAIT.as_secs() / 60
            ))
        })??;

    let answer: TokenAnswer = client
        .post(&discovery.token_endpoint)
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("client_id", provider.client_id.as_str()),
            ("code_verifier", verifier.as_str()),
        ])
        .send()
        .await
        .map_err(|e| unreachable(&provider.issuer, &e))?
        .json()
        .await
        .map_err(|e| {
            Failure::Platform(format!(
                "the token endpoint's answer is not understood: {e}"
            ))
        })?;
    let Some(id_token) = answer.id_token else {
        return Err(Failure::Auth(format!(
            "the provider refused the code: {} {}",
            answer.error.unwrap_or_default(),
            answer.error_description.unwrap_or_default()
        )));
    };
    let claims: Claims = id_token
        .split('.')
        .nth(1)
        .and_then(|payload| URL_SAFE_NO_PAD.decode(payload).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| Failure::Auth("the provider's ID token is not a JWT".to_owned()))?;
    if claims.nonce.as_deref() != Some(nonce.as_str()) {
        return Err(Failure::Auth(
            "the provider's ID token is not for this sign-in (its nonce differs): run `atrium login` again"
                .to_owned(),
        ));
    }
    Ok(id_token)
}

/// Tries to open `address` in the user's browser: `$BROWSER`, else the system's opener. The
/// opener is started, never waited for (a terminal browser would hold the sign-in until it
/// exits); a thread reaps it.
fn open(address: &str) -> bool {
    let mut candidates: Vec<String> = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .into_iter()
        .collect();
    candidates.push(
        if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        }
        .to_owned(),
    );
    candidates.into_iter().any(|program| {
        let started = std::process::Command::new(program)
            .arg(address)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match started {
            Ok(mut child) => {
                std::thread::spawn(move || child.wait());
                true
            }
            Err(_) => false,
        }
    })
}

const DONE_PAGE: &str = "<!doctype html><title>Signed in</title><p>Signed in to Atrium. You can close this tab and go back to the terminal.</p>";
const FAILED_PAGE: &str = "<!doctype html><title>Sign-in failed</title><p>The sign-in did not complete. The terminal says why.</p>";
const WRONG_STATE_PAGE: &str = "<!doctype html><title>Not this sign-in</title><p>This is not the sign-in the terminal waits for. Use the address it printed.</p>";

/// How long one connection to the loopback address may take to send its request line and
/// headers.
const REQUEST_WAIT: Duration = Duration::from_secs(5);
/// The longest request line or header line read.
const MAX_LINE: usize = 8 * 1024;

/// What one connection asked.
enum Visit {
    /// The provider's redirect with this sign-in's state: the code, or why there is none.
    Callback(Result<String, Failure>),
    /// Anything else (another path, another state, a malformed request): answered and ignored.
    Other,
}

/// Answers requests on the loopback address until the redirect of this sign-in arrives; other
/// requests (a browser's preconnect, another path, a redirect with another state) are answered
/// and the wait goes on.
async fn callback(listener: &tokio::net::TcpListener, state: &str) -> Result<String, Failure> {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let visit = tokio::time::timeout(REQUEST_WAIT, visit(stream, state)).await;
        if let Ok(Visit::Callback(outcome)) = visit {
            return outcome;
        }
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<String> {
    let mut line = Vec::new();
    let read = tokio::io::AsyncBufReadExt::read_until(
        &mut tokio::io::AsyncReadExt::take(&mut *reader, MAX_LINE as u64),
        b'\n',
        &mut line,
    )
    .await
    .ok()?;
    (read > 0).then(|| String::from_utf8_lossy(&line).into_owned())
}

async fn visit(stream: tokio::net::TcpStream, state: &str) -> Visit {
    let mut reader = BufReader::new(stream);
    let Some(request_line) = read_line(&mut reader).await else {
        return Visit::Other;
    };
    while let Some(line) = read_line(&mut reader).await {
        if line.trim().is_empty() {
            break;
        }
    }
    let mut stream = reader.into_inner();
    let answer = |status: &str, page: &str| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        )
    };
    let target = request_line.split_whitespace().nth(1).unwrap_or_default();
    let parsed = url::Url::parse(&format!("http://127.0.0.1{target}")).ok();
    let get = |name: &str| {
        parsed.as_ref().and_then(|p| {
            p.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    };
    if parsed.as_ref().is_none_or(|p| p.path() != "/callback") {
        let _ = stream
            .write_all(answer("404 Not Found", "").as_bytes())
            .await;
        return Visit::Other;
    }
    if get("state").as_deref() != Some(state) {
        let _ = stream
            .write_all(answer("400 Bad Request", WRONG_STATE_PAGE).as_bytes())
            .await;
        return Visit::Other;
    }
    let outcome = if let Some(error) = get("error") {
        Err(Failure::Auth(format!(
            "the provider refused the sign-in: {error} {}",
            get("error_description").unwrap_or_default()
        )))
    } else {
        get("code").ok_or_else(|| Failure::Auth("the provider came back without a code".to_owned()))
    };
    let page = if outcome.is_ok() {
        DONE_PAGE
    } else {
        FAILED_PAGE
    };
    let _ = stream.write_all(answer("200 OK", page).as_bytes()).await;
    let _ = stream.shutdown().await;
    Visit::Callback(outcome)
}
