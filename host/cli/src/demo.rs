//! The demo `atrium serve` sets up, so that the README's first command shows working apps.
//!
//! On a SQLite store (the default), every start makes sure that the example apps of
//! `examples/` are published to this host's registry by the developer `examples`
//! (`examples@atrium.local`) and installed for tenant `demo` of organization `demo`. The
//! components are compiled by the crate's build script and embedded in the binary, so the host
//! needs no cargo at run time. The first start also issues the tenant's admin token: it is
//! printed once and written to `<data-dir>/demo-token` (mode 0600). Later starts publish
//! nothing new and log that the demo is ready.
//!
//! The setup runs beside the server: the host answers at once and the demo is there a few
//! seconds later (compiling the components is most of it). Each step checks what is stored
//! first, so a start that was interrupted finishes the work on the next one, and what a user
//! changed (a deactivated install, a revoked token) is left alone. `--no-demo` or
//! `ATRIUM_DEMO=0` turns it off; on PostgreSQL, a shared deployment, it runs only when asked
//! (`--demo` or `ATRIUM_DEMO=1`). docs/demo.md has the details.

use std::path::{Path, PathBuf};

use atrium_manifest::Manifest;
use atrium_platform::registry::{ActivateRequest, Actor, Registry, RegistryError, Upload};
use atrium_store::{
    InstallKey, NewDeveloper, NewTenantToken, Store, StoreError, TenantKey, TenantRole,
};
use serde_json::{Map, Value, json};

/// The demo's organization.
pub const ORG: &str = "demo";
/// The demo's tenant.
pub const TENANT: &str = "demo";
/// The file in the data directory that holds the demo tenant's admin token.
pub const TOKEN_FILE: &str = "demo-token";
const DEVELOPER_EMAIL: &str = "examples@atrium.local";
const DEVELOPER_LOGIN: &str = "examples";
/// The `primary_email` of the demo tenant's mail integrations.
const DEMO_MAIL: &str = "demo@atrium.local";

/// The demo's switches on `atrium serve`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Set up the demo (the example apps installed for tenant `demo`): `auto` (the default)
    /// sets it up with SQLite and not with PostgreSQL, a shared deployment; `--demo` alone
    /// always; `--demo=0` (or ATRIUM_DEMO=0) never. Values: 1/0, true/false, yes/no, on/off,
    /// auto.
    #[arg(
        long,
        env = "ATRIUM_DEMO",
        value_name = "WHEN",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "on",
        value_parser = switch
    )]
    demo: Option<Switch>,
    /// Do not set up the demo (overrides --demo and ATRIUM_DEMO).
    #[arg(long)]
    no_demo: bool,
}

/// When the demo runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// With SQLite only.
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

/// Parses `--demo=WHEN` and `ATRIUM_DEMO`; empty is `auto`, as if unset.
fn switch(value: &str) -> Result<Switch, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(Switch::Auto),
        "1" | "true" | "yes" | "on" => Ok(Switch::On),
        "0" | "false" | "no" | "off" => Ok(Switch::Off),
        other => Err(format!(
            "`{other}` is not one of 1/0, true/false, yes/no, on/off, auto"
        )),
    }
}

/// One example app, embedded.
struct Example {
    manifest: &'static str,
    component: &'static [u8],
    /// Demo values of its install settings (a JSON object).
    settings: &'static str,
    /// Records its install starts with: a JSON array of `{record_type, record}`.
    records: &'static str,
}

macro_rules! component {
    ($stem:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/examples/", $stem, ".wasm"))
    };
}

/// In install order: a dependency before the apps that need it.
const EXAMPLES: [Example; 4] = [
    Example {
        manifest: include_str!("../../../examples/ledger/atrium.app.yaml"),
        component: component!("ledger"),
        settings: "{}",
        records: "[]",
    },
    Example {
        manifest: include_str!("../../../examples/invoices/atrium.app.yaml"),
        component: component!("invoice_desk"),
        settings: r#"{"company_name": "Demo Company", "cost_center": "operations", "project": "demo"}"#,
        records: r#"[
            {"record_type": "invoice", "record": {"id": "inv-1001", "payer": "Beta SARL", "amount": 1200.0, "status": "new", "issued_at": "2026-11-02"}},
            {"record_type": "invoice", "record": {"id": "inv-1002", "payer": "Gamma GmbH", "amount": 380.5, "status": "overdue", "issued_at": "2026-10-01"}}
        ]"#,
    },
    Example {
        manifest: include_str!("../../../examples/minimal/atrium.app.yaml"),
        component: component!("hello_minimal"),
        settings: "{}",
        records: "[]",
    },
    Example {
        manifest: include_str!("../../../examples/room-bot/atrium.app.yaml"),
        component: component!("room_bot"),
        settings: "{}",
        records: "[]",
    },
];

/// Decides whether the demo runs; when it does, creates the organization and the knowledge
/// collections now (retrieval is handed to the server next, and these take milliseconds) and
/// starts the rest beside the server. The handle is for aborting it when the server stops.
pub async fn start(
    args: &DemoArgs,
    data_dir: &Path,
    addr: &str,
    store: &Store,
    registry: &Registry,
    retrieval: &atrium_retrieval::Retrieval,
) -> Option<tokio::task::JoinHandle<()>> {
    let switch = args.demo.unwrap_or(Switch::Auto);
    if args.no_demo || switch == Switch::Off {
        tracing::info!("the demo is off (--no-demo, --demo=0 or ATRIUM_DEMO=0)");
        return None;
    }
    if switch == Switch::Auto && store.backend() != "sqlite" {
        tracing::info!(
            "the demo is off on {}, a shared deployment: --demo (or ATRIUM_DEMO=1) sets it up",
            store.backend()
        );
        return None;
    }
    let apps = match parse_examples() {
        Ok(apps) => apps,
        Err(e) => {
            tracing::warn!("the demo is not set up: {e}");
            return None;
        }
    };
    let org_id = match prepare(store, retrieval, &apps).await {
        Ok(org_id) => org_id,
        Err(e) => {
            tracing::warn!("the demo is not set up: {e}");
            return None;
        }
    };
    let demo = Demo {
        store: store.clone(),
        registry: registry.clone(),
        org_id,
        data_dir: data_dir.to_owned(),
        addr: addr.to_owned(),
    };
    Some(tokio::spawn(async move {
        if let Err(e) = demo.set_up(&apps).await {
            tracing::warn!("the demo is not set up: {e}");
        }
    }))
}

fn parse_examples() -> Result<Vec<(&'static Example, Manifest)>, String> {
    EXAMPLES
        .iter()
        .map(|example| {
            atrium_manifest::parse(example.manifest)
                .map(|manifest| (example, manifest))
                .map_err(|e| format!("an embedded example manifest is invalid: {e}"))
        })
        .collect()
}

/// The organization's id, created when new, and a collection for every knowledge slot of an
/// example not yet installed. Creating the organization issues a key; it is revoked at once
/// (`atrium keys create --org demo` issues one to use).
async fn prepare(
    store: &Store,
    retrieval: &atrium_retrieval::Retrieval,
    apps: &[(&Example, Manifest)],
) -> Result<String, String> {
    let org_id = match store.organization_id(ORG).await.map_err(text)? {
        Some(id) => id,
        None => {
            let key = store.create_key(ORG, "demo setup").await.map_err(text)?;
            store.revoke_key(&key.id).await.map_err(text)?;
            key.org_id
        }
    };
    for (_, manifest) in apps {
        if store
            .install(&InstallKey::new(&org_id, TENANT, &manifest.app_id))
            .await
            .map_err(text)?
            .is_some()
        {
            continue;
        }
        for slot in &manifest.rag_slots {
            retrieval
                .create_collection(&TenantKey::new(&org_id, TENANT), &slot.name)
                .await
                .map_err(|e| format!("cannot create the collection `{}`: {e}", slot.name))?;
        }
    }
    Ok(org_id)
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

struct Demo {
    store: Store,
    registry: Registry,
    org_id: String,
    data_dir: PathBuf,
    addr: String,
}

impl Demo {
    async fn set_up(&self, apps: &[(&Example, Manifest)]) -> Result<(), String> {
        let developer = self.developer().await?;
        let mut published = 0;
        for (example, manifest) in apps {
            match self.publish(&developer, example, manifest).await {
                Ok(true) => published += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(app = %manifest.app_id, "the demo cannot publish it: {e}"),
            }
        }
        let (admin, token) = self.admin().await?;
        let tenant = Actor::user(TenantKey::new(&self.org_id, TENANT), admin);
        let mut installed = Vec::new();
        for (example, manifest) in apps {
            match self.install(&tenant, example, manifest).await {
                Ok(true) => installed.push(manifest.app_id.clone()),
                Ok(false) => {}
                Err(e) => tracing::warn!(app = %manifest.app_id, "the demo cannot install it: {e}"),
            }
        }
        if !installed.is_empty() {
            self.wire(&tenant, apps, &installed).await;
        }
        let installed = installed.len();
        let active = self
            .store
            .installs(&TenantKey::new(&self.org_id, TENANT))
            .await
            .map_err(text)?
            .iter()
            .filter(|i| i.status == atrium_store::InstallStatus::Active)
            .count();
        let token_file = self.data_dir.join(TOKEN_FILE);
        if published + installed == 0 {
            tracing::info!(
                active,
                "the demo is ready: nothing new to publish; tenant `{TENANT}` of organization `{ORG}` has {active} active installs (its admin token: {})",
                if token_file.exists() {
                    token_file.display().to_string()
                } else {
                    format!(
                        "`atrium tenants tokens create --org {ORG} --tenant {TENANT} --role admin` issues one"
                    )
                }
            );
        } else {
            tracing::info!(
                published,
                installed,
                active,
                "the demo is ready: published {published} example apps, installed {installed} for tenant `{TENANT}` of organization `{ORG}`"
            );
        }
        if let Some(token) = token {
            self.banner(&token, &token_file, active);
        }
        Ok(())
    }

    /// The examples' developer, created with publishing allowed when new.
    async fn developer(&self) -> Result<atrium_store::Developer, String> {
        if let Some(found) = self
            .store
            .developer_by_email(DEVELOPER_EMAIL)
            .await
            .map_err(text)?
        {
            return Ok(found);
        }
        let created = self
            .store
            .create_developer(&NewDeveloper {
                email: DEVELOPER_EMAIL,
                login: DEVELOPER_LOGIN,
                publish_allowed: true,
                // No dev tenant: a promotion installs its version in the developer's dev
                // tenant with the defaults, and the demo installs each example itself, with its
                // demo settings, integrations, bindings and records.
                dev_tenant: None,
            })
            .await;
        match created {
            Ok(developer) => Ok(developer),
            // Another host of the same database created it meanwhile.
            Err(StoreError::Conflict(message)) => self
                .store
                .developer_by_email(DEVELOPER_EMAIL)
                .await
                .map_err(text)?
                .ok_or(message),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Registers and promotes the example's version unless it is published already: `true`
    /// when this call published it. A version registered with other content (the example
    /// changed without a new version number) is kept, with a warning.
    async fn publish(
        &self,
        developer: &atrium_store::Developer,
        example: &Example,
        manifest: &Manifest,
    ) -> Result<bool, String> {
        let slug = &manifest.app_id;
        let version = &manifest.version;
        if let Some(stored) = self.store.version(slug, version).await.map_err(text)? {
            let digest = atrium_platform::artifacts::digest;
            let same = stored.manifest_digest == digest(example.manifest.as_bytes())
                && stored.component_digest.as_deref() == Some(digest(example.component).as_str());
            if !same {
                tracing::warn!(
                    app = %slug,
                    "version {version} is registered with other content than this build's example; the demo keeps it (give the example a new version to publish the change)"
                );
            }
            if stored.promoted_at.is_none() {
                self.registry
                    .promote(developer, slug, version)
                    .await
                    .map_err(text)?;
            }
            return Ok(false);
        }
        let upload = Upload {
            manifest_file: "atrium.app.yaml".to_owned(),
            manifest: bytes::Bytes::from_static(example.manifest.as_bytes()),
            component: Some(bytes::Bytes::from_static(example.component)),
            ..Upload::default()
        };
        let registered = self
            .registry
            .register(developer, slug, upload)
            .await
            .map_err(text)?;
        self.registry
            .promote(developer, slug, version)
            .await
            .map_err(text)?;
        tracing::info!(app = %slug, %version, "the demo published an example app");
        Ok(registered.created)
    }

    /// The user id of the tenant's admin, and the token's secret when this call issued it:
    /// only when the tenant has never had an admin token (one the user revoked stays revoked).
    async fn admin(&self) -> Result<(String, Option<String>), String> {
        let tokens = self
            .store
            .tenant_tokens(&TenantKey::new(&self.org_id, TENANT))
            .await
            .map_err(text)?;
        if let Some(admin) = tokens.iter().find(|t| t.role == TenantRole::Admin) {
            return Ok((admin.user_id.clone(), None));
        }
        let created = self
            .store
            .create_tenant_token(
                &TenantKey::new(&self.org_id, TENANT),
                &NewTenantToken {
                    role: TenantRole::Admin,
                    user_id: None,
                    display_name: Some("Demo Admin"),
                },
            )
            .await
            .map_err(text)?;
        let path = self.data_dir.join(TOKEN_FILE);
        if let Err(e) = write_private(&path, &format!("{}\n", created.secret)) {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
        Ok((created.token.user_id, Some(created.secret)))
    }

    /// Installs the example for the demo tenant unless the tenant has an install of it
    /// (active or not): its integrations configured with demo values, every scope granted,
    /// every knowledge slot bound to the collection of its name, the demo settings. `true`
    /// when this call installed it.
    async fn install(
        &self,
        tenant: &Actor,
        example: &Example,
        manifest: &Manifest,
    ) -> Result<bool, String> {
        let slug = &manifest.app_id;
        if self
            .store
            .install(&InstallKey::new(&self.org_id, TENANT, slug))
            .await
            .map_err(text)?
            .is_some()
        {
            return Ok(false);
        }
        let demo_tenant = TenantKey::new(&self.org_id, TENANT);
        let configured = self
            .registry
            .integrations(&demo_tenant)
            .await
            .map_err(text)?;
        for provider in &manifest.required_integrations {
            if configured.contains_key(provider) {
                continue;
            }
            let mut config = Map::new();
            if atrium_manifest::rules::is_mail_provider(provider) {
                config.insert("primary_email".into(), json!(DEMO_MAIL));
            }
            self.registry
                .put_integration(&demo_tenant, provider, &config)
                .await
                .map_err(text)?;
        }
        let settings: Map<String, Value> = serde_json::from_str(example.settings).map_err(text)?;
        let request = ActivateRequest {
            granted_scopes: Some(manifest.required_scopes.clone()),
            settings,
            rag_bindings: manifest
                .rag_slots
                .iter()
                .map(|slot| (slot.name.clone(), json!(slot.name)))
                .collect(),
            ..ActivateRequest::default()
        };
        let activated = match self.registry.activate(tenant, slug, &request).await {
            Ok(activated) => activated,
            Err(RegistryError::Activation {
                outcome, message, ..
            }) => {
                return Err(format!("{outcome}: {message}"));
            }
            Err(e) => return Err(e.to_string()),
        };
        if activated.first {
            let install = InstallKey::new(&self.org_id, TENANT, slug);
            let records: Vec<Value> = serde_json::from_str(example.records).map_err(text)?;
            for seed in &records {
                let (Some(kind), Some(record)) =
                    (seed["record_type"].as_str(), seed["record"].as_object())
                else {
                    continue;
                };
                let id = record.get("id").and_then(Value::as_str).unwrap_or(kind);
                self.store
                    .put_record(&install, id, kind, record)
                    .await
                    .map_err(text)?;
            }
        }
        tracing::info!(app = %slug, tenant = TENANT, "the demo installed an example app");
        Ok(true)
    }

    /// Wires the examples' events as their manifests declare them (an example that subscribes
    /// to another's event gets it), approved on both sides for the demo tenant, as its scopes
    /// are granted. The activation of an app `installed` now proposed its wires (pending the
    /// emitter): those are approved too. Any other wire that exists is left alone, so a revoke
    /// stays.
    async fn wire(&self, tenant: &Actor, apps: &[(&Example, Manifest)], installed: &[String]) {
        for (_, subscriber) in apps {
            for subscription in &subscriber.subscribes_to {
                let emits = apps.iter().any(|(_, m)| {
                    m.app_id == subscription.emitter_app
                        && m.emits.contains(&subscription.event_name)
                });
                if !emits {
                    continue;
                }
                let (agent, heartbeat) = match &subscription.target {
                    atrium_manifest::SubscriptionTarget::Agent(agent) => (agent.as_str(), None),
                    atrium_manifest::SubscriptionTarget::Heartbeat { agent, slug } => {
                        (agent.as_str(), Some(slug.as_str()))
                    }
                };
                let wire = atrium_store::NewWire {
                    emitter_app: &subscription.emitter_app,
                    event_name: &subscription.event_name,
                    subscriber_app: &subscriber.app_id,
                    target_agent: agent,
                    target_heartbeat: heartbeat,
                };
                let just_installed = installed.contains(&subscriber.app_id)
                    || installed.contains(&subscription.emitter_app);
                let approved = match self.store.propose_wire(tenant, &wire, false).await {
                    Ok((proposed, started))
                        if started
                            || (just_installed
                                && proposed.revoked_at.is_none()
                                && proposed.emitter_approved_at.is_none()) =>
                    {
                        self.store
                            .approve_wire(tenant, &proposed.id)
                            .await
                            .map(|_| ())
                    }
                    Ok(_) => Ok(()),
                    Err(e) => Err(e),
                };
                if let Err(e) = approved {
                    tracing::warn!(emitter = %subscription.emitter_app, event = %subscription.event_name, subscriber = %subscriber.app_id, "the demo cannot wire the event: {e}");
                }
            }
        }
    }

    /// What the first start prints once: the token and the calls to try.
    fn banner(&self, token: &str, token_file: &Path, active: usize) {
        let url = format!("http://{}", self.addr);
        let file = token_file.display();
        eprintln!(
            "\n\
             The demo is ready: {active} example apps are installed for tenant `{TENANT}` of organization `{ORG}`.\n\
             Its admin token, shown this once, is also in {file}:\n\
             \n    {token}\n\n\
             Try:\n\
             \n    TOKEN=$(cat {file})\n\
             \x20   curl -s -H \"Authorization: Bearer $TOKEN\" {url}/api/installs\n\
             \x20   curl -s -X POST -H \"Authorization: Bearer $TOKEN\" {url}/api/apps/invoice-desk/tools/list_invoices\n\
             \x20   curl -s -H \"Authorization: Bearer $TOKEN\" -d '{{\"account\": \"4000\", \"amount\": 120.5}}' {url}/api/apps/ledger/tools/book_entry\n\
             \x20   curl -s -H \"Authorization: Bearer $TOKEN\" -d '{{\"account\": \"4000\"}}' {url}/api/apps/ledger/tools/account_balance\n\
             \n\
             (docs/demo.md; `atrium serve --no-demo` or ATRIUM_DEMO=0 turns the demo off)\n"
        );
    }
}

/// Writes a file only its owner can read.
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(contents.as_bytes())
}
