//! Event wires between the apps of one tenant (spec section 6): the manifests' `emits` and
//! `subscribes_to` are declarations; events flow only over a wire both sides approved. The
//! subscriber side proposes a wire for one of its declared subscriptions (approved on its side
//! at once), the emitter side approves, either side revokes. Whenever an install lands on a
//! version (activation, an upgrade of any kind) the wires of what that version declares are
//! proposed ([`propose_declared`]), never undoing a revoke, and the wires it no longer
//! declares are revoked ([`retire_undeclared`]). Only a tenant admin moves a wire otherwise:
//! an app never approves anything.

use atrium_manifest::{Manifest, SubscriptionTarget};
use atrium_store::{NewWire, TenantKey, Wire, WireFilter};
use serde::Serialize;

use crate::Refusal;
use crate::registry::{Actor, Registry};
use crate::serving::Serving;

/// Where a wire stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WireState {
    /// The subscriber side approved; the emitter side has not.
    PendingEmitterApproval,
    /// Both sides approved: events flow.
    Active,
    /// Either side revoked it.
    Revoked,
}

/// The state of `wire`.
#[must_use]
pub fn state(wire: &Wire) -> WireState {
    if wire.revoked_at.is_some() {
        WireState::Revoked
    } else if wire.is_active() {
        WireState::Active
    } else {
        WireState::PendingEmitterApproval
    }
}

/// A wire as an admin asks for it: the subscriber's target as its manifest writes it (an
/// agent, or a heartbeat as `slug` or `agent:slug`); none when the subscriber declares one
/// target for the event.
#[derive(Debug, Clone, Default)]
pub struct WireRequest {
    /// The emitting app.
    pub emitter_app: String,
    /// The event.
    pub event_name: String,
    /// The receiving app.
    pub subscriber_app: String,
    /// The agent invoked.
    pub target_agent: Option<String>,
    /// The heartbeat woken.
    pub target_heartbeat: Option<String>,
}

fn invalid(field: &'static str, message: String) -> Refusal {
    Refusal::invalid(field, message)
}

async fn manifest_of_install(
    serving: &Serving,
    tenant: &Actor,
    app: &str,
) -> Result<Manifest, Refusal> {
    let install = serving
        .active_install(tenant, app)
        .await
        .map_err(|_| Refusal::not_found(format!("this tenant has no active install of `{app}`")))?;
    serving
        .registry()
        .manifest_of(app, &install.version)
        .await
        .map_err(|e| Refusal::not_found(e.to_string()))
}

/// `target` as the API names it: `(target_agent, target_heartbeat)`.
fn target_names(target: &SubscriptionTarget) -> (String, Option<String>) {
    match target {
        SubscriptionTarget::Agent(agent) => (agent.clone(), None),
        SubscriptionTarget::Heartbeat { agent, slug } => (agent.clone(), Some(slug.clone())),
    }
}

/// How a target reads in a message: `agent clerk`, `heartbeat collector:overdue`.
fn described(target: &SubscriptionTarget) -> String {
    match target {
        SubscriptionTarget::Agent(agent) => format!("agent {agent}"),
        SubscriptionTarget::Heartbeat { agent, slug } => format!("heartbeat {agent}:{slug}"),
    }
}

/// Whether `target` is what the request names.
fn named(request: &WireRequest, target: &SubscriptionTarget) -> bool {
    match (target, &request.target_agent, &request.target_heartbeat) {
        (_, None, None) => true,
        (SubscriptionTarget::Agent(agent), Some(asked), None) => agent == asked,
        (SubscriptionTarget::Heartbeat { agent, slug }, None, Some(asked)) => {
            match asked.split_once(':') {
                Some((a, s)) => a == agent && s == slug,
                None => asked == slug,
            }
        }
        _ => false,
    }
}

/// The subscriber side proposes a wire for one of its declared subscriptions. Answers the wire
/// and whether it (re)started: a pending or active wire is left as it is, a revoked one starts
/// over.
pub async fn propose(
    serving: &Serving,
    tenant: &Actor,
    request: &WireRequest,
) -> Result<(Wire, bool), Refusal> {
    if request.target_agent.is_some() && request.target_heartbeat.is_some() {
        return Err(invalid(
            "target_heartbeat",
            "give either target_agent or target_heartbeat, not both".into(),
        ));
    }
    let subscriber = manifest_of_install(serving, tenant, &request.subscriber_app).await?;
    let emitter = manifest_of_install(serving, tenant, &request.emitter_app).await?;
    if !emitter.emits.iter().any(|e| e == &request.event_name) {
        return Err(invalid(
            "event_name",
            format!(
                "`{}` does not declare the event `{}` in its emits ({})",
                request.emitter_app,
                request.event_name,
                atrium_manifest::sandbox::declared_names(
                    &emitter.emits.iter().map(String::as_str).collect::<Vec<_>>()
                )
            ),
        ));
    }
    let declared: Vec<&SubscriptionTarget> = subscriber
        .subscribes_to
        .iter()
        .filter(|s| s.emitter_app == request.emitter_app && s.event_name == request.event_name)
        .map(|s| &s.target)
        .collect();
    if declared.is_empty() {
        return Err(invalid(
            "subscriber_app",
            format!(
                "`{}` does not subscribe to `{}` of `{}` in its subscribes_to",
                request.subscriber_app, request.event_name, request.emitter_app
            ),
        ));
    }
    let matching: Vec<&&SubscriptionTarget> =
        declared.iter().filter(|t| named(request, t)).collect();
    let field = if request.target_heartbeat.is_some() {
        "target_heartbeat"
    } else {
        "target_agent"
    };
    let listing = || {
        declared
            .iter()
            .map(|t| described(t))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let target = match matching.as_slice() {
        [one] => **one,
        [] => {
            return Err(invalid(
                field,
                format!(
                    "`{}` declares no such target for `{}` of `{}` (its targets: {})",
                    request.subscriber_app,
                    request.event_name,
                    request.emitter_app,
                    listing()
                ),
            ));
        }
        _ => {
            return Err(invalid(
                "target_agent",
                format!(
                    "`{}` subscribes to `{}` of `{}` with several targets ({}): name one with target_agent or target_heartbeat",
                    request.subscriber_app,
                    request.event_name,
                    request.emitter_app,
                    listing()
                ),
            ));
        }
    };
    let (agent, heartbeat) = target_names(target);
    let wire = NewWire {
        emitter_app: &request.emitter_app,
        event_name: &request.event_name,
        subscriber_app: &request.subscriber_app,
        target_agent: &agent,
        target_heartbeat: heartbeat.as_deref(),
    };
    Ok(serving
        .registry()
        .store()
        .propose_wire(tenant, &wire, true)
        .await?)
}

/// The emitter side approves wire `id`.
pub async fn approve(serving: &Serving, tenant: &Actor, id: &str) -> Result<Wire, Refusal> {
    let store = serving.registry().store();
    let existing = store
        .wire(tenant, id)
        .await?
        .ok_or_else(|| Refusal::not_found(format!("no wire `{id}`")))?;
    if existing.revoked_at.is_some() {
        return Err(Refusal::Conflict {
            code: "wire_revoked",
            message: format!(
                "the wire `{id}` was revoked: the subscriber side proposes it again first"
            ),
        });
    }
    // The emitter must still be installed to approve for it.
    manifest_of_install(serving, tenant, &existing.emitter_app).await?;
    store
        .approve_wire(tenant, id)
        .await?
        .ok_or_else(|| Refusal::not_found(format!("no wire `{id}`")))
}

/// Revokes wire `id` (either side).
pub async fn revoke(serving: &Serving, tenant: &Actor, id: &str) -> Result<Wire, Refusal> {
    serving
        .registry()
        .store()
        .revoke_wire(tenant, id)
        .await?
        .ok_or_else(|| Refusal::not_found(format!("no wire `{id}`")))
}

/// The event wires follow an install's version (`registry::declared`): those it declares are
/// proposed while the install is active (an inactive one receives nothing), those it no
/// longer declares revoked either way. Failures are logged: the install does not depend on
/// its wires.
pub(crate) struct FollowVersion;

#[async_trait::async_trait]
impl crate::registry::declared::InstallHook for FollowVersion {
    async fn landed(
        &self,
        registry: &Registry,
        install: &atrium_store::Install,
        manifest: &Manifest,
    ) -> crate::registry::Result<()> {
        let tenant = install.tenant();
        if install.status == atrium_store::InstallStatus::Active {
            propose_declared(registry, &tenant, &install.app_slug, manifest).await;
        }
        retire_undeclared(registry, &tenant, &install.app_slug, manifest).await;
        Ok(())
    }
}

/// Proposes, after `app` landed on the version of `manifest` (activated or upgraded), the
/// wires its declarations and the tenant's other active installs make possible: each
/// subscription of `app` to an installed emitter that declares the event, and each
/// subscription of another install to an event `app` declares. The subscriber side is
/// approved (the admin who activated it consented to its declarations); the emitter side stays
/// pending. A wire that exists in any state, revoked included, is left as it is. Failures are
/// logged: the activation or upgrade does not depend on them.
pub async fn propose_declared(
    registry: &Registry,
    tenant: &TenantKey,
    app: &str,
    manifest: &Manifest,
) {
    let store = registry.store();
    let installs = match store.installs(tenant).await {
        Ok(installs) => installs,
        Err(e) => {
            tracing::error!(error = %e, app, "listing installs to propose event wires failed");
            return;
        }
    };
    let mut proposals: Vec<(String, String, String, SubscriptionTarget)> = Vec::new();
    for install in installs
        .iter()
        .filter(|i| i.status == atrium_store::InstallStatus::Active)
    {
        let other = if install.app_slug == app {
            manifest.clone()
        } else {
            match registry
                .manifest_of(&install.app_slug, &install.version)
                .await
            {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(error = %e, app = %install.app_slug, "reading a manifest to propose event wires failed");
                    continue;
                }
            }
        };
        // `app` subscribes to `other`'s events.
        for s in &manifest.subscribes_to {
            if s.emitter_app == install.app_slug && other.emits.contains(&s.event_name) {
                proposals.push((
                    install.app_slug.clone(),
                    s.event_name.clone(),
                    app.to_owned(),
                    s.target.clone(),
                ));
            }
        }
        // `other` subscribes to `app`'s events (itself excepted: done above).
        if install.app_slug != app {
            for s in &other.subscribes_to {
                if s.emitter_app == app && manifest.emits.contains(&s.event_name) {
                    proposals.push((
                        app.to_owned(),
                        s.event_name.clone(),
                        install.app_slug.clone(),
                        s.target.clone(),
                    ));
                }
            }
        }
    }
    for (emitter, event, subscriber, target) in proposals {
        let (agent, heartbeat) = target_names(&target);
        let wire = NewWire {
            emitter_app: &emitter,
            event_name: &event,
            subscriber_app: &subscriber,
            target_agent: &agent,
            target_heartbeat: heartbeat.as_deref(),
        };
        if let Err(e) = store.propose_wire(tenant, &wire, false).await {
            tracing::error!(error = %e, emitter, event, subscriber, "proposing a declared event wire failed");
        }
    }
}

/// Whether `manifest` declares the subscription `wire` carries: its emitter, event and target.
fn subscribes(manifest: &Manifest, wire: &Wire) -> bool {
    manifest.subscribes_to.iter().any(|s| {
        let (agent, heartbeat) = target_names(&s.target);
        s.emitter_app == wire.emitter_app
            && s.event_name == wire.event_name
            && agent == wire.target_agent
            && heartbeat == wire.target_heartbeat
    })
}

/// Revokes, after `app` moved to the version of `manifest`, the tenant's wires that version no
/// longer declares: those to `app` for a subscription (emitter, event and target) it dropped,
/// and those from `app` for an event it no longer emits. Revoked is where a wire that carries
/// nothing stays: what a later version proposes never undoes it, and the subscriber side
/// proposes it again (`POST /api/wires`) to start it over. Failures are logged, as for
/// proposals.
pub async fn retire_undeclared(
    registry: &Registry,
    tenant: &TenantKey,
    app: &str,
    manifest: &Manifest,
) {
    let store = registry.store();
    let sides = [
        WireFilter {
            subscriber_app: Some(app),
            ..WireFilter::default()
        },
        WireFilter {
            emitter_app: Some(app),
            ..WireFilter::default()
        },
    ];
    for filter in sides {
        let wires = match store.wires_page(tenant, &filter, None, i64::MAX).await {
            Ok(wires) => wires,
            Err(e) => {
                tracing::error!(error = %e, app, "listing event wires to retire failed");
                continue;
            }
        };
        for wire in wires.iter().filter(|w| w.revoked_at.is_none()) {
            let declared = if filter.subscriber_app.is_some() {
                subscribes(manifest, wire)
            } else {
                manifest.emits.contains(&wire.event_name)
            };
            if declared {
                continue;
            }
            match store.revoke_wire(tenant, &wire.id).await {
                Ok(_) => tracing::info!(
                    wire = %wire.id, app, emitter = %wire.emitter_app, event = %wire.event_name,
                    subscriber = %wire.subscriber_app,
                    "retired an event wire the installed version no longer declares"
                ),
                Err(e) => {
                    tracing::error!(error = %e, wire = %wire.id, app, "retiring an event wire failed");
                }
            }
        }
    }
}
