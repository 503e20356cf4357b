//! The developer commands' side of the platform API: one client per command, typed bodies,
//! and the CLI's exit codes for what goes wrong (section 7 of the spec): 1 bad input, 2 a
//! platform error (a 4xx or 5xx answer, the network), 3 an authentication error (no token, or
//! one the platform refuses: unknown, expired, suspended).

use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::platform::{self, TokenSource};

/// Why a developer command failed, with what to tell the developer.
#[derive(Debug)]
pub enum Failure {
    /// Exit 1: the command's input is wrong.
    BadInput(String),
    /// Exit 2: the platform answered an error, or could not be reached.
    Platform(String),
    /// Exit 3: no token, or the platform refused it.
    Auth(String),
}

impl Failure {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Failure::BadInput(m) | Failure::Platform(m) | Failure::Auth(m) => m,
        }
    }

    /// Prints the message under the command's name and returns the exit code.
    pub fn report(&self, command: &str) -> ExitCode {
        let (code, message) = match self {
            Failure::BadInput(m) => (1, m),
            Failure::Platform(m) => (2, m),
            Failure::Auth(m) => (3, m),
        };
        eprintln!("atrium {command}: {message}");
        ExitCode::from(code)
    }
}

/// The `--platform` flag every developer command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// The platform's address, http(s)://host[:port] (default: ATRIUM_PLATFORM_URL, else the
    /// address `atrium login` stored).
    #[arg(long, value_name = "URL", global = true)]
    pub platform: Option<String>,
}

/// An error body of the platform API.
#[derive(Debug, serde::Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Debug, serde::Deserialize)]
struct ErrorDetail {
    message: String,
    #[serde(default)]
    code: Option<String>,
}

/// A client of one platform with one developer token.
pub struct Client {
    url: String,
    token: String,
    source: TokenSource,
    http: reqwest::Client,
}

/// The platform's address, or exit 1 saying how to name it.
pub fn resolve_url(target: &Target, config: &platform::ConfigFile) -> Result<String, Failure> {
    platform::platform_url(target.platform.as_deref(), config)
        .map_err(Failure::BadInput)?
        .ok_or_else(|| {
            Failure::BadInput(
                "no platform address: pass --platform URL, set ATRIUM_PLATFORM_URL, or run \
                 `atrium login --platform URL`"
                    .to_owned(),
            )
        })
}

/// How long an ordinary request may take; uploads get [`UPLOAD_TIMEOUT`].
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an upload (a registration, a bundle) may take: large components over a slow link.
pub const UPLOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The HTTP client of the developer commands: connecting gives up after 10 s, a connection
/// that stays silent for a minute is dropped; each request sets its own total limit.
pub fn http() -> Result<reqwest::Client, Failure> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(REQUEST_TIMEOUT)
        .user_agent(concat!("atrium/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Failure::Platform(format!("cannot start an HTTP client: {e}")))
}

impl Client {
    /// The client of the configured platform with the configured token; exit 1 without an
    /// address, exit 3 without a token.
    pub fn configured(target: &Target) -> Result<Client, Failure> {
        let config = platform::read_config().map_err(Failure::BadInput)?;
        let url = resolve_url(target, &config)?;
        let Some((token, source)) = platform::token_for(&url, &config) else {
            return Err(Failure::Auth(format!(
                "not logged in to {url}: run `atrium login --platform {url}` (or set SERVICE_TOKEN)"
            )));
        };
        Client::new(url, token, source)
    }

    /// A client of `url` with `token`.
    pub fn new(url: String, token: String, source: TokenSource) -> Result<Client, Failure> {
        Ok(Client {
            url,
            token,
            source,
            http: http()?,
        })
    }

    /// The platform's address.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends a request with an optional JSON body and reads a JSON answer.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&(impl Serialize + ?Sized)>,
    ) -> Result<T, Failure> {
        let response = self.send(method, path, body).await?;
        let text = response.text().await.map_err(|e| {
            Failure::Platform(format!(
                "reading the answer of {}{path} failed: {e}",
                self.url
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| {
            Failure::Platform(format!(
                "the answer of {}{path} is not understood ({e}); is {} an Atrium platform of \
                 this version?",
                self.url, self.url
            ))
        })
    }

    /// Every item of the paged list at `path`, following `next_cursor` page by page (each
    /// of the largest size the API answers).
    pub async fn all<T>(&self, path: &str) -> Result<Vec<T>, Failure>
    where
        T: atrium_server::page::Listed + DeserializeOwned,
    {
        let limit = atrium_server::page::MAX_LIMIT;
        let mut items = Vec::new();
        let mut next = format!("{path}?limit={limit}");
        loop {
            let page: atrium_server::page::Page<T> =
                self.call(reqwest::Method::GET, &next, None::<&()>).await?;
            items.extend(page.items);
            match page.next_cursor {
                Some(cursor) => next = format!("{path}?limit={limit}&cursor={cursor}"),
                None => return Ok(items),
            }
        }
    }

    /// Sends a request and returns the successful response; an error answer becomes the
    /// matching [`Failure`].
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&(impl Serialize + ?Sized)>,
    ) -> Result<reqwest::Response, Failure> {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        self.finish(request).await
    }

    /// A request to `path` with the token, given up after [`REQUEST_TIMEOUT`] (an upload
    /// sets [`UPLOAD_TIMEOUT`] instead).
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .timeout(REQUEST_TIMEOUT)
    }

    /// Sends `request`: the successful response, or the failure it stands for.
    pub async fn finish(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, Failure> {
        let response = request
            .send()
            .await
            .map_err(|e| unreachable(&self.url, &e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(self.refusal(response).await)
    }

    /// The failure an error answer stands for.
    pub async fn refusal(&self, response: reqwest::Response) -> Failure {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let (message, code) = match serde_json::from_str::<ErrorBody>(&text) {
            Ok(body) => (body.error.message, body.error.code),
            Err(_) => (text.trim().chars().take(500).collect(), None),
        };
        let code_text = code.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
        let said = format!(
            "the platform answered {}{code_text}: {message}",
            status.as_u16()
        );
        if status == reqwest::StatusCode::UNAUTHORIZED {
            // The platform's message names the account and what happened to it; the advice
            // is what only the tool knows (where the token came from).
            let next = match (code.as_deref(), self.source) {
                (Some("account_suspended"), _) => {
                    "its operator reinstates it with `atrium developers reinstate`"
                }
                // Its message already says who creates accounts.
                (Some("unknown_developer"), _) => return Failure::Auth(said),
                (_, TokenSource::Environment) => "set SERVICE_TOKEN to a valid developer token",
                (_, TokenSource::ConfigFile) => "run `atrium login` again",
                (_, TokenSource::Given) => {
                    "the token was not stored; a developer token is printed by the host's operator (`atrium developers create` or `atrium developers token`), or `atrium login` without --token signs in with a browser"
                }
            };
            return Failure::Auth(format!("{said}; {next}"));
        }
        let next = match (status.as_u16(), code.as_deref()) {
            (403, _) => "; the token's account may not do this (ask the platform operator)",
            // The platform's message names the command that lists the app's tools, or what
            // the dev tenant's install needs.
            (404, Some("unknown_tool" | "not_installed")) => "",
            (404, _) => "; check the names given (`atrium apps list` shows your apps)",
            (500..=599, _) => "; try again later, or tell the platform operator",
            _ => "",
        };
        Failure::Platform(format!("{said}{next}"))
    }
}

/// The failure of a request that got no answer.
pub fn unreachable(url: &str, error: &reqwest::Error) -> Failure {
    // reqwest's own words ("error sending request for url ...") say nothing the developer can
    // act on: the innermost cause does ("Connection refused", "failed to lookup address").
    let mut cause: &dyn std::error::Error = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    let why = if error.is_timeout() {
        "it did not answer in time".to_owned()
    } else if error.is_connect() {
        format!("nothing answers there ({cause})")
    } else {
        cause.to_string()
    };
    Failure::Platform(format!(
        "cannot reach the platform at {url}: {why}; check the address (--platform or \
         ATRIUM_PLATFORM_URL) and that the host runs"
    ))
}

/// Runs a developer command on a current-thread runtime and turns its failure into the exit
/// code.
pub fn run(command: &str, future: impl Future<Output = Result<(), Failure>>) -> ExitCode {
    match crate::async_runtime(false) {
        Ok(runtime) => match runtime.block_on(future) {
            Ok(()) => ExitCode::SUCCESS,
            Err(failure) => failure.report(command),
        },
        Err(message) => Failure::Platform(message).report(command),
    }
}

/// Prints `value` as pretty JSON (the `--json` output of listing commands).
pub fn print_json(value: &impl Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::Platform(format!("cannot encode the answer: {e}")))?;
    println!("{text}");
    Ok(())
}

/// Prints rows as aligned columns under a header.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                out.push_str(cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
