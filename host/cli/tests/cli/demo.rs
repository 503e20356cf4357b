//! The demo of `atrium serve`: on a fresh data directory it publishes the example apps and
//! installs them for tenant `demo`, whose admin token it prints once and writes to
//! `<data-dir>/demo-token`; a restart publishes nothing new; `--no-demo`, `ATRIUM_DEMO=0` and
//! PostgreSQL (unless asked) leave the store alone.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{atrium, command, stdout};

/// Compiling four components with a debug build of wasmtime, beside other tests on two cores.
const SETUP: Duration = Duration::from_secs(600);

/// A running `atrium serve` whose log the test reads while it runs.
struct Host {
    child: Child,
    addr: String,
    lines: Receiver<String>,
    log: Vec<String>,
}

impl Host {
    fn start(dir: &Path, data: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut args = vec!["serve", "--addr", "127.0.0.1:0", "--data-dir", data];
        args.extend_from_slice(extra);
        let mut command: Command = command(dir, &args);
        command
            .env_remove("ATRIUM_DEMO")
            .env_remove("ATRIUM_LOG")
            .envs(env.iter().copied())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut host = Host {
            child,
            addr: String::new(),
            lines,
            log: Vec::new(),
        };
        let line = host.wait_for("listening on http://", Duration::from_secs(120));
        host.addr = line
            .split("listening on http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .to_owned();
        host
    }

    /// Reads the log until a line contains `needle`, and answers that line.
    fn wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no `{needle}` in {timeout:?}: {:#?}", self.log)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the host exited before `{needle}`: {:#?}", self.log)
                }
            }
        }
    }

    /// Stops the host with SIGTERM; it must exit 0. Answers its whole log.
    fn stop(mut self) -> Vec<String> {
        // An answer means the server runs, and with it the handler of SIGTERM. A busy host
        // may shed the probe (503 with `Retry-After`): that is an answer too, but ask again
        // for the one that shows the request reached the tenant check.
        let deadline = Instant::now() + Duration::from_secs(60);
        let (status, body) = loop {
            let (status, body) = self.call("GET", "/api/tenant/me", "att_none", "");
            if status != 503 || Instant::now() > deadline {
                break (status, body);
            }
            std::thread::sleep(Duration::from_millis(250));
        };
        assert_eq!(status, 401, "{body}");
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = self.child.wait().unwrap();
        self.log.extend(self.lines.iter());
        assert_eq!(status.code(), Some(0), "{:#?}", self.log);
        std::mem::take(&mut self.log)
    }

    /// `method path` with a bearer token and a JSON body: the status and the JSON answer.
    fn call(&self, method: &str, path: &str, token: &str, body: &str) -> (u16, Value) {
        let addr = &self.addr;
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
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
}

impl Drop for Host {
    fn drop(&mut self) {
        // After `stop` the process has exited and been waited for: both are no-ops then.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_fresh_host_installs_the_examples_once_and_serves_their_tools() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();

    let mut host = Host::start(dir.path(), data, &[], &[]);
    let ready = host.wait_for("the demo is ready", SETUP);
    assert!(
        ready.contains("published 4 example apps, installed 4"),
        "{ready}"
    );
    let token_file = Path::new(data).join("demo-token");
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert!(token.starts_with("att_"), "{token}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let (status, me) = host.call("GET", "/api/tenant/me", &token, "");
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        (me["tenant"].as_str(), me["role"].as_str()),
        (Some("demo"), Some("admin"))
    );

    let (status, installs) = host.call("GET", "/api/installs", &token, "");
    assert_eq!(status, 200, "{installs}");
    let mut apps: Vec<(&str, &str)> = installs["installs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["app"].as_str().unwrap(), i["status"].as_str().unwrap()))
        .collect();
    apps.sort_unstable();
    assert_eq!(
        apps,
        [
            ("hello-minimal", "active"),
            ("invoice-desk", "active"),
            ("ledger", "active"),
            ("room-bot", "active"),
        ]
    );

    // The README's calls: the seeded invoices, then an entry booked and its balance.
    let (status, listed) = host.call(
        "POST",
        "/api/apps/invoice-desk/tools/list_invoices",
        &token,
        "",
    );
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["result"]["currency"], "EUR");
    let ids: Vec<&str> = listed["result"]["invoices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["inv-1001", "inv-1002"], "{listed}");
    let (status, booked) = host.call(
        "POST",
        "/api/apps/ledger/tools/book_entry",
        &token,
        r#"{"account": "4000", "amount": 120.5}"#,
    );
    assert_eq!(status, 200, "{booked}");
    assert!(
        booked["result"]["id"].as_str().unwrap().starts_with("rec_"),
        "{booked}"
    );
    let (status, balance) = host.call(
        "POST",
        "/api/apps/ledger/tools/account_balance",
        &token,
        r#"{"account": "4000"}"#,
    );
    assert_eq!(status, 200, "{balance}");
    assert_eq!(balance["result"]["balance"], 120.5, "{balance}");
    assert_eq!(balance["result"]["entries"], 1, "{balance}");

    let log = host.stop();
    let shown = log.iter().filter(|l| l.contains(&token)).count();
    assert_eq!(shown, 1, "the token is printed once: {log:#?}");

    // A restart publishes and installs nothing, and never prints the token again.
    let mut host = Host::start(dir.path(), data, &[], &[]);
    let ready = host.wait_for("the demo is ready", SETUP);
    assert!(ready.contains("nothing new to publish"), "{ready}");
    assert!(ready.contains("4 active installs"), "{ready}");
    let (status, balance) = host.call(
        "POST",
        "/api/apps/ledger/tools/account_balance",
        &token,
        r#"{"account": "4000"}"#,
    );
    assert_eq!(status, 200, "{balance}");
    assert_eq!(
        balance["result"]["entries"], 1,
        "the data is kept: {balance}"
    );
    let log = host.stop();
    assert!(
        !log.iter()
            .any(|l| l.contains(&token) || l.contains("the demo published")),
        "{log:#?}"
    );
}

/// The store is left alone: no demo token, no organization `demo` (whose creation would leave
/// a key behind).
fn assert_no_demo(dir: &Path, data: &str) {
    assert!(!Path::new(data).join("demo-token").exists());
    let keys = atrium(dir, &["keys", "list", "--json", "--data-dir", data]);
    assert_eq!(stdout(&keys).trim(), "[]", "{}", stdout(&keys));
}

#[test]
fn the_demo_is_off_when_asked_and_on_postgresql_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    for (name, args, env) in [
        ("flag", &["--no-demo"][..], &[][..]),
        ("env", &[][..], &[("ATRIUM_DEMO", "0")][..]),
    ] {
        let data = dir.path().join(name);
        let data = data.to_str().unwrap();
        let mut host = Host::start(dir.path(), data, args, env);
        host.wait_for("the demo is off", Duration::from_secs(120));
        host.stop();
        assert_no_demo(dir.path(), data);
    }

    if let Ok(url) = std::env::var("ATRIUM_TEST_DATABASE_URL") {
        let data = dir.path().join("postgres");
        let data = data.to_str().unwrap();
        let mut host = Host::start(dir.path(), data, &[], &[("ATRIUM_DATABASE_URL", &url)]);
        let off = host.wait_for("the demo is off", Duration::from_secs(120));
        assert!(off.contains("shared deployment"), "{off}");
        host.stop();
        assert!(!Path::new(data).join("demo-token").exists());
    }
}
