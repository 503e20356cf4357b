//! The developer commands against a running `atrium serve`: `login`, `whoami`, `logout`,
//! `apps list` / `apps show`, `secrets` and `upgrade`, with their exit codes (0 success, 1 bad
//! input, 2 platform error, 3 auth error), their `--json` output, the config file, and
//! another developer's token reaching nothing.
//!
//! One host serves every test of this file ([`platform`]): starting it is most of the cost.
//! Each test is a developer of its own (its own login, config directory and apps), so the
//! tests run side by side and none sees what another left. `scaffold.rs` checks `init` and
//! `dev` on a new project without a host.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::{Atrium, Serve, stderr, stdout};

/// The organization every developer test's dev tenant belongs to.
const ORG: &str = "acme";

/// The host the developer tests share, started by the first that asks.
pub(crate) struct Platform {
    /// `http://127.0.0.1:<port>`.
    pub(crate) base: String,
    /// Its data directory, where the operator's commands (`atrium developers create`) run.
    data: String,
    /// A key of organization [`ORG`].
    org_key: String,
    /// An address where nothing answers.
    pub(crate) dead: String,
    _host: Serve,
    /// Held open for the life of the test process: when it ends, the pipe closes and the
    /// watcher stops the host and removes its data (a static is never dropped).
    _watcher: std::process::ChildStdin,
}

/// The shared host of this test binary: an `atrium serve` on a data directory of its own.
pub(crate) fn platform() -> &'static Platform {
    static PLATFORM: OnceLock<Platform> = OnceLock::new();
    PLATFORM.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let data = dir.join("data").to_str().unwrap().to_owned();
        let operator = Atrium {
            config_dir: dir.join("operator"),
        };
        let key = operator.run(
            &dir,
            &["keys", "create", "--org", ORG, "--data-dir", &data, "--create"],
            &[],
        );
        exits(&key, 0);
        let host = Serve::spawn(operator.command(
            &dir,
            &["serve", "--addr", "127.0.0.1:0", "--data-dir", &data],
            &[],
        ));
        // Never waited for: it outlives the test process on purpose (it is its last word),
        // and init reaps it.
        #[allow(clippy::zombie_processes)]
        let mut watcher = Command::new("sh")
            .args([
                "-c",
                r#"read _; kill -TERM "$1"; while kill -0 "$1" 2>/dev/null; do sleep 0.1; done; rm -rf "$2""#,
                "watcher",
            ])
            .arg(host.pid().to_string())
            .arg(&dir)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        Platform {
            base: format!("http://{}", host.addr),
            data,
            org_key: last_line(&key),
            dead,
            _host: host,
            _watcher: watcher.stdin.take().unwrap(),
        }
    })
}

/// A developer of the shared host, as a test plays them: `atrium` with a config directory
/// of its own, run in a working directory of its own.
pub(crate) struct Dev {
    /// The login (unique in the test binary).
    pub(crate) login: String,
    /// The developer token the operator printed.
    pub(crate) token: String,
    /// `atrium` as this developer runs it.
    pub(crate) atrium: Atrium,
    dir: tempfile::TempDir,
}

impl Dev {
    /// Creates developer `login` with the operator's command, on the running host's store:
    /// one who may publish has a dev tenant `<login>-dev` of [`ORG`]; another has the default
    /// dev tenant of the developers' own organization.
    pub(crate) fn new(login: &str, publish: bool) -> Self {
        let platform = platform();
        let dir = tempfile::tempdir().unwrap();
        let atrium = Atrium {
            config_dir: dir.path().join("config"),
        };
        let email = format!("{login}@example.com");
        let dev_tenant = format!("{login}-dev");
        let mut args = vec![
            "developers",
            "create",
            "--email",
            &email,
            "--login",
            login,
            "--data-dir",
            &platform.data,
        ];
        if publish {
            args.extend(["--publish-allowed", "--org", ORG, "--tenant", &dev_tenant]);
        }
        let out = atrium.run(dir.path(), &args, &[]);
        exits(&out, 0);
        Self {
            login: login.to_owned(),
            token: last_line(&out),
            atrium,
            dir,
        }
    }

    /// Creates developer `login`, logged in to the shared host (the token read from standard
    /// input).
    pub(crate) fn logged_in(login: &str) -> Self {
        let dev = Self::new(login, true);
        let out = dev.atrium.run_with_input(
            dev.here(),
            &["login", "--token", "-", "--platform", &platform().base],
            &dev.token,
        );
        exits(&out, 0);
        dev
    }

    /// The test's working directory.
    pub(crate) fn here(&self) -> &Path {
        self.dir.path()
    }

    /// `atrium <args>` in the working directory.
    pub(crate) fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.atrium.run(self.here(), args, env)
    }

    /// The dev tenant: `<login>-dev`.
    pub(crate) fn dev_tenant(&self) -> String {
        format!("{}-dev", self.login)
    }

    /// A new token of `role` for `tenant` of [`ORG`], made with the organization's key.
    pub(crate) fn tenant_token(tenant: &str, role: &str) -> String {
        let platform = platform();
        let (status, body) = http(
            "POST",
            &format!("{}/api/tenants/{tenant}/tokens", platform.base),
            &platform.org_key,
            json_body(&json!({"role": role})),
        );
        assert_eq!(status, 201, "{body}");
        body["token"].as_str().unwrap().to_owned()
    }

    /// A tenant admin's token for the dev tenant.
    pub(crate) fn admin(&self) -> String {
        Self::tenant_token(&self.dev_tenant(), "admin")
    }
}

/// Where scaffolded projects build in the tests (kept across runs, like the build cache).
pub(crate) fn scaffold_target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
            PathBuf::from,
        )
        .join("scaffold-test")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Asserts the exit code, showing the output when it differs.
#[track_caller]
pub(crate) fn exits(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(out),
        stderr(out)
    );
}

fn last_line(out: &Output) -> String {
    stdout(out)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// A request to the host, as the tests' stand-in for what later commands (deploy) do.
pub(crate) fn http(
    method: &str,
    url: &str,
    token: &str,
    body: Option<(&str, Vec<u8>)>,
) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut request = reqwest::Client::new()
            .request(method.parse().unwrap(), url)
            .bearer_auth(token);
        if let Some((content_type, bytes)) = body {
            request = request.header("content-type", content_type).body(bytes);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    })
}

pub(crate) fn json_body(value: &Value) -> Option<(&'static str, Vec<u8>)> {
    Some(("application/json", value.to_string().into_bytes()))
}

/// Registers `version` of the probe component under `slug` for the developer of `token`.
fn register(base: &str, token: &str, slug: &str, version: &str) {
    register_edited(base, token, slug, version, &|manifest| manifest);
}

/// The same, with the manifest's text as `edit` makes it.
fn register_edited(
    base: &str,
    token: &str,
    slug: &str,
    version: &str,
    edit: &dyn Fn(String) -> String,
) {
    let manifest = edit(
        std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
            .unwrap()
            .replace("app_id: probe", &format!("app_id: {slug}"))
            .replace("version: 1.0.0", &format!("version: {version}"))
            .replace("probe.read", "tasks.read")
            .replace("probe.write", "tasks.write"),
    );
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    let boundary = "atrium-cli-test-boundary";
    let mut body = Vec::new();
    for (name, bytes) in [("manifest", manifest.as_bytes()), ("component", &component)] {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let (status, answer) = http(
        "POST",
        &format!("{base}/api/dev/apps/{slug}/versions"),
        token,
        Some((&content_type, body)),
    );
    assert_eq!(status, 201, "{answer}");
}

#[test]
fn login_stores_only_a_token_the_platform_took_and_logout_removes_it() {
    let platform = platform();
    let (base, dead) = (platform.base.as_str(), platform.dead.as_str());
    let ada = Dev::new("ada", true);
    let token = ada.token.as_str();
    let config = ada.atrium.config_dir.join("config.toml");

    // Not logged in: whoami says so with 1, the other commands with 3; no address is 1.
    let out = ada.run(&["whoami", "--platform", base], &[]);
    exits(&out, 1);
    assert!(stderr(&out).contains("atrium login"), "{}", stderr(&out));
    let out = ada.run(&["apps", "list", "--platform", base], &[]);
    exits(&out, 3);
    let out = ada.run(&["apps", "list"], &[]);
    exits(&out, 1);
    assert!(stderr(&out).contains("--platform"), "{}", stderr(&out));

    // login: bad input is 1, a refused token 3 and nothing is stored, a dead address 2.
    let out = ada.run(&["login", "--token", token], &[]);
    exits(&out, 1);
    let out = ada.run(
        &["login", "--token", token, "--platform", "ftp://example.com"],
        &[],
    );
    exits(&out, 1);
    assert!(
        stderr(&out).contains("ftp://example.com"),
        "{}",
        stderr(&out)
    );
    let out = ada.run(&["login", "--platform", base, "--no-browser"], &[]);
    exits(&out, 1);
    assert!(
        stderr(&out).contains("offers no browser sign-in"),
        "{}",
        stderr(&out)
    );
    let out = ada.run(
        &["login", "--token", "not-a-token", "--platform", base],
        &[],
    );
    exits(&out, 3);
    assert!(stderr(&out).contains("401"), "{}", stderr(&out));
    assert!(!config.exists());
    // Another principal's credential: login says which it is and where a developer token
    // comes from (not that "a JWT has three parts"); exit 3, nothing stored.
    let tenant_token = Dev::tenant_token("ada-shop", "user");
    for (token, kind) in [
        (platform.org_key.as_str(), "organization key"),
        (tenant_token.as_str(), "tenant token"),
    ] {
        let out = ada.run(&["login", "--token", token, "--platform", base], &[]);
        exits(&out, 3);
        let said = stderr(&out);
        assert!(
            said.contains(kind)
                && said.contains("atrium developers token")
                && !said.contains("three parts"),
            "{said}"
        );
    }
    assert!(!config.exists());
    let out = ada.run(&["login", "--token", token, "--platform", dead], &[]);
    exits(&out, 2);
    assert!(stderr(&out).contains(dead), "{}", stderr(&out));

    // Logged in (the token read from standard input): a private config file.
    let out = ada.atrium.run_with_input(
        ada.here(),
        &["login", "--token", "-", "--platform", base],
        token,
    );
    exits(&out, 0);
    assert!(
        stdout(&out).contains("as ada <ada@example.com>"),
        "{}",
        stdout(&out)
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&config).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let stored = std::fs::read_to_string(&config).unwrap();
    assert!(stored.contains(token) && stored.contains(base), "{stored}");

    let out = ada.run(&["whoami"], &[]);
    exits(&out, 0);
    for expected in [
        "ada@example.com",
        "login:           ada",
        "publish_allowed: true",
        "ada-dev",
    ] {
        assert!(
            stdout(&out).contains(expected),
            "{expected}: {}",
            stdout(&out)
        );
    }
    let out = ada.run(&["whoami", "--json"], &[]);
    exits(&out, 0);
    let me: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (me["login"].as_str(), me["tenant"]["tenant"].as_str()),
        (Some("ada"), Some("ada-dev"))
    );
    // The stored token is never sent to another platform.
    let out = ada.run(&["whoami", "--platform", dead], &[]);
    exits(&out, 1);
    assert!(stderr(&out).contains("not logged in"), "{}", stderr(&out));

    // Logout removes the token only; the platform address stays.
    let out = ada.run(&["logout"], &[]);
    exits(&out, 0);
    let stored = std::fs::read_to_string(&config).unwrap();
    assert!(!stored.contains(token) && stored.contains(base), "{stored}");
    let out = ada.run(&["whoami"], &[]);
    exits(&out, 1);
    let out = ada.run(&["logout"], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("Not logged in"), "{}", stdout(&out));
    // SERVICE_TOKEN works without a stored token, against the stored address.
    let out = ada.run(&["whoami"], &[("SERVICE_TOKEN", token)]);
    exits(&out, 0);
}

#[test]
fn apps_list_and_show_tell_each_version_its_status_and_an_archived_app_keeps_them() {
    let base = platform().base.as_str();
    let dev = Dev::logged_in("lin");
    // Apps: none, then one registered (two versions) and promoted.
    let out = dev.run(&["apps", "list"], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("No apps yet"), "{}", stdout(&out));
    let slug = "lin-notes";
    register(base, &dev.token, slug, "1.0.0");
    let (status, body) = http(
        "POST",
        &format!("{base}/api/dev/apps/{slug}/versions/1.0.0/promote"),
        &dev.token,
        None,
    );
    assert_eq!(status, 200, "{body}");
    register(base, &dev.token, slug, "1.1.0");
    let out = dev.run(&["apps", "list"], &[]);
    exits(&out, 0);
    let listing = stdout(&out);
    let row = listing
        .lines()
        .find(|l| l.starts_with(slug))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(row.contains("active") && row.contains("1.0.0"), "{listing}");
    let out = dev.run(&["apps", "list", "--json"], &[]);
    exits(&out, 0);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["apps"][0]["slug"], slug);
    assert_eq!(list["apps"][0]["current_version"], "1.0.0");
    let out = dev.run(&["apps", "show", slug], &[]);
    exits(&out, 0);
    let shown = stdout(&out);
    assert!(
        shown.contains("1.0.0 *") && shown.contains("published"),
        "{shown}"
    );
    assert!(
        shown.contains("1.1.0") && shown.contains("registered"),
        "{shown}"
    );
    assert!(
        shown.contains("sha256:") && shown.contains("success"),
        "{shown}"
    );
    let out = dev.run(&["apps", "show", slug, "--json"], &[]);
    exits(&out, 0);
    let detail: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(detail["versions"].as_array().unwrap().len(), 2, "{detail}");
    let out = dev.run(&["apps", "show", "Not_A_Slug"], &[]);
    exits(&out, 1);
    let out = dev.run(&["apps", "show", "no-such-app"], &[]);
    exits(&out, 2);
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));

    // Archived, an app keeps its versions and says so.
    let out = dev.run(&["apps", "archive", slug], &[]);
    exits(&out, 0);
    let out = dev.run(&["apps", "show", slug, "--json"], &[]);
    exits(&out, 0);
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["status"], "archived", "{shown}");
    assert_eq!(shown["versions"].as_array().unwrap().len(), 2, "{shown}");
}

#[test]
fn secrets_are_kept_without_their_values_and_another_developer_reaches_none_of_them() {
    let base = platform().base.as_str();
    let dev = Dev::logged_in("sam");
    let bob = Dev::new("bob", false);
    let slug = "sam-notes";
    register(base, &dev.token, slug, "1.0.0");

    // Secrets: set (new, then replaced, then from standard input), listed and shown without
    // the value, deleted; bad keys are 1, an unknown one 2.
    let out = dev.run(
        &[
            "secrets",
            "set",
            "API_KEY=first-value",
            "--app",
            slug,
            "--description",
            "The mail API",
        ],
        &[],
    );
    exits(&out, 0);
    assert!(
        stdout(&out).contains("Set new secret API_KEY"),
        "{}",
        stdout(&out)
    );
    let out = dev.run(
        &["secrets", "set", "API_KEY=second=value", "--app", slug],
        &[],
    );
    exits(&out, 0);
    assert!(stdout(&out).contains("Replaced"), "{}", stdout(&out));
    let out = dev.atrium.run_with_input(
        dev.here(),
        &["secrets", "set", "WEBHOOK_SECRET", "--app", slug],
        "from-stdin\n",
    );
    exits(&out, 0);
    let out = dev.run(&["secrets", "list", "--app", slug, "--json"], &[]);
    exits(&out, 0);
    let secrets: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = secrets["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["API_KEY", "WEBHOOK_SECRET"]);
    assert_eq!(
        secrets["secrets"][0]["description"], "The mail API",
        "the description is kept"
    );
    let out = dev.run(&["secrets", "list", "--app", slug], &[]);
    exits(&out, 0);
    let out = dev.run(&["secrets", "get", "API_KEY", "--app", slug], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("The mail API"), "{}", stdout(&out));
    let everything = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!everything.contains("value"), "{everything}");
    for (args, code) in [
        (vec!["secrets", "set", "api_key=x", "--app", slug], 1),
        (
            vec!["secrets", "set", "sk_live_1234567890", "--app", slug],
            1,
        ),
        (vec!["secrets", "get", "lower", "--app", slug], 1),
        (vec!["secrets", "get", "NOPE", "--app", slug], 2),
        (vec!["secrets", "list"], 1),
        (vec!["secrets", "list", "--app", "Bad_Slug"], 1),
    ] {
        let out = dev.run(&args, &[]);
        exits(&out, code);
    }
    // A value given in the key's place is refused at once and not printed.
    let out = dev.run(
        &["secrets", "set", "sk_live_1234567890", "--app", slug],
        &[],
    );
    assert!(!stderr(&out).contains("1234567890"), "{}", stderr(&out));
    // Without --app, the app_id of ./atrium.app.yaml.
    let project = dev.here().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("atrium.app.yaml"),
        std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
            .unwrap()
            .replace("app_id: probe", &format!("app_id: {slug}")),
    )
    .unwrap();
    let out = dev
        .atrium
        .run(&project, &["secrets", "delete", "WEBHOOK_SECRET"], &[]);
    exits(&out, 0);
    let out = dev
        .atrium
        .run(&project, &["secrets", "delete", "WEBHOOK_SECRET"], &[]);
    exits(&out, 2);

    // Another developer's token reaches none of it.
    let as_bob = [("SERVICE_TOKEN", bob.token.as_str())];
    let out = dev.run(&["apps", "list", "--json"], &as_bob);
    exits(&out, 0);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["apps"], json!([]), "{list}");
    for args in [
        vec!["apps", "show", slug],
        vec!["secrets", "list", "--app", slug],
        vec!["secrets", "set", "API_KEY=stolen", "--app", slug],
        vec!["upgrade", slug],
    ] {
        let out = dev.run(&args, &as_bob);
        exits(&out, 2);
    }
    let out = dev.run(&["secrets", "get", "API_KEY", "--app", slug, "--json"], &[]);
    exits(&out, 0);
    let after: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        after["updated_at"], secrets["secrets"][0]["updated_at"],
        "Bob changed nothing"
    );
    // A refused SERVICE_TOKEN is 3, naming the variable.
    let out = dev.run(&["apps", "list"], &[("SERVICE_TOKEN", "expired")]);
    exits(&out, 3);
    assert!(stderr(&out).contains("SERVICE_TOKEN"), "{}", stderr(&out));
}

#[test]
#[allow(clippy::too_many_lines)]
fn upgrade_and_a_required_setting_move_the_dev_tenant_install_only_when_they_may() {
    let base = platform().base.as_str();
    let una = Dev::logged_in("una");
    let bob = Dev::new("ulf", false);
    let as_bob = [("SERVICE_TOKEN", bob.token.as_str())];
    let slug = "una-notes";
    // 1.0.0 registered and promoted, then 1.1.0 registered.
    register(base, &una.token, slug, "1.0.0");
    let (status, body) = http(
        "POST",
        &format!("{base}/api/dev/apps/{slug}/versions/1.0.0/promote"),
        &una.token,
        None,
    );
    assert_eq!(status, 200, "{body}");
    register(base, &una.token, slug, "1.1.0");
    let out = una.run(&["whoami", "--json"], &[]);
    exits(&out, 0);
    let me: Value = serde_json::from_slice(&out.stdout).unwrap();
    let dev_tenant = format!(
        "{}/{}",
        me["tenant"]["organization"].as_str().unwrap(),
        una.dev_tenant()
    );

    // Upgrade: the dev tenant installs 1.0.0; a forced upgrade moves it to 1.1.0.
    let admin = una.admin();
    // Only promoted versions are upgrade targets: 1.1.0 promoted once, 1.0.0 current again.
    for version in ["1.1.0", "1.0.0"] {
        let (status, body) = http(
            "POST",
            &format!("{base}/api/dev/apps/{slug}/versions/{version}/promote"),
            &una.token,
            None,
        );
        assert_eq!(status, 200, "{body}");
    }
    // The promotions installed it in the developer's dev tenant already (on 1.0.0, current again): the
    // tenant's activation is a re-activation.
    let (status, body) = http(
        "POST",
        &format!("{base}/api/installs/{slug}/activate"),
        &admin,
        json_body(
            &json!({"granted_scopes": ["tasks.read", "tasks.write"], "upgrade_policy": "manual"}),
        ),
    );
    assert_eq!(
        (status, body["version"].as_str()),
        (200, Some("1.0.0")),
        "{body}"
    );
    let out = una.run(&["upgrade", slug, "--target-version", "9.9.9"], &[]);
    exits(&out, 2);
    let out = una.run(
        &[
            "upgrade",
            slug,
            "--target-version",
            "1.1.0",
            "--tenant",
            &dev_tenant,
            "--json",
        ],
        &[],
    );
    exits(&out, 0);
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["installs"][0]["from"], "1.0.0", "{run}");
    assert_eq!(run["installs"][0]["to"], "1.1.0", "{run}");
    assert_eq!(run["installs"][0]["outcome"], "upgraded", "{run}");
    let out = una.run(&["upgrade", slug, "--target-version", "1.1.0"], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("current"), "{}", stdout(&out));
    let (status, body) = http("GET", &format!("{base}/api/installs/{slug}"), &admin, None);
    assert_eq!(
        (status, body["version"].as_str()),
        (200, Some("1.1.0")),
        "{body}"
    );

    // A version with a required setting and no default: its promotion cannot move the developer's dev
    // tenant (on 1.1.0), so calls answer from 1.1.0 and say so, and an unknown tool points to
    // the command that lists the tools. The developer gives the value with `apps settings set`, checked
    // as a tenant admin's change is (refused values store nothing), and the install moves.
    register_edited(base, &una.token, slug, "1.2.0", &|manifest| {
        format!(
            "{manifest}install_settings:\n  - {{id: signature, type: string, label: Signature, required: true}}\n  - {{id: retries, type: number, label: Retries, required: false, default: 1, max: 5}}\n"
        )
    });
    let give = format!("atrium apps settings set {slug} signature=VALUE");
    let out = una.run(&["apps", "promote", slug, "1.2.0"], &[]);
    exits(&out, 0);
    assert!(
        stdout(&out).contains("missing_settings (signature)") && stdout(&out).contains(&give),
        "{}",
        stdout(&out)
    );
    let out = una.run(&["apps", "call", slug, "echo", r#"{"said": "hi"}"#], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains(r#""said": "hi""#), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(
        said.contains(&format!("from {slug} 1.1.0"))
            && said.contains("current version 1.2.0")
            && said.contains(&give),
        "{said}"
    );
    let out = una.run(&["apps", "call", slug, "nope", "{}"], &[]);
    exits(&out, 2);
    let said = stderr(&out);
    assert!(
        said.contains("unknown_tool")
            && said.contains(&format!("`atrium apps show {slug}` lists the tools"))
            && !said.contains("atrium apps list"),
        "{said}"
    );
    let out = una.run(&["apps", "show", slug], &[]);
    exits(&out, 0);
    assert!(
        stdout(&out).contains("tools: echo, guarded"),
        "{}",
        stdout(&out)
    );
    let out = una.run(&["apps", "settings", "get", slug], &[]);
    exits(&out, 0);
    let said = stdout(&out);
    assert!(
        said.contains("1.1.0, active (the current version is 1.2.0)")
            && said.contains("(needs a value)")
            && said.contains(&give),
        "{said}"
    );
    for (args, code, named) in [
        (
            vec![
                "apps",
                "settings",
                "set",
                slug,
                "signature=Ada",
                "retries=9",
            ],
            2,
            "retries",
        ),
        (
            vec!["apps", "settings", "set", slug, "colour=red"],
            2,
            "colour",
        ),
        (
            vec!["apps", "settings", "set", slug, "retries=2"],
            2,
            "signature",
        ),
        (
            vec!["apps", "settings", "set", slug, "Not A Key=1"],
            1,
            "`Not ...",
        ),
    ] {
        let out = una.run(&args, &[]);
        exits(&out, code);
        assert!(stderr(&out).contains(named), "{args:?}: {}", stderr(&out));
    }
    let out = una.run(&["apps", "settings", "get", slug], &as_bob);
    exits(&out, 2);
    assert!(stderr(&out).contains("403"), "{}", stderr(&out));
    let (status, body) = http("GET", &format!("{base}/api/installs/{slug}"), &admin, None);
    assert_eq!(
        (status, body["version"].as_str()),
        (200, Some("1.1.0")),
        "refused values store nothing: {body}"
    );
    let out = una.run(
        &[
            "apps",
            "settings",
            "set",
            slug,
            "signature=Ada",
            "retries=3",
        ],
        &[],
    );
    exits(&out, 0);
    assert!(
        stdout(&out).contains("upgraded to 1.2.0 with them"),
        "{}",
        stdout(&out)
    );
    let (status, body) = http("GET", &format!("{base}/api/installs/{slug}"), &admin, None);
    assert_eq!(
        (status, body["version"].as_str(), body["settings"].clone()),
        (
            200,
            Some("1.2.0"),
            json!({"signature": "Ada", "retries": 3})
        ),
        "{body}"
    );
    let out = una.run(&["apps", "call", slug, "echo", "{}"], &[]);
    exits(&out, 0);
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));
    // On the current version, a change keeps the other values; a value from standard input.
    let out = una.atrium.run_with_input(
        una.here(),
        &["apps", "settings", "set", slug, "signature", "--json"],
        "Ada Lovelace\n",
    );
    exits(&out, 0);
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            view["outcome"].as_str(),
            view["settings"]["signature"].as_str(),
            view["settings"]["retries"].as_i64(),
            view["missing_settings"].clone()
        ),
        (Some("updated"), Some("Ada Lovelace"), Some(3), json!([])),
        "{view}"
    );
}

#[test]
#[allow(clippy::too_many_lines)]
fn deploy_of_a_built_component_registers_bundles_and_promotes_it_once() {
    let dee = Dev::logged_in("dee");
    let bob = Dev::new("dan", false);
    let as_bob = [("SERVICE_TOKEN", bob.token.as_str())];
    let (atrium, here) = (&dee.atrium, dee.here());
    // Deploy a project whose component was built before (--skip-build): preflight, the
    // component cargo's metadata points at, docs, a template, the web/ bundle, promotion.
    let app_dir = here.join("probe-deploy");
    let deploy_slug = "probe-deploy";
    std::fs::create_dir_all(app_dir.join("src")).unwrap();
    std::fs::create_dir_all(app_dir.join("app_docs")).unwrap();
    std::fs::create_dir_all(app_dir.join("defaults/templates")).unwrap();
    std::fs::create_dir_all(app_dir.join("web/assets")).unwrap();
    std::fs::write(
        app_dir.join("Cargo.toml"),
        "[package]\nname = \"probe-deploy\"\nversion = \"1.0.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(app_dir.join("src/lib.rs"), "").unwrap();
    let deploy_manifest = std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace("app_id: probe", &format!("app_id: {deploy_slug}"))
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write");
    std::fs::write(app_dir.join("atrium.app.yaml"), &deploy_manifest).unwrap();
    std::fs::write(
        app_dir.join("app_docs/user.md"),
        "# Probe\n\nWhat it does.\n",
    )
    .unwrap();
    std::fs::write(
        app_dir.join("defaults/templates/memo.json"),
        r#"{"slug": "memo", "name": "Memo", "sections": [], "metadata": {}}"#,
    )
    .unwrap();
    std::fs::write(
        app_dir.join("web/index.html"),
        "<!doctype html><title>Probe</title>",
    )
    .unwrap();
    std::fs::write(app_dir.join("web/assets/app.js"), "console.log('probe');").unwrap();
    let target = app_dir.join("target");
    let target = target.to_str().unwrap();
    let built = [("CARGO_TARGET_DIR", target)];
    let out = atrium.run(&app_dir, &["deploy", "--skip-build"], &built);
    exits(&out, 1);
    assert!(
        stderr(&out).contains("no built component"),
        "{}",
        stderr(&out)
    );
    let wasm_dir = app_dir.join("target/wasm32-wasip2/release");
    std::fs::create_dir_all(&wasm_dir).unwrap();
    std::fs::copy(
        atrium_test_artifacts::PROBE,
        wasm_dir.join("probe_deploy.wasm"),
    )
    .unwrap();
    let out = atrium.run(&app_dir, &["deploy", "--skip-build"], &built);
    exits(&out, 0);
    let said = stdout(&out);
    for expected in [
        "[1/5] preflight",
        "[2/5] build: skipped",
        "probe_deploy.wasm",
        "[3/5] register probe-deploy 1.0.0",
        "registered (1 docs file(s), 1 template(s))",
        "[4/5] bundle",
        "uploaded (2 file(s)",
        "[5/5] promote 1.0.0",
        "1.0.0 is the current version",
    ] {
        assert!(said.contains(expected), "{expected}: {said}");
    }
    // The same deploy again changes nothing.
    let out = atrium.run(&app_dir, &["deploy", "--skip-build"], &built);
    exits(&out, 0);
    let said = stdout(&out);
    assert!(
        said.contains("already registered with the same content")
            && said.contains("already uploaded"),
        "{said}"
    );
    // Another version, without bundle and promotion: registered, not current.
    let out = atrium.run(
        &app_dir,
        &[
            "deploy",
            "--skip-build",
            "--version",
            "1.2.0",
            "--no-promote",
            "--bundle",
            "",
        ],
        &built,
    );
    exits(&out, 0);
    assert!(
        stdout(&out).contains("[4/5] bundle: none"),
        "{}",
        stdout(&out)
    );
    let out = atrium.run(here, &["apps", "show", deploy_slug, "--json"], &[]);
    exits(&out, 0);
    let detail: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(detail["current_version"], "1.0.0", "{detail}");
    let versions: Vec<(&str, &str)> = detail["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_str().unwrap(),
                v["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(versions.contains(&("1.2.0", "registered")), "{detail}");
    assert!(
        detail["versions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["version"] == "1.0.0" && v["bundle_digest"].is_string()),
        "{detail}"
    );
    // Another bundle for a version that has one: the platform refuses, exit 2.
    std::fs::write(
        app_dir.join("web/index.html"),
        "<!doctype html><title>Changed</title>",
    )
    .unwrap();
    let manifest_now = std::fs::read_to_string(app_dir.join("atrium.app.yaml")).unwrap();
    assert!(
        manifest_now.contains("version: 1.2.0"),
        "--version wrote the file: {manifest_now}"
    );
    let out = atrium.run(
        &app_dir,
        &[
            "deploy",
            "--skip-build",
            "--no-promote",
            "--version",
            "1.0.0",
        ],
        &built,
    );
    exits(&out, 2);
    assert!(
        stdout(&out).contains("already registered with the same content"),
        "{}",
        stdout(&out)
    );
    // Other docs under a registered version: the preflight says the version must change and
    // names a free one (exit 1, the manifest file left as it was); without the preflight the
    // platform's 409 says the same (exit 2).
    std::fs::write(
        app_dir.join("app_docs/user.md"),
        "# Probe\n\nWhat it does, and more.\n",
    )
    .unwrap();
    let out = atrium.run(
        &app_dir,
        &[
            "deploy",
            "--skip-build",
            "--no-promote",
            "--version",
            "1.2.0",
        ],
        &built,
    );
    exits(&out, 1);
    assert!(
        stdout(&out).contains("other docs")
            && stdout(&out).contains("atrium deploy --version 1.2.1"),
        "{}",
        stdout(&out)
    );
    assert!(
        std::fs::read_to_string(app_dir.join("atrium.app.yaml"))
            .unwrap()
            .contains("version: 1.0.0"),
        "a refused deploy leaves the manifest file as it was"
    );
    let out = atrium.run(
        &app_dir,
        &["deploy", "--skip-build", "--no-preflight", "--no-promote"],
        &built,
    );
    exits(&out, 2);
    assert!(
        stderr(&out).contains("409") && stderr(&out).contains("atrium deploy --version 1.0.1"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        app_dir.join("app_docs/user.md"),
        "# Probe\n\nWhat it does.\n",
    )
    .unwrap();
    // A preflight error stops everything before the registration: exit 1.
    std::fs::write(
        app_dir.join("atrium.app.yaml"),
        deploy_manifest
            .replace("version: 1.0.0", "version: 1.3.0")
            .replace("tasks.read", "made.up"),
    )
    .unwrap();
    let out = atrium.run(&app_dir, &["deploy", "--skip-build"], &built);
    exits(&out, 1);
    assert!(stdout(&out).contains("made.up"), "{}", stdout(&out));
    let out = atrium.run(here, &["apps", "show", deploy_slug, "--json"], &[]);
    let detail: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        detail["versions"].as_array().unwrap().len(),
        2,
        "nothing registered: {detail}"
    );
    // Bob cannot deploy to Ada's app.
    std::fs::write(
        app_dir.join("atrium.app.yaml"),
        deploy_manifest.replace("version: 1.0.0", "version: 1.4.0"),
    )
    .unwrap();
    let out = atrium.run(
        &app_dir,
        &["deploy", "--skip-build", "--bundle", ""],
        &[built[0], as_bob[0]],
    );
    exits(&out, 1);
    let out = atrium.run(
        &app_dir,
        &["deploy", "--skip-build", "--bundle", "", "--no-preflight"],
        &[built[0], as_bob[0]],
    );
    exits(&out, 2);
}

#[test]
#[allow(clippy::too_many_lines)]
fn a_new_rust_project_is_checked_deployed_installed_called_upgraded_and_rolled_back() {
    let platform = platform();
    let (base, dead) = (platform.base.clone(), platform.dead.clone());
    let gil = Dev::logged_in("gil");
    let bob = Dev::new("gus", false);
    let as_bob = [("SERVICE_TOKEN", bob.token.as_str())];
    let (atrium, here) = (&gil.atrium, gil.here());
    let admin = gil.admin();
    let out = gil.run(&["whoami", "--json"], &[]);
    exits(&out, 0);
    let me: Value = serde_json::from_slice(&out.stdout).unwrap();
    let dev_tenant = format!("{}/gil-dev", me["tenant"]["organization"].as_str().unwrap());

    // The whole loop: a new project, checked by doctor, deployed with a real build,
    // installed by the developer's dev tenant and called; a new version deployed without promotion,
    // then forced onto the install.
    let out = atrium.run(here, &["init", "greeter-app", "--name", "Greeter"], &[]);
    exits(&out, 0);
    let greeter = here.join("greeter-app");
    let wasm_target = scaffold_target();
    let wasm_target = wasm_target.to_str().unwrap();
    let scaffold = [("CARGO_TARGET_DIR", wasm_target)];
    let out = atrium.run(&greeter, &["doctor"], &scaffold);
    exits(&out, 0);
    assert!(!stdout(&out).contains("FAIL"), "{}", stdout(&out));
    let out = atrium.run(&greeter, &["deploy"], &scaffold);
    exits(&out, 0);
    let first_deploy = stdout(&out);
    assert!(
        stdout(&out).contains("Deployed greeter-app: 0.1.0 is the current version"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("greeter_app.wasm"),
        "{}",
        stdout(&out)
    );
    // The Rust build is reproducible: the app's crate compiled again gives the same bytes
    // (with the machine's paths remapped), and deploying them again registers nothing.
    let build_json = |out: &Output| -> Value { serde_json::from_str(&stdout(out)).unwrap() };
    let out = atrium.run(&greeter, &["build", "--json"], &scaffold);
    exits(&out, 0);
    let first = build_json(&out);
    let lib = greeter.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(&lib, &source).unwrap();
    let out = atrium.run(&greeter, &["build", "--json"], &scaffold);
    exits(&out, 0);
    assert_eq!(build_json(&out)["digest"], first["digest"], "{first}");
    let out = atrium.run(&greeter, &["deploy", "--skip-build"], &scaffold);
    exits(&out, 0);
    assert!(
        stdout(&out).contains("already registered with the same content"),
        "{}",
        stdout(&out)
    );
    let wasm = std::fs::read(first["component"].as_str().unwrap()).unwrap();
    let cargo_home = std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap()));
    let tree = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    for path in [
        greeter
            .canonicalize()
            .unwrap()
            .to_string_lossy()
            .into_owned(),
        cargo_home,
        tree.join("guest-sdk").to_string_lossy().into_owned(),
    ] {
        assert!(
            !contains(&wasm, path.as_bytes()),
            "the component names {path}, a path of the build machine"
        );
    }
    // Deploy put it in the developer's dev tenant and printed a call that answers.
    assert!(
        first_deploy.contains("Your dev tenant gil-dev")
            && first_deploy.contains("(installed)")
            && first_deploy.contains("atrium apps call greeter-app greet '{}'"),
        "{first_deploy}"
    );
    // Deployed again, the dev tenant has it already.
    assert!(stdout(&out).contains("(current)"), "{}", stdout(&out));
    let out = atrium.run(here, &["apps", "call", "greeter-app", "greet", "{}"], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("Hello, world!"), "{}", stdout(&out));
    let out = atrium.run(
        here,
        &["apps", "call", "greeter-app", "greet", r#"{"name": " "}"#],
        &[],
    );
    exits(&out, 2);
    let out = atrium.run(here, &["apps", "call", "greeter-app", "greet", "[1]"], &[]);
    exits(&out, 1);
    // Bob has a dev tenant too (the default one), but not Ada's app.
    let out = atrium.run(
        here,
        &["apps", "call", "greeter-app", "greet", "{}"],
        &[as_bob[0]],
    );
    exits(&out, 2);
    assert!(stderr(&out).contains("403"), "{}", stderr(&out));
    // A tenant's token is no developer's: the dev tenant's own admin cannot call through it.
    let (status, body) = http(
        "POST",
        &format!("{base}/api/dev/apps/greeter-app/tools/greet"),
        &admin,
        None,
    );
    assert_eq!(status, 401, "{body}");
    let (status, body) = http(
        "POST",
        &format!("{base}/api/installs/greeter-app/activate"),
        &admin,
        json_body(
            &json!({"granted_scopes": [], "settings": {"greeting": "Good morning"}, "upgrade_policy": "manual"}),
        ),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = http(
        "POST",
        &format!("{base}/api/apps/greeter-app/tools/greet"),
        &admin,
        json_body(&json!({"name": "Ada"})),
    );
    assert_eq!(
        (status, body["result"]["message"].as_str()),
        (200, Some("Good morning, Ada!")),
        "{body}"
    );
    let lib = greeter.join("src/lib.rs");
    std::fs::write(
        &lib,
        std::fs::read_to_string(&lib)
            .unwrap()
            .replace("{greeting}, {name}!", "{greeting}, dear {name}!"),
    )
    .unwrap();
    // The code changed, not the version: the preflight compares the project's build inputs
    // with the registered version's and stops before the build (exit 1), naming a free one.
    let out = atrium.run(&greeter, &["deploy"], &scaffold);
    exits(&out, 1);
    assert!(
        stdout(&out).contains("other build inputs")
            && stdout(&out).contains("atrium deploy --version 0.1.1"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("[2/5]"), "{}", stdout(&out));
    let out = atrium.run(
        &greeter,
        &["deploy", "--version", "0.2.0", "--json"],
        &scaffold,
    );
    exits(&out, 0);
    // The dev tenant follows every promotion, whatever its policy; --json says so on stdout.
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            summary["version"].as_str(),
            summary["promotion"]["dev_install"]["outcome"].as_str(),
            summary["registration"]["created"].as_bool()
        ),
        (Some("0.2.0"), Some("upgraded"), Some(true)),
        "{summary}"
    );
    assert!(
        stderr(&out).contains("[5/5] promote 0.2.0"),
        "{}",
        stderr(&out)
    );
    let (status, body) = http(
        "GET",
        &format!("{base}/api/installs/greeter-app"),
        &admin,
        None,
    );
    assert_eq!(
        (status, body["version"].as_str()),
        (200, Some("0.2.0")),
        "{body}"
    );
    // A tenant id alone is ambiguous across organizations: the tool asks for both.
    let out = atrium.run(
        here,
        &["upgrade", "greeter-app", "--tenant", "gil-dev"],
        &[],
    );
    exits(&out, 1);
    assert!(
        stderr(&out).contains("<organization>/<tenant>"),
        "{}",
        stderr(&out)
    );
    // One line, as every error of the tool, not clap's usage.
    let said = stderr(&out);
    assert!(
        said.starts_with("atrium upgrade: ")
            && said.trim_end().lines().count() == 1
            && !said.contains("Usage"),
        "{said}"
    );
    // The organization by its name, as the administration commands take it.
    let out = atrium.run(
        here,
        &["upgrade", "greeter-app", "--tenant", "acme/gil-dev"],
        &[],
    );
    exits(&out, 0);
    assert!(stdout(&out).contains("current"), "{}", stdout(&out));
    // Names that match no install are refused, saying which (not "no installs to upgrade").
    for (tenant, named) in [
        ("nope/gil-dev", "organization `nope`"),
        ("acme/nobody", "tenant `nobody`"),
    ] {
        let out = atrium.run(here, &["upgrade", "greeter-app", "--tenant", tenant], &[]);
        exits(&out, 1);
        assert!(
            stderr(&out).contains(named) && stderr(&out).contains("no install"),
            "{}",
            stderr(&out)
        );
    }
    let out = atrium.run(
        here,
        &["upgrade", "greeter-app", "--tenant", &dev_tenant],
        &[],
    );
    exits(&out, 0);
    assert!(stdout(&out).contains("current"), "{}", stdout(&out));
    let (status, body) = http(
        "POST",
        &format!("{base}/api/apps/greeter-app/tools/greet"),
        &admin,
        json_body(&json!({"name": "Ada"})),
    );
    assert_eq!(
        (status, body["result"]["message"].as_str()),
        (200, Some("Good morning, dear Ada!")),
        "{body}"
    );

    // Which version is current: back one, forward again, and not to a version never promoted.
    let out = atrium.run(here, &["apps", "rollback", "greeter-app"], &[]);
    exits(&out, 0);
    assert!(
        stdout(&out).contains("0.1.0 is the current version")
            && stdout(&out).contains("Your dev tenant gil-dev")
            && stdout(&out).contains("upgraded"),
        "{}",
        stdout(&out)
    );
    let out = atrium.run(here, &["apps", "call", "greeter-app", "greet", "{}"], &[]);
    exits(&out, 0);
    assert!(
        stdout(&out).contains("Good morning, world!"),
        "{}",
        stdout(&out)
    );
    let out = atrium.run(
        here,
        &["apps", "promote", "greeter-app", "0.2.0", "--json"],
        &[],
    );
    exits(&out, 0);
    let promoted: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(promoted["app"]["current_version"], "0.2.0", "{promoted}");
    let out = atrium.run(
        here,
        &["apps", "rollback", "greeter-app", "--to", "9.9.9"],
        &[],
    );
    exits(&out, 2);
    let out = atrium.run(&greeter, &["doctor", "--json"], &scaffold);
    exits(&out, 0);
    let doctor: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            doctor["passed"].as_bool(),
            doctor["checks"].as_array().map(Vec::len)
        ),
        (Some(true), Some(5)),
        "{doctor}"
    );
    // lint asks the platform named by --platform; one that does not answer is exit 2, named.
    let out = atrium.run(&greeter, &["lint", "--platform", &base], &[]);
    exits(&out, 0);
    let out = atrium.run(
        &greeter,
        &["lint", "--platform", &dead],
        &[("SERVICE_TOKEN", gil.token.as_str())],
    );
    exits(&out, 2);
    assert!(
        stderr(&out).contains("nothing answers there")
            && !stderr(&out).contains("error sending request"),
        "{}",
        stderr(&out)
    );
    let out = atrium.run(here, &["completions", "bash"], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("_atrium"), "{}", stdout(&out));
}

#[test]
fn a_new_python_project_is_checked_deployed_installed_and_called() {
    let dev = Dev::logged_in("pia");
    let base = &platform().base;
    crate::sdks::deploy_install_and_call(&dev.atrium, dev.here(), base, &dev.admin(), "python");
}

#[test]
fn a_new_typescript_project_is_checked_deployed_installed_and_called() {
    let dev = Dev::logged_in("tom");
    let base = &platform().base;
    crate::sdks::deploy_install_and_call(&dev.atrium, dev.here(), base, &dev.admin(), "typescript");
}
