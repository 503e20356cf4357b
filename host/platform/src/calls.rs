//! Cross-app calls and team delegation: `apps.invoke` and `apps.fetch` here, `team.delegate`
//! (and the model's `team-delegate` tool) in the runner's [`crate::runner::team`] (re-exported
//! here), each one function that every entry point calls: a
//! component's import (through [`crate::install_platform::InstallPlatform`]), an `/api/mcp/*` callback
//! of an app outside the runtime, and a model's tool call in the agent runner. Each function
//! applies the sandbox's chain rule and the team check, then the grant check
//! ([`crate::grants::honoured`]), and writes the call's audit entry ([`audit::Open`]) once,
//! however it ends.
//!
//! A component's import reaches the platform with its chain already checked and entered by the
//! runtime's sandbox (which also runs in the SDKs' test doubles and the local runner):
//! [`Chain::Entered`]. The runtime reports what it refused through [`refused`], so the log
//! holds those calls too. Every other entry point hands the caller's chain ([`Chain::Caller`])
//! and the rule is applied here.

use atrium_manifest::sandbox::{self, ChainContext};
use atrium_runtime::FetchResponse;

use crate::audit;
use crate::registry::Actor;
use crate::runner::AgentReply;
pub use crate::runner::team::{CallFailure, Chain, Delegation, RunBounds, delegate};
use crate::runner::team::{ran, run};
use crate::serving::Serving;

/// `apps.invoke`: runs agent `agent` of `callee`'s install for `tenant`, asked by `caller`,
/// once the grant from `caller` to `callee` admits it. The callee's agent runs under the
/// callee's install: its scopes, settings, tools and model bill.
pub async fn invoke(
    serving: &Serving,
    tenant: &Actor,
    caller: &str,
    callee: &str,
    agent: &str,
    prompt: &str,
    chain: Chain<'_>,
) -> Result<AgentReply, CallFailure> {
    // The agent that called: the last on the caller's chain, the one before the callee's on
    // an entered one.
    let caller_agent = match chain {
        Chain::Caller { chain, .. } => audit::agent_on_chain(chain, 0),
        Chain::Entered(chain) => audit::agent_on_chain(chain, 1),
    };
    let mut open = audit::Open::start(
        serving.registry().store(),
        tenant,
        &audit::Call {
            kind: audit::Kind::Invoke,
            caller_app: caller,
            caller_agent,
            callee_app: callee,
            target: agent,
            chain: chain.as_given(),
        },
    );
    let entered = match chain {
        Chain::Entered(chain) => chain.clone(),
        Chain::Caller {
            chain,
            public_route,
        } => match sandbox::invoke(chain, public_route, callee, agent) {
            Ok(entered) => entered,
            Err(r) => {
                open.end(audit::Outcome::Refused(r.reason.clone())).await;
                return Err(CallFailure::Refused(r.reason));
            }
        },
    };
    open.set_chain(&entered);
    if let Err(reason) = crate::grants::honoured(serving, tenant, caller, callee, agent).await {
        open.end(audit::Outcome::Refused(reason.clone())).await;
        return Err(CallFailure::Refused(reason));
    }
    let answer = run(
        serving,
        tenant,
        callee,
        agent,
        prompt,
        entered,
        RunBounds::default(),
    )
    .await;
    open.end(ran(&answer)).await;
    answer
}

/// One `apps.fetch`: `caller` calls `method path` of `callee`'s routes for `tenant`.
#[derive(Debug, Clone, Copy)]
pub struct Fetch<'a> {
    /// The calling app.
    pub caller: &'a str,
    /// The app whose route is called.
    pub callee: &'a str,
    /// The method, as the caller wrote it.
    pub method: &'a str,
    /// The path under the callee's routes.
    pub path: &'a str,
}

/// `apps.fetch`: calls a route of `fetch.callee` for `tenant` once the grant from the caller
/// admits its routes ([`crate::grants::ROUTE`]); a route's server error is recorded as a
/// failure and answered as it is.
pub async fn fetch(
    serving: &Serving,
    tenant: &Actor,
    fetch: Fetch<'_>,
    body: Option<Vec<u8>>,
    chain: Chain<'_>,
) -> Result<FetchResponse, CallFailure> {
    let target = format!("{} {}", fetch.method, fetch.path);
    let open = audit::Open::start(
        serving.registry().store(),
        tenant,
        &audit::Call {
            kind: audit::Kind::Fetch,
            caller_app: fetch.caller,
            caller_agent: audit::agent_on_chain(chain.as_given(), 0),
            callee_app: fetch.callee,
            target: &target,
            chain: chain.as_given(),
        },
    );
    let (method, chain) = match chain {
        Chain::Entered(chain) => (fetch.method.to_owned(), chain.clone()),
        Chain::Caller { chain, .. } => match sandbox::fetch(chain, fetch.path, fetch.method) {
            Ok((method, chain)) => (method.as_str().to_owned(), chain),
            Err(r) => {
                open.end(audit::Outcome::Refused(r.reason.clone())).await;
                return Err(CallFailure::Refused(r.reason));
            }
        },
    };
    let honoured = crate::grants::honoured(
        serving,
        tenant,
        fetch.caller,
        fetch.callee,
        crate::grants::ROUTE,
    )
    .await;
    if let Err(reason) = honoured {
        open.end(audit::Outcome::Refused(reason.clone())).await;
        return Err(CallFailure::Refused(reason));
    }
    let answer = serving
        .app_fetch(
            tenant,
            fetch.caller,
            fetch.callee,
            &method,
            fetch.path,
            body,
            &chain,
        )
        .await;
    let outcome = match &answer {
        Ok(response) if response.status < 500 => audit::Outcome::Ok,
        Ok(response) => audit::Outcome::Failed(format!("the route answered {}", response.status)),
        Err(reason) => audit::Outcome::Failed(reason.clone()),
    };
    open.end(outcome).await;
    answer.map_err(CallFailure::Failed)
}

/// A call of `caller_app` that the runtime's sandbox refused (a component's import): written
/// to the audit log as the other entry points' refusals are.
pub async fn refused(
    serving: &Serving,
    tenant: &Actor,
    caller_app: &str,
    chain: &ChainContext,
    what: atrium_runtime::Refused<'_>,
    reason: &str,
) {
    use atrium_runtime::Refused;
    let fetched;
    let (kind, caller_agent, callee_app, target) = match what {
        Refused::Delegate { target, from_agent } => {
            (audit::Kind::Delegate, Some(from_agent), caller_app, target)
        }
        Refused::Invoke { app, agent } => (
            audit::Kind::Invoke,
            audit::agent_on_chain(chain, 0),
            app,
            agent,
        ),
        Refused::Fetch { app, method, path } => {
            fetched = format!("{method} {path}");
            (
                audit::Kind::Fetch,
                audit::agent_on_chain(chain, 0),
                app,
                fetched.as_str(),
            )
        }
    };
    audit::Open::start(
        serving.registry().store(),
        tenant,
        &audit::Call {
            kind,
            caller_app,
            caller_agent,
            callee_app,
            target,
            chain,
        },
    )
    .end(audit::Outcome::Refused(reason.to_owned()))
    .await;
}
