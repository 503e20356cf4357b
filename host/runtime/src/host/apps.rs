//! `apps`: invoking another app's agent and fetching its routes; the platform checks the grant.

use atrium_manifest::sandbox;

use crate::bindings::atrium::app::apps;
use crate::state::CallContext;
use crate::{AgentCallError, FetchResponse, Refused};

/// The `apps` capability's view of a call.
pub(crate) struct Apps<'a> {
    pub call: &'a CallContext,
}

super::capability!(crate::bindings::atrium::app::apps, Apps);

impl apps::Host for Apps<'_> {
    async fn invoke(
        &mut self,
        app: String,
        agent: String,
        prompt: String,
    ) -> wasmtime::Result<Result<String, AgentCallError>> {
        let call = self.call;
        let chain = match sandbox::invoke(&call.chain, call.info.public_route, &app, &agent) {
            Ok(chain) => chain,
            Err(refusal) => {
                let what = Refused::Invoke {
                    app: &app,
                    agent: &agent,
                };
                call.platform
                    .refused(&call.info, &call.chain, what, &refusal.reason)
                    .await;
                return Ok(Err(refusal.into()));
            }
        };
        Ok(call
            .platform
            .invoke_app(&call.info, &chain, &app, &agent, &prompt)
            .await)
    }

    async fn fetch(
        &mut self,
        app: String,
        path: String,
        method: String,
        body: Option<Vec<u8>>,
    ) -> wasmtime::Result<Result<FetchResponse, AgentCallError>> {
        let call = self.call;
        let (method, chain) = match sandbox::fetch(&call.chain, &path, &method) {
            Ok(checked) => checked,
            Err(refusal) => {
                let what = Refused::Fetch {
                    app: &app,
                    method: &method,
                    path: &path,
                };
                call.platform
                    .refused(&call.info, &call.chain, what, &refusal.reason)
                    .await;
                return Ok(Err(refusal.into()));
            }
        };
        Ok(call
            .platform
            .fetch_app(&call.info, &chain, &app, &path, method.as_str(), body)
            .await)
    }
}
