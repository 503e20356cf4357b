//! The audit log of cross-app calls: one entry per `apps.invoke`, `apps.fetch`, team
//! delegation and event delivery with how it ended. Recording never fails the call: a store
//! error is logged instead.
//!
//! A call that can be cut off (a deadline, a client that disconnects) is [`Open`]ed before it
//! starts: its entry is written once, by [`Open::end`] with how it ended, or, when the call is
//! dropped before that, by a task of its own with the outcome `cancelled`. Either write runs to
//! its end whatever is cancelled around it, so a call that ran always has its entry.

use std::time::{Duration, Instant};

use atrium_manifest::sandbox::ChainContext;
use atrium_store::{NewAuditEntry, Store};

use crate::registry::Actor;

/// What kind of cross-app call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `apps.invoke`.
    Invoke,
    /// `apps.fetch`.
    Fetch,
    /// `team.delegate` or `POST /api/mcp/agent-invoke`.
    Delegate,
    /// One delivery of an `events.emit` over a wire.
    Event,
}

impl Kind {
    /// `invoke`, `fetch`, `delegate`, `event`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Invoke => "invoke",
            Kind::Fetch => "fetch",
            Kind::Delegate => "delegate",
            Kind::Event => "event",
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It answered.
    Ok,
    /// A rule refused it (a grant, a team check, the chain).
    Refused(String),
    /// It ran and failed (the agent's run, the route's handler).
    Failed(String),
    /// It was cut off before it ended (a deadline, a client that disconnected, a shutdown):
    /// what it did until then stays done.
    Cancelled,
}

/// The reason an entry of a cut-off call gives.
pub const CANCELLED: &str =
    "cut off before it ended (a deadline, a client that disconnected, or a shutdown)";

/// One cross-app call, as the log names it.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// Its kind.
    pub kind: Kind,
    /// The calling app.
    pub caller_app: &'a str,
    /// The calling agent, when the call came from one.
    pub caller_agent: Option<&'a str>,
    /// The app called.
    pub callee_app: &'a str,
    /// What of it (an agent, `GET /path`).
    pub target: &'a str,
    /// The chain the call ran on (the callee's hop included when it got that far).
    pub chain: &'a ChainContext,
}

/// Records `call` of `tenant`, started at `started`, ended as `outcome`.
pub async fn record(
    store: &Store,
    tenant: &Actor,
    call: &Call<'_>,
    started: Instant,
    outcome: &Outcome,
) {
    let ended = Ended {
        call: call.clone(),
        duration: started.elapsed(),
        outcome: outcome.clone(),
    };
    record_all(store, tenant, std::slice::from_ref(&ended)).await;
}

/// A call that ended: how long it took and how.
#[derive(Debug, Clone)]
pub struct Ended<'a> {
    /// The call.
    pub call: Call<'a>,
    /// How long it took.
    pub duration: Duration,
    /// How it ended.
    pub outcome: Outcome,
}

/// Records the calls of `tenant` that `ended`, in one write.
pub async fn record_all(store: &Store, tenant: &Actor, ended: &[Ended<'_>]) {
    let entries: Vec<NewAuditEntry<'_>> = ended
        .iter()
        .map(|e| {
            let (label, reason) = match &e.outcome {
                Outcome::Ok => ("ok", None),
                Outcome::Refused(reason) => ("refused", Some(reason.as_str())),
                Outcome::Failed(reason) => ("failed", Some(reason.as_str())),
                Outcome::Cancelled => ("cancelled", Some(CANCELLED)),
            };
            NewAuditEntry {
                kind: e.call.kind.as_str(),
                caller_app: e.call.caller_app,
                caller_agent: e.call.caller_agent,
                callee_app: e.call.callee_app,
                target: e.call.target,
                outcome: label,
                reason,
                duration_ms: i64::try_from(e.duration.as_millis()).unwrap_or(i64::MAX),
                chain_depth: i64::from(e.call.chain.depth),
                visited_agents: &e.call.chain.visited,
            }
        })
        .collect();
    if let Err(e) = store.record_audits(tenant, &entries).await {
        tracing::error!(error = %e, entries = entries.len(), "recording cross-app calls in the audit log failed");
    }
}

/// A call under way whose entry is still to be written (see the module docs).
#[must_use = "a dropped Open records its call as cancelled"]
pub struct Open {
    store: Store,
    tenant: Actor,
    started: Instant,
    /// The call, until its entry is written.
    call: Option<OwnedCall>,
}

/// A [`Call`] that owns its parts, for a write after the caller is gone.
#[derive(Debug, Clone)]
struct OwnedCall {
    kind: Kind,
    caller_app: String,
    caller_agent: Option<String>,
    callee_app: String,
    target: String,
    chain: ChainContext,
}

impl OwnedCall {
    fn call(&self) -> Call<'_> {
        Call {
            kind: self.kind,
            caller_app: &self.caller_app,
            caller_agent: self.caller_agent.as_deref(),
            callee_app: &self.callee_app,
            target: &self.target,
            chain: &self.chain,
        }
    }
}

impl Open {
    /// `call` of `tenant` starts now.
    pub fn start(store: &Store, tenant: &Actor, call: &Call<'_>) -> Open {
        Open {
            store: store.clone(),
            tenant: tenant.clone(),
            started: Instant::now(),
            call: Some(OwnedCall {
                kind: call.kind,
                caller_app: call.caller_app.to_owned(),
                caller_agent: call.caller_agent.map(str::to_owned),
                callee_app: call.callee_app.to_owned(),
                target: call.target.to_owned(),
                chain: call.chain.clone(),
            }),
        }
    }

    /// The call goes on at `chain` (the callee's hop, once entered).
    pub fn set_chain(&mut self, chain: &ChainContext) {
        if let Some(call) = &mut self.call {
            call.chain = chain.clone();
        }
    }

    /// The call ended as `outcome`: its entry is written (in a task of its own, so that a
    /// caller cut off while waiting loses nothing).
    pub async fn end(mut self, outcome: Outcome) {
        if let Some(write) = self.write(outcome) {
            let _ = tokio::spawn(write).await;
        }
    }

    /// The write of the entry, once.
    fn write(&mut self, outcome: Outcome) -> Option<impl Future<Output = ()> + Send + 'static> {
        let call = self.call.take()?;
        let (store, tenant) = (self.store.clone(), self.tenant.clone());
        let duration = self.started.elapsed();
        Some(async move {
            let ended = Ended {
                call: call.call(),
                duration,
                outcome,
            };
            record_all(&store, &tenant, std::slice::from_ref(&ended)).await;
        })
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        let Some(write) = self.write(Outcome::Cancelled) else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(write);
            }
            Err(_) => tracing::error!(
                "a cross-app call was cut off outside a runtime: its audit entry is not written"
            ),
        }
    }
}

/// The agent (the slug of a `<app>:<agent>` key) `back` places before the end of `chain`'s
/// visited agents: 0 is the last one.
#[must_use]
pub fn agent_on_chain(chain: &ChainContext, back: usize) -> Option<&str> {
    chain
        .visited
        .iter()
        .rev()
        .nth(back)
        .map(|key| key.split_once(':').map_or(key.as_str(), |(_, agent)| agent))
}
