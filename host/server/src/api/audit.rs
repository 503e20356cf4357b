//! `GET /api/audit`: the tenant's audit log of cross-app calls, for its admins
//! (`atrium_platform::audit`).

use crate::routing::{Routes, get};
use atrium_store::{AuditEntry, AuditFilter};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::views::time;
use crate::page::{Listed, Page, PageRequest, time_and_id};
use crate::principals::TenantAdmin;
use crate::{ApiError, HostState, QueryParams};

/// An entry as answered.
#[derive(Debug, Serialize)]
pub struct AuditView {
    /// `aud_...`.
    pub id: String,
    /// `invoke`, `fetch`, `delegate` or `event`.
    pub kind: String,
    /// The calling app.
    pub caller_app: String,
    /// The calling agent, if the call came from one.
    pub caller_agent: Option<String>,
    /// The app called.
    pub callee_app: String,
    /// What of it: an agent, `METHOD /path`, or an event's target (`event -> agent`,
    /// `event -> heartbeat agent:slug`).
    pub target: String,
    /// `ok`, `refused` or `failed`.
    pub outcome: String,
    /// Why it was refused or failed.
    pub reason: Option<String>,
    /// How long it took, in ms.
    pub duration_ms: i64,
    /// The chain depth the call reached.
    pub chain_depth: i64,
    /// The agents on its chain, oldest first.
    pub visited_agents: Vec<String>,
    /// When.
    pub created_at: String,
}

impl From<AuditEntry> for AuditView {
    fn from(e: AuditEntry) -> Self {
        AuditView {
            id: e.id,
            kind: e.kind,
            caller_app: e.caller_app,
            caller_agent: e.caller_agent,
            callee_app: e.callee_app,
            target: e.target,
            outcome: e.outcome,
            reason: e.reason,
            duration_ms: e.duration_ms,
            chain_depth: e.chain_depth,
            visited_agents: e.visited_agents,
            created_at: time(e.created_at),
        }
    }
}

impl Listed for AuditView {
    const KEY: &'static str = "entries";
}

/// `GET /api/audit`: the filters and the page.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// `invoke`, `fetch`, `delegate` or `event`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Only calls by this app.
    #[serde(default)]
    pub caller_app: Option<String>,
    /// Only calls to this app.
    #[serde(default)]
    pub callee_app: Option<String>,
    /// `ok`, `refused` or `failed`.
    #[serde(default)]
    pub outcome: Option<String>,
    /// The page size (1 to 200, default 50).
    #[serde(default)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

fn one_of(field: &str, value: Option<&str>, allowed: &[&str]) -> Result<(), ApiError> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(ApiError::field(
            field,
            format!("{field} must be one of {}, not {v:?}", allowed.join(", ")),
        )),
        _ => Ok(()),
    }
}

/// The tenant's cross-app calls, newest first.
pub async fn list(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    QueryParams(query): QueryParams<AuditQuery>,
) -> Result<Json<Page<AuditView>>, ApiError> {
    let page = PageRequest::parse(query.limit.as_deref(), query.cursor.as_deref())?;
    one_of(
        "kind",
        query.kind.as_deref(),
        &["invoke", "fetch", "delegate", "event"],
    )?;
    one_of(
        "outcome",
        query.outcome.as_deref(),
        &["ok", "refused", "failed", "cancelled"],
    )?;
    let filter = AuditFilter {
        kind: query.kind.as_deref(),
        caller_app: query.caller_app.as_deref(),
        callee_app: query.callee_app.as_deref(),
        outcome: query.outcome.as_deref(),
    };
    let rows = state
        .store
        .audit_page(
            &admin.key(),
            &filter,
            page.after_time_and_id()?,
            page.fetch(),
        )
        .await?;
    Ok(Json(Page::keyed(
        rows,
        &page,
        |e| time_and_id(e.created_at, &e.id),
        AuditView::from,
    )))
}

/// The routes of the audit log.
pub(super) fn router() -> Routes {
    Routes::new().route("/audit", get(list))
}
