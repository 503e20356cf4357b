//! Developer accounts end to end: `atrium developers` creates and suspends them, `atrium serve`
//! answers `/api/dev/me` for the host's own tokens and for ID tokens of an OpenID Connect
//! provider (a fake one run by the test), and `atrium lint` asks the host's preflight.
//!
//! One host serves all the HTTP checks: starting it is most of the cost.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use atrium_test_artifacts::oidc::{Provider, SigningKey};
use serde_json::Value;

use crate::{Atrium, Serve, stderr, stdout};

const AUDIENCE: &str = "atrium-cli";

/// The minimal valid manifest of `lint.rs`, with the scopes it requires.
fn manifest(scopes: &str) -> String {
    format!(
        "apiVersion: platform/v2\napp_id: demo-app\nversion: 1.0.0\nname: Demo\nruntime:\n  image: ghcr.io/acme/demo:1.0.0\nrequired_scopes: [{scopes}]\n"
    )
}

/// A running `atrium serve` with the environment of [`Atrium`].
struct Host {
    serve: Serve,
}

impl Host {
    fn start(atrium: &Atrium, dir: &Path, data: &str, env: &[(&str, &str)]) -> Self {
        let command = atrium.command(
            dir,
            &["serve", "--addr", "127.0.0.1:0", "--data-dir", data],
            env,
        );
        Self {
            serve: Serve::spawn(command),
        }
    }

    /// `GET /api/dev/me` with `token` as the bearer: the status and the JSON body.
    fn me(&self, token: &str) -> (u16, Value) {
        let addr = &self.serve.addr;
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        write!(
            stream,
            "GET /api/dev/me HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
        let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let body = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("the body is not JSON ({e}): {response}"));
        (status, body)
    }

    /// Stops the host with SIGTERM: it must exit 0 after shutting down.
    fn stop(self) {
        let (status, log) = self.serve.stop();
        assert_eq!(status.code(), Some(0), "{log:#?}");
        assert!(log.iter().any(|l| l.contains("shutting down")), "{log:#?}");
    }
}

fn last_line(out: &Output) -> String {
    stdout(out)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

#[test]
fn developers_sign_in_with_host_and_oidc_tokens_and_lint_asks_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let config_dir = dir.path().join("config");
    std::fs::create_dir(&config_dir).unwrap();
    let atrium = Atrium { config_dir };
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let here = dir.path();

    // Accounts, made by the operator before the host runs.
    let org = atrium.run(
        here,
        &[
            "keys",
            "create",
            "--org",
            "acme",
            "--data-dir",
            data,
            "--create",
        ],
        &[],
    );
    assert_eq!(org.status.code(), Some(0), "{}", stderr(&org));
    let created = atrium.run(
        here,
        &[
            "developers",
            "create",
            "--email",
            "ada@example.com",
            "--login",
            "ada",
            "--publish-allowed",
            "--org",
            "acme",
            "--tenant",
            "ada-dev",
            "--data-dir",
            data,
        ],
        &[],
    );
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));
    let token = last_line(&created);
    assert_eq!(
        token.split('.').count(),
        3,
        "the last line is a JWT: {token}"
    );

    let bad_email = atrium.run(
        here,
        &[
            "developers",
            "create",
            "--email",
            "ada-at-example.com",
            "--login",
            "ada2",
            "--data-dir",
            data,
        ],
        &[],
    );
    assert_eq!(bad_email.status.code(), Some(1), "{}", stderr(&bad_email));
    assert!(
        stderr(&bad_email).contains("`ada-at-example.com` is not an email address"),
        "{}",
        stderr(&bad_email)
    );
    let taken = atrium.run(
        here,
        &[
            "developers",
            "create",
            "--email",
            "ada.lovelace@example.com",
            "--login",
            "ada",
            "--data-dir",
            data,
        ],
        &[],
    );
    assert_eq!(taken.status.code(), Some(1), "{}", stderr(&taken));
    assert!(
        stderr(&taken).contains("the login `ada` is taken"),
        "{}",
        stderr(&taken)
    );

    let listed = atrium.run(
        here,
        &["developers", "list", "--json", "--data-dir", data],
        &[],
    );
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let [ada] = listed.as_array().unwrap().as_slice() else {
        panic!("exactly one developer: {listed}");
    };
    assert_eq!(ada["email"], "ada@example.com");
    assert_eq!(ada["login"], "ada");
    assert_eq!(ada["publish_allowed"], true);
    assert_eq!(ada["suspended"], false);
    assert_eq!(ada["tenant"]["tenant"], "ada-dev");

    // The host, trusting a provider that runs in this test.
    let key = std::sync::Arc::new(SigningKey::generate("k1"));
    let provider = Provider::start(&[&*key]);
    let host = Host::start(
        &atrium,
        here,
        data,
        &[
            ("ATRIUM_OIDC_ISSUER", provider.issuer()),
            ("ATRIUM_OIDC_AUDIENCE", AUDIENCE),
        ],
    );
    let oidc_ada = key.sign(&provider.claims(AUDIENCE, "ada@example.com"));

    let (status, me) = host.me(&token);
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["id"], ada["id"]);
    assert_eq!(me["email"], "ada@example.com");
    assert_eq!(me["login"], "ada");
    assert_eq!(me["publish_allowed"], true);
    assert_eq!(me["tenant"], ada["tenant"], "{me}");

    let (status, by_email) = host.me(&oidc_ada);
    assert_eq!(status, 200, "{by_email}");
    assert_eq!(by_email, me, "the ID token maps to the same account");

    let stranger = key.sign(&provider.claims(AUDIENCE, "bob@example.com"));
    let (status, body) = host.me(&stranger);
    assert_eq!(
        (status, error_code(&body)),
        (401, "unknown_developer"),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bob@example.com"),
        "{body}"
    );
    let (status, body) = host.me("not-a-token");
    assert_eq!(
        (status, error_code(&body)),
        (401, "invalid_token"),
        "{body}"
    );

    // Suspension applies to every kind of token at once, and lifting it restores them.
    let suspended = atrium.run(
        here,
        &["developers", "suspend", "ada", "--data-dir", data],
        &[],
    );
    assert_eq!(suspended.status.code(), Some(0), "{}", stderr(&suspended));
    for token in [&token, &oidc_ada] {
        let (status, body) = host.me(token);
        assert_eq!(
            (status, error_code(&body)),
            (401, "account_suspended"),
            "{body}"
        );
    }
    let reinstated = atrium.run(
        here,
        &["developers", "reinstate", "ada", "--data-dir", data],
        &[],
    );
    assert_eq!(reinstated.status.code(), Some(0), "{}", stderr(&reinstated));
    for token in [&token, &oidc_ada] {
        let (status, body) = host.me(token);
        assert_eq!(status, 200, "{body}");
    }

    // `atrium lint` sends the project to the host's preflight.
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let manifest_path = project.join("atrium.app.yaml");
    let url = format!("http://{}", host.serve.addr);
    let platform = [
        ("ATRIUM_PLATFORM_URL", url.as_str()),
        ("SERVICE_TOKEN", token.as_str()),
    ];

    std::fs::write(&manifest_path, manifest("mail.send")).unwrap();
    let passed = atrium.run(&project, &["lint"], &platform);
    assert_eq!(
        passed.status.code(),
        Some(0),
        "{}{}",
        stdout(&passed),
        stderr(&passed)
    );
    assert!(
        stdout(&passed).contains("lint passed"),
        "{}",
        stdout(&passed)
    );

    std::fs::write(&manifest_path, manifest("made.up")).unwrap();
    let unknown = atrium.run(&project, &["lint"], &platform);
    assert_eq!(
        unknown.status.code(),
        Some(1),
        "{}{}",
        stdout(&unknown),
        stderr(&unknown)
    );
    assert!(
        stdout(&unknown).contains("error[invalid_value] required_scopes[0]")
            && stdout(&unknown).contains("made.up"),
        "{}",
        stdout(&unknown)
    );
    // Only the host knows the scope catalogue: the local check alone passes.
    let offline = atrium.run(&project, &["lint", "--offline"], &platform);
    assert_eq!(offline.status.code(), Some(0), "{}", stdout(&offline));

    let refused = atrium.run(
        &project,
        &["lint"],
        &[
            ("ATRIUM_PLATFORM_URL", url.as_str()),
            ("SERVICE_TOKEN", "not-a-token"),
        ],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    assert!(stderr(&refused).contains("401"), "{}", stderr(&refused));

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let unreachable = atrium.run(
        &project,
        &["lint"],
        &[
            ("ATRIUM_PLATFORM_URL", closed_url.as_str()),
            ("SERVICE_TOKEN", token.as_str()),
        ],
    );
    assert_eq!(
        unreachable.status.code(),
        Some(2),
        "{}",
        stdout(&unreachable)
    );
    assert!(
        stderr(&unreachable).contains(&closed_url),
        "{}",
        stderr(&unreachable)
    );

    // `atrium login` without a token: the browser sign-in through the host's provider, with
    // this test as the browser (no browser can be opened here: the address is printed).
    provider.sign_in(key.clone(), "ada@example.com");
    let (login, authorize) = start_login(&atrium, here, &url);
    // A redirect of another sign-in (another state) is refused and the wait goes on.
    let redirect_uri = url::Url::parse(&authorize)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let stray = browse(&format!("{redirect_uri}?code=forged&state=another"));
    assert!(stray.contains("Not this sign-in"), "{stray}");
    let landed = browse(&authorize);
    assert!(landed.contains("Signed in to Atrium"), "{landed}");
    let (code, printed, errors) = login.finish();
    assert_eq!(code, Some(0), "{printed}{errors}");
    assert!(printed.contains("as ada <ada@example.com>"), "{printed}");
    assert_eq!(provider.codes_exchanged(), 1);
    let whoami = atrium.run(here, &["whoami", "--json"], &[]);
    assert_eq!(whoami.status.code(), Some(0), "{}", stderr(&whoami));
    let me: Value = serde_json::from_slice(&whoami.stdout).unwrap();
    assert_eq!(me["login"], "ada");
    // A sign-in the provider refuses (the user said no) is exit 3, and nothing changes.
    let stored = std::fs::read_to_string(atrium.config_dir.join("config.toml")).unwrap();
    let (login, authorize) = start_login(&atrium, here, &url);
    let parsed = url::Url::parse(&authorize).unwrap();
    let param = |name: &str| {
        parsed
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap()
    };
    let denied = format!(
        "{}?error=access_denied&error_description=no&state={}",
        param("redirect_uri"),
        param("state")
    );
    let landed = browse(&denied);
    assert!(landed.contains("did not complete"), "{landed}");
    let (code, printed, errors) = login.finish();
    assert_eq!(code, Some(3), "{printed}{errors}");
    assert!(errors.contains("access_denied"), "{errors}");
    assert_eq!(
        std::fs::read_to_string(atrium.config_dir.join("config.toml")).unwrap(),
        stored
    );
    assert_eq!(provider.codes_exchanged(), 1);

    host.stop();
}

/// Starts `atrium login --platform <url>` (no token, no browser) and reads the sign-in
/// address it prints.
fn start_login(atrium: &Atrium, dir: &Path, url: &str) -> (Login, String) {
    use std::io::BufRead as _;
    let mut child = atrium
        .command(dir, &["login", "--platform", url, "--no-browser"], &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let authorize = loop {
        let line = lines
            .next()
            .expect("login prints the sign-in address")
            .unwrap();
        if let Some(address) = line.trim().strip_prefix("http") {
            break format!("http{address}");
        }
    };
    // The rest of its output, read by a thread so the pipe never fills up.
    let rest =
        std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
    (Login { child, rest }, authorize)
}

/// A running `atrium login`.
struct Login {
    child: std::process::Child,
    rest: std::thread::JoinHandle<String>,
}

impl Login {
    /// Waits for it: the exit code, what it printed after the address, its standard error.
    fn finish(self) -> (Option<i32>, String, String) {
        let out = self.child.wait_with_output().unwrap();
        (out.status.code(), self.rest.join().unwrap(), stderr(&out))
    }
}

/// What a browser shows after following `address` and its redirects.
fn browse(address: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { reqwest::get(address).await.unwrap().text().await.unwrap() })
}

/// The plain-http refusal (`OidcConfig::new`) is unit-tested in atrium-platform: each host
/// started here costs seconds (it compiles the PDF sandbox before it exits).
#[test]
fn serve_without_the_oidc_audience_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let atrium = Atrium {
        config_dir: dir.path().to_owned(),
    };
    let data = dir.path().join("data");
    let out = atrium.run(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        &[("ATRIUM_OIDC_ISSUER", "https://login.example.com")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ATRIUM_OIDC_ISSUER is set but ATRIUM_OIDC_AUDIENCE is not"),
        "{}",
        stderr(&out)
    );
    // Refused before the host wrote its signing key.
    assert!(!data.join("jwt.key").exists());
}
