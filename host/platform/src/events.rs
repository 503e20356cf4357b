//! `events.emit`'s fan-out: an emitted event goes, concurrently, over every active wire of the
//! emitter's event to a subscriber with an active install. An agent target gets `on_event` in
//! an instance of its own (the emit's chain carried, so an event loop stops at the chain
//! depth); a heartbeat target has its next run set to now. One delivery's failure, trap or
//! timeout is counted in `failures` and never stops the others; every delivery is recorded in
//! the audit log, `no_handler` included.
//!
//! [`Events`] is the capability's service over the serving core: a component's `events.emit`
//! (through [`crate::install_platform`]) reaches it and nothing else.

use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_runtime::{AgentCallError, AppEvent, CallError, Caller, ChainContext, EmitResult};
use atrium_store::{Install, Wire};
use serde_json::Value;

use crate::audit;
use crate::registry::Actor;
use crate::serving::Serving;

/// How long an emit waits for its deliveries; one still running then is counted in
/// `failures` (it keeps running to its own deadline, and the audit log records how it ended).
pub const EVENT_WAIT: Duration = Duration::from_secs(10);

/// How many deliveries of one emit run at once.
pub const CONCURRENT_DELIVERIES: usize = 16;

/// How one delivery ended.
enum Delivered {
    /// The handler answered.
    Handled,
    /// The subscriber registers no handler for the event: dispatched, with the handler result
    /// `{ok: false, no_handler: true}`, and recorded as a failure in the audit log.
    NoHandler,
    /// The heartbeat's next run was set to now.
    Woken,
    /// It failed, trapped or ran out of time.
    Failed(String),
}

/// One emit, as every delivery of it sees it.
struct Emit {
    tenant: Actor,
    emitter: String,
    payload: String,
    chain: ChainContext,
}

/// Events and their fan-out, over the serving core.
#[derive(Clone, Debug)]
pub struct Events {
    serving: Serving,
}

impl Events {
    /// The events of `serving`'s installs.
    pub fn of(serving: &Serving) -> Events {
        Events {
            serving: serving.clone(),
        }
    }

    /// Fans `emitter`'s event `name` with `payload` out to the tenant's active wires, on
    /// `chain` (the sandbox's checks passed and the chain advanced). Answers how many wires
    /// carried it, how many subscribers received it and how many failed.
    pub async fn emit(
        &self,
        tenant: &Actor,
        emitter: &str,
        name: &str,
        payload: &Value,
        chain: &ChainContext,
    ) -> Result<EmitResult, AgentCallError> {
        let wires = self
            .serving
            .registry()
            .store()
            .active_wires(tenant, emitter, name)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, emitter, event = name, "reading event wires failed");
                AgentCallError {
                    reason: "the platform failed to read the event's wires; try again".into(),
                }
            })?;
        // A wire to an app the tenant no longer runs carries nothing.
        let mut live = Vec::with_capacity(wires.len());
        for wire in wires {
            if let Ok(install) = self
                .serving
                .active_install(tenant, &wire.subscriber_app)
                .await
            {
                live.push((wire, install));
            }
        }
        let wire_count = u32::try_from(live.len()).unwrap_or(u32::MAX);
        let emit = Arc::new(Emit {
            tenant: tenant.clone(),
            emitter: emitter.to_owned(),
            payload: payload.to_string(),
            chain: chain.clone(),
        });
        let gate = Arc::new(tokio::sync::Semaphore::new(CONCURRENT_DELIVERIES));
        let deliveries: Vec<_> = live
            .into_iter()
            .map(|(wire, install)| {
                let (serving, emit, gate) = (self.clone(), emit.clone(), gate.clone());
                // A task of its own: an emitter that goes away does not cut a delivery short.
                tokio::spawn(async move {
                    let _permit = gate.acquire_owned().await;
                    let started = Instant::now();
                    let delivered = serving.deliver(&emit, &wire, &install).await;
                    (wire, started.elapsed(), delivered)
                })
            })
            .collect();
        // The wait for the deliveries and their audit entries run in a task of their own too:
        // an emitter cut off while it waits (its call's deadline) leaves every delivery
        // recorded all the same.
        let serving = self.clone();
        let collected = tokio::spawn(async move { serving.collect(emit, deliveries).await });
        let (dispatched, failures) = collected.await.map_err(|e| {
            tracing::error!(error = %e, emitter, event = name, "an event's deliveries were lost");
            AgentCallError {
                reason: "the platform failed to deliver the event; try again".into(),
            }
        })?;
        Ok(EmitResult {
            wire_count,
            dispatched,
            failures,
        })
    }

    /// Waits (at most [`EVENT_WAIT`]) for the deliveries of `emit` and records them: how many
    /// were dispatched and how many failed.
    async fn collect(
        &self,
        emit: Arc<Emit>,
        deliveries: Vec<tokio::task::JoinHandle<(Wire, Duration, Delivered)>>,
    ) -> (u32, u32) {
        let until = tokio::time::Instant::now() + EVENT_WAIT;
        let (mut dispatched, mut failures) = (0u32, 0u32);
        let mut ended = Vec::with_capacity(deliveries.len());
        for mut delivery in deliveries {
            match tokio::time::timeout_at(until, &mut delivery).await {
                Ok(Ok((wire, took, delivered))) => {
                    if matches!(delivered, Delivered::Failed(_)) {
                        failures += 1;
                    } else {
                        dispatched += 1;
                    }
                    ended.push((wire, took, delivered));
                }
                Ok(Err(e)) => {
                    failures += 1;
                    tracing::error!(error = %e, emitter = %emit.emitter, "an event delivery panicked");
                }
                Err(_) => {
                    // Still running: counted as failed now, recorded when it ends.
                    failures += 1;
                    let (serving, emit) = (self.clone(), emit.clone());
                    tokio::spawn(async move {
                        if let Ok(late) = delivery.await {
                            serving
                                .audit_deliveries(&emit, std::slice::from_ref(&late))
                                .await;
                        }
                    });
                }
            }
        }
        // One write for every delivery that ended in time.
        self.audit_deliveries(&emit, &ended).await;
        (dispatched, failures)
    }

    /// Delivers `emit` over `wire` to the subscriber's `install`.
    async fn deliver(&self, emit: &Emit, wire: &Wire, install: &Install) -> Delivered {
        let result = match &wire.target_heartbeat {
            Some(slug) => self.wake(emit, wire, install, slug).await,
            None => self.dispatch(emit, wire, install).await,
        };
        result.unwrap_or_else(Delivered::Failed)
    }

    /// `on_event` of the subscriber's install, for the wire's agent.
    async fn dispatch(
        &self,
        emit: &Emit,
        wire: &Wire,
        install: &Install,
    ) -> Result<Delivered, String> {
        let app = self
            .serving
            .app(&install.app_slug, &install.version)
            .await
            .map_err(|e| e.to_string())?;
        let mut inv = self
            .serving
            .invocation(&emit.tenant, install, &app, Caller::Platform)
            .await
            .map_err(|e| e.to_string())?;
        inv.chain = emit.chain.clone();
        let event = AppEvent {
            event_name: wire.event_name.clone(),
            emitter_app_id: emit.emitter.clone(),
            payload: emit.payload.clone(),
            target_agent_slug: Some(wire.target_agent.clone()),
        };
        match app.on_event(&inv, event).await {
            Ok(_) => Ok(Delivered::Handled),
            Err(CallError::NoHandler(_)) => Ok(Delivered::NoHandler),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Sets the next run of the wire's heartbeat to now, when the subscriber's installed
    /// version still declares it.
    async fn wake(
        &self,
        emit: &Emit,
        wire: &Wire,
        install: &Install,
        slug: &str,
    ) -> Result<Delivered, String> {
        let manifest = self
            .serving
            .registry()
            .manifest_of(&install.app_slug, &install.version)
            .await
            .map_err(|e| e.to_string())?;
        let declared = manifest
            .agents
            .iter()
            .filter(|a| a.id == wire.target_agent)
            .any(|a| a.heartbeats.iter().any(|h| h.slug == slug));
        if !declared {
            return Err(format!(
                "`{}` {} declares no heartbeat `{}:{slug}`",
                install.app_slug, install.version, wire.target_agent
            ));
        }
        self.serving
            .registry()
            .store()
            .wake_heartbeat(
                &emit.tenant.install(&wire.subscriber_app),
                &wire.target_agent,
                slug,
                &format!("{}/{}", emit.emitter, wire.event_name),
            )
            .await
            .map_err(|e| format!("recording the heartbeat's wake failed: {e}"))?;
        Ok(Delivered::Woken)
    }

    /// Records deliveries of `emit` in the audit log, in one write.
    async fn audit_deliveries(&self, emit: &Emit, ended: &[(Wire, Duration, Delivered)]) {
        let targets: Vec<String> = ended
            .iter()
            .map(|(wire, _, _)| match &wire.target_heartbeat {
                Some(slug) => format!(
                    "{} -> heartbeat {}:{slug}",
                    wire.event_name, wire.target_agent
                ),
                None => format!("{} -> {}", wire.event_name, wire.target_agent),
            })
            .collect();
        let entries: Vec<audit::Ended<'_>> = ended
            .iter()
            .zip(&targets)
            .map(|((wire, took, delivered), target)| audit::Ended {
                call: audit::Call {
                    kind: audit::Kind::Event,
                    caller_app: &emit.emitter,
                    caller_agent: audit::agent_on_chain(&emit.chain, 0),
                    callee_app: &wire.subscriber_app,
                    target,
                    chain: &emit.chain,
                },
                duration: *took,
                outcome: match delivered {
                    Delivered::Handled | Delivered::Woken => audit::Outcome::Ok,
                    Delivered::NoHandler => audit::Outcome::Failed(format!(
                        "no_handler: `{}` registers no handler for `{}`; the handler result is {{\"ok\": false, \"no_handler\": true}}",
                        wire.subscriber_app, wire.event_name
                    )),
                    Delivered::Failed(reason) => audit::Outcome::Failed(reason.clone()),
                },
            })
            .collect();
        audit::record_all(self.serving.registry().store(), &emit.tenant, &entries).await;
    }
}
