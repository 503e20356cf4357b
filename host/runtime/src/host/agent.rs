//! `agent`: asking one of the app's own agents.

use atrium_manifest::sandbox;

use crate::AgentCallError;
use crate::bindings::atrium::app::agent;
use crate::state::CallContext;

/// The `agent` capability's view of a call.
pub(crate) struct Agent<'a> {
    pub call: &'a CallContext,
}

super::capability!(crate::bindings::atrium::app::agent, Agent);

impl agent::Host for Agent<'_> {
    async fn ask(
        &mut self,
        prompt: String,
        agent: Option<String>,
    ) -> wasmtime::Result<Result<String, AgentCallError>> {
        let call = self.call;
        let (slug, chain) = match sandbox::ask(&*call.manifest, &call.chain, agent.as_deref()) {
            Ok(checked) => checked,
            Err(refusal) => return Ok(Err(refusal.into())),
        };
        Ok(call.platform.ask(&call.info, &chain, &slug, &prompt).await)
    }
}
