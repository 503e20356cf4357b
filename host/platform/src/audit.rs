//! The audit log of cross-app calls: [`record`] writes one entry per `apps.invoke`,
//! `apps.fetch` and team delegation (and, with the events issue, each event delivery) with how
//! it ended. Recording never fails the call: a store error is logged instead.

use std::time::Instant;

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
}

impl Kind {
    /// `invoke`, `fetch`, `delegate`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Invoke => "invoke",
            Kind::Fetch => "fetch",
            Kind::Delegate => "delegate",
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
    let (label, reason) = match outcome {
        Outcome::Ok => ("ok", None),
        Outcome::Refused(reason) => ("refused", Some(reason.as_str())),
        Outcome::Failed(reason) => ("failed", Some(reason.as_str())),
    };
    let entry = NewAuditEntry {
        kind: call.kind.as_str(),
        caller_app: call.caller_app,
        caller_agent: call.caller_agent,
        callee_app: call.callee_app,
        target: call.target,
        outcome: label,
        reason,
        duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
        chain_depth: i64::from(call.chain.depth),
        visited_agents: &call.chain.visited,
    };
    if let Err(e) = store.record_audit(tenant, &entry).await {
        tracing::error!(error = %e, kind = call.kind.as_str(), caller = call.caller_app, callee = call.callee_app, "recording a cross-app call in the audit log failed");
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
