//! `/api/commitments`: the promises the tenant's apps' agents made (`commitments.add`), which
//! the tenant's users list, filter and mark done or dismissed.

use crate::routing::{Routes, get};
use atrium_store::{CommitmentFilter, StoredCommitment};
use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::views::time;
use crate::page::{Listed, Page, PageRequest, time_and_id};
use crate::principals::TenantUser;
use crate::{ApiError, HostState, JsonBody, QueryParams};

/// A commitment as answered.
#[derive(Debug, Serialize)]
pub struct CommitmentView {
    /// `cmt_...`.
    pub id: String,
    /// The app whose agent made it.
    pub app: String,
    /// The agent's slug.
    pub agent: String,
    /// The user the call that made it served, if any.
    pub user_id: Option<String>,
    /// The title.
    pub title: String,
    /// The details.
    pub content: String,
    /// When it is due (RFC 3339), if given.
    pub due_at: Option<String>,
    /// `open`, `done` or `dismissed`.
    pub status: &'static str,
    /// When the agent made it.
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
    /// The user who marked it done or dismissed, while it is.
    pub closed_by: Option<String>,
}

impl From<StoredCommitment> for CommitmentView {
    fn from(c: StoredCommitment) -> Self {
        CommitmentView {
            id: c.id,
            app: c.app_slug,
            agent: c.agent,
            user_id: c.user_id,
            title: c.title,
            content: c.content,
            due_at: c.due_at.map(time),
            status: c.status.as_str(),
            created_at: time(c.created_at),
            updated_at: time(c.updated_at),
            closed_by: c.closed_by,
        }
    }
}

impl Listed for CommitmentView {
    const KEY: &'static str = "commitments";
}

/// `GET /api/commitments`: the filters and the page.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitmentQuery {
    /// Only this app's.
    #[serde(default)]
    pub app: Option<String>,
    /// Only this agent's.
    #[serde(default)]
    pub agent: Option<String>,
    /// Only those in this status: `open`, `done` or `dismissed`.
    #[serde(default)]
    pub status: Option<String>,
    /// The page size (1 to 200, default 50).
    #[serde(default)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The body of `PATCH /api/commitments/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchCommitment {
    /// `done`, `dismissed`, or `open` to reopen it.
    pub status: String,
}

fn no_such_commitment(id: &str) -> ApiError {
    ApiError::not_found(format!("this tenant has no commitment `{id}`"))
}

/// The caller's tenant's commitments, oldest first, filtered by app, agent and status.
pub async fn list(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    QueryParams(query): QueryParams<CommitmentQuery>,
) -> Result<Json<Page<CommitmentView>>, ApiError> {
    let page = PageRequest::parse(query.limit.as_deref(), query.cursor.as_deref())?;
    let filter = CommitmentFilter {
        app_slug: query.app.as_deref(),
        agent: query.agent.as_deref(),
        status: query
            .status
            .as_deref()
            .map(atrium_platform::commitments::parse_status)
            .transpose()?,
    };
    let rows = state
        .store
        .commitments_page(
            &user.key(),
            &filter,
            page.after_time_and_id()?,
            page.fetch(),
        )
        .await?;
    Ok(Json(Page::keyed(
        rows,
        &page,
        |c| time_and_id(c.created_at, &c.id),
        CommitmentView::from,
    )))
}

/// One commitment of the caller's tenant; 404 for one of another tenant.
pub async fn detail(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
) -> Result<Json<CommitmentView>, ApiError> {
    let found = state.store.commitment(&user.key(), &id).await?;
    found
        .map(|c| Json(CommitmentView::from(c)))
        .ok_or_else(|| no_such_commitment(&id))
}

/// Marks a commitment of the caller's tenant done or dismissed (or reopens it), recording
/// the user; answers it. 404 for one of another tenant.
pub async fn patch(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<PatchCommitment>,
) -> Result<Json<CommitmentView>, ApiError> {
    let updated = atrium_platform::commitments::set_status(
        &state.store,
        &user.key(),
        &id,
        &body.status,
        &user.user_id,
    )
    .await?;
    Ok(Json(CommitmentView::from(updated)))
}

/// The routes of commitments.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/commitments", get(list))
        .route("/commitments/{id}", get(detail).patch(patch))
}
