//! The platform, composed in one place: [`Platform`] holds one value per capability, built
//! once from one [`PlatformConfig`] (read from the environment by
//! [`PlatformConfig::from_env`], the only reader of the platform's variables) and what the host
//! shares with it ([`Shared`]), and lists the capabilities' background jobs
//! ([`Platform::jobs`]). The server holds this one value; a capability that needs a service,
//! a setting or a job adds a field here, and nothing in the server changes
//! (docs/ARCHITECTURE.md, "Adding a capability").
//!
//! | field | capability | built from |
//! |---|---|---|
//! | `registry` | apps, versions, installs, settings, secrets | [`PlatformParts::open`]: the store, artifacts, the component runtime, the secrets key |
//! | `identity` | developer and app tokens | the token signing key, an OpenID Connect provider |
//! | `serving` | the serving core (installs, loaded versions, invocations) and the platform's services (tools, chat, knowledge), rooms' hub | the registry, [`Shared`], [`PlatformConfig::rooms`] |
//! | `heartbeats` | the heartbeat scheduler (heartbeats and visions) | `serving`, [`PlatformConfig::heartbeats`] |
//! | `containers` | the container shim: container-image versions served through the runtime's external apps | [`PlatformConfig::containers`], the registry's data directory |
//!
//! Agents, grants, wires and events, conversations, memory and commitments are functions over
//! `serving` (each module's own); a capability with state of its own gets its field.

use std::path::Path;
use std::sync::{Arc, LazyLock};

use atrium_jobs::Job;

use crate::containers::{Containers, ContainersConfig};
use crate::heartbeats::{HeartbeatsConfig, Scheduler};
use crate::identity::Identity;
use crate::registry::Registry;
use crate::registry::declared::InstallHooks;
use crate::room_streams::RoomsConfig;
use crate::services::{Services, ServicesConfig};
use crate::serving::Serving;
use crate::tools::{Catalogue, PlatformTool};

/// How much of the machine's cores one tenant's calls may use together (default a quarter of
/// the cores; `off` for no cap beyond each install's `cpu_cores`).
pub const TENANT_CPU_CORES_ENV: &str = "ATRIUM_TENANT_CPU_CORES";

/// The platform's configuration: every variable of the platform's, checked before anything is
/// opened.
#[derive(Debug, Clone)]
pub struct PlatformConfig {
    /// Group rooms (`ATRIUM_ROOM_*`).
    pub rooms: RoomsConfig,
    /// The heartbeat scheduler (`ATRIUM_HEARTBEAT_*`, `ATRIUM_VISION_CYCLE_PAUSE_MS`).
    pub heartbeats: HeartbeatsConfig,
    /// The component runtime's cap on one tenant's cores ([`TENANT_CPU_CORES_ENV`]).
    pub max_cpu_cores_per_tenant: Option<f64>,
    /// How many versions stay loaded at once.
    pub loaded_versions: usize,
    /// The container shim (`ATRIUM_CONTAINER*`, `ATRIUM_RUNC`, `ATRIUM_REGISTRY_AUTH_FILE`,
    /// `ATRIUM_INSECURE_REGISTRIES`).
    pub containers: ContainersConfig,
    /// What [`PlatformParts::open`] reads: the developer token providers, the secrets key and
    /// the artifact store.
    pub opening: Opening,
}

/// The variables [`PlatformParts::open`] reads: the developer token providers
/// (`ATRIUM_OIDC_*`, `ATRIUM_JWT_SECRET`), the secrets
/// key (`ATRIUM_SECRETS_KEY`) and the artifact store (`ATRIUM_ARTIFACTS_URI` and its S3
/// variables). Its `Debug` shows none of them: they hold keys.
#[derive(Clone, Default)]
pub struct Opening {
    vars: Vec<(String, String)>,
}

impl std::fmt::Debug for Opening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opening").finish_non_exhaustive()
    }
}

impl Default for PlatformConfig {
    fn default() -> Self {
        PlatformConfig {
            rooms: RoomsConfig::default(),
            heartbeats: HeartbeatsConfig::default(),
            max_cpu_cores_per_tenant: atrium_runtime::RuntimeConfig::default()
                .max_cpu_cores_per_tenant,
            loaded_versions: crate::serving::DEFAULT_LOADED_VERSIONS,
            containers: ContainersConfig::default(),
            opening: Opening::default(),
        }
    }
}

impl PlatformConfig {
    /// The configuration that `vars` (the environment, as pairs) sets, the defaults for the
    /// rest. A value out of range is an error naming the variable; the variables of the
    /// token providers, keys and artifacts are checked when [`PlatformParts::open`] reads
    /// them, before it creates anything on disk.
    pub fn from_env(vars: &[(String, String)]) -> Result<PlatformConfig, String> {
        let get = |name: &str| get(vars, name);
        let defaults = PlatformConfig::default();
        Ok(PlatformConfig {
            rooms: RoomsConfig::from_env(vars)?,
            heartbeats: HeartbeatsConfig::from_env(vars)?,
            containers: ContainersConfig::from_env(get)?,
            max_cpu_cores_per_tenant: tenant_cpu_cores(
                get(TENANT_CPU_CORES_ENV).as_deref(),
                defaults.max_cpu_cores_per_tenant,
            )?,
            opening: Opening {
                vars: vars.to_vec(),
            },
            ..defaults
        })
    }
}

/// The value of variable `name` in `vars`, trimmed, if it is set and not empty.
fn get(vars: &[(String, String)], name: &str) -> Option<String> {
    vars.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The runtime's `max_cpu_cores_per_tenant` from [`TENANT_CPU_CORES_ENV`]'s value.
fn tenant_cpu_cores(value: Option<&str>, default: Option<f64>) -> Result<Option<f64>, String> {
    match value {
        None => Ok(default),
        Some("off") => Ok(None),
        Some(text) => match text.parse::<f64>() {
            Ok(cores) if (0.1..=1024.0).contains(&cores) => Ok(Some(cores)),
            _ => Err(format!(
                "{TENANT_CPU_CORES_ENV} must be a number of cores from 0.1 to 1024, or `off`, not `{text}`"
            )),
        },
    }
}

/// The parts of the platform that live on disk and in the store, opened once: what
/// [`Platform::new`] composes. Tests make their own.
#[derive(Clone)]
pub struct PlatformParts {
    /// The app registry.
    pub registry: Registry,
    /// How developer and app tokens are issued and verified.
    pub identity: Arc<Identity>,
    /// The rest of the configuration.
    pub config: PlatformConfig,
    /// This host's name in the claims it records (heartbeat runs).
    pub host: String,
    /// The container shim of this host.
    pub containers: Containers,
}

/// What the capabilities do when an install lands on a version (`registry::declared`): one
/// line per capability that keeps something for an install.
const INSTALL_HOOKS: InstallHooks = &[
    &crate::heartbeats::FollowVersion,
    &crate::visions::FollowVersion,
    &crate::wires::FollowVersion,
];

/// The platform tools (`tools`): one line per capability that offers tools, each list its
/// module's own.
#[must_use]
pub fn platform_tools() -> Catalogue {
    static TOOLS: LazyLock<Vec<PlatformTool>> = LazyLock::new(|| {
        let mut all = [
            crate::chat::TOOLS,
            crate::knowledge::TOOLS,
            crate::memory::TOOLS,
            crate::records::TOOLS,
            crate::rooms::TOOLS,
        ]
        .concat();
        all.sort_by_key(|t| t.name);
        all
    });
    Catalogue::new(&TOOLS)
}

impl PlatformParts {
    /// Parts from a registry and an identity made by the caller, `config` for the rest; the
    /// registry gets the capabilities' hooks, and the container shim keeps its files in the
    /// registry's data directory (or where `config.containers` says).
    pub fn new(registry: Registry, identity: Identity, config: PlatformConfig) -> PlatformParts {
        registry.set_install_hooks(INSTALL_HOOKS);
        let containers = Containers::open(config.containers.clone(), registry.data_dir());
        if let Some(images) = containers.images() {
            registry.pin_images_with(images.clone());
        }
        PlatformParts {
            registry,
            identity: Arc::new(identity),
            config,
            host: crate::heartbeats::host_name(),
            containers,
        }
    }

    /// Opens the parts over `store` as `config` says: artifacts in `ATRIUM_ARTIFACTS_URI`
    /// (default `<data-dir>/artifacts`), compiled components cached under
    /// `<data-dir>/cache/components`, bundles unpacked under `<data-dir>/bundles`, the secrets
    /// key and the token signing key from the environment or the data directory.
    pub fn open(
        store: &atrium_store::Store,
        data_dir: &Path,
        config: PlatformConfig,
    ) -> Result<PlatformParts, String> {
        use crate::identity::{
            JWT_SECRET_ENV, OIDC_AUDIENCE_ENV, OIDC_ISSUER_ENV, OidcConfig, TokenIssuer,
        };
        use crate::sealing::{SECRETS_KEY_ENV, SecretsKey};
        let vars = &config.opening.vars;
        // Checked first: a mistake here should stop the host before anything is created on
        // disk.
        let oidc = match (get(vars, OIDC_ISSUER_ENV), get(vars, OIDC_AUDIENCE_ENV)) {
            (Some(issuer), Some(audience)) => {
                Some(OidcConfig::new(issuer, audience).map_err(|e| e.to_string())?)
            }
            (Some(_), None) => {
                return Err(format!(
                    "{OIDC_ISSUER_ENV} is set but {OIDC_AUDIENCE_ENV} is not: set it to the client id the provider's tokens are issued for"
                ));
            }
            (None, _) => None,
        };
        let artifacts = crate::artifacts::Artifacts::from_env(data_dir, vars)
            .map_err(|e| format!("cannot open the artifact store: {e}"))?;
        let runtime = atrium_runtime::Runtime::new(atrium_runtime::RuntimeConfig {
            cache_dir: Some(data_dir.join("cache").join("components")),
            max_cpu_cores_per_tenant: config.max_cpu_cores_per_tenant,
            ..atrium_runtime::RuntimeConfig::default()
        })
        .map_err(|e| format!("cannot start the component runtime: {e}"))?;
        let secrets = SecretsKey::load_or_create(data_dir, get(vars, SECRETS_KEY_ENV).as_deref())
            .map_err(|e| e.to_string())?;
        let issuer = TokenIssuer::load_or_create(data_dir, get(vars, JWT_SECRET_ENV).as_deref())
            .map_err(|e| e.to_string())?;
        tracing::info!(
            artifacts = %artifacts.location(),
            oidc = oidc.as_ref().map_or("off", OidcConfig::issuer),
            "app registry"
        );
        let registry = Registry::new(crate::registry::RegistryParts {
            store: store.clone(),
            artifacts,
            runtime,
            secrets,
            bundles_dir: data_dir.join("bundles"),
        });
        let identity = Identity::new(issuer, oidc);
        Ok(PlatformParts::new(registry, identity, config))
    }
}

/// What the host shares with the platform: managed retrieval (the knowledge tools), the chat
/// gateway (`chat.complete`, the agents' models) and the metering writer that bills it.
#[derive(Clone, Default)]
pub struct Shared {
    /// Managed retrieval, if the host has it.
    pub retrieval: Option<Arc<atrium_retrieval::Retrieval>>,
    /// The chat gateway, if the host has one.
    pub gateway: Option<Arc<atrium_inference::Gateway>>,
    /// The metering writer.
    pub metering: Option<atrium_store::Metering>,
}

/// The platform of one host (see the module docs); cloning shares it (one reference count:
/// the host's state, cloned for every request, holds it).
#[derive(Clone)]
pub struct Platform(Arc<Composed>);

/// What a [`Platform`] shares.
struct Composed {
    registry: Registry,
    identity: Arc<Identity>,
    serving: Serving,
    heartbeats: Scheduler,
    containers: Containers,
    config: PlatformConfig,
}

impl std::fmt::Debug for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Platform")
            .field("registry", &self.0.registry)
            .field("heartbeats", &self.0.heartbeats)
            .finish_non_exhaustive()
    }
}

impl Platform {
    /// Composes the platform from its parts and what the host shares.
    #[must_use]
    pub fn new(parts: PlatformParts, shared: Shared) -> Platform {
        let PlatformParts {
            registry,
            identity,
            config,
            host,
            containers,
        } = parts;
        let services = Services::new(ServicesConfig {
            registry: registry.clone(),
            retrieval: shared.retrieval,
            gateway: shared.gateway,
            metering: shared.metering,
            tools: platform_tools(),
            app_tokens: Some(identity.issuer().clone()),
        });
        let serving = Serving::with_rooms(
            services,
            config.loaded_versions,
            config.rooms.clone(),
            crate::install_platform::for_install,
        );
        serving.serve_images_with(Arc::new(containers.clone()));
        let heartbeats = Scheduler::new(serving.clone(), config.heartbeats.clone(), host);
        Platform(Arc::new(Composed {
            registry,
            identity,
            serving,
            heartbeats,
            containers,
            config,
        }))
    }

    /// The app registry.
    pub fn registry(&self) -> &Registry {
        &self.0.registry
    }

    /// Developer and app tokens.
    pub fn identity(&self) -> &Arc<Identity> {
        &self.0.identity
    }

    /// Calls into installed apps, and the services they reach.
    pub fn serving(&self) -> &Serving {
        &self.0.serving
    }

    /// The heartbeat scheduler (heartbeats and vision phases).
    pub fn heartbeats(&self) -> &Scheduler {
        &self.0.heartbeats
    }

    /// The container shim.
    pub fn containers(&self) -> &Containers {
        &self.0.containers
    }

    /// Tells the capabilities that need it where this host's platform answers (the
    /// containers' way back to the platform).
    pub fn listening_at(&self, address: std::net::SocketAddr) {
        self.0.containers.listening_at(address);
    }

    /// The configuration the platform was built from.
    pub fn config(&self) -> &PlatformConfig {
        &self.0.config
    }

    /// The capabilities' background jobs, in the order they start (they stop in the reverse
    /// order): the named schedules, the rooms' listener of the other hosts' posts, the
    /// heartbeat scheduler, the containers' upkeep.
    pub fn jobs(&self) -> Vec<Box<dyn Job>> {
        vec![
            Box::new(crate::serving::Schedules(self.0.serving.clone())),
            Box::new(crate::room_streams::RoomListener(
                self.0.serving.rooms().clone(),
            )),
            Box::new(crate::heartbeats::Heartbeats(self.0.heartbeats.clone())),
            Box::new(crate::containers::Upkeep(self.0.containers.clone())),
        ]
    }

    /// Ends what never ends on its own (the room streams), so that a graceful shutdown can
    /// finish the requests in flight.
    pub fn close(&self) {
        self.0.serving.rooms().close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_vars as vars;

    #[test]
    fn the_tenant_cpu_cap_is_a_number_of_cores_or_off() {
        assert_eq!(tenant_cpu_cores(None, Some(0.5)), Ok(Some(0.5)));
        assert_eq!(tenant_cpu_cores(Some("1.5"), Some(0.5)), Ok(Some(1.5)));
        assert_eq!(tenant_cpu_cores(Some("off"), Some(0.5)), Ok(None));
        for bad in ["0", "0.05", "-1", "NaN", "inf", "two", "2000"] {
            assert_eq!(
                tenant_cpu_cores(Some(bad), Some(0.5)),
                Err(format!(
                    "ATRIUM_TENANT_CPU_CORES must be a number of cores from 0.1 to 1024, or `off`, not `{bad}`"
                )),
                "{bad}"
            );
        }
    }

    #[test]
    fn one_reading_of_the_environment_checks_every_variable_of_the_platform() {
        let config = PlatformConfig::from_env(&vars(&[
            ("ATRIUM_ROOM_BUFFER", "8"),
            ("ATRIUM_HEARTBEAT_CONCURRENCY", "3"),
            (TENANT_CPU_CORES_ENV, " off "),
        ]))
        .unwrap();
        assert_eq!(config.rooms.buffer, 8);
        assert_eq!(config.heartbeats.concurrent_runs, 3);
        assert_eq!(config.max_cpu_cores_per_tenant, None);
        for (name, value, says) in [
            ("ATRIUM_ROOM_BUFFER", "0", "ATRIUM_ROOM_BUFFER"),
            ("ATRIUM_HEARTBEAT_TICK_MS", "5", "ATRIUM_HEARTBEAT_TICK_MS"),
            (TENANT_CPU_CORES_ENV, "many", TENANT_CPU_CORES_ENV),
        ] {
            let error = PlatformConfig::from_env(&vars(&[(name, value)])).unwrap_err();
            assert!(error.contains(says), "{name}={value}: {error}");
        }
    }
}
