//! The `atrium` binary, run as a user would: exit codes and output of each command.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod call;
mod crash;
mod demo;
mod dev;
mod developer;
mod docs;
mod keys;
mod layers;
mod lint;
mod outage;
mod registry;
mod scaffold;
mod sdks;
mod serve;
mod tenants;
mod walk;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `atrium <args>` run in `dir`, on the store the test chooses.
pub(crate) fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_atrium"));
    command
        .args(args)
        .current_dir(dir)
        // The tests choose their own store, and keep the records of their hosts apart from
        // the machine's (and from the tests that check how a running host is found).
        .env_remove("ATRIUM_DATABASE_URL")
        .env("ATRIUM_STATE_DIR", test_state_dir());
    command
}

/// The state directory of this test process's hosts.
pub(crate) fn test_state_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("atrium-test-state-{}", std::process::id()))
}

pub(crate) fn atrium(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().expect("run atrium")
}

/// A running `atrium serve`: the address it logged, and the rest of its log collected by a
/// thread so the pipe never fills up. Dropped without [`Serve::stop`], it is killed.
pub(crate) struct Serve {
    child: Child,
    /// Where it listens: `127.0.0.1:<port>`.
    pub(crate) addr: String,
    /// What it logged before the line that named the address.
    pub(crate) startup: Vec<String>,
    log: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl Serve {
    /// Spawns `command`, an `atrium serve --addr 127.0.0.1:0 ...`, logging at its default
    /// level, and waits until it logs where it listens.
    pub(crate) fn spawn(mut command: Command) -> Self {
        let mut child = command
            .env_remove("ATRIUM_LOG")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut startup = Vec::new();
        let addr = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("the host logs where it listens; it logged {startup:?}"))
                .unwrap();
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
            startup.push(line);
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        let reader = std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            addr,
            startup,
            log,
            reader: Some(reader),
        }
    }

    /// The host's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How many lines logged since the address contain `needle`.
    pub(crate) fn logged(&self, needle: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }

    /// Waits up to `timeout` until `times` lines logged since the address contain `needle`.
    pub(crate) fn wait_for_log(&self, needle: &str, times: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.logged(needle) >= times {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Sends SIGTERM and waits for the host to exit: its exit status, and its log after the
    /// line that named the address.
    pub(crate) fn stop(mut self) -> (ExitStatus, Vec<String>) {
        let pid = self.child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(killed.success());
        let status = self.child.wait().unwrap();
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        let log = std::mem::take(&mut *self.log.lock().unwrap());
        (status, log)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // After `stop` the process has exited and been waited for: both are no-ops then.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `atrium keys create` on the store in `data`: the new organization key.
pub(crate) fn create_key(dir: &Path, data: &str) -> String {
    let created = atrium(dir, &["keys", "create", "--data-dir", data, "--create"]);
    stdout(&created).lines().last().unwrap().to_owned()
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `atrium` isolated from the machine: a config directory of its own, no inherited
/// platform or host settings.
pub(crate) struct Atrium {
    /// The tool's config directory (`ATRIUM_CONFIG_DIR`).
    pub(crate) config_dir: std::path::PathBuf,
}

impl Atrium {
    pub(crate) fn command(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_atrium"));
        command.args(args).current_dir(dir);
        for name in [
            "ATRIUM_DATABASE_URL",
            "ATRIUM_DATA_DIR",
            "ATRIUM_ADDR",
            "ATRIUM_CONFIG",
            "ATRIUM_JWT_SECRET",
            "ATRIUM_SECRETS_KEY",
            "ATRIUM_ARTIFACTS_URI",
            "ATRIUM_OIDC_ISSUER",
            "ATRIUM_OIDC_AUDIENCE",
            "ATRIUM_PLATFORM_URL",
            "SERVICE_TOKEN",
            // A developer's shell has none of the test build's SDK environment.
            "ATRIUM_MANIFEST_VALIDATOR",
            "ATRIUM_NODE_MODULES",
            "ATRIUM_PYTHON",
            "PYTHONPATH",
        ] {
            command.env_remove(name);
        }
        command.env("ATRIUM_CONFIG_DIR", &self.config_dir);
        command.env("ATRIUM_STATE_DIR", test_state_dir());
        command.envs(env.iter().copied());
        command
    }

    pub(crate) fn run(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(dir, args, env).output().expect("run atrium")
    }

    /// Runs with `input` on standard input.
    pub(crate) fn run_with_input(&self, dir: &Path, args: &[&str], input: &str) -> Output {
        let mut child = self
            .command(dir, args, &[])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }
}

/// A child process killed (and reaped) when the test ends, also when it fails.
pub(crate) struct KillOnDrop(pub(crate) Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
