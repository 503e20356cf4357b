//! The audit log of cross-app calls: [`record`] writes one entry per `apps.invoke`,
//! `apps.fetch`, team delegation and event delivery with how it ended. Recording never fails
//! the call: a store error is logged instead.

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
}

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
