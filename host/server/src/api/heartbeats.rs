//! Heartbeats and visions (docs/platform.md, "Heartbeats" and "Visions"):
//!
//! - `GET /api/installs/{app}/heartbeats`: the install's heartbeat rows (tenant user or admin);
//!   `GET /api/installs/{app}/heartbeat-runs`: their recent runs.
//! - `POST /api/admin/data-feeds/{feed_id}/run-now`: runs one now; `.../enable` and
//!   `.../disable` set its state (tenant admin).
//! - `GET /api/visions`, `GET /api/visions/{id}` (with every phase's output),
//!   `POST /api/visions/{id}/approve|reject` (tenant user or admin).

use crate::routing::{Routes, get, post};
use atrium_platform::heartbeats::{self, RunSummary};
use atrium_platform::visions::{self, Decision};
use atrium_store::{HeartbeatRow, HeartbeatRun, Vision, VisionPhase};
use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::views::time;
use crate::extract::OptionalJsonBody;
use crate::principals::{TenantAdmin, TenantUser, actor};
use crate::{ApiError, HostState, QueryParams};

/// Failures in a row from which an active heartbeat is reported as failing.
pub const FAILING_AFTER: i64 = 3;

/// A heartbeat row as answered.
#[derive(Debug, Serialize)]
pub struct HeartbeatView {
    /// The feed id (`hb_...`), for the admin endpoints.
    pub id: Option<String>,
    /// The agent.
    pub agent: String,
    /// The heartbeat's slug.
    pub slug: String,
    /// `active`, `disabled` or `retired`.
    pub state: String,
    /// Active with 3 or more failures in a row.
    pub failing: bool,
    /// The declared schedule in words (none for a retired heartbeat).
    pub schedule: Option<String>,
    /// The next run (RFC 3339); none before the scheduler computed it, or for a schedule that
    /// never fires.
    pub next_run_at: Option<String>,
    /// The last run's start.
    pub last_run_at: Option<String>,
    /// The last run that ended without failure.
    pub last_ok_at: Option<String>,
    /// Failures since the last success.
    pub consecutive_failures: i64,
    /// Why the last failed run failed.
    pub last_error: Option<String>,
    /// The last wake by an event.
    pub woken_at: Option<String>,
    /// What woke it: `<emitter_app>/<event_name>`.
    pub woken_by: Option<String>,
}

fn heartbeat_view(row: HeartbeatRow, schedule: Option<String>) -> HeartbeatView {
    HeartbeatView {
        failing: row.state == "active" && row.consecutive_failures >= FAILING_AFTER,
        id: row.id,
        agent: row.agent,
        slug: row.slug,
        state: row.state,
        schedule,
        next_run_at: row.next_run_at.filter(|t| *t < heartbeats::NEVER).map(time),
        last_run_at: row.last_run_at.map(time),
        last_ok_at: row.last_ok_at.map(time),
        consecutive_failures: row.consecutive_failures,
        last_error: row.last_error,
        woken_at: row.woken_at.map(time),
        woken_by: row.woken_by,
    }
}

/// `GET /api/installs/{app}/heartbeats`.
#[derive(Debug, Serialize)]
pub struct HeartbeatsView {
    /// The rows, by agent and slug.
    pub heartbeats: Vec<HeartbeatView>,
}

/// The heartbeat rows of the caller's tenant's install of `app`; 404 without one.
pub async fn list(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(app): Path<String>,
) -> Result<Json<HeartbeatsView>, ApiError> {
    let registry = state.registry()?;
    let install = registry.tenant_install(&actor(&user), &app).await?;
    let manifest = registry.manifest_of(&app, &install.version).await?;
    let rows = state.store.heartbeat_rows(&install.key()).await?;
    let heartbeats = rows
        .into_iter()
        .map(|row| {
            let schedule = heartbeats::find(&manifest, &row.agent, &row.slug)
                .filter(|_| row.state != "retired")
                .map(|h| heartbeats::describe(&h.schedule));
            heartbeat_view(row, schedule)
        })
        .collect();
    Ok(Json(HeartbeatsView { heartbeats }))
}

/// A heartbeat run as answered.
#[derive(Debug, Serialize)]
pub struct HeartbeatRunView {
    /// The agent.
    pub agent: String,
    /// The heartbeat.
    pub slug: String,
    /// When it was due.
    pub due_at: String,
    /// `schedule`, `wake` or `run_now`.
    pub trigger: String,
    /// The host that ran it.
    pub host: String,
    /// `running`, `ok`, `suppressed`, `idle`, `failed` or `lost`.
    pub outcome: String,
    /// Records the pre-filter found.
    pub records: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
    /// The reply kept (none when suppressed).
    pub reply: Option<String>,
    /// Whether it escalated to the vision loop.
    pub escalated: bool,
    /// Its model calls' cost, in US dollars.
    pub cost_usd: f64,
    /// When it was claimed.
    pub started_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
}

fn run_view(run: HeartbeatRun) -> HeartbeatRunView {
    HeartbeatRunView {
        agent: run.agent,
        slug: run.slug,
        due_at: time(run.due_at),
        trigger: run.trigger,
        host: run.host,
        outcome: run.outcome,
        records: run.records,
        error: run.error,
        reply: run.reply,
        escalated: run.escalated,
        cost_usd: run.cost_micros as f64 / 1_000_000.0,
        started_at: time(run.claimed_at),
        finished_at: run.finished_at.map(time),
    }
}

/// `GET /api/installs/{app}/heartbeat-runs`: the page size.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    /// At most this many (1 to 200, default 50).
    #[serde(default)]
    pub limit: Option<String>,
}

/// `GET /api/installs/{app}/heartbeat-runs`.
#[derive(Debug, Serialize)]
pub struct HeartbeatRunsView {
    /// The runs, newest first.
    pub runs: Vec<HeartbeatRunView>,
}

/// The recent runs of the caller's tenant's install of `app`'s heartbeats.
pub async fn runs(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(app): Path<String>,
    QueryParams(query): QueryParams<RunsQuery>,
) -> Result<Json<HeartbeatRunsView>, ApiError> {
    let limit = match query.limit.as_deref() {
        None => 50,
        Some(text) => text
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=200).contains(n))
            .ok_or_else(|| {
                ApiError::field("limit", format!("limit must be 1 to 200, got `{text}`"))
            })?,
    };
    let install = state
        .registry()?
        .tenant_install(&actor(&user), &app)
        .await?;
    let runs = state.store.heartbeat_runs(&install.key(), limit).await?;
    Ok(Json(HeartbeatRunsView {
        runs: runs.into_iter().map(run_view).collect(),
    }))
}

/// `POST /api/admin/data-feeds/{feed_id}/run-now`: how the run ended.
#[derive(Debug, Serialize)]
pub struct RunNowView {
    /// The feed id.
    pub id: String,
    /// The app.
    pub app: String,
    /// The agent.
    pub agent: String,
    /// The heartbeat.
    pub slug: String,
    /// `ok`, `suppressed`, `idle` or `failed`.
    pub outcome: String,
    /// Records the pre-filter found.
    pub records: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
    /// The reply kept.
    pub reply: Option<String>,
    /// Whether it escalated to the vision loop.
    pub escalated: bool,
    /// The commitments the inference pass added.
    pub commitments: Vec<String>,
    /// Its model calls' cost, in US dollars.
    pub cost_usd: f64,
    /// The row's state after it.
    pub state: Option<String>,
    /// Failures in a row after it.
    pub consecutive_failures: Option<i64>,
}

fn run_now_view(id: String, run: RunSummary) -> RunNowView {
    RunNowView {
        id,
        app: run.install.app_slug,
        agent: run.agent,
        slug: run.slug,
        outcome: run.outcome,
        records: run.records,
        error: run.error,
        reply: run.reply,
        escalated: run.escalated,
        commitments: run.commitments,
        cost_usd: run.cost_micros as f64 / 1_000_000.0,
        state: run.state,
        consecutive_failures: run.consecutive_failures,
    }
}

fn scheduler(state: &HostState) -> Result<&heartbeats::Scheduler, ApiError> {
    state.heartbeats()
}

/// Runs the caller's tenant's heartbeat `feed_id` now: 200 with how it ended (a failed run is
/// a 200 whose `outcome` is `failed`: the run happened); 404 for a heartbeat of another
/// tenant; 409 `heartbeat_disabled`, `heartbeat_retired` or `install_inactive`.
pub async fn run_now(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path(feed_id): Path<String>,
) -> Result<Json<RunNowView>, ApiError> {
    let run = scheduler(&state)?.run_now(&admin.key(), &feed_id).await?;
    Ok(Json(run_now_view(feed_id, run)))
}

async fn set_state(
    state: &HostState,
    admin: &atrium_store::TenantPrincipal,
    feed_id: &str,
    enabled: bool,
) -> Result<Json<HeartbeatView>, ApiError> {
    let row = atrium_platform::heartbeats::set_state(&state.store, &admin.key(), feed_id, enabled)
        .await?;
    Ok(Json(heartbeat_view(row, None)))
}

/// Enables the caller's tenant's heartbeat `feed_id` (its failures reset): 200 with it.
pub async fn enable(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path(feed_id): Path<String>,
) -> Result<Json<HeartbeatView>, ApiError> {
    set_state(&state, &admin, &feed_id, true).await
}

/// Disables the caller's tenant's heartbeat `feed_id`: 200 with it.
pub async fn disable(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    Path(feed_id): Path<String>,
) -> Result<Json<HeartbeatView>, ApiError> {
    set_state(&state, &admin, &feed_id, false).await
}

/// A vision as answered.
#[derive(Debug, Serialize)]
pub struct VisionView {
    /// `vis_...`.
    pub id: String,
    /// The app.
    pub app: String,
    /// The agent pursuing it.
    pub agent: String,
    /// The project the tenant selected.
    pub project: String,
    /// `running`, `awaiting_approval`, `done` or `stopped`.
    pub state: String,
    /// The phase that runs next, or waits.
    pub phase: String,
    /// The cycle, from 1.
    pub cycle: i64,
    /// Goals completed.
    pub goals_done: i64,
    /// What its phases cost, in cents.
    pub cost_cents: f64,
    /// When its next phase is due.
    pub next_action_at: Option<String>,
    /// Why it stopped.
    pub stop_reason: Option<String>,
    /// Creation.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// Every phase it ran and every decision on its plans, in order (the detail only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<Vec<PhaseView>>,
}

/// A phase as answered.
#[derive(Debug, Serialize)]
pub struct PhaseView {
    /// Its place, from 1.
    pub seq: i64,
    /// The cycle.
    pub cycle: i64,
    /// `assess`, `debate`, `plan`, `execute`, `review`, `approval` or `stop`.
    pub phase: String,
    /// `ok`, `failed`, `approved`, `rejected` or `stopped`.
    pub outcome: String,
    /// What it produced.
    pub output: String,
    /// Its cost, in cents.
    pub cost_cents: f64,
    /// The user who decided, for a decision.
    pub decided_by: Option<String>,
    /// When it was stored.
    pub created_at: String,
}

fn vision_view(v: Vision, phases: Option<Vec<VisionPhase>>) -> VisionView {
    VisionView {
        id: v.id,
        app: v.app_slug,
        agent: v.agent,
        project: v.project,
        state: v.state,
        phase: v.phase,
        cycle: v.cycle,
        goals_done: v.goals_done,
        cost_cents: v.cost_micros as f64 / 10_000.0,
        next_action_at: v.next_action_at.map(time),
        stop_reason: v.stop_reason,
        created_at: time(v.created_at),
        updated_at: time(v.updated_at),
        phases: phases.map(|phases| {
            phases
                .into_iter()
                .map(|p| PhaseView {
                    seq: p.seq,
                    cycle: p.cycle,
                    phase: p.phase,
                    outcome: p.outcome,
                    output: p.output,
                    cost_cents: p.cost_micros as f64 / 10_000.0,
                    decided_by: p.decided_by,
                    created_at: time(p.created_at),
                })
                .collect()
        }),
    }
}

/// `GET /api/visions`.
#[derive(Debug, Serialize)]
pub struct VisionsView {
    /// The tenant's visions, by app and agent.
    pub visions: Vec<VisionView>,
}

/// The caller's tenant's visions.
pub async fn list_visions(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
) -> Result<Json<VisionsView>, ApiError> {
    let visions = state.store.visions(&user.key()).await?;
    Ok(Json(VisionsView {
        visions: visions.into_iter().map(|v| vision_view(v, None)).collect(),
    }))
}

fn no_such_vision(id: &str) -> ApiError {
    ApiError::not_found(format!("this tenant has no vision `{id}`"))
}

/// One vision of the caller's tenant with its phases; 404 for one of another tenant.
pub async fn vision(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
) -> Result<Json<VisionView>, ApiError> {
    let tenant = user.key();
    let found = state
        .store
        .vision(&tenant, &id)
        .await?
        .ok_or_else(|| no_such_vision(&id))?;
    let phases = state.store.vision_phases(&tenant, &id).await?;
    Ok(Json(vision_view(found, Some(phases))))
}

/// The body of `POST /api/visions/{id}/approve|reject` (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// A note stored with the decision (at most 2,000 characters).
    #[serde(default)]
    pub note: Option<String>,
}

/// The longest decision note, in characters.
pub const MAX_NOTE_CHARS: usize = 2_000;

async fn decide(
    state: &HostState,
    user: &atrium_store::TenantPrincipal,
    id: &str,
    decision: Decision,
    body: DecisionBody,
) -> Result<Json<VisionView>, ApiError> {
    if body
        .note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS)
    {
        return Err(ApiError::field(
            "note",
            format!("note must be at most {MAX_NOTE_CHARS} characters"),
        ));
    }
    let tenant = user.key();
    let decided = visions::decide(
        &state.store,
        &tenant,
        id,
        &user.user_id,
        decision,
        body.note.as_deref(),
        scheduler(state)?.config().vision_cycle_pause,
    )
    .await?;
    let phases = state.store.vision_phases(&tenant, id).await?;
    Ok(Json(vision_view(decided, Some(phases))))
}

/// Approves the plan vision `id` waits on: it executes at the next tick. 409
/// `vision_not_awaiting_approval` when it waits on none.
pub async fn approve(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<DecisionBody>,
) -> Result<Json<VisionView>, ApiError> {
    decide(&state, &user, &id, Decision::Approve, body).await
}

/// Rejects the plan vision `id` waits on: the next cycle assesses again after the pause.
pub async fn reject(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<DecisionBody>,
) -> Result<Json<VisionView>, ApiError> {
    decide(&state, &user, &id, Decision::Reject, body).await
}

/// The routes of heartbeats and visions.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/installs/{app}/heartbeats", get(list))
        .route("/installs/{app}/heartbeat-runs", get(runs))
        .route("/admin/data-feeds/{feed_id}/run-now", post(run_now))
        .route("/admin/data-feeds/{feed_id}/enable", post(enable))
        .route("/admin/data-feeds/{feed_id}/disable", post(disable))
        .route("/visions", get(list_visions))
        .route("/visions/{id}", get(vision))
        .route("/visions/{id}/approve", post(approve))
        .route("/visions/{id}/reject", post(reject))
}
