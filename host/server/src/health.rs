//! `GET /health` (the host process answers) and `GET /ready` (the host can do its work: the
//! store takes a write, and the metering writer stores usage). A load balancer sends traffic
//! to a host while `/ready` answers 200 and takes it away on 503; an operator reads in the
//! body what is wrong (docs/api.md, "Health and readiness").

use std::time::Duration;

use crate::routing::{Routes, get};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::Serialize;

use crate::HostState;

/// How long the store may take to begin and commit an empty write before the host is not
/// ready: a store whose write lock a connection keeps never answers within it.
pub const STORE_PROBE_LIMIT: Duration = Duration::from_secs(2);

/// The answer of `GET /ready`.
#[derive(Debug, Clone, Serialize)]
pub struct Readiness {
    /// `ready` (status 200) or `not_ready` (status 503).
    pub status: &'static str,
    /// Whether the store takes a write.
    pub store: Check,
    /// Whether the metering writer stores the usage records it is handed.
    pub metering: Check,
}

/// One check of [`Readiness`].
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Whether it passes.
    pub ok: bool,
    /// What fails, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Since when it fails, in ms since the Unix epoch, when that is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since_ms: Option<i64>,
    /// Usage records the metering writer holds until the store takes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_records: Option<usize>,
}

impl Check {
    fn passed() -> Check {
        Check {
            ok: true,
            error: None,
            failing_since_ms: None,
            held_records: None,
        }
    }

    fn failed(error: String) -> Check {
        Check {
            ok: false,
            error: Some(error),
            failing_since_ms: None,
            held_records: None,
        }
    }
}

/// The routes of this module.
pub(crate) fn router() -> Routes {
    Routes::new()
        .route("/health", get(|| async { "ok" }))
        .route("/ready", get(ready))
}

async fn ready(State(state): State<HostState>) -> impl IntoResponse {
    // The probe is a store write, cancel-safe like every other: cut off at the limit, it ends
    // on its own.
    let store = match tokio::time::timeout(STORE_PROBE_LIMIT, state.store.probe_write()).await {
        Ok(Ok(())) => Check::passed(),
        Ok(Err(e)) => Check::failed(format!("the store refuses a write: {e}")),
        Err(_) => Check::failed(format!(
            "the store did not take a write within {} ms",
            STORE_PROBE_LIMIT.as_millis()
        )),
    };
    let metering = match state.metering.health() {
        atrium_store::MeteringHealth::Writing => Check::passed(),
        atrium_store::MeteringHealth::Failing { since, held, error } => Check {
            failing_since_ms: Some(since.as_millisecond()),
            held_records: Some(held),
            ..Check::failed(format!("the store refuses usage records: {error}"))
        },
    };
    let ok = store.ok && metering.ok;
    if !ok {
        tracing::warn!(
            store = store.error.as_deref().unwrap_or("ok"),
            metering = metering.error.as_deref().unwrap_or("ok"),
            "the host is not ready"
        );
    }
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = Readiness {
        status: if ok { "ready" } else { "not_ready" },
        store,
        metering,
    };
    (status, axum::Json(body))
}
