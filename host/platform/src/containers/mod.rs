//! The compatibility shim: apps registered as a container image (a version with
//! `runtime.image` and no component) run as containers, and the serving core calls them as it
//! calls components: each version's [`atrium_runtime::App`] is [`atrium_runtime::App::external`]
//! over a [`ContainerApp`], so the manifest's checks, the deadline and the result cap are the
//! runtime's, and the container's calls back (`/api/mcp/...`) are [`atrium_runtime::Imports`],
//! the very host imports a component reaches.
//!
//! Two drivers run a version's container ([`Driver`]):
//!
//! - `runc`: this host runs it under `runc` ([`atrium_containers`]: the image pulled once per
//!   digest, its own namespaces, limits, no capabilities, seccomp, the egress proxy), one per
//!   version and host, started on first use, stopped when idle, restarted with backoff when
//!   its `/health` fails, and everything a killed host left removed at the next start;
//! - `url`: the operator runs it elsewhere (a Kubernetes Deployment behind a Service) and
//!   registers the address it answers on ([`ContainersConfig::urls`]); the host speaks the same
//!   protocol to it and issues the same tokens.
//!
//! What the host says to a container and reads back is [`protocol`]; docs/wit.md, "The
//! container protocol", is its reference.

mod backend;
mod config;
pub mod protocol;

pub use backend::ContainerApp;
pub use config::*;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use atrium_containers::{Credentials, IdShift, Images, Launch, PullConfig, Runc};
use atrium_manifest::Manifest;
use atrium_runtime::{CallError, External};
use bytes::Bytes;

/// How long a container may take to answer `/health` after it starts.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a health probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest wait before a container that failed is tried again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// The most bytes of `/manifest` read.
const MAX_MANIFEST_BYTES: usize = 1 << 20;
/// The processes and threads one container may have.
const PIDS: i64 = 512;
/// The size of a container's `/tmp`.
const TMPFS_MB: u32 = 64;

/// What runs a version's container.
#[derive(Debug)]
enum Driver {
    /// This host, under runc.
    Runc {
        runc: Runc,
        images: Images,
        shift: IdShift,
    },
    /// Not this host: the reason containers cannot run here.
    Unavailable(String),
}

/// A version's container that answers.
enum Running {
    /// One this host runs.
    Runc(atrium_containers::Container),
    /// One the operator runs at this address.
    Url(String),
}

impl Running {
    async fn send(
        &self,
        request: http::Request<Bytes>,
        max_bytes: usize,
    ) -> Result<http::Response<Bytes>, atrium_containers::ExchangeError> {
        match self {
            Running::Runc(container) => container.send(request, max_bytes).await,
            Running::Url(authority) => {
                atrium_containers::send_to(authority, request, max_bytes).await
            }
        }
    }

    async fn alive(&self) -> bool {
        match self {
            Running::Runc(container) => container.running().await,
            Running::Url(_) => true,
        }
    }

    async fn said(&self) -> String {
        match self {
            Running::Runc(container) => container.output(2000).await,
            Running::Url(_) => String::new(),
        }
    }

    async fn stop(&self) {
        if let Running::Runc(container) = self {
            container.stop().await;
        }
    }
}

/// One version's container on this host.
#[derive(Default)]
struct Slot {
    state: tokio::sync::Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    running: Option<Arc<Running>>,
    last_used: Option<Instant>,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<CallError>,
}

type VersionKey = (String, String);

/// The shim of one host: its driver and the containers it runs.
#[derive(Clone)]
pub struct Containers {
    inner: Arc<Inner>,
}

struct Inner {
    config: ContainersConfig,
    driver: Driver,
    /// Where the platform answers on this host (given when the host listens).
    platform: OnceLock<SocketAddr>,
    slots: Mutex<HashMap<VersionKey, Arc<Slot>>>,
    /// Removes what an earlier host left, once, before the first container starts.
    cleaned: tokio::sync::OnceCell<()>,
    /// A part of every container id: which start of the host made it.
    nonce: String,
    starts: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Containers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Containers")
            .field("driver", &self.inner.driver)
            .finish_non_exhaustive()
    }
}

/// Whether every directory from `/` to `dir` lets others through (mode `o+x`).
fn traversable(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mut at = PathBuf::from("/");
    for part in dir.components().skip(1) {
        at.push(part);
        if let Ok(meta) = std::fs::metadata(&at)
            && meta.permissions().mode() & 0o001 == 0
        {
            return Err(format!(
                "{} is not traversable by the containers' users (mode {:o}); set {DIR_ENV} to a directory they can reach",
                at.display(),
                meta.permissions().mode() & 0o777
            ));
        }
    }
    Ok(())
}

impl Containers {
    /// The shim as `config` says, keeping its files under `data_dir/containers` unless the
    /// configuration names a directory. Where runc is missing or the directory cannot serve,
    /// the host still starts: [`Containers::unavailable`] says why, and container apps answer
    /// 503 with that reason (url containers still run).
    #[must_use]
    pub fn open(config: ContainersConfig, data_dir: &Path) -> Containers {
        let dir = config
            .dir
            .clone()
            .unwrap_or_else(|| data_dir.join("containers"));
        let driver = if config.enabled {
            Self::runc_driver(&config, &dir).unwrap_or_else(Driver::Unavailable)
        } else {
            Driver::Unavailable(format!("{CONTAINERS_ENV} is off on this host"))
        };
        let nonce = format!(
            "{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis())
                % 0xff_ffff
        );
        Containers {
            inner: Arc::new(Inner {
                config,
                driver,
                platform: OnceLock::new(),
                slots: Mutex::default(),
                cleaned: tokio::sync::OnceCell::new(),
                nonce,
                starts: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    fn runc_driver(config: &ContainersConfig, dir: &Path) -> Result<Driver, String> {
        let binary = match &config.runc {
            Some(path) => path.clone(),
            None => ["/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
                .ok_or_else(|| {
                    format!("runc is not installed (apt-get install runc, or set {RUNC_ENV})")
                })?,
        };
        if !binary.exists() {
            return Err(format!(
                "the runc binary {} does not exist",
                binary.display()
            ));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        traversable(dir)?;
        let credentials = match &config.credentials {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{AUTH_FILE_ENV}: cannot read {}: {e}", path.display()))?;
                Credentials::from_docker_config(&text)
                    .map_err(|e| format!("{AUTH_FILE_ENV}: {}: {e}", path.display()))?
            }
            None => Credentials::none(),
        };
        let shift = IdShift {
            base: config.uid_base,
            size: ID_RANGE,
        };
        let images = Images::open(
            dir.join("images"),
            PullConfig {
                credentials,
                insecure: config.insecure.clone(),
                shift: Some(shift),
                ..PullConfig::default()
            },
        )
        .map_err(|e| e.to_string())?;
        Ok(Driver::Runc {
            runc: Runc::new(binary, &dir.join("runc")),
            images,
            shift,
        })
    }

    /// Why this host cannot run containers itself, if it cannot.
    #[must_use]
    pub fn unavailable(&self) -> Option<&str> {
        match &self.inner.driver {
            Driver::Unavailable(reason) => Some(reason),
            Driver::Runc { .. } => None,
        }
    }

    /// The image store, when this host pulls images.
    #[must_use]
    pub fn images(&self) -> Option<&Images> {
        match &self.inner.driver {
            Driver::Runc { images, .. } => Some(images),
            Driver::Unavailable(_) => None,
        }
    }

    /// Tells the shim where the platform answers on this host: the address the containers'
    /// `PLATFORM_URL` reaches from inside their namespace.
    pub fn listening_at(&self, address: SocketAddr) {
        let _ = self.inner.platform.set(address);
    }

    /// How many containers this host started.
    #[must_use]
    pub fn started(&self) -> u64 {
        self.inner.starts.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether this host can run `app`'s `version`: the operator runs it (`url`), or runc
    /// runs here.
    #[must_use]
    pub fn runs(&self, app: &str, version: &str) -> bool {
        self.inner.config.url_of(app, version).is_some()
            || matches!(self.inner.driver, Driver::Runc { .. })
    }

    /// The backend of the version `manifest` describes, registered with image `image`.
    #[must_use]
    pub fn app(&self, manifest: Arc<Manifest>, image: String) -> Arc<dyn External> {
        Arc::new(ContainerApp {
            containers: self.clone(),
            key: (manifest.app_id.clone(), manifest.version.clone()),
            image,
            manifest,
        })
    }

    fn slot(&self, key: &VersionKey) -> Arc<Slot> {
        let mut slots = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.entry(key.clone()).or_default().clone()
    }

    /// Removes every container an earlier host left in this host's directory, once.
    pub async fn clean_up(&self) {
        self.inner
            .cleaned
            .get_or_init(|| async {
                if let Driver::Runc { runc, .. } = &self.inner.driver {
                    match runc.clean_up().await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(containers = n, "removed the containers an earlier host left"),
                        Err(e) => tracing::warn!(error = %e, "removing the containers an earlier host left failed"),
                    }
                }
            })
            .await;
    }

    /// The running container of `app`'s version, started when none runs (one start however
    /// many calls ask), or why there is none: a failed start is tried again after a backoff
    /// that doubles with each failure, up to a minute.
    async fn ensure(&self, app: &ContainerApp) -> Result<Arc<Running>, CallError> {
        let slot = self.slot(&app.key);
        let mut state = slot.state.lock().await;
        let now = Instant::now();
        state.last_used = Some(now);
        if let Some(running) = &state.running {
            return Ok(running.clone());
        }
        if let (Some(at), Some(error)) = (state.retry_at, &state.last_error)
            && now < at
        {
            return Err(error.clone());
        }
        match self.start(app).await {
            Ok(running) => {
                let running = Arc::new(running);
                state.running = Some(running.clone());
                state.failures = 0;
                state.retry_at = None;
                state.last_error = None;
                Ok(running)
            }
            Err(error) => {
                state.failures += 1;
                let backoff = Duration::from_secs(1u64 << state.failures.min(6)).min(MAX_BACKOFF);
                state.retry_at = Some(now + backoff);
                state.last_error = Some(error.clone());
                tracing::warn!(app = %app.key.0, version = %app.key.1, error = %error, retry_in_s = backoff.as_secs(), "the container did not start");
                Err(error)
            }
        }
    }

    /// Forgets `app`'s running container after it failed a call (it stopped, or stopped
    /// answering), so that the next call starts another.
    async fn lost(&self, app: &ContainerApp, running: &Arc<Running>) {
        let slot = self.slot(&app.key);
        let mut state = slot.state.lock().await;
        if state
            .running
            .as_ref()
            .is_some_and(|r| Arc::ptr_eq(r, running))
        {
            state.running = None;
            state.failures += 1;
            state.retry_at = None;
            drop(state);
            running.stop().await;
        }
    }

    async fn start(&self, app: &ContainerApp) -> Result<Running, CallError> {
        let (slug, version) = &app.key;
        let running = if let Some(authority) = self.inner.config.url_of(slug, version) {
            Running::Url(authority.to_owned())
        } else {
            let (runc, images, shift) = match &self.inner.driver {
                Driver::Runc {
                    runc,
                    images,
                    shift,
                } => (runc, images, shift),
                Driver::Unavailable(reason) => {
                    return Err(CallError::Unavailable(format!(
                        "`{slug}` {version} is a container app and this host cannot run containers: {reason}"
                    )));
                }
            };
            self.clean_up().await;
            let pinned = if app.image.contains("@sha256:") {
                app.image.clone()
            } else {
                tracing::warn!(app = %slug, version = %version, image = %app.image, "the version's image was registered without its digest; pinning it now");
                images
                    .pin(&app.image)
                    .await
                    .map_err(|e| unavailable(&app.key, &e))?
            };
            let image = images
                .get(&pinned)
                .await
                .map_err(|e| unavailable(&app.key, &e))?;
            let n = self
                .inner
                .starts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let m = &app.manifest;
            let mut env: Vec<(String, String)> = m
                .runtime
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let proxy = format!("http://127.0.0.1:{}", atrium_containers::runc::PROXY_PORT);
            for (key, value) in [
                ("PORT", m.runtime.port.to_string()),
                (
                    "PLATFORM_URL",
                    format!(
                        "http://127.0.0.1:{}",
                        atrium_containers::runc::PLATFORM_PORT
                    ),
                ),
                ("APP_ID", slug.clone()),
                ("APP_VERSION", version.clone()),
                ("HTTP_PROXY", proxy.clone()),
                ("HTTPS_PROXY", proxy.clone()),
                ("http_proxy", proxy.clone()),
                ("https_proxy", proxy),
                ("NO_PROXY", "127.0.0.1,localhost".into()),
                ("no_proxy", "127.0.0.1,localhost".into()),
            ] {
                env.retain(|(k, _)| k != key);
                env.push((key.to_owned(), value));
            }
            let launch = Launch {
                id: container_id(slug, version, &self.inner.nonce, n),
                hostname: slug.clone(),
                image,
                env,
                port: m.runtime.port,
                memory_mb: m.runtime.resources.memory_mb,
                cpu_cores: m.runtime.resources.cpu_cores,
                pids: PIDS,
                tmpfs_mb: TMPFS_MB,
                egress: atrium_manifest::sandbox::EgressPolicy::new(
                    m.network.egress_hosts.iter().map(String::as_str),
                ),
                platform: self.inner.platform.get().copied(),
                shift: *shift,
            };
            let container = runc.start(launch).await.map_err(|e| {
                CallError::Unavailable(format!(
                    "the container of `{slug}` {version} did not start: {e}"
                ))
            })?;
            tracing::info!(app = %slug, version = %version, container = %container.id(), "container started");
            Running::Runc(container)
        };
        match self.check(app, &running).await {
            Ok(()) => Ok(running),
            Err(e) => {
                running.stop().await;
                Err(e)
            }
        }
    }

    /// A container that just started: it answers `/health` within [`START_TIMEOUT`], and its
    /// `/manifest` is the registered one.
    async fn check(&self, app: &ContainerApp, running: &Running) -> Result<(), CallError> {
        let (slug, version) = &app.key;
        let until = Instant::now() + START_TIMEOUT;
        loop {
            let last = match probe(running, "/health").await {
                Ok(response) if response.status().is_success() => break,
                Ok(response) => format!("/health answered {}", response.status()),
                Err(e) => e.to_string(),
            };
            if !running.alive().await {
                return Err(CallError::Unavailable(format!(
                    "the container of `{slug}` {version} stopped before it answered /health ({last}); it said: {}",
                    running.said().await.trim()
                )));
            }
            if Instant::now() >= until {
                return Err(CallError::Unavailable(format!(
                    "the container of `{slug}` {version} did not answer /health within {}s: {last}",
                    START_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let response = probe(running, "/manifest").await.map_err(|e| {
            CallError::Unavailable(format!("reading the container's /manifest failed: {e}"))
        })?;
        if !response.status().is_success() {
            return Err(CallError::Registration(format!(
                "the container's /manifest answered {}",
                response.status()
            )));
        }
        let text = String::from_utf8_lossy(response.body());
        let served = atrium_manifest::parse(&text).map_err(|e| {
            CallError::Registration(format!(
                "the container's /manifest is not a valid manifest: {e}"
            ))
        })?;
        let differs = differences(&app.manifest, &served);
        if !differs.is_empty() {
            return Err(CallError::Registration(format!(
                "the container's /manifest differs from the registered manifest of `{slug}` {version} in {}",
                differs.join(", ")
            )));
        }
        Ok(())
    }

    /// One round of upkeep: stops the containers idle for longer than the configured time,
    /// and those whose `/health` fails (the next call starts another, after the backoff).
    /// Returns how many it stopped.
    pub async fn upkeep(&self) -> usize {
        let slots: Vec<(VersionKey, Arc<Slot>)> = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect();
        let mut stopped = 0;
        for (key, slot) in slots {
            let mut state = slot.state.lock().await;
            let Some(running) = state.running.clone() else {
                continue;
            };
            let idle = state
                .last_used
                .is_some_and(|t| t.elapsed() >= self.inner.config.idle);
            let healthy = !idle
                && matches!(probe(&running, "/health").await, Ok(r) if r.status().is_success());
            if idle || !healthy {
                if idle {
                    tracing::info!(app = %key.0, version = %key.1, "stopping an idle container");
                } else {
                    tracing::warn!(app = %key.0, version = %key.1, "the container failed its health check; the next call starts another");
                    state.failures += 1;
                    let backoff =
                        Duration::from_secs(1u64 << state.failures.min(6)).min(MAX_BACKOFF);
                    state.retry_at = Some(Instant::now() + backoff);
                    state.last_error = Some(CallError::Unavailable(format!(
                        "the container of `{}` {} failed its health check; it is restarted in {}s",
                        key.0,
                        key.1,
                        backoff.as_secs()
                    )));
                }
                state.running = None;
                drop(state);
                running.stop().await;
                stopped += 1;
            }
        }
        stopped
    }

    /// How many containers run now.
    pub async fn running(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        let mut n = 0;
        for slot in slots {
            if slot.state.lock().await.running.is_some() {
                n += 1;
            }
        }
        n
    }

    /// Stops every container this host runs (at shutdown).
    pub async fn stop_all(&self) {
        let slots: Vec<Arc<Slot>> = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain()
            .map(|(_, s)| s)
            .collect();
        for slot in slots {
            let running = slot.state.lock().await.running.take();
            if let Some(running) = running {
                running.stop().await;
            }
        }
    }
}

/// The imports of the call `token` was issued for, on `chain` (the caller's chain headers,
/// never shallower than the token's; `/api/mcp/...` reads them): the app's install for the
/// token's tenant, at the version that made the call, with the install's scopes and settings,
/// the call's id and whether it arrived on a public route. Every callback of a container is one
/// method of what this returns, the same host import a component's call reaches.
///
/// # Errors
///
/// [`Refusal`]: the app is not installed and active for the tenant (404), or its version
/// cannot be loaded.
pub async fn imports(
    serving: &crate::serving::Serving,
    token: &crate::identity::app_token::AppToken,
    chain: atrium_runtime::ChainContext,
) -> Result<atrium_runtime::Imports, crate::Refusal> {
    let actor = token.actor();
    let install = serving
        .active_install(&actor, &token.app_slug)
        .await
        .map_err(|_| {
            crate::Refusal::not_found(format!(
                "`{}` is not installed and active for this tenant",
                token.app_slug
            ))
        })?;
    let app = serving
        .app(&token.app_slug, &token.version)
        .await
        .map_err(crate::serving::ServeError::from)?;
    let mut inv = serving
        .invocation(&actor, &install, &app, atrium_runtime::Caller::App)
        .await
        .map_err(crate::serving::ServeError::from)?
        .with_chain(chain);
    inv.call_id = Some(token.call_id.clone());
    if token.public_route {
        inv = inv.on_public_route();
    }
    Ok(atrium_runtime::Imports::new(app.shared_manifest(), &inv))
}

/// How often [`Upkeep`] looks at the containers.
const UPKEEP_EVERY: Duration = Duration::from_secs(10);

/// The `containers` job: removes what an earlier host left when it starts, then every
/// [`UPKEEP_EVERY`] stops idle containers and those whose `/health` fails
/// ([`Containers::upkeep`]), and stops every container when the host stops.
pub struct Upkeep(pub Containers);

#[async_trait]
impl atrium_jobs::Job for Upkeep {
    fn name(&self) -> &'static str {
        "containers"
    }

    async fn run(
        self: Box<Self>,
        mut stop: atrium_jobs::Stop,
    ) -> Result<(), atrium_jobs::JobError> {
        let containers = self.0;
        containers.clean_up().await;
        loop {
            tokio::select! {
                () = stop.requested() => break,
                () = tokio::time::sleep(UPKEEP_EVERY) => {}
            }
            containers.upkeep().await;
        }
        containers.stop_all().await;
        Ok(())
    }
}

impl crate::serving::Outside for Containers {
    fn runs(&self, app: &str, version: &str) -> bool {
        Containers::runs(self, app, version)
    }

    fn app(&self, manifest: Arc<Manifest>, image: String) -> Arc<dyn External> {
        Containers::app(self, manifest, image)
    }
}

/// A container id runc accepts: the app, its version, the host's start and a count.
fn container_id(slug: &str, version: &str, nonce: &str, n: u64) -> String {
    let version: String = version
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{slug}-{version}-{nonce}-{n}")
}

fn unavailable(key: &VersionKey, error: &atrium_containers::ImageError) -> CallError {
    CallError::Unavailable(format!(
        "the image of `{}` {} cannot be pulled: {error}",
        key.0, key.1
    ))
}

/// The top-level fields in which two manifests differ.
fn differences(registered: &Manifest, served: &Manifest) -> Vec<String> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) = (
        serde_json::to_value(registered),
        serde_json::to_value(served),
    ) else {
        return vec!["(unreadable)".into()];
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("`{k}`"))
        .collect()
}

async fn probe(
    running: &Running,
    path: &str,
) -> Result<http::Response<Bytes>, atrium_containers::ExchangeError> {
    let request = http::Request::get(path)
        .header(http::header::HOST, "app")
        .body(Bytes::new())
        .map_err(|e| atrium_containers::ExchangeError::Http(e.to_string()))?;
    tokio::time::timeout(PROBE_TIMEOUT, running.send(request, MAX_MANIFEST_BYTES))
        .await
        .unwrap_or_else(|_| {
            Err(atrium_containers::ExchangeError::Http(format!(
                "no answer within {}s",
                PROBE_TIMEOUT.as_secs()
            )))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_id_is_what_runc_accepts() {
        assert_eq!(
            container_id("invoice-desk", "2.4.0-beta.1+b7", "ab12", 3),
            "invoice-desk-2.4.0-beta.1-b7-ab12-3"
        );
    }

    #[test]
    fn a_directory_the_containers_users_cannot_reach_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let closed = dir.path().join("closed");
        std::fs::create_dir_all(closed.join("inner")).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        let error = traversable(&closed.join("inner")).unwrap_err();
        assert!(error.contains("closed"), "{error}");
    }
}
