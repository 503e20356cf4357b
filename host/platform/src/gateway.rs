//! Chat for the platform's own callers: the gateway the /v1 API routes through and the
//! metering writer that bills the tenant. The agent runner, the orchestrator, heartbeats and
//! the platform tool `chat.complete` call it.

use std::sync::Arc;

use atrium_store::TenantKey;

/// What chat needs: the gateway the /v1 API routes through and the metering writer that
/// bills the tenant.
#[derive(Clone)]
pub(crate) struct Chat {
    pub(crate) gateway: Arc<atrium_inference::Gateway>,
    pub(crate) metering: atrium_store::Metering,
}

impl Chat {
    /// Meters `completed` to `tenant`, naming the app and the agent it was for (none for the
    /// platform's own calls); answers its cost in micro-dollars.
    pub(crate) async fn meter(
        &self,
        tenant: &TenantKey,
        completed: &atrium_inference::Completed,
        app_slug: Option<&str>,
        agent: Option<&str>,
    ) -> i64 {
        let outcome = &completed.outcome;
        let cost =
            completed
                .model
                .cost_micros(outcome.prompt_tokens, outcome.completion_tokens, false);
        self.metering
            .record(atrium_store::UsageRecord {
                org_id: tenant.org_id.clone(),
                tenant_id: tenant.tenant_id.clone(),
                kind: "chat".into(),
                provider: completed.model.provider.as_str().into(),
                model: completed.model.id.clone(),
                prompt_tokens: i64::try_from(outcome.prompt_tokens).unwrap_or(i64::MAX),
                completion_tokens: i64::try_from(outcome.completion_tokens).unwrap_or(i64::MAX),
                cost_micros: cost,
                batch: false,
                app_slug: app_slug.map(str::to_owned),
                agent: agent.map(str::to_owned),
            })
            .await;
        cost
    }
}
