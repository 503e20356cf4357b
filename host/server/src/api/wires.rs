//! `/api/wires`: the event wires between the tenant's apps, for its admins (the rules are
//! `atrium_platform::wires`). The subscriber side proposes a wire for a subscription its
//! manifest declares, the emitter side approves, either side revokes; events flow only over an
//! active wire.

use crate::routing::{Routes, get, post};
use atrium_platform::wires::{self, WireRequest, WireState};
use atrium_store::{Wire, WireFilter};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::views::time;
use crate::page::{Listed, Page, PageRequest, SortedBy};
use crate::principals::{TenantAdmin, actor};
use crate::{ApiError, HostState, JsonBody, OptionalJsonBody, QueryParams};

/// A wire as answered.
#[derive(Debug, Serialize)]
pub struct WireView {
    /// `wir_...`.
    pub id: String,
    /// The app that emits the event.
    pub emitter_app: String,
    /// The event.
    pub event_name: String,
    /// The app that receives it.
    pub subscriber_app: String,
    /// The agent whose app gets `on_event`; null for a heartbeat target.
    pub target_agent: Option<String>,
    /// The heartbeat woken, as `agent:slug`; null for an agent target.
    pub target_heartbeat: Option<String>,
    /// `pending_emitter_approval`, `active` or `revoked`.
    pub state: WireState,
    /// When the subscriber side approved.
    pub subscriber_approved_at: Option<String>,
    /// When the emitter side approved.
    pub emitter_approved_at: Option<String>,
    /// When it was revoked.
    pub revoked_at: Option<String>,
    /// Creation.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl From<Wire> for WireView {
    fn from(w: Wire) -> Self {
        let (target_agent, target_heartbeat) = match w.target_heartbeat.as_deref() {
            Some(slug) => (None, Some(format!("{}:{slug}", w.target_agent))),
            None => (Some(w.target_agent.clone()), None),
        };
        WireView {
            state: wires::state(&w),
            id: w.id,
            emitter_app: w.emitter_app,
            event_name: w.event_name,
            subscriber_app: w.subscriber_app,
            target_agent,
            target_heartbeat,
            subscriber_approved_at: w.subscriber_approved_at.map(time),
            emitter_approved_at: w.emitter_approved_at.map(time),
            revoked_at: w.revoked_at.map(time),
            created_at: time(w.created_at),
            updated_at: time(w.updated_at),
        }
    }
}

impl Listed for WireView {
    const KEY: &'static str = "wires";
}

impl SortedBy for WireView {
    fn sort_key(&self) -> String {
        self.id.clone()
    }
}

/// `POST /api/wires`: the subscriber side proposes a wire for one of its declared
/// subscriptions.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProposeWire {
    /// The app that emits the event.
    pub emitter_app: String,
    /// The event, as the emitter declares it in `emits`.
    pub event_name: String,
    /// The app that subscribes, as its `subscribes_to` declares.
    pub subscriber_app: String,
    /// The agent invoked; may be left out when the subscription has one target.
    #[serde(default)]
    pub target_agent: Option<String>,
    /// The heartbeat woken (`slug` or `agent:slug`); may be left out when the subscription has
    /// one target.
    #[serde(default)]
    pub target_heartbeat: Option<String>,
}

/// `POST /api/wires/{id}/approve` and `/revoke`: no body needed.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoBody {}

/// `GET /api/wires`: the filters and the page.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireQuery {
    /// Only wires from this emitter.
    #[serde(default)]
    pub emitter_app: Option<String>,
    /// Only wires to this subscriber.
    #[serde(default)]
    pub subscriber_app: Option<String>,
    /// Only this event.
    #[serde(default)]
    pub event_name: Option<String>,
    /// The page size (1 to 200, default 50).
    #[serde(default)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The subscriber side proposes: 201 with a new (or restarted) pending wire, 200 with a
/// pending or active one left as it is.
pub async fn propose(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    JsonBody(body): JsonBody<ProposeWire>,
) -> Result<(StatusCode, Json<WireView>), ApiError> {
    let serving = state.serving()?;
    let request = WireRequest {
        emitter_app: body.emitter_app,
        event_name: body.event_name,
        subscriber_app: body.subscriber_app,
        target_agent: body.target_agent,
        target_heartbeat: body.target_heartbeat,
    };
    let (wire, started) = wires::propose(serving, &actor(&admin), &request)
        .await
        .map_err(ApiError::from)?;
    let status = if started {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(wire.into())))
}

/// The emitter side approves: 200 with the active wire.
pub async fn approve(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path(id): Path<String>,
    OptionalJsonBody(_): OptionalJsonBody<NoBody>,
) -> Result<Json<WireView>, ApiError> {
    let wire = wires::approve(state.serving()?, &actor(&admin), &id)
        .await
        .map_err(ApiError::from)?;
    Ok(Json(wire.into()))
}

/// Either side revokes: 200 with the revoked wire.
pub async fn revoke(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path(id): Path<String>,
    OptionalJsonBody(_): OptionalJsonBody<NoBody>,
) -> Result<Json<WireView>, ApiError> {
    let wire = wires::revoke(state.serving()?, &actor(&admin), &id)
        .await
        .map_err(ApiError::from)?;
    Ok(Json(wire.into()))
}

/// The tenant's wires that the filters match, in creation order.
pub async fn list(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    QueryParams(query): QueryParams<WireQuery>,
) -> Result<Json<Page<WireView>>, ApiError> {
    let page = PageRequest::parse(query.limit.as_deref(), query.cursor.as_deref())?;
    let filter = WireFilter {
        emitter_app: query.emitter_app.as_deref(),
        subscriber_app: query.subscriber_app.as_deref(),
        event_name: query.event_name.as_deref(),
    };
    let rows = state
        .store
        .wires_page(&admin.key(), &filter, page.after.as_deref(), page.fetch())
        .await?;
    Ok(Json(Page::of(
        rows.into_iter().map(WireView::from).collect(),
        &page,
    )))
}

/// One wire of the tenant.
pub async fn detail(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path(id): Path<String>,
) -> Result<Json<WireView>, ApiError> {
    state
        .store
        .wire(&admin.key(), &id)
        .await?
        .map(|w| Json(w.into()))
        .ok_or_else(|| ApiError::not_found(format!("no wire `{id}`")))
}

/// The routes of wires.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/wires", post(propose).get(list))
        .route("/wires/{id}", get(detail))
        .route("/wires/{id}/approve", post(approve))
        .route("/wires/{id}/revoke", post(revoke))
}
