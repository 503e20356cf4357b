//! `context`: facts about the call, and the public address of the app's public routes.

use atrium_manifest::sandbox;

use crate::CallInfo;
use crate::bindings::atrium::app::context;
use crate::state::CallContext;

/// The `context` capability's view of a call.
pub(crate) struct Context<'a> {
    pub call: &'a CallContext,
}

super::capability!(crate::bindings::atrium::app::context, Context);

impl context::Host for Context<'_> {
    async fn current(&mut self) -> wasmtime::Result<CallInfo> {
        Ok(self.call.info.clone())
    }

    async fn public_callback_url(
        &mut self,
        path: String,
    ) -> wasmtime::Result<Result<String, String>> {
        Ok(
            sandbox::public_callback_path(&*self.call.manifest, &path).map(|()| {
                self.call
                    .platform
                    .public_callback_url(&self.call.info, &path)
            }),
        )
    }
}
