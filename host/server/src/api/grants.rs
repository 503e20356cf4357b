//! `/api/grants`: the grants between the tenant's apps, for its admins (the rules are
//! `atrium_platform::grants`). The caller side asks, the callee side approves with the agents
//! it admits, either side revokes.

use crate::routing::{Routes, get, post};
use atrium_platform::grants::{self, GrantState};
use atrium_store::Grant;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::views::time;
use crate::page::{Listed, Page, PageRequest, SortedBy};
use crate::principals::{TenantAdmin, actor};
use crate::{ApiError, HostState, JsonBody, OptionalJsonBody};

/// A grant as answered.
#[derive(Debug, Serialize)]
pub struct GrantView {
    /// The app that calls.
    pub caller_app: String,
    /// The app it calls.
    pub callee_app: String,
    /// `pending_callee_approval`, `active` or `revoked`.
    pub state: GrantState,
    /// The callee's agents admitted (`__route__`: its routes).
    pub allowed_agents: Vec<String>,
    /// When the caller side approved.
    pub caller_approved_at: Option<String>,
    /// When the callee side approved.
    pub callee_approved_at: Option<String>,
    /// When it was revoked.
    pub revoked_at: Option<String>,
    /// Creation.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl From<Grant> for GrantView {
    fn from(g: Grant) -> Self {
        GrantView {
            state: grants::state(&g),
            caller_app: g.caller_app,
            callee_app: g.callee_app,
            allowed_agents: g.allowed_agents,
            caller_approved_at: g.caller_approved_at.map(time),
            callee_approved_at: g.callee_approved_at.map(time),
            revoked_at: g.revoked_at.map(time),
            created_at: time(g.created_at),
            updated_at: time(g.updated_at),
        }
    }
}

impl Listed for GrantView {
    const KEY: &'static str = "grants";
}

impl SortedBy for GrantView {
    fn sort_key(&self) -> String {
        format!("{}/{}", self.caller_app, self.callee_app)
    }
}

/// `POST /api/grants`: the caller side asks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestGrant {
    /// The app that will call.
    pub caller_app: String,
    /// The app it will call.
    pub callee_app: String,
    /// The callee's agents it asks for (`__route__` for its routes): the same name as the
    /// approval's and the grant's.
    pub allowed_agents: Vec<String>,
}

/// `POST /api/grants/{caller}/{callee}/approve`: the callee side approves.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproveGrant {
    /// The callee's agents it admits (`__route__` for its routes).
    pub allowed_agents: Vec<String>,
}

/// `POST /api/grants/{caller}/{callee}/revoke`: no body needed.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeGrant {}

/// The caller side asks: 201 with a new (or restarted) pending grant, 200 with a pending or
/// active one left as it is.
pub async fn request(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    JsonBody(body): JsonBody<RequestGrant>,
) -> Result<(StatusCode, Json<GrantView>), ApiError> {
    let serving = state.serving()?;
    let (grant, started) = grants::request(
        serving,
        &actor(&admin),
        &body.caller_app,
        &body.callee_app,
        &body.allowed_agents,
    )
    .await
    .map_err(ApiError::from)?;
    let status = if started {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(grant.into())))
}

/// The callee side approves: 200 with the active grant.
pub async fn approve(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path((caller, callee)): Path<(String, String)>,
    JsonBody(body): JsonBody<ApproveGrant>,
) -> Result<Json<GrantView>, ApiError> {
    let serving = state.serving()?;
    let grant = grants::approve(
        serving,
        &actor(&admin),
        &caller,
        &callee,
        &body.allowed_agents,
    )
    .await
    .map_err(ApiError::from)?;
    Ok(Json(grant.into()))
}

/// Either side revokes: 200 with the revoked grant.
pub async fn revoke(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path((caller, callee)): Path<(String, String)>,
    OptionalJsonBody(_): OptionalJsonBody<RevokeGrant>,
) -> Result<Json<GrantView>, ApiError> {
    let serving = state.serving()?;
    let grant = grants::revoke(serving, &actor(&admin), &caller, &callee)
        .await
        .map_err(ApiError::from)?;
    Ok(Json(grant.into()))
}

/// The tenant's grants, by caller then callee.
pub async fn list(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    page: PageRequest,
) -> Result<Json<Page<GrantView>>, ApiError> {
    let after = page.after.as_deref().and_then(|key| key.split_once('/'));
    if page.after.is_some() && after.is_none() {
        return Err(ApiError::field(
            "cursor",
            "cursor is not one this API gave: pass back `next_cursor` as it came",
        ));
    }
    let rows = state
        .store
        .grants_page(&admin.key(), after, page.fetch())
        .await?;
    Ok(Json(Page::of(
        rows.into_iter().map(GrantView::from).collect(),
        &page,
    )))
}

/// One grant of the tenant.
pub async fn detail(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path((caller, callee)): Path<(String, String)>,
) -> Result<Json<GrantView>, ApiError> {
    state
        .store
        .grant(&admin.key(), &caller, &callee)
        .await?
        .map(|g| Json(g.into()))
        .ok_or_else(|| ApiError::not_found(format!("no grant from `{caller}` to `{callee}`")))
}

/// The routes of grants.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/grants", post(request).get(list))
        .route("/grants/{caller}/{callee}", get(detail))
        .route("/grants/{caller}/{callee}/approve", post(approve))
        .route("/grants/{caller}/{callee}/revoke", post(revoke))
}
