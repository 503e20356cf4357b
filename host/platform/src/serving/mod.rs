//! Serving installed apps: the host loads each version's component once, shares it across
//! every install of that version, keeps a bounded set loaded (reloading from the artifact
//! store and the compiled cache on demand), and calls it with the install's scopes, settings
//! and secrets through the platform the composition gives it ([`PlatformFor`]: the
//! runtime's `Platform` of one install).

mod lifecycle;
pub mod routes;
mod schedules;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use atrium_runtime::{App, CallError, Caller, Invocation, Runtime};
use atrium_store::{Install, InstallStatus, InstallValueKind};
use serde_json::Value;

pub use lifecycle::HookOutcome;
pub use schedules::{ScheduledRun, Schedules};

use crate::registry::{Actor, Registry, RegistryError};
use crate::sealing::Sealed;
use crate::services::Services;
use crate::tools::Knowledge;

/// How many versions stay loaded by default.
pub const DEFAULT_LOADED_VERSIONS: usize = 256;

/// Why a call into an installed app did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The install, the app or its version could not be found or loaded.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The call itself failed (the runtime's typed error).
    #[error(transparent)]
    Call(#[from] CallError),
    /// A lifecycle hook that decides an outcome failed: `on_install` on a first activation
    /// (the activation is undone).
    #[error("{hook} failed: {error}")]
    Hook {
        /// The hook.
        hook: &'static str,
        /// How it failed.
        error: CallError,
    },
}

impl From<atrium_store::StoreError> for ServeError {
    fn from(error: atrium_store::StoreError) -> Self {
        ServeError::Registry(error.into())
    }
}

type VersionKey = (String, String);

/// Serves installed apps.
#[derive(Clone)]
pub struct Serving {
    inner: Arc<Inner>,
}

/// What gives a call into an install its platform (the runtime's imports): the composition
/// gives the serving core [`crate::install_platform::for_install`], the adapter above every
/// capability, so that the core depends on none of them.
pub type PlatformFor = fn(Serving, Actor, String, Knowledge) -> Arc<dyn atrium_runtime::Platform>;

/// What serves the versions that have no component, only a container image: the composition
/// gives the serving core the container shim ([`crate::containers::Containers`]); a serving
/// core without it answers that it runs components only.
pub trait Outside: Send + Sync + 'static {
    /// Whether this host can run `app`'s `version` now (its lifecycle hooks and schedules
    /// run only then; its calls answer why not otherwise).
    fn runs(&self, app: &str, version: &str) -> bool;

    /// The backend of the version `manifest` describes, registered with `image`.
    fn app(
        &self,
        manifest: Arc<atrium_manifest::Manifest>,
        image: String,
    ) -> Arc<dyn atrium_runtime::External>;
}

/// The serving core's handle on [`Outside`].
pub type OutsideFor = Arc<dyn Outside>;

struct Inner {
    services: Services,
    platform_for: PlatformFor,
    /// The backend of container-image versions, given by the composition.
    outside: std::sync::OnceLock<OutsideFor>,
    /// The room streams of this host.
    rooms: Arc<crate::room_streams::RoomHub>,
    registry: Registry,
    runtime: Runtime,
    capacity: usize,
    loaded: Mutex<Loaded>,
    /// Active installs by organization, tenant and app, until the change feed says otherwise.
    installs: InstallCache,
}

/// Active installs by organization, tenant and app.
type InstallCache = atrium_store::Cache<(String, String, String), Install>;

/// The most installs remembered; the cache starts over when full.
const INSTALLS_CACHED: usize = 100_000;

#[derive(Default)]
struct Loaded {
    apps: HashMap<VersionKey, Arc<tokio::sync::OnceCell<App>>>,
    order: VecDeque<VersionKey>,
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving")
            .field("capacity", &self.inner.capacity)
            .finish_non_exhaustive()
    }
}

impl Serving {
    /// Serves the apps of the services' registry with its runtime, keeping at most `capacity`
    /// versions loaded, rooms as [`crate::room_streams::RoomsConfig`]'s defaults.
    pub fn new(services: Services, capacity: usize, platform_for: PlatformFor) -> Self {
        Serving::with_rooms(
            services,
            capacity,
            crate::room_streams::RoomsConfig::default(),
            platform_for,
        )
    }

    /// [`Serving::new`] with rooms configured as `rooms` says.
    pub fn with_rooms(
        services: Services,
        capacity: usize,
        rooms: crate::room_streams::RoomsConfig,
        platform_for: PlatformFor,
    ) -> Self {
        let registry = services.registry().clone();
        let installs =
            InstallCache::new(registry.store(), INSTALLS_CACHED, |change| match change {
                atrium_store::Change::Install {
                    org_id,
                    tenant_id,
                    app_slug,
                } => atrium_store::Affected::Key((
                    org_id.clone(),
                    tenant_id.clone(),
                    app_slug.clone(),
                )),
                _ => atrium_store::Affected::Nothing,
            });
        Serving {
            inner: Arc::new(Inner {
                rooms: crate::room_streams::RoomHub::new(registry.store().clone(), rooms),
                installs,
                runtime: registry.runtime().clone(),
                registry,
                services,
                platform_for,
                outside: std::sync::OnceLock::new(),
                capacity: capacity.max(1),
                loaded: Mutex::default(),
            }),
        }
    }

    /// Serves container-image versions with `outside` (once; the composition's call).
    pub fn serve_images_with(&self, outside: OutsideFor) {
        let _ = self.inner.outside.set(outside);
    }

    /// Whether this host runs `version`: a component, or a container image the backend the
    /// composition gave for images can run now.
    pub fn runs(&self, version: &atrium_store::AppVersion) -> bool {
        version.component_digest.is_some()
            || self
                .inner
                .outside
                .get()
                .is_some_and(|o| o.runs(&version.app_slug, &version.version))
    }

    /// The services the calls reach.
    pub fn services(&self) -> &Services {
        &self.inner.services
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The room streams of this host.
    pub fn rooms(&self) -> &Arc<crate::room_streams::RoomHub> {
        &self.inner.rooms
    }

    /// How many versions are loaded now.
    pub fn loaded(&self) -> usize {
        self.lock().apps.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.inner
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The loaded app of a version: loaded once however many calls ask at the same time.
    pub async fn app(&self, slug: &str, version: &str) -> Result<App, RegistryError> {
        let key = (slug.to_owned(), version.to_owned());
        let cell = {
            let mut loaded = self.lock();
            if let Some(cell) = loaded.apps.get(&key) {
                let cell = cell.clone();
                loaded.order.retain(|k| k != &key);
                loaded.order.push_back(key.clone());
                cell
            } else {
                let cell = Arc::new(tokio::sync::OnceCell::new());
                loaded.apps.insert(key.clone(), cell.clone());
                loaded.order.push_back(key.clone());
                while loaded.apps.len() > self.inner.capacity {
                    let Some(oldest) = loaded.order.pop_front() else {
                        break;
                    };
                    loaded.apps.remove(&oldest);
                }
                cell
            }
        };
        let result = cell
            .get_or_try_init(|| self.load(slug, version))
            .await
            .cloned();
        if result.is_err() {
            // A failed load is not remembered: the next call tries again.
            let mut loaded = self.lock();
            if loaded.apps.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                loaded.apps.remove(&key);
                loaded.order.retain(|k| k != &key);
            }
        }
        result
    }

    async fn load(&self, slug: &str, version: &str) -> Result<App, RegistryError> {
        let registry = &self.inner.registry;
        let stored = registry
            .store()
            .version(slug, version)
            .await?
            .ok_or_else(|| {
                RegistryError::NotFound(format!("version {version} of `{slug}` is not registered"))
            })?;
        let manifest = atrium_manifest::parse(&stored.manifest_source)
            .map_err(|e| RegistryError::internal("a stored manifest no longer validates", &e))?;
        let Some(digest) = stored.component_digest else {
            let Some(outside) = self.inner.outside.get() else {
                return Err(RegistryError::NotFound(format!(
                    "`{slug}` {version} is a container-image app; this host runs components only"
                )));
            };
            let manifest = Arc::new(manifest);
            let backend = outside.app(manifest.clone(), stored.image);
            return Ok(App::external(&self.inner.runtime, manifest, backend));
        };
        let bytes = registry.artifacts().get(&digest).await?;
        let runtime = self.inner.runtime.clone();
        tokio::task::spawn_blocking(move || runtime.load(&bytes, manifest))
            .await
            .map_err(|e| RegistryError::internal("loading the component failed", &e))?
            .map_err(|e| RegistryError::internal("a registered component no longer loads", &e))
    }

    /// The active install of `app_slug` for the tenant, or 404.
    pub async fn active_install(
        &self,
        tenant: &Actor,
        app_slug: &str,
    ) -> Result<Install, RegistryError> {
        let installs = &self.inner.installs;
        let key = (
            tenant.org_id.clone(),
            tenant.tenant_id.clone(),
            app_slug.to_owned(),
        );
        if let Some(install) = installs.get(&key) {
            return Ok(install);
        }
        let epoch = installs.epoch();
        let install = self
            .inner
            .registry
            .store()
            .install(&tenant.install(app_slug))
            .await?
            .filter(|i| i.status == InstallStatus::Active)
            .ok_or_else(|| {
                RegistryError::NotFound(format!(
                    "this tenant has no active install of `{app_slug}`"
                ))
            })?;
        installs.fill(key, install.clone(), epoch);
        Ok(install)
    }

    /// How many active installs this host answers from memory.
    pub fn cached_installs(&self) -> usize {
        self.inner.installs.len()
    }

    /// The invocation for a call into an install of `app` (loaded at the install's version):
    /// its scopes, its settings (secret ones opened) and the platform of that install. The
    /// manifest comes from the loaded app, so a call reads the database only for the sealed
    /// settings, and only when the app declares secret settings.
    pub async fn invocation(
        &self,
        tenant: &Actor,
        install: &Install,
        app: &App,
        caller: Caller,
    ) -> Result<Invocation, RegistryError> {
        let registry = &self.inner.registry;
        let manifest = app.manifest();
        let mut settings = install.settings.clone();
        let has_secrets = manifest
            .install_settings
            .iter()
            .any(|s| s.kind == atrium_manifest::SettingType::Secret);
        if has_secrets {
            for (key, value) in registry
                .open_install_values(tenant, &install.app_slug, InstallValueKind::Setting)
                .await?
            {
                settings.insert(key, Value::String(value));
            }
        }
        let platform = (self.inner.platform_for)(
            self.clone(),
            tenant.clone(),
            install.app_slug.clone(),
            knowledge_of(install, manifest),
        );
        let mut inv = Invocation::new(tenant.tenant_id.clone(), platform)
            .with_scopes(install.granted_scopes.iter().cloned());
        inv.settings = settings;
        inv.caller = caller;
        Ok(inv)
    }

    /// Calls tool `tool` of the tenant's install of `app_slug` with `args`.
    pub async fn call_tool(
        &self,
        tenant: &Actor,
        app_slug: &str,
        tool: &str,
        args: &Value,
    ) -> Result<Value, ServeError> {
        let install = self.active_install(tenant, app_slug).await?;
        let app = self.app(app_slug, &install.version).await?;
        let inv = self
            .invocation(tenant, &install, &app, Caller::Agent)
            .await?;
        let result = app.call_tool(&inv, tool, &args.to_string()).await?;
        Ok(serde_json::from_str(&result).unwrap_or(Value::String(result)))
    }
}

/// The knowledge slots of `install` of an app with `manifest`, as its calls see them.
pub(crate) fn knowledge_of(install: &Install, manifest: &atrium_manifest::Manifest) -> Knowledge {
    let slots = if install.rag_bindings.is_empty() {
        Vec::new()
    } else {
        manifest.rag_slots.clone()
    };
    Knowledge {
        bindings: install.rag_bindings.clone(),
        slots,
        agents: manifest.agents.iter().map(|a| a.id.clone()).collect(),
    }
}

impl Serving {
    /// Activates `app` for `tenant` as `request` asks ([`Registry::activate`]) and, on its
    /// first activation, runs `on_install` (undoing the activation when it fails): a tenant
    /// admin's activation whichever entry point asks for it.
    pub async fn activate(
        &self,
        tenant: &Actor,
        app: &str,
        request: &crate::registry::ActivateRequest,
    ) -> Result<crate::registry::Activated, ServeError> {
        let activated = self.registry().activate(tenant, app, request).await?;
        self.after_activation(tenant, &activated.install, activated.first)
            .await?;
        Ok(activated)
    }

    /// Deactivates `tenant`'s install of `app` and runs its `on_uninstall`.
    pub async fn deactivate(&self, tenant: &Actor, app: &str) -> Result<Install, ServeError> {
        let install = self.registry().deactivate(tenant, app).await?;
        self.after_deactivation(tenant, &install).await?;
        Ok(install)
    }

    /// Changes the settings of the install of `app` in its developer's dev tenant `tenant`
    /// ([`Registry::set_dev_settings`]); an install that is activated by it for the first time
    /// runs `on_install`, as a tenant's activation does.
    pub async fn set_dev_settings(
        &self,
        tenant: &Actor,
        app: &atrium_store::App,
        settings: &serde_json::Map<String, Value>,
    ) -> Result<crate::registry::DevSettings, ServeError> {
        let changed = self
            .registry()
            .set_dev_settings(tenant, app, settings)
            .await?;
        if changed.first
            && let Some(install) = &changed.install
        {
            self.after_activation(tenant, install, true).await?;
        }
        Ok(changed)
    }

    /// Runs `on_install` after the first activation of an app that declares it (the
    /// activation itself proposed the event wires and created the visions its version declares:
    /// `Registry::activate`). When the hook fails the activation is undone (the install
    /// removed) and the error returned.
    pub async fn after_activation(
        &self,
        tenant: &Actor,
        install: &Install,
        first: bool,
    ) -> Result<(), ServeError> {
        if !first {
            return Ok(());
        }
        let Some(app) = self.hook_app(install, |m| m.lifecycle.on_install).await? else {
            return Ok(());
        };
        let inv = self
            .invocation(tenant, install, &app, Caller::Platform)
            .await?;
        if let Err(error) = app.on_install(&inv).await {
            let store = self.inner.registry.store();
            if let Err(e) = store
                .remove_install(&tenant.install(&install.app_slug))
                .await
            {
                tracing::error!(app = %install.app_slug, error = %e, "undoing an activation whose on_install failed did not work");
            }
            return Err(ServeError::Hook {
                hook: "on_install",
                error,
            });
        }
        Ok(())
    }

    /// Runs `on_uninstall` after a deactivation; a failure is logged, the install stays
    /// inactive.
    pub async fn after_deactivation(
        &self,
        tenant: &Actor,
        install: &Install,
    ) -> Result<(), ServeError> {
        let Some(app) = self.hook_app(install, |m| m.lifecycle.on_uninstall).await? else {
            return Ok(());
        };
        let inv = self
            .invocation(tenant, install, &app, Caller::Platform)
            .await?;
        if let Err(error) = app.on_uninstall(&inv).await {
            tracing::warn!(app = %install.app_slug, tenant = %tenant.tenant_id, %error, "on_uninstall failed");
        }
        Ok(())
    }

    /// The loaded app of an install when this host runs its version and its manifest sets
    /// `flag`.
    async fn hook_app(
        &self,
        install: &Install,
        flag: impl Fn(&atrium_manifest::Manifest) -> bool,
    ) -> Result<Option<App>, RegistryError> {
        let stored = self
            .inner
            .registry
            .store()
            .version(&install.app_slug, &install.version)
            .await?;
        if !stored.as_ref().is_some_and(|v| self.runs(v)) {
            return Ok(None);
        }
        let app = self.app(&install.app_slug, &install.version).await?;
        Ok(flag(app.manifest()).then_some(app))
    }
}

impl Registry {
    /// Opens every sealed value of kind `kind` of an install, in one read.
    pub async fn open_install_values(
        &self,
        tenant: &Actor,
        app_slug: &str,
        kind: InstallValueKind,
    ) -> Result<Vec<(String, String)>, RegistryError> {
        let sealed = self
            .store()
            .sealed_install_values(&tenant.install(app_slug), kind)
            .await?;
        let install = tenant.install(app_slug);
        sealed
            .into_iter()
            .map(|(key, sealed)| {
                let value = self.open_install_sealed(&install, kind, &key, &sealed)?;
                Ok((key, value))
            })
            .collect()
    }

    fn open_install_sealed(
        &self,
        install: &atrium_store::InstallKey,
        kind: InstallValueKind,
        key: &str,
        sealed: &str,
    ) -> Result<String, RegistryError> {
        let place = match kind {
            InstallValueKind::Setting => Sealed::InstallSetting { install, key },
            InstallValueKind::Override => Sealed::SecretOverride { install, key },
        };
        Ok(self.secrets_key().open_text(sealed, place)?)
    }

    /// Opens a sealed value of an install.
    pub async fn open_install_value(
        &self,
        tenant: &Actor,
        app_slug: &str,
        kind: InstallValueKind,
        key: &str,
    ) -> Result<Option<String>, RegistryError> {
        let Some(sealed) = self
            .store()
            .sealed_install_value(&tenant.install(app_slug), kind, key)
            .await?
        else {
            return Ok(None);
        };
        let install = tenant.install(app_slug);
        self.open_install_sealed(&install, kind, key, &sealed)
            .map(Some)
    }
}
