//! `events`: emitting the events the manifest declares; the platform fans them out.

use atrium_manifest::sandbox;

use crate::bindings::atrium::app::events;
use crate::state::CallContext;
use crate::{AgentCallError, EmitResult};

/// The `events` capability's view of a call.
pub(crate) struct Events<'a> {
    pub call: &'a CallContext,
}

super::capability!(crate::bindings::atrium::app::events, Events);

impl events::Host for Events<'_> {
    async fn emit(
        &mut self,
        name: String,
        payload: String,
    ) -> wasmtime::Result<Result<EmitResult, AgentCallError>> {
        let call = self.call;
        let (payload, chain) = match sandbox::emit(
            &*call.manifest,
            &call.chain,
            call.info.public_route,
            &name,
            &payload,
        ) {
            Ok(checked) => checked,
            Err(refusal) => return Ok(Err(refusal.into())),
        };
        Ok(call.platform.emit(&call.info, &chain, &name, payload).await)
    }
}
