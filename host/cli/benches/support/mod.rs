//! What the load tools share: `atrium serve` as a child process.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `atrium serve` as a child process.
pub struct HostProcess {
    child: Child,
    /// Where it listens: `http://127.0.0.1:<port>`.
    pub base: String,
}

impl HostProcess {
    /// Starts it over the data directory `data`, with `env` added to the environment, and
    /// waits until it answers `/health`; its log goes to `data/host.log`. `nice` is its scheduling priority (0 to 19: the higher, the less of a busy core the host
    /// gets beside the load tool).
    pub async fn start(data: &Path, env: &[(&str, &str)], nice: u8) -> HostProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(data.join("host.log"))
            .unwrap();
        let mut command = if nice == 0 {
            Command::new(env!("CARGO_BIN_EXE_atrium"))
        } else {
            let mut niced = Command::new("nice");
            niced.args(["-n", &nice.to_string(), env!("CARGO_BIN_EXE_atrium")]);
            niced
        };
        let child = command
            .args(["serve", "--no-demo", "--addr", &format!("127.0.0.1:{port}")])
            .arg("--data-dir")
            .arg(data)
            .env_remove("ATRIUM_DATABASE_URL")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            if let Ok(r) = client.get(format!("{base}/health")).send().await
                && r.status().is_success()
            {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the host did not start; see {}",
                data.join("host.log").display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        HostProcess { child, base }
    }

    /// Resident memory in KiB: (now, peak).
    pub fn rss(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Asks it to stop (SIGTERM); dropping it waits for the exit.
    pub fn stop(self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        // Drop waits for it.
    }
}

impl Drop for HostProcess {
    /// A bench that fails leaves no host behind: one still running after a graceful stop had
    /// 10 seconds is killed.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            if std::thread::panicking() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `q` quantile (0 to 1) of `sorted` latencies, in milliseconds; `sorted` is not empty.
pub fn quantile_ms(sorted: &[Duration], q: f64) -> f64 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

/// The number in the environment variable `name`, or `default` when it is unset or not one.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Waits for every task of a load, in order: their results.
pub async fn join_all<T>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
