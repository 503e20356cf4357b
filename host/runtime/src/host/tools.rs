//! `tools`: platform tools behind the install's scopes.

use std::collections::BTreeSet;

use atrium_manifest::sandbox::{self, Decision, ToolRefusal};

use crate::ToolCallError;
use crate::bindings::atrium::app::tools;
use crate::state::CallContext;

/// The `tools` capability's view of a call.
pub(crate) struct Tools<'a> {
    pub call: &'a CallContext,
    pub granted_scopes: &'a BTreeSet<String>,
}

super::capability!(crate::bindings::atrium::app::tools, Tools);

impl Tools<'_> {
    async fn call_tool(&self, name: &str, args: &str) -> Result<String, ToolCallError> {
        let args = sandbox::tool_arguments(name, args)?;
        let platform = &self.call.platform;
        let Some(needs) = platform.tool_scopes(name) else {
            return Err(ToolRefusal::new(
                name,
                Decision::UnknownTool,
                format!("the platform has no tool named `{name}`"),
            )
            .into());
        };
        sandbox::tool_scopes(&*self.call.manifest, name, &needs, |s| {
            self.granted_scopes.contains(s)
        })?;
        platform
            .call_tool(&self.call.info, name, args)
            .await
            .map(|v| v.to_string())
    }
}

impl tools::Host for Tools<'_> {
    async fn call(
        &mut self,
        name: String,
        args: String,
    ) -> wasmtime::Result<Result<String, ToolCallError>> {
        Ok(self.call_tool(&name, &args).await)
    }
}
