//! Team delegation: `app`'s agent asks a teammate (`team.delegate`, the model's
//! `team-delegate` tool, `/api/mcp/agent-invoke`), one function that every entry point calls
//! ([`delegate`]): the sandbox's chain rule and the team check, then the teammate's run, with
//! the call's audit entry ([`audit::Open`]) written once however it ends. The types of a call
//! that starts an agent's run ([`Chain`], [`RunBounds`], [`CallFailure`]) are here too, which
//! the cross-app calls (`crate::calls`) share.

use atrium_manifest::sandbox::{self, ChainContext};
use tokio::time::Instant;

use super::{AgentReply, AgentRun, Limits};
use crate::audit;
use crate::registry::Actor;
use crate::serving::Serving;
use crate::tools::{Name, Text};

/// The chain of a call as it reaches the platform.
#[derive(Debug, Clone, Copy)]
pub enum Chain<'a> {
    /// The caller's chain, the callee not entered yet: the platform applies the sandbox rule.
    /// `public_route` says the call comes from a public route's handler (which may not call
    /// other apps or agents).
    Caller {
        /// The caller's chain.
        chain: &'a ChainContext,
        /// Whether the caller is a public route's handler.
        public_route: bool,
    },
    /// The chain the runtime's sandbox already checked and entered (a component's import).
    Entered(&'a ChainContext),
}

impl<'a> Chain<'a> {
    /// The caller's chain from a request that is not a public route.
    #[must_use]
    pub fn caller(chain: &'a ChainContext) -> Self {
        Chain::Caller {
            chain,
            public_route: false,
        }
    }

    /// The chain as the audit log shows a call before it is entered.
    pub(crate) fn as_given(&self) -> &'a ChainContext {
        match self {
            Chain::Caller { chain, .. } | Chain::Entered(chain) => chain,
        }
    }
}

/// The arguments of the model's `team-delegate` tool, read as a platform tool's are (unknown
/// fields refused, each error naming its field); the schema the model is shown is generated
/// from this type, with the agent's teammates as the choices of `agent`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DelegateArgs {
    /// The teammate to ask.
    pub(crate) agent: Name,
    /// What to ask them.
    pub(crate) prompt: Text<1, MAX_PROMPT_CHARS>,
}

/// The longest prompt the model may give a teammate: as long as a message of a conversation.
pub(crate) const MAX_PROMPT_CHARS: usize = 20_000;

/// Why a cross-app call produced no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallFailure {
    /// A rule refused it (the chain, the team, the grant): the reason names the rule.
    #[error("{0}")]
    Refused(String),
    /// It ran and failed (the agent's run, the route): the reason says why.
    #[error("{0}")]
    Failed(String),
}

impl CallFailure {
    /// The sentence an app or a client is told.
    #[must_use]
    pub fn reason(&self) -> &str {
        match self {
            CallFailure::Refused(reason) | CallFailure::Failed(reason) => reason,
        }
    }
}

impl From<CallFailure> for atrium_runtime::AgentCallError {
    fn from(failure: CallFailure) -> Self {
        atrium_runtime::AgentCallError {
            reason: match failure {
                CallFailure::Refused(reason) | CallFailure::Failed(reason) => reason,
            },
        }
    }
}

/// How a run started by a call is bounded beyond its tenant's limits: a delegating run's
/// deadline, limits and channel carry over to its teammate.
#[derive(Debug, Clone, Default)]
pub struct RunBounds {
    /// A deadline the run must also keep.
    pub deadline: Option<Instant>,
    /// The limits; none: the tenant's.
    pub limits: Option<Limits>,
    /// The channel the request came on, for the workflows' `channels`.
    pub channel: Option<String>,
}

/// One `team.delegate`: `app`'s agent `from_agent` asks its teammate `target`.
#[derive(Debug, Clone, Copy)]
pub struct Delegation<'a> {
    /// The app of both agents.
    pub app: &'a str,
    /// The asking agent, whose team must hold `target`.
    pub from_agent: &'a str,
    /// The teammate asked.
    pub target: &'a str,
    /// What it is asked.
    pub prompt: &'a str,
}

/// `team.delegate` for `tenant`: the teammate's answer, its run bounded by `bounds`.
pub async fn delegate(
    serving: &Serving,
    tenant: &Actor,
    delegation: Delegation<'_>,
    chain: Chain<'_>,
    bounds: RunBounds,
) -> Result<AgentReply, CallFailure> {
    let Delegation {
        app,
        from_agent,
        target,
        prompt,
    } = delegation;
    // Opened before anything runs: a deadline that cuts the delegation short still leaves its
    // entry (`cancelled`).
    let mut open = audit::Open::start(
        serving.registry().store(),
        tenant,
        &audit::Call {
            kind: audit::Kind::Delegate,
            caller_app: app,
            caller_agent: Some(from_agent),
            callee_app: app,
            target,
            chain: chain.as_given(),
        },
    );
    let entered = match chain {
        Chain::Entered(chain) => chain.clone(),
        Chain::Caller {
            chain,
            public_route,
        } => {
            let checked = match manifest_of(serving, tenant, app).await {
                Ok(manifest) => {
                    sandbox::delegate(&manifest, chain, public_route, target, from_agent)
                        .map_err(|r| r.reason)
                }
                Err(reason) => Err(reason),
            };
            match checked {
                Ok(entered) => entered,
                Err(reason) => {
                    open.end(audit::Outcome::Refused(reason.clone())).await;
                    return Err(CallFailure::Refused(reason));
                }
            }
        }
    };
    open.set_chain(&entered);
    let answer = run(serving, tenant, app, target, prompt, entered, bounds).await;
    open.end(ran(&answer)).await;
    answer
}

/// The manifest of `app`'s active install for `tenant`, or the refusal naming why there is
/// none.
async fn manifest_of(
    serving: &Serving,
    tenant: &Actor,
    app: &str,
) -> Result<atrium_manifest::Manifest, String> {
    let install = serving
        .active_install(tenant, app)
        .await
        .map_err(|e| e.to_string())?;
    let loaded = serving
        .app(app, &install.version)
        .await
        .map_err(|e| e.to_string())?;
    Ok(loaded.manifest().clone())
}

/// Runs `agent` of `app`'s install for `tenant`, asked `prompt`, on the `entered` chain.
pub(crate) async fn run(
    serving: &Serving,
    tenant: &Actor,
    app: &str,
    agent: &str,
    prompt: &str,
    entered: ChainContext,
    bounds: RunBounds,
) -> Result<AgentReply, CallFailure> {
    let mut run = AgentRun::new(tenant.clone(), app, Some(agent.to_owned()), prompt);
    run.chain = Some(entered);
    run.deadline = bounds.deadline;
    run.limits = bounds.limits;
    run.channel = bounds.channel;
    super::Runner::of(serving)
        .run_agent(run)
        .await
        .map_err(|e| CallFailure::Failed(e.reason))
}

/// How a call that ran ended, for the audit log.
pub(crate) fn ran<T>(answer: &Result<T, CallFailure>) -> audit::Outcome {
    match answer {
        Ok(_) => audit::Outcome::Ok,
        Err(CallFailure::Refused(reason)) => audit::Outcome::Refused(reason.clone()),
        Err(CallFailure::Failed(reason)) => audit::Outcome::Failed(reason.clone()),
    }
}
