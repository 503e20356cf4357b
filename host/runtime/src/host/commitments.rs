//! `commitments`: promises an agent makes, recorded by the platform.

use atrium_manifest::sandbox;

use crate::ToolCallError;
use crate::bindings::atrium::app::commitments;
use crate::platform::Commitment;
use crate::state::CallContext;

/// The `commitments` capability's view of a call.
pub(crate) struct Commitments<'a> {
    pub call: &'a CallContext,
}

super::capability!(crate::bindings::atrium::app::commitments, Commitments);

impl commitments::Host for Commitments<'_> {
    async fn add(
        &mut self,
        title: String,
        content: String,
        from_agent: String,
        due_at: Option<String>,
    ) -> wasmtime::Result<Result<String, ToolCallError>> {
        if let Err(refusal) = sandbox::commitment(
            &*self.call.manifest,
            &title,
            &content,
            &from_agent,
            due_at.as_deref(),
        ) {
            return Ok(Err(refusal.into()));
        }
        let commitment = Commitment {
            title,
            content,
            from_agent,
            due_at,
        };
        Ok(self
            .call
            .platform
            .add_commitment(&self.call.info, commitment)
            .await)
    }
}
