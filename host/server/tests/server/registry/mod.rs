//! The developer API (`/api/dev`) of a running host, over HTTP, on SQLite and PostgreSQL:
//! developer tokens, the registry's immutability and ownership rules, bundles, templates,
//! preflight, secrets, and what a failed registration leaves behind.
//!
//! This module is the harness (a [`Host`] on a free port and the requests and fixtures the
//! tests send it); each area's tests are a module of their own.

mod agents;
mod at_rest;
mod bundles;
mod cancel;
mod commitments;
mod containers;
mod conversations;
mod events;
mod grants;
mod heartbeat_claims;
mod heartbeats;
mod hooks;
mod installs;
mod isolation;
mod preflight;
mod refusals;
mod room_streams;
mod rooms;
mod routes;
mod s3;
mod schedules;
mod secrets;
mod serving;
mod tokens;
mod upgrades;
mod versions;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use atrium_platform::artifacts::Artifacts;
use atrium_platform::identity::{Identity, TokenIssuer};
use atrium_platform::registry::Registry;
use atrium_platform::sealing::SecretsKey;
use atrium_store::{Developer, NewDeveloper, Store};
use reqwest::StatusCode;
use serde_json::Value;

pub(super) use crate::host::{Body, code, message};
use crate::unique;

/// A host serving on a free port (the shared [`crate::host::Host`], which requests go to
/// through `Deref`), with its registry under a data directory of its own.
pub(super) struct Host {
    http: crate::host::Host,
    store: Store,
    data: tempfile::TempDir,
    issuer: TokenIssuer,
    /// The fake model providers the host's gateway (and so the `chat.complete` tool) calls.
    pub(super) fakes: atrium_fake_llm::FakeLlm,
    /// What the host serves apps with (its room hub, for the rooms tests).
    pub(super) serving: atrium_platform::serving::Serving,
    /// The host's heartbeat scheduler; its job ticks once an hour, so the tests tick it with
    /// the clock they choose.
    pub(super) scheduler: atrium_platform::heartbeats::Scheduler,
    /// The host's container shim (its upkeep runs every ten seconds; the tests run it when
    /// they choose).
    pub(super) containers: atrium_platform::containers::Containers,
}

impl std::ops::Deref for Host {
    type Target = crate::host::Host;

    fn deref(&self) -> &crate::host::Host {
        &self.http
    }
}

impl Host {
    pub(super) async fn start(store: &Store) -> Host {
        Self::start_with(store, None).await
    }

    /// A host whose artifacts go to `artifacts` (default: the data directory).
    pub(super) async fn start_with(store: &Store, artifacts: Option<Artifacts>) -> Host {
        Self::start_configured(
            store,
            artifacts,
            atrium_platform::rooms::RoomsConfig::default(),
        )
        .await
    }

    /// A host whose artifacts go to `artifacts`, with rooms configured as `rooms` says (and
    /// the container shim off: the tests of container apps start hosts that run them,
    /// [`Host::start_with_containers`]).
    pub(super) async fn start_configured(
        store: &Store,
        artifacts: Option<Artifacts>,
        rooms: atrium_platform::rooms::RoomsConfig,
    ) -> Host {
        let containers = atrium_platform::containers::ContainersConfig {
            enabled: false,
            ..atrium_platform::containers::ContainersConfig::default()
        };
        Self::start_full(store, artifacts, rooms, containers).await
    }

    /// A host that runs container apps as `containers` says.
    pub(super) async fn start_with_containers(
        store: &Store,
        containers: atrium_platform::containers::ContainersConfig,
    ) -> Host {
        Self::start_full(
            store,
            None,
            atrium_platform::rooms::RoomsConfig::default(),
            containers,
        )
        .await
    }

    async fn start_full(
        store: &Store,
        artifacts: Option<Artifacts>,
        rooms: atrium_platform::rooms::RoomsConfig,
        containers: atrium_platform::containers::ContainersConfig,
    ) -> Host {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path();
        let artifacts =
            artifacts.unwrap_or_else(|| Artifacts::local(&dir.join("artifacts")).unwrap());
        let secrets = SecretsKey::load_or_create(dir, None).unwrap();
        let registry = registry_over(store, dir, artifacts, secrets);
        let issuer = TokenIssuer::load_or_create(dir, None).unwrap();
        let identity = Identity::new(TokenIssuer::load_or_create(dir, None).unwrap(), None);
        let retrieval = atrium_retrieval::Retrieval::open(
            store.clone(),
            atrium_inference::embed::Embedders::default(),
            atrium_retrieval::RetrievalConfig::local(&dir.join("rag")),
        )
        .await
        .unwrap();
        let fakes = crate::chat::start_fakes().await;
        let gateway = crate::chat::gateway(&fakes);
        let config = atrium_platform::PlatformConfig {
            rooms,
            heartbeats: atrium_platform::heartbeats::HeartbeatsConfig {
                tick: Duration::from_secs(3600),
                ..atrium_platform::heartbeats::HeartbeatsConfig::default()
            },
            containers,
            ..atrium_platform::PlatformConfig::default()
        };
        let state = atrium_server::HostState::new(store.clone(), gateway)
            .with_retrieval(retrieval)
            .with_platform(atrium_platform::PlatformParts::new(
                registry, identity, config,
            ));
        let platform = state.platform.clone().unwrap();
        let serving = platform.serving().clone();
        let scheduler = platform.heartbeats().clone();
        let containers = platform.containers().clone();
        Host {
            serving,
            scheduler,
            containers,
            http: crate::host::Host::start(state).await,
            store: store.clone(),
            data,
            issuer,
            fakes,
        }
    }

    /// An `APP_MCP_TOKEN` of `app` (1.0.0) for `tenant` of organization `org`, as the host
    /// issues one to a call outside the runtime: at chain depth 1, no agent visited.
    pub(super) fn app_token(&self, org: &str, tenant: &str, app: &str) -> String {
        self.app_token_on(org, tenant, app, 1, &[])
    }

    /// The same, for a call at chain `depth` that has visited the agents `visited`.
    pub(super) fn app_token_on(
        &self,
        org: &str,
        tenant: &str,
        app: &str,
        depth: u32,
        visited: &[&str],
    ) -> String {
        use atrium_platform::identity::app_token::{APP_TOKEN_TTL, AppToken};
        self.issuer
            .issue_app_token(
                &AppToken {
                    org_id: org.to_owned(),
                    tenant_id: tenant.to_owned(),
                    user_id: None,
                    app_slug: app.to_owned(),
                    version: "1.0.0".into(),
                    call_id: "call-test".into(),
                    chain_depth: depth,
                    visited_agents: visited.iter().map(|v| (*v).to_owned()).collect(),
                    public_route: false,
                },
                APP_TOKEN_TTL,
            )
            .unwrap()
    }

    /// Stops the host; its data directory goes after it.
    pub(super) async fn stop(self) {
        self.http.stop().await;
    }

    /// The host's data directory: its keys, artifacts and unpacked bundles.
    pub(super) fn data(&self) -> &Path {
        self.data.path()
    }

    /// A new developer account (its login `login` made unique) and a token of this host for it.
    pub(super) async fn sign_up(&self, login: &str, publish: bool) -> (Developer, String) {
        self.sign_up_in(login, publish, None).await
    }

    /// The same, with a dev tenant (an organization id and a tenant).
    pub(super) async fn sign_up_in(
        &self,
        login: &str,
        publish: bool,
        dev_tenant: Option<(&str, &str)>,
    ) -> (Developer, String) {
        let login = slug(login);
        let developer = self
            .store
            .create_developer(&NewDeveloper {
                email: &format!("{login}@example.com"),
                login: &login,
                publish_allowed: publish,
                dev_tenant,
            })
            .await
            .unwrap();
        let token = self
            .issuer
            .issue(&developer.id, &developer.email, Duration::from_secs(3600))
            .unwrap();
        (developer, token)
    }

    pub(super) async fn register(
        &self,
        slug: &str,
        token: &str,
        parts: &[Part<'_>],
    ) -> (StatusCode, Value) {
        let (content_type, body) = multipart(parts);
        self.send(
            "POST",
            &format!("/api/dev/apps/{slug}/versions"),
            Some(token),
            Body::Raw(content_type, body),
        )
        .await
    }

    /// Registers `manifest` (its version `1.0.0`) with `component` as app `slug` and promotes
    /// it, asserting both succeed.
    pub(super) async fn publish(&self, slug: &str, token: &str, manifest: &str, component: &[u8]) {
        let (status, body) = self
            .register(
                slug,
                token,
                &[
                    ("manifest", None, manifest.as_bytes()),
                    ("component", None, component),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{slug}: {body}");
        let (status, body) = self
            .post(
                &format!("/api/dev/apps/{slug}/versions/1.0.0/promote"),
                token,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{slug}: {body}");
    }

    /// Activates `slug` for the tenant of `admin` with `granted_scopes`, asserting it is new.
    pub(super) async fn activate(&self, slug: &str, admin: &str, granted_scopes: &[&str]) {
        let (status, body) = self
            .post(
                &format!("/api/installs/{slug}/activate"),
                admin,
                Body::Json(serde_json::json!({"granted_scopes": granted_scopes})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{slug}: {body}");
    }

    /// Registers version `version` of `slug` as a container-image app: the manifest alone.
    pub(super) async fn register_image(
        &self,
        slug: &str,
        token: &str,
        version: &str,
    ) -> (StatusCode, Value) {
        let manifest = manifest(slug, version, "");
        self.register(slug, token, &[("manifest", None, manifest.as_bytes())])
            .await
    }

    /// Every blob in the local artifact store.
    pub(super) fn blobs(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut todo = vec![self.data().join("artifacts")];
        while let Some(dir) = todo.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if entry.path().is_dir() {
                    todo.push(entry.path());
                } else {
                    found.push(entry.path());
                }
            }
        }
        found.sort();
        found
    }
}

/// A host that the tests of this binary which ask for it share, on one store: started once,
/// on a runtime of its own that lives as long as the test binary (a test's own runtime ends
/// with the test, and a host started on it would stop with it). Each test that shares it makes
/// its own app, organization and tenants, so that tests running at once never meet.
pub(super) struct Shared {
    /// The host.
    pub(super) host: Host,
    /// Its store.
    pub(super) store: Store,
    /// Held by a test whose checks count the calls of the host's fake model providers, which
    /// every sharing test reaches.
    pub(super) fakes_alone: tokio::sync::Mutex<()>,
    _dir: Option<tempfile::TempDir>,
}

/// The shared hosts: one on SQLite and, with `ATRIUM_TEST_DATABASE_URL`, one on PostgreSQL.
/// Their data directories outlive the test binary's run, as nothing drops a static; they are
/// temporary directories like every test's.
pub(super) async fn shared() -> &'static [Shared] {
    static HOSTS: tokio::sync::OnceCell<Vec<Shared>> = tokio::sync::OnceCell::const_new();
    HOSTS
        .get_or_init(|| async {
            let (started, hosts) = tokio::sync::oneshot::channel();
            std::thread::Builder::new()
                .name("shared-hosts".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .unwrap();
                    runtime.block_on(async move {
                        let mut hosts = Vec::new();
                        for (store, dir) in crate::stores().await {
                            hosts.push(Shared {
                                host: Host::start(&store).await,
                                store,
                                fakes_alone: tokio::sync::Mutex::new(()),
                                _dir: dir,
                            });
                        }
                        let _ = started.send(hosts);
                        std::future::pending::<()>().await;
                    });
                })
                .unwrap();
            hosts.await.expect("the shared hosts started")
        })
        .await
}

/// A registry over `store` and the data directory `data` (artifacts, bundles) that seals
/// secrets with `secrets`: what the host serves, or another host beside it.
pub(super) fn open_registry(store: &Store, data: &Path, secrets: SecretsKey) -> Registry {
    let artifacts = Artifacts::local(&data.join("artifacts")).unwrap();
    registry_over(store, data, artifacts, secrets)
}

fn registry_over(
    store: &Store,
    data: &Path,
    artifacts: Artifacts,
    secrets: SecretsKey,
) -> Registry {
    let runtime = atrium_runtime::Runtime::new(atrium_runtime::RuntimeConfig {
        cache_dir: Some(component_cache()),
        ..atrium_runtime::RuntimeConfig::default()
    })
    .unwrap();
    Registry::new(atrium_platform::registry::RegistryParts {
        store: store.clone(),
        artifacts,
        runtime,
        secrets,
        bundles_dir: data.join("bundles"),
    })
}

/// Compiled components are cached across tests and runs (compiling is the slow part).
fn component_cache() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
            PathBuf::from,
        )
        .join("test-component-cache")
}

/// A multipart part: name, file name, bytes.
pub(super) type Part<'a> = (&'a str, Option<&'a str>, &'a [u8]);

fn multipart(parts: &[Part<'_>]) -> (String, Vec<u8>) {
    let boundary = "atrium-registry-boundary-5e0a";
    let mut body = Vec::new();
    for (name, file_name, bytes) in parts {
        let file = file_name
            .map(|f| format!("; filename=\"{f}\""))
            .unwrap_or_default();
        write!(
            body,
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"{file}\r\n\r\n"
        )
        .unwrap();
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    write!(body, "--{boundary}--\r\n").unwrap();
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub(super) fn manifest(slug: &str, version: &str, extra: &str) -> String {
    format!(
        "apiVersion: platform/v2\napp_id: {slug}\nversion: {version}\nname: Test {slug}\nruntime:\n  image: ghcr.io/acme/{slug}:{version}\n{extra}"
    )
}

/// An app slug no other run has used (PostgreSQL keeps apps between runs).
pub(super) fn slug(name: &str) -> String {
    let id = unique(name).replace('_', "-");
    let tail: String = id
        .chars()
        .rev()
        .take(20)
        .collect::<String>()
        .chars()
        .rev()
        .collect();
    format!("{name}-{}", tail.trim_start_matches('-'))
}

pub(super) fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, bytes) in files {
        writer
            .start_file(*path, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(bytes).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

pub(super) fn tar_of(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, kind, bytes, link) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(*kind);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        // Written raw: the builder's own path setters refuse `..`, which is the point here.
        let name = path.as_bytes();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        header.set_cksum();
        builder.append(&header, *bytes).unwrap();
    }
    builder.into_inner().unwrap()
}
