//! `team`: delegation to another agent of the same app, within the caller's team.

use atrium_manifest::sandbox;

use crate::bindings::atrium::app::team;
use crate::state::CallContext;
use crate::{AgentCallError, Refused};

/// The `team` capability's view of a call.
pub(crate) struct Team<'a> {
    pub call: &'a CallContext,
}

super::capability!(crate::bindings::atrium::app::team, Team);

impl team::Host for Team<'_> {
    async fn delegate(
        &mut self,
        target: String,
        prompt: String,
        from_agent: String,
    ) -> wasmtime::Result<Result<String, AgentCallError>> {
        let call = self.call;
        let chain = match sandbox::delegate(
            &*call.manifest,
            &call.chain,
            call.info.public_route,
            &target,
            &from_agent,
        ) {
            Ok(chain) => chain,
            Err(refusal) => {
                let what = Refused::Delegate {
                    target: &target,
                    from_agent: &from_agent,
                };
                call.platform
                    .refused(&call.info, &call.chain, what, &refusal.reason)
                    .await;
                return Ok(Err(refusal.into()));
            }
        };
        Ok(call
            .platform
            .delegate(&call.info, &chain, &target, &prompt, &from_agent)
            .await)
    }
}
