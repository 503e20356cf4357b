//! `/api/mcp`: the platform's calls for apps outside the runtime (containers, through the
//! compatibility shim), authenticated by the `APP_MCP_TOKEN` of their call
//! ([`crate::principals::AppCaller`]). A component reaches the same capabilities through its
//! imports; both go through the same checks and the same agent runner.

use crate::routing::{Routes, post};
use atrium_manifest::sandbox::{
    self, ChainContext, ChainHeaderError, HEADER_CHAIN_DEPTH, HEADER_VISITED_AGENTS,
};
use atrium_platform::calls;
use atrium_platform::runner::RunUsage;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};

use crate::principals::AppCaller;
use crate::{ApiError, HostState, JsonBody};

/// `POST /api/mcp/agent-invoke`: team delegation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentInvoke {
    /// The agent of the calling app to run.
    pub agent: String,
    /// What it is asked.
    pub prompt: String,
    /// The calling agent, whose team must hold `agent`.
    pub from_agent: String,
}

/// What a run spent.
#[derive(Debug, Serialize)]
pub struct UsageView {
    /// Model steps.
    pub steps: u32,
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// Cost in US dollars.
    pub cost_usd: f64,
}

impl From<RunUsage> for UsageView {
    fn from(u: RunUsage) -> Self {
        UsageView {
            steps: u.steps,
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cost_usd: u.cost_micros as f64 / 1_000_000.0,
        }
    }
}

/// The answer of `POST /api/mcp/agent-invoke`.
#[derive(Debug, Serialize)]
pub struct AgentInvoked {
    /// The agent that answered.
    pub agent: String,
    /// Its answer.
    pub answer: String,
    /// The chain depth the agent ran at.
    pub chain_depth: u32,
    /// What the run spent.
    pub usage: UsageView,
}

/// A refused agent call: 403 `agent_call_refused`, the `AgentCallError` reason as the message.
fn refused(reason: String) -> ApiError {
    ApiError::forbidden("agent_call_refused", reason)
}

/// The chain of the request: the caller's headers, never shallower than the chain of the call
/// its token was issued for, and never forgetting an agent on it.
fn chain(headers: &HeaderMap, token: &ChainContext) -> Result<ChainContext, ApiError> {
    let header = |name: &str| -> Result<Option<&str>, ApiError> {
        headers
            .get(name)
            .map(|v| {
                v.to_str()
                    .map_err(|_| ApiError::bad_request(format!("{name} must be text"), Some(name)))
            })
            .transpose()
    };
    let sent =
        ChainContext::from_headers(header(HEADER_CHAIN_DEPTH)?, header(HEADER_VISITED_AGENTS)?)
            .map_err(|e| match e {
                ChainHeaderError::Malformed { header, message } => {
                    ApiError::bad_request(message, Some(header))
                }
                ChainHeaderError::Refused(r) => refused(r.reason),
            })?;
    let mut visited = token.visited.clone();
    for agent in sent.visited {
        if !visited.contains(&agent) {
            visited.push(agent);
        }
    }
    Ok(ChainContext {
        depth: sent.depth.max(token.depth),
        visited,
    })
}

/// The chain of a request of `app` (its headers, floored by its token's) and the app's active
/// install for the token's tenant (404 when there is none).
async fn calling(
    serving: &atrium_platform::serving::Serving,
    app: &atrium_platform::identity::app_token::AppToken,
    headers: &HeaderMap,
) -> Result<
    (
        ChainContext,
        atrium_platform::registry::Actor,
        atrium_store::Install,
    ),
    ApiError,
> {
    let token_chain = ChainContext {
        depth: app.chain_depth.max(1),
        visited: app.visited_agents.clone(),
    };
    let chain = chain(headers, &token_chain)?;
    let actor = app.actor();
    let install = serving
        .active_install(&actor, &app.app_slug)
        .await
        .map_err(|_| {
            ApiError::not_found(format!(
                "`{}` is not installed and active for this tenant",
                app.app_slug
            ))
        })?;
    Ok((chain, actor, install))
}

/// Runs an agent of the calling app for the token's tenant, through the team checks: 200 with
/// the answer; 403 `agent_call_refused` for a check that refused (the reason names it); 422
/// `agent_call_failed` for a run that produced no answer (step limit, budget, deadline, model).
pub async fn agent_invoke(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<AgentInvoke>,
) -> Result<Json<AgentInvoked>, ApiError> {
    let serving = state.serving()?;
    let (chain, actor, _install) = calling(serving, &app, &headers).await?;
    let delegation = calls::Delegation {
        app: &app.app_slug,
        from_agent: &body.from_agent,
        target: &body.agent,
        prompt: &body.prompt,
    };
    let chain = calls::Chain::caller(&chain);
    let bounds = calls::RunBounds::default();
    let reply = calls::delegate(serving, &actor, delegation, chain, bounds)
        .await
        .map_err(|e| match e {
            calls::CallFailure::Refused(reason) => refused(reason),
            calls::CallFailure::Failed(reason) => {
                ApiError::unprocessable("agent_call_failed", None, reason, None)
            }
        })?;
    let depth = reply.chain_depth;
    Ok(Json(AgentInvoked {
        agent: reply.agent,
        answer: reply.content,
        chain_depth: depth,
        usage: reply.usage.into(),
    }))
}

/// `POST /api/mcp/rooms-post`: a post of one of the calling app's agents.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomsPost {
    /// The room.
    pub room_id: String,
    /// 1 to 20,000 characters, not blank.
    pub content: String,
    /// The agent of the calling app that posts (required).
    #[serde(default)]
    pub from_agent: String,
    /// A JSON object stored with the message.
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A refused post, as the `ToolCallError` a container's SDK raises: the decision is the
/// error's `code`, the missing scopes in `error.needed_scopes`.
fn post_refused(e: &atrium_runtime::ToolCallError) -> ApiError {
    let code = sandbox::Decision::ALL
        .iter()
        .find(|d| d.as_str() == e.decision)
        .map_or("failed", |d| d.as_str());
    match code {
        "unknown_room" => ApiError::not_offered("unknown_room", e.message.clone()),
        "not_member" => ApiError::forbidden("not_member", e.message.clone()),
        "scope_denied" => ApiError::refused(
            "scope_denied",
            e.message.clone(),
            "needed_scopes",
            e.needed_scopes.clone(),
        ),
        "invalid_arguments" => ApiError::bad_request(e.message.clone(), None),
        "unknown_agent" => ApiError::field("from_agent", e.message.clone()),
        _ => ApiError::unavailable("failed", e.message.clone()),
    }
}

/// Posts to a room as `from_agent` of the calling app, through the checks a component's
/// `rooms.post` passes: 201 with `{message, routed_targets}`; 400 for a missing or unknown
/// `from_agent`, empty or too long content; 403 `not_member`, 404 `unknown_room`, 422
/// `scope_denied` without `rooms.write`.
pub async fn rooms_post(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<RoomsPost>,
) -> Result<(axum::http::StatusCode, Json<super::rooms::PostedView>), ApiError> {
    let serving = state.serving()?;
    let (chain, actor, install) = calling(serving, &app, &headers).await?;
    let manifest = serving
        .registry()
        .manifest_of(&app.app_slug, &install.version)
        .await
        .map_err(|e| ApiError::internal("loading the app failed", &e))?;
    let metadata = body
        .metadata
        .map(|m| serde_json::Value::Object(m).to_string());
    let checked = sandbox::room_post(
        &manifest,
        &body.from_agent,
        &body.content,
        metadata.as_deref(),
        |s| install.granted_scopes.iter().any(|g| g == s),
    )
    .map_err(|r| match r.argument {
        // A refused argument is the body's field.
        Some(field) if r.decision != sandbox::Decision::ScopeDenied => {
            ApiError::field(field, r.message)
        }
        _ => post_refused(&r.into()),
    })?;
    let request = atrium_runtime::RoomPostRequest {
        room_id: body.room_id,
        content: body.content,
        sender_ref: checked.sender_ref,
        sender_display: checked.sender_display,
        metadata: checked.metadata,
    };
    let posted = atrium_platform::rooms::Rooms::of(serving)
        .post_as_agent(&actor, &app.app_slug, request, &chain)
        .await
        .map_err(|e| post_refused(&e))?;
    Ok((
        axum::http::StatusCode::CREATED,
        Json(super::rooms::PostedView::of(&app.tenant_id, posted)),
    ))
}

/// The routes for apps outside the runtime.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/mcp/agent-invoke", post(agent_invoke))
        .route("/mcp/rooms-post", post(rooms_post))
}
