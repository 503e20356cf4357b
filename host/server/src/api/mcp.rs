//! `/api/mcp`: the platform's calls for apps outside the runtime (containers, through the
//! compatibility shim), authenticated by the `APP_MCP_TOKEN` of their call
//! ([`crate::principals::AppCaller`]). A component reaches the same capabilities through its
//! imports; each endpoint here is one method of the call's `atrium_runtime::Imports`
//! (`atrium_platform::containers::imports`), the very host import a component's call runs,
//! so both go through the same checks, the same platform functions and the same agent runner.

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

/// A refused tool call or post, as the `ToolCallError` a container's SDK raises: the decision
/// is the error's `code`, the missing scopes in `error.needed_scopes`: 404 `unknown_tool` and
/// `unknown_room`, 403 `not_member`, 422 `scope_denied`, 400 `invalid_arguments` and
/// `unknown_agent` (naming `from_agent`), 501 `not_available` (a capability this host does
/// not offer), 502 for a tool whose answer broke its contract or whose upstream failed
/// (`invalid_result`, `network_error`), 503 `failed` for the rest.
fn post_refused(e: &atrium_runtime::ToolCallError) -> ApiError {
    let code = sandbox::Decision::ALL
        .iter()
        .find(|d| d.as_str() == e.decision)
        .map_or("failed", |d| d.as_str());
    let message = e.message.clone();
    match code {
        "unknown_room" => ApiError::not_offered("unknown_room", message),
        "unknown_tool" => ApiError::not_offered("unknown_tool", message),
        "not_member" => ApiError::forbidden("not_member", message),
        "scope_denied" => ApiError::refused(
            "scope_denied",
            message,
            "needed_scopes",
            e.needed_scopes.clone(),
        ),
        "invalid_arguments" => ApiError::bad_request(message, None),
        "unknown_agent" => ApiError::field("from_agent", message),
        "not_available" => ApiError::not_implemented("not_available", message),
        "invalid_result" | "network_error" => ApiError::bad_gateway(code_of(code), message),
        _ => ApiError::unavailable("failed", message),
    }
}

/// The static code of a decision's text.
fn code_of(decision: &str) -> &'static str {
    sandbox::Decision::ALL
        .iter()
        .find(|d| d.as_str() == decision)
        .map_or("failed", |d| d.as_str())
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

/// The imports of the call the token was issued for (its install, at the version that made
/// the call), on the request's chain.
async fn imports_of(
    state: &HostState,
    app: &atrium_platform::identity::app_token::AppToken,
    headers: &HeaderMap,
) -> Result<atrium_runtime::Imports, ApiError> {
    let serving = state.serving()?;
    let token_chain = ChainContext {
        depth: app.chain_depth.max(1),
        visited: app.visited_agents.clone(),
    };
    let chain = chain(headers, &token_chain)?;
    Ok(atrium_platform::containers::imports(serving, app, chain).await?)
}

/// A refused agent call of a container, its `AgentCallError` reason as the message.
fn agent_refused(e: &atrium_runtime::AgentCallError) -> ApiError {
    refused(e.reason.clone())
}

/// `POST /api/mcp/tools-call`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsCall {
    /// The platform tool (`records.query`, `memory.write`, ...).
    pub name: String,
    /// Its arguments, a JSON object (default `{}`).
    #[serde(default)]
    pub args: Option<serde_json::Value>,
}

/// A platform tool's answer.
#[derive(Debug, Serialize)]
pub struct ToolResult {
    /// What the tool answered.
    pub result: serde_json::Value,
}

/// Runs a platform tool for the calling app's install, through the checks of a component's
/// `tools.call` (the tool exists, the install holds its scopes, the arguments are an object):
/// 200 `{result}`; a refusal in the `ToolCallError` shape (`error.code` is the decision, 422
/// `scope_denied` with `error.needed_scopes`, 404 for an unknown tool).
pub async fn tools_call(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ToolsCall>,
) -> Result<Json<ToolResult>, ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    let args = body
        .args
        .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()))
        .to_string();
    let text = imports
        .tools_call(&body.name, &args)
        .await
        .map_err(|e| post_refused(&e))?;
    let result = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    Ok(Json(ToolResult { result }))
}

/// `POST /api/mcp/secrets-get`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretsGet {
    /// The secret's key (`^[A-Z][A-Z0-9_]{0,63}$`).
    pub key: String,
}

/// A secret, or none.
#[derive(Debug, Serialize)]
pub struct SecretValue {
    /// The value, `null` when unset, malformed or unreadable (the spec's `get` never fails).
    pub value: Option<String>,
}

/// A secret of the calling app for the token's tenant: 200 `{value}`, `null` when it is not
/// set (or the key is malformed), as a component's `secrets.get`.
pub async fn secrets_get(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SecretsGet>,
) -> Result<Json<SecretValue>, ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    Ok(Json(SecretValue {
        value: imports.secret(&body.key).await,
    }))
}

/// `POST /api/mcp/config`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigGet {
    /// One install setting; none for all of them.
    #[serde(default)]
    pub key: Option<String>,
}

/// Install settings.
#[derive(Debug, Serialize)]
pub struct ConfigValues {
    /// The setting asked for (`null` when it is not set), when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Every setting, when none was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
}

/// The install settings the tenant filled in (secret ones opened), as a component's
/// `config.get` and `config.all`: 200 `{value}` for `key`, `{settings}` without.
pub async fn config(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ConfigGet>,
) -> Result<Json<ConfigValues>, ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    let parse = |text: String| serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    Ok(Json(match body.key {
        Some(key) => ConfigValues {
            value: Some(
                imports
                    .config(&key)
                    .await
                    .map_or(serde_json::Value::Null, parse),
            ),
            settings: None,
        },
        None => ConfigValues {
            value: None,
            settings: Some(parse(imports.config_all().await)),
        },
    }))
}

/// `POST /api/mcp/apps-invoke`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppsInvoke {
    /// The other app.
    pub app: String,
    /// Its agent, which the grant must name.
    pub agent: String,
    /// What it is asked.
    pub prompt: String,
}

/// An agent's answer.
#[derive(Debug, Serialize)]
pub struct Answer {
    /// The answer.
    pub answer: String,
}

/// Runs an agent of another app through a grant, as a component's `apps.invoke`: 200
/// `{answer}`; 403 `agent_call_refused` with the `AgentCallError` reason (no grant, a public
/// route, chain depth, a cycle, a run that failed).
pub async fn apps_invoke(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<AppsInvoke>,
) -> Result<Json<Answer>, ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    let answer = imports
        .apps_invoke(&body.app, &body.agent, &body.prompt)
        .await
        .map_err(|e| agent_refused(&e))?;
    Ok(Json(Answer { answer }))
}

/// `POST /api/mcp/apps-fetch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppsFetch {
    /// The other app.
    pub app: String,
    /// The route's path, from `/`.
    pub path: String,
    /// GET, POST, PUT, DELETE or PATCH (default GET).
    #[serde(default)]
    pub method: Option<String>,
    /// The request body, as text.
    #[serde(default)]
    pub body: Option<String>,
}

/// What another app's route answered.
#[derive(Debug, Serialize)]
pub struct Fetched {
    /// Its status.
    pub status: u16,
    /// Its headers.
    pub headers: Vec<(String, String)>,
    /// Its body, as text (lossy for bytes that are not UTF-8).
    pub body: String,
}

/// Calls a route of another app through its `__route__` grant, as a component's
/// `apps.fetch`: 200 `{status, headers, body}`; 403 `agent_call_refused` with the reason.
pub async fn apps_fetch(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<AppsFetch>,
) -> Result<Json<Fetched>, ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    let method = body.method.unwrap_or_else(|| "GET".into());
    let response = imports
        .apps_fetch(
            &body.app,
            &body.path,
            &method,
            body.body.map(String::into_bytes),
        )
        .await
        .map_err(|e| agent_refused(&e))?;
    Ok(Json(Fetched {
        status: response.status,
        headers: response.headers,
        body: String::from_utf8_lossy(&response.body).into_owned(),
    }))
}

/// `POST /api/mcp/events-emit`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsEmit {
    /// An event the manifest `emits`.
    pub name: String,
    /// Its payload, JSON of at most 64 KiB (default `{}`).
    #[serde(default)]
    pub payload: Option<serde_json::Value>,
}

/// What an emit reached.
#[derive(Debug, Serialize)]
pub struct Emitted {
    /// How many approved wires carry the event; 0 means nobody is subscribed.
    pub wire_count: u32,
    /// How many subscribers were reached.
    pub dispatched: u32,
    /// How many of them failed.
    pub failures: u32,
}

/// Emits an event over the tenant's approved wires, as a component's `events.emit`: 200
/// `{wire_count, dispatched, failures}`; 403 `agent_call_refused` with the reason (an event
/// not in `emits`, a public route, a payload too large, chain depth).
pub async fn events_emit(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<EventsEmit>,
) -> Result<Json<Emitted>, ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    let payload = body
        .payload
        .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()))
        .to_string();
    let emitted = imports
        .events_emit(&body.name, &payload)
        .await
        .map_err(|e| agent_refused(&e))?;
    Ok(Json(Emitted {
        wire_count: emitted.wire_count,
        dispatched: emitted.dispatched,
        failures: emitted.failures,
    }))
}

/// `POST /api/mcp/agent-ask`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentAsk {
    /// What the agent is asked.
    pub prompt: String,
    /// One of the calling app's agents (its default one when none).
    #[serde(default)]
    pub agent: Option<String>,
}

/// Asks one of the calling app's agents, as a component's `agent.ask`: 200 `{answer}`; 403
/// `agent_call_refused` with the reason.
pub async fn agent_ask(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<AgentAsk>,
) -> Result<Json<Answer>, ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    let answer = imports
        .agent_ask(&body.prompt, body.agent.as_deref())
        .await
        .map_err(|e| agent_refused(&e))?;
    Ok(Json(Answer { answer }))
}

/// `POST /api/mcp/commitments-add`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitmentsAdd {
    /// 1 to 200 characters.
    pub title: String,
    /// At most 10,000 characters.
    #[serde(default)]
    pub content: String,
    /// The committing agent of the calling app.
    pub from_agent: String,
    /// When it is due, ISO-8601 with an offset.
    #[serde(default)]
    pub due_at: Option<String>,
}

/// The commitment recorded.
#[derive(Debug, Serialize)]
pub struct Committed {
    /// Its id.
    pub id: String,
}

/// Records a commitment of one of the calling app's agents, as a component's
/// `commitments.add`: 201 `{id}`; a refusal in the `ToolCallError` shape.
pub async fn commitments_add(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CommitmentsAdd>,
) -> Result<(axum::http::StatusCode, Json<Committed>), ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    let id = imports
        .commitments_add(
            &body.title,
            &body.content,
            &body.from_agent,
            body.due_at.as_deref(),
        )
        .await
        .map_err(|e| post_refused(&e))?;
    Ok((axum::http::StatusCode::CREATED, Json(Committed { id })))
}

/// `POST /api/mcp/public-url`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicUrl {
    /// A path that matches one of the app's public routes.
    pub path: String,
}

/// A public address.
#[derive(Debug, Serialize)]
pub struct PublicAddress {
    /// The address of the public route for the token's tenant.
    pub url: String,
}

/// The public address of one of the calling app's public routes for the token's tenant, as a
/// component's `context.public-callback-url`: 200 `{url}`; 400 naming `path` when it matches
/// no public route.
pub async fn public_url(
    State(state): State<HostState>,
    AppCaller(app): AppCaller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<PublicUrl>,
) -> Result<Json<PublicAddress>, ApiError> {
    let imports = imports_of(&state, &app, &headers).await?;
    let url = imports
        .public_callback_url(&body.path)
        .await
        .map_err(|e| ApiError::field("path", e))?;
    Ok(Json(PublicAddress { url }))
}

/// The routes for apps outside the runtime.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/mcp/agent-invoke", post(agent_invoke))
        .route("/mcp/rooms-post", post(rooms_post))
        .route("/mcp/tools-call", post(tools_call))
        .route("/mcp/secrets-get", post(secrets_get))
        .route("/mcp/config", post(config))
        .route("/mcp/apps-invoke", post(apps_invoke))
        .route("/mcp/apps-fetch", post(apps_fetch))
        .route("/mcp/events-emit", post(events_emit))
        .route("/mcp/agent-ask", post(agent_ask))
        .route("/mcp/commitments-add", post(commitments_add))
        .route("/mcp/public-url", post(public_url))
}
