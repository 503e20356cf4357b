//! `POST /v1/batches`, `GET /v1/batches` and `GET /v1/batches/{id}`, and the runner that works through the items
//! in the background.
//!
//! Items are stored with the batch before the 202 is sent, so a batch survives a restart. A
//! runner claims one item at a time (at most [`BatchRunner::concurrency`] at once per host),
//! runs it like a chat completion (same tier, provider, model and `contains_pii` rules), and
//! writes the result and its metering (at the batch rate, half price) in one transaction
//! guarded by its claim: an item's result and cost are recorded exactly once. Items a stopped
//! host had claimed are claimed again after the lease (at once on SQLite, which has one host).

use std::sync::Arc;
use std::time::Duration;

use atrium_jobs::{Job, JobError, Stop};
use atrium_store::{Batch, BatchSummary, ClaimedItem, ItemStatus};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};

use atrium_inference::ChatCall;

use crate::chat::{completion_body, parse};
use crate::extract::{JsonBody, TenantHeader};
use crate::page::{Listed, Page, PageRequest, time_and_id};
use crate::principals::Org;
use crate::routing::Routes;
use crate::{ApiError, HostState};

/// The most items one batch may hold.
pub const MAX_BATCH_ITEMS: usize = 1000;

/// `POST /v1/batches`: stores the batch and answers 202 at once.
pub async fn create(
    State(state): State<HostState>,
    org: Org,
    tenant: TenantHeader,
    JsonBody(body): JsonBody<Value>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let requests = match body.get("requests") {
        Some(Value::Array(r)) if r.is_empty() => {
            return Err(ApiError::field("requests", "requests must not be empty"));
        }
        Some(Value::Array(r)) if r.len() > MAX_BATCH_ITEMS => {
            return Err(ApiError::field(
                "requests",
                format!(
                    "a batch holds at most {MAX_BATCH_ITEMS} items, got {}",
                    r.len()
                ),
            ));
        }
        Some(Value::Array(r)) => r,
        Some(_) => {
            return Err(ApiError::field(
                "requests",
                "requests must be an array of items",
            ));
        }
        None => return Err(ApiError::field("requests", "requests is required")),
    };
    let mut items = Vec::with_capacity(requests.len());
    let mut seen = std::collections::HashSet::new();
    for (i, item) in requests.iter().enumerate() {
        let param = format!("requests[{i}].custom_id");
        let custom_id = match item.get("custom_id") {
            Some(Value::String(id)) if !id.is_empty() && id.len() <= 256 => id.clone(),
            _ => {
                return Err(ApiError::field(
                    &param,
                    format!("{param} must be a string of 1 to 256 characters"),
                ));
            }
        };
        if !seen.insert(custom_id.clone()) {
            return Err(ApiError::field(
                &param,
                format!("custom_id `{custom_id}` appears twice"),
            ));
        }
        items.push((custom_id, item.to_string()));
    }
    let tenant = tenant.or_default();
    let id = state
        .store
        .create_batch(&atrium_store::TenantKey::new(&org.org_id, &tenant), &items)
        .await?;
    state.batches.notify.notify_waiters();
    let batch = state
        .store
        .batch(&org.org_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("the batch vanished"))?;
    Ok((StatusCode::ACCEPTED, Json(batch_body(&batch))))
}

/// `GET /v1/batches/{id}`.
pub async fn get(
    State(state): State<HostState>,
    org: Org,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let batch = state
        .store
        .batch(&org.org_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("this organization has no batch `{id}`")))?;
    Ok(Json(batch_body(&batch)))
}

/// `GET /v1/batches`: a page of the organization's batches, newest first, each without its
/// results (`GET /v1/batches/{id}` has them).
pub async fn list(
    State(state): State<HostState>,
    org: Org,
    page: PageRequest,
) -> Result<Json<Page<BatchSummaryView>>, ApiError> {
    let batches = state
        .store
        .batches_page(&org.org_id, page.after_time_and_id()?, page.fetch())
        .await?;
    Ok(Json(Page::keyed(
        batches,
        &page,
        |b| time_and_id(b.created_at, &b.id),
        |b| BatchSummaryView::from(&b),
    )))
}

/// A batch in a list: the answer of `GET /v1/batches/{id}` without `results`.
#[derive(Debug, Clone, Serialize)]
pub struct BatchSummaryView {
    /// `batch_...`.
    pub id: String,
    /// `batch`.
    pub object: &'static str,
    /// `in_progress` until every item has finished, then `completed`.
    pub status: &'static str,
    /// The tenant the batch is attributed to.
    pub tenant: String,
    /// Creation time, seconds since the epoch.
    pub created_at: i64,
    /// The items by outcome.
    pub request_counts: RequestCounts,
}

/// How many items a batch holds, and how many have finished each way.
#[derive(Debug, Clone, Serialize)]
pub struct RequestCounts {
    /// Items in the batch.
    pub total: i64,
    /// Finished with a completion.
    pub completed: i64,
    /// Finished with an error.
    pub failed: i64,
}

impl From<&BatchSummary> for BatchSummaryView {
    fn from(b: &BatchSummary) -> Self {
        BatchSummaryView {
            id: b.id.clone(),
            object: "batch",
            status: if b.completed + b.failed == b.total {
                "completed"
            } else {
                "in_progress"
            },
            tenant: b.tenant_id.clone(),
            created_at: b.created_at.as_second(),
            request_counts: RequestCounts {
                total: b.total,
                completed: b.completed,
                failed: b.failed,
            },
        }
    }
}

impl Listed for BatchSummaryView {
    const KEY: &'static str = "data";
    const OBJECT: Option<&'static str> = Some("list");
}

fn batch_body(batch: &Batch) -> Value {
    let count = |s: ItemStatus| batch.items.iter().filter(|i| i.status == s).count();
    let (completed, failed) = (count(ItemStatus::Completed), count(ItemStatus::Failed));
    let done = completed + failed == batch.items.len();
    let results: Vec<Value> = batch
        .items
        .iter()
        .map(|item| {
            let stored: Value = item.result.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or(Value::Null);
            let status = match item.status {
                ItemStatus::Queued => "pending",
                ItemStatus::Running => "in_progress",
                ItemStatus::Completed => "completed",
                ItemStatus::Failed => "failed",
            };
            json!({
                "custom_id": item.custom_id,
                "status": status,
                "response": if item.status == ItemStatus::Completed { stored.clone() } else { Value::Null },
                "error": if item.status == ItemStatus::Failed { stored } else { Value::Null },
            })
        })
        .collect();
    json!({
        "id": batch.id,
        "object": "batch",
        "status": if done { "completed" } else { "in_progress" },
        "tenant": batch.tenant_id,
        "created_at": batch.created_at.as_second(),
        "request_counts": {"total": batch.items.len(), "completed": completed, "failed": failed},
        "results": results,
    })
}

/// The background runner's settings and wake-up signal.
pub struct BatchRunner {
    /// Items run at once on this host.
    pub concurrency: usize,
    /// How long a claimed item may stay unfinished before another runner may claim it again.
    pub lease: Duration,
    /// Woken when a batch is stored.
    pub notify: Notify,
}

impl Default for BatchRunner {
    fn default() -> Self {
        BatchRunner {
            concurrency: 8,
            lease: Duration::from_secs(600),
            notify: Notify::new(),
        }
    }
}

/// The batch runner as a [`Job`] named `batches`: claims items and runs them, at most
/// `concurrency` at once. On a stop it claims no more and waits for the items in flight; an
/// item cut short (the host killed, or the grace over) runs again once its lease ends.
pub struct Runner(pub HostState);

#[async_trait::async_trait]
impl Job for Runner {
    fn name(&self) -> &'static str {
        "batches"
    }

    async fn run(self: Box<Self>, mut stop: Stop) -> Result<(), JobError> {
        let state = self.0;
        let runner = state.batches.clone();
        // A SQLite store has one host: what it had claimed before a restart is abandoned now.
        let first_cutoff = if state.store.backend() == "sqlite" {
            jiff::Timestamp::now() + jiff::SignedDuration::from_millis(1)
        } else {
            lease_cutoff(&runner)
        };
        match state.store.requeue_stale_items(first_cutoff).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                items = n,
                "batch items interrupted by a restart are queued again"
            ),
            Err(error) => stop.report("cannot re-queue interrupted batch items", &error),
        }
        let concurrency = runner.concurrency.max(1);
        let slots = Arc::new(Semaphore::new(concurrency));
        let mut last_sweep = std::time::Instant::now();
        while !stop.is_requested() {
            if last_sweep.elapsed() > Duration::from_secs(30) {
                last_sweep = std::time::Instant::now();
                if let Err(error) = state.store.requeue_stale_items(lease_cutoff(&runner)).await {
                    stop.report("cannot re-queue stale batch items", &error);
                }
            }
            let permit = tokio::select! {
                permit = slots.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
                () = stop.requested() => break,
            };
            let wake = runner.notify.notified();
            match state.store.claim_batch_item().await {
                Ok(Some(claimed)) => {
                    let state = state.clone();
                    tokio::spawn(async move {
                        run_item(&state, claimed).await;
                        drop(permit);
                    });
                }
                Ok(None) => {
                    drop(permit);
                    tokio::select! {
                        _ = tokio::time::timeout(Duration::from_secs(1), wake) => {}
                        () = stop.requested() => {}
                    }
                }
                Err(error) => {
                    drop(permit);
                    stop.report("cannot claim a batch item", &error);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        () = stop.requested() => {}
                    }
                }
            }
        }
        // The items in flight finish: every slot is back.
        let all = u32::try_from(concurrency).unwrap_or(u32::MAX);
        let _ = slots.acquire_many(all).await;
        Ok(())
    }
}

/// Now less the lease (in whole ms): items claimed before it are stale. A lease longer than
/// time goes back leaves none stale.
fn lease_cutoff(runner: &BatchRunner) -> jiff::Timestamp {
    let lease = i64::try_from(runner.lease.as_millis()).unwrap_or(i64::MAX);
    jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_millis(lease))
        .unwrap_or(jiff::Timestamp::MIN)
}

/// Runs one item and writes its result; one item's failure never touches the others.
async fn run_item(state: &HostState, claimed: ClaimedItem) {
    let request: Value = serde_json::from_str(&claimed.item.request).unwrap_or(Value::Null);
    let (status, result, usage) = match parse(request) {
        Err(error) => (ItemStatus::Failed, error_body(&error), None),
        Ok(ChatCall { stream: true, .. }) => (
            ItemStatus::Failed,
            error_body(&ApiError::field("stream", "batch items cannot stream")),
            None,
        ),
        Ok(ChatCall {
            selection, request, ..
        }) => match state.gateway.chat(&selection, &request).await {
            Err(error) => (ItemStatus::Failed, error_body(&ApiError::from(error)), None),
            Ok(completed) => {
                let outcome = &completed.outcome;
                let cost = completed.model.cost_micros(
                    outcome.prompt_tokens,
                    outcome.completion_tokens,
                    true,
                );
                let usage = atrium_store::UsageRecord {
                    org_id: claimed.org_id.clone(),
                    tenant_id: claimed.tenant_id.clone(),
                    kind: "chat".into(),
                    provider: completed.model.provider.as_str().into(),
                    model: completed.model.id.clone(),
                    prompt_tokens: i64::try_from(outcome.prompt_tokens).unwrap_or(i64::MAX),
                    completion_tokens: i64::try_from(outcome.completion_tokens).unwrap_or(i64::MAX),
                    cost_micros: cost,
                    batch: true,
                    app_slug: None,
                    agent: None,
                };
                (
                    ItemStatus::Completed,
                    completion_body(&completed, cost, &claimed.tenant_id),
                    Some(usage),
                )
            }
        },
    };
    if let Err(error) = state
        .store
        .finish_batch_item(&claimed, status, &result.to_string(), usage.as_ref())
        .await
    {
        tracing::warn!(%error, batch = %claimed.item.batch_id, item = claimed.item.index, "a batch item's result was not written");
    }
}

fn error_body(error: &ApiError) -> Value {
    let mut body = error.body()["error"].clone();
    body["status"] = json!(error.status().as_u16());
    body
}

/// The routes of batches.
pub(crate) fn router() -> Routes {
    Routes::new()
        .route("/batches", crate::routing::post(create).get(list))
        .route("/batches/{id}", crate::routing::get(get))
}
