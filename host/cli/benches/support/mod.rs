//! What the load tools share: `atrium serve` as a child process.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the host runs beside the load tool: its scheduling priority, and the cores it may use.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// 0 to 19: the higher, the less of a busy core the host gets beside the load tool.
    pub nice: u8,
    /// A `taskset` list of cores (`0`, `0-1`); the load tool then keeps to the others.
    pub cpus: Option<String>,
}

impl Placement {
    /// `ATRIUM_BENCH_HOST_NICE` and `ATRIUM_BENCH_HOST_CPUS`. With cores named, this process
    /// (and every thread it starts from now on) is moved to the machine's other cores, so that
    /// the load tool and the host no longer share one; with none left over, it panics.
    pub fn from_env() -> Placement {
        let nice = env_number::<u8>("ATRIUM_BENCH_HOST_NICE", 0).min(19);
        let cpus = std::env::var("ATRIUM_BENCH_HOST_CPUS")
            .ok()
            .filter(|c| !c.trim().is_empty());
        if let Some(host) = &cpus {
            let host_cores = cores_of(host);
            let all = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
            let rest: Vec<String> = (0..all)
                .filter(|c| !host_cores.contains(c))
                .map(|c| c.to_string())
                .collect();
            assert!(
                !rest.is_empty(),
                "ATRIUM_BENCH_HOST_CPUS={host} leaves no core of the {all} for the load tool"
            );
            let status = Command::new("taskset")
                .args(["-p", "-c", &rest.join(","), &std::process::id().to_string()])
                .stdout(Stdio::null())
                .status()
                .expect("taskset (util-linux) runs");
            assert!(status.success(), "taskset could not move the load tool");
        }
        Placement { nice, cpus }
    }

    /// How it reads in a report.
    pub fn describe(&self) -> String {
        match &self.cpus {
            Some(cpus) => format!(
                "nice {}, cores {cpus}, the load tool on the others",
                self.nice
            ),
            None => format!("nice {}, cores shared with the load tool", self.nice),
        }
    }
}

/// The cores a `taskset` list names: `0,2-3` is 0, 2 and 3.
fn cores_of(list: &str) -> Vec<usize> {
    let mut cores = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        let bound = |b: &str| {
            b.trim().parse::<usize>().unwrap_or_else(|_| {
                panic!("ATRIUM_BENCH_HOST_CPUS: `{part}` is not a core or a range")
            })
        };
        match part.split_once('-') {
            Some((from, to)) => cores.extend(bound(from)..=bound(to)),
            None => cores.push(bound(part)),
        }
    }
    cores
}

/// `atrium serve` as a child process.
pub struct HostProcess {
    child: Child,
    /// Where it listens: `http://127.0.0.1:<port>`.
    pub base: String,
}

impl HostProcess {
    /// Starts it over the data directory `data`, with `env` added to the environment, and
    /// waits until it answers `/health`; its log goes to `data/host.log`. `placement` says at
    /// which priority and on which cores it runs.
    pub async fn start(data: &Path, env: &[(&str, &str)], placement: &Placement) -> HostProcess {
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
        let mut command = Command::new("nice");
        command.args(["-n", &placement.nice.to_string()]);
        if let Some(cpus) = &placement.cpus {
            command.args(["taskset", "-c", cpus]);
        }
        let child = command
            .arg(env!("CARGO_BIN_EXE_atrium"))
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
