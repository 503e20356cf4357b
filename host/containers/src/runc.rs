//! Running an image under `runc` (Debian's, by default): one bundle per container, in a state
//! directory of this host's own, so that the host finds and removes every container it made,
//! also those a killed host left (see [`Runc::clean_up`]).
//!
//! Starting one is `runc create` (the container's namespaces exist, its program does not run
//! yet), then the host makes its sockets inside the container's network namespace (the egress
//! proxy and the way to the platform, [`crate::netns`]), then `runc start`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use atrium_manifest::sandbox::EgressPolicy;

use crate::image::Image;
use crate::netns::NetNs;
use crate::spec::{RunSpec, runtime_spec};
use crate::unpack::IdShift;

/// Why a container did not start or stop.
#[derive(Debug, thiserror::Error)]
pub enum RuncError {
    /// The runtime is not installed or does not run.
    #[error("the container runtime `{binary}` is not available: {reason}")]
    Unavailable {
        /// The binary.
        binary: String,
        /// What happened.
        reason: String,
    },
    /// A command of the runtime failed.
    #[error("`runc {command}` failed: {message}")]
    Command {
        /// The subcommand.
        command: String,
        /// What it said.
        message: String,
    },
    /// The bundle could not be written, or a socket in the namespace made.
    #[error("preparing the container failed: {0}")]
    Io(#[from] std::io::Error),
    /// The spec could not be made.
    #[error("{0}")]
    Spec(String),
}

/// The `runc` binary and the state directory of this host's containers.
#[derive(Debug, Clone)]
pub struct Runc {
    binary: PathBuf,
    /// `runc --root`: its state of this host's containers.
    state: PathBuf,
    /// One bundle directory per container.
    bundles: PathBuf,
}

/// The ports a container's loopback offers: the egress proxy and the platform.
pub const PROXY_PORT: u16 = 3128;
/// The port inside a container where the platform answers.
pub const PLATFORM_PORT: u16 = 7780;

impl Runc {
    /// `binary` keeping its state and bundles under `dir`.
    #[must_use]
    pub fn new(binary: impl Into<PathBuf>, dir: &Path) -> Self {
        Runc {
            binary: binary.into(),
            state: dir.join("state"),
            bundles: dir.join("bundles"),
        }
    }

    /// The runtime's version line, or why it is not available.
    ///
    /// # Errors
    ///
    /// [`RuncError::Unavailable`].
    pub async fn version(&self) -> Result<String, RuncError> {
        let out = tokio::process::Command::new(&self.binary)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| RuncError::Unavailable {
                binary: self.binary.display().to_string(),
                reason: e.to_string(),
            })?;
        if !out.status.success() {
            return Err(RuncError::Unavailable {
                binary: self.binary.display().to_string(),
                reason: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned())
    }

    async fn command(&self, args: &[&str]) -> Result<String, RuncError> {
        let out = tokio::process::Command::new(&self.binary)
            .arg("--root")
            .arg(&self.state)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| RuncError::Unavailable {
                binary: self.binary.display().to_string(),
                reason: e.to_string(),
            })?;
        if !out.status.success() {
            return Err(RuncError::Command {
                command: args.first().copied().unwrap_or_default().to_owned(),
                message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The ids of the containers in this host's state directory.
    ///
    /// # Errors
    ///
    /// The runtime failed.
    pub async fn list(&self) -> Result<Vec<String>, RuncError> {
        if !self.state.exists() {
            return Ok(Vec::new());
        }
        let text = self.command(&["list", "--format", "json"]).await?;
        #[derive(serde::Deserialize)]
        struct Listed {
            id: String,
        }
        let listed: Option<Vec<Listed>> =
            serde_json::from_str(text.trim()).map_err(|e| RuncError::Command {
                command: "list".into(),
                message: format!("unreadable answer: {e}"),
            })?;
        Ok(listed
            .unwrap_or_default()
            .into_iter()
            .map(|l| l.id)
            .collect())
    }

    /// Removes every container this host's state directory holds, and their bundles: what a
    /// host that was killed left behind. Returns how many were removed.
    ///
    /// # Errors
    ///
    /// The runtime failed.
    pub async fn clean_up(&self) -> Result<usize, RuncError> {
        let ids = self.list().await?;
        for id in &ids {
            if let Err(e) = self.command(&["delete", "--force", id]).await {
                tracing::warn!(container = %id, error = %e, "removing a container left by an earlier host failed");
            }
        }
        if self.bundles.exists() {
            std::fs::remove_dir_all(&self.bundles)?;
        }
        Ok(ids.len())
    }

    /// The status `runc state` reports (`created`, `running`, `stopped`), `None` when the
    /// container is gone.
    ///
    /// # Errors
    ///
    /// The runtime failed.
    pub async fn status(&self, id: &str) -> Result<Option<String>, RuncError> {
        Ok(self.state_of(id).await?.map(|s| s.status))
    }

    async fn state_of(&self, id: &str) -> Result<Option<State>, RuncError> {
        match self.command(&["state", id]).await {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| RuncError::Command {
                    command: "state".into(),
                    message: format!("unreadable answer: {e}"),
                }),
            Err(RuncError::Command { message, .. }) if message.contains("does not exist") => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Starts a container from `launch`.
    ///
    /// # Errors
    ///
    /// [`RuncError`]: the bundle, the runtime, or the sockets inside failed; what was made is
    /// removed.
    pub async fn start(&self, launch: Launch) -> Result<Container, RuncError> {
        let bundle = self.bundles.join(&launch.id);
        let result = self.start_in(&bundle, &launch).await;
        if result.is_err() {
            let _ = self.command(&["delete", "--force", &launch.id]).await;
            let _ = tokio::fs::remove_dir_all(&bundle).await;
        }
        result
    }

    async fn start_in(&self, bundle: &Path, launch: &Launch) -> Result<Container, RuncError> {
        tokio::fs::create_dir_all(&self.state).await?;
        tokio::fs::create_dir_all(bundle).await?;
        let hosts = bundle.join("hosts");
        tokio::fs::write(&hosts, "127.0.0.1\tlocalhost\n::1\tlocalhost\n").await?;
        let mut env = launch.image.run.env.clone();
        for (key, value) in &launch.env {
            env.retain(|e| !e.starts_with(&format!("{key}=")));
            env.push(format!("{key}={value}"));
        }
        let args: Vec<String> = launch
            .image
            .run
            .entrypoint
            .iter()
            .chain(&launch.image.run.cmd)
            .cloned()
            .collect();
        if args.is_empty() {
            return Err(RuncError::Spec(
                "the image configuration names no Entrypoint or Cmd to run".into(),
            ));
        }
        let (uid, gid) = user_of(&launch.image)?;
        let spec = runtime_spec(&RunSpec {
            rootfs: launch.image.rootfs.clone(),
            args,
            env,
            cwd: launch
                .image
                .run
                .working_dir
                .clone()
                .unwrap_or_else(|| "/".into()),
            uid,
            gid,
            hostname: launch.hostname.clone(),
            memory_mb: launch.memory_mb,
            cpu_cores: launch.cpu_cores,
            pids: launch.pids,
            tmpfs_mb: launch.tmpfs_mb,
            shift: launch.shift,
            binds: if launch.image.rootfs.join("etc").is_dir() {
                vec![(hosts, "/etc/hosts".into())]
            } else {
                Vec::new()
            },
        })
        .map_err(RuncError::Spec)?;
        let text = serde_json::to_vec_pretty(&spec).map_err(std::io::Error::other)?;
        tokio::fs::write(bundle.join("config.json"), text).await?;
        let log = bundle.join("output.log");
        let out = std::fs::File::create(&log)?;
        let err = out.try_clone()?;
        // The container's stdout and stderr are the log file: a pipe would keep `runc create`'s
        // output open for as long as the container runs.
        let status = tokio::process::Command::new(&self.binary)
            .arg("--root")
            .arg(&self.state)
            .args(["create", "--bundle"])
            .arg(bundle)
            .arg(&launch.id)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .status()
            .await
            .map_err(|e| RuncError::Unavailable {
                binary: self.binary.display().to_string(),
                reason: e.to_string(),
            })?;
        if !status.success() {
            let said = tokio::fs::read_to_string(&log).await.unwrap_or_default();
            return Err(RuncError::Command {
                command: "create".into(),
                message: said.trim().to_owned(),
            });
        }
        let state = self
            .state_of(&launch.id)
            .await?
            .ok_or_else(|| RuncError::Command {
                command: "create".into(),
                message: "the container is gone right after it was created".into(),
            })?;
        let netns = Arc::new(NetNs::of_process(state.pid)?);
        let mut tasks = Vec::new();
        let proxy = netns.listen(PROXY_PORT).await?;
        tasks.push(tokio::spawn(crate::proxy::serve(
            proxy,
            launch.egress.clone(),
            launch.hostname.clone(),
        )));
        if let Some(platform) = launch.platform {
            let inside = netns.listen(PLATFORM_PORT).await?;
            tasks.push(tokio::spawn(crate::proxy::forward(inside, platform)));
        }
        self.command(&["start", &launch.id]).await?;
        Ok(Container {
            id: launch.id.clone(),
            pid: state.pid,
            port: launch.port,
            netns,
            tasks,
            bundle: bundle.to_path_buf(),
            runc: self.clone(),
        })
    }
}

#[derive(serde::Deserialize)]
struct State {
    pid: u32,
    status: String,
}

/// The container's user: the image's `User` (`uid[:gid]`, numeric; a name is looked up in the
/// image's `/etc/passwd`), root of the container's user namespace when it names none.
fn user_of(image: &Image) -> Result<(u32, u32), RuncError> {
    let Some(user) = image.run.user.as_deref() else {
        return Ok((0, 0));
    };
    let (name, group) = match user.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (user, None),
    };
    let passwd = std::fs::read_to_string(image.rootfs.join("etc/passwd")).unwrap_or_default();
    let lookup = |name: &str| -> Option<(u32, u32)> {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&name) && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
    };
    let (uid, default_gid) = match name.parse::<u32>() {
        Ok(uid) => (uid, lookup(name).map_or(uid, |(_, g)| g)),
        Err(_) => lookup(name).ok_or_else(|| {
            RuncError::Spec(format!(
                "the image's User `{name}` is not in its /etc/passwd"
            ))
        })?,
    };
    let gid = match group {
        Some(g) => g
            .parse()
            .map_err(|_| RuncError::Spec(format!("the image's User group `{g}` is not numeric")))?,
        None => default_gid,
    };
    Ok((uid, gid))
}

/// What a container starts from.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The container's id (unique on this host).
    pub id: String,
    /// The host name inside (the app's slug).
    pub hostname: String,
    /// The image.
    pub image: Arc<Image>,
    /// Environment variables over the image's own.
    pub env: Vec<(String, String)>,
    /// The port the app listens on (`runtime.port`).
    pub port: u16,
    /// `runtime.resources.memory_mb`.
    pub memory_mb: u32,
    /// `runtime.resources.cpu_cores`.
    pub cpu_cores: f64,
    /// The most processes and threads.
    pub pids: i64,
    /// The size of `/tmp`.
    pub tmpfs_mb: u32,
    /// The hosts the egress proxy lets through.
    pub egress: EgressPolicy,
    /// The platform's address on the host, offered inside at [`PLATFORM_PORT`].
    pub platform: Option<SocketAddr>,
    /// The user namespace's mapping.
    pub shift: IdShift,
}

/// A container this host started.
#[derive(Debug)]
pub struct Container {
    id: String,
    pid: u32,
    port: u16,
    netns: Arc<NetNs>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    bundle: PathBuf,
    runc: Runc,
}

impl Container {
    /// Its id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The host's pid of its first process.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// A connection to the app's port inside.
    ///
    /// # Errors
    ///
    /// Nothing listens there (yet), or the container is gone.
    pub async fn connect(&self) -> std::io::Result<tokio::net::TcpStream> {
        self.netns.connect(self.port).await
    }

    /// Sends `request` to the app's port and reads the response, its body at most
    /// `max_bytes`.
    ///
    /// # Errors
    ///
    /// [`crate::ExchangeError`]: nothing listens (yet), the answer is not HTTP, or too large.
    pub async fn send(
        &self,
        request: http::Request<bytes::Bytes>,
        max_bytes: usize,
    ) -> Result<http::Response<bytes::Bytes>, crate::ExchangeError> {
        let stream = self
            .connect()
            .await
            .map_err(crate::ExchangeError::Connect)?;
        let _ = stream.set_nodelay(true);
        crate::exchange::exchange(stream, request, max_bytes).await
    }

    /// Whether its program still runs.
    pub async fn running(&self) -> bool {
        matches!(self.runc.status(&self.id).await, Ok(Some(s)) if s == "running")
    }

    /// What it wrote to stdout and stderr, at most the last `max` bytes.
    pub async fn output(&self, max: usize) -> String {
        let text = tokio::fs::read(self.bundle.join("output.log"))
            .await
            .unwrap_or_default();
        let from = text.len().saturating_sub(max);
        String::from_utf8_lossy(&text[from..]).into_owned()
    }

    /// Stops it and removes it, its bundle and its sockets (again: nothing happens).
    pub async fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
        if let Err(e) = self.runc.command(&["delete", "--force", &self.id]).await {
            tracing::warn!(container = %self.id, error = %e, "removing a container failed");
        }
        let _ = tokio::fs::remove_dir_all(&self.bundle).await;
    }
}
