//! Overload: no request waits in a queue that grows until clients give up.
//!
//! Two answers, both at once and with `Retry-After` (docs/api.md, "Limits and overload"):
//!
//! - **429 `rate_limit_exceeded`**: a credential (an organization key, a tenant token, a
//!   developer) or a tenant sent more than its rate. Each has a token bucket: `rate` requests
//!   a second on average, `burst` at once. Buckets are keyed by authenticated principals only,
//!   so a client cannot spend another tenant's budget by naming it, and an unauthenticated
//!   flood is left to the global limits.
//! - **503 `overloaded`**: the host as a whole is past its capacity: more requests in flight
//!   than `max_in_flight`, or a request that waited longer than `max_queue_delay` before the
//!   host read it. Two measures of that wait, either of which sheds:
//!   - the request's own: how long its bytes sat in the kernel's socket buffer (`TCP_INFO`'s
//!     time since the connection last received data, or since the connection's previous answer
//!     left when that is sooner, so a pipelined request does not count its wait behind the one
//!     before it). This is where the queue of a saturated host actually grows: in the accept
//!     queue and in sockets that are readable but not yet read, where the runtime cannot see it;
//!   - the runtime's: how late a probe task that asked to wake after a few milliseconds is
//!     polled (the queue of tasks that are ready but wait for a core).
//!
//!   A third queue sheds too: the metering writer's, where every answered request hands over
//!   its usage record. While its records wait longer than `max_queue_delay`, or fill it, each
//!   request admitted would wait there, unseen by the two measures above.
//!
//!   Shed requests are not logged one by one; one warning every ten seconds counts them.
//!
//! A request is shed where it costs the host least. The first request of a new connection is
//! looked at by [`Gate`], the host's listener, as the connection is accepted: if the host is
//! past its capacity, the request's bytes are read and dropped, a canned 503 is written and
//! the connection is closed, all without a task, an HTTP parser or the router. Requests on
//! connections already open are shed by [`shed`], the outermost layer of the router, before
//! their body is read.
//!
//! The parts: [`Limits`] are the operator's configuration; `buckets` the token buckets of the
//! 429s; [`Limiter`] the decisions, shared by every request; `listener` the [`Gate`] that sheds
//! as it accepts and the [`Connection`] each request is served on; `socket` what the kernel
//! says about a socket's unread bytes. [`shed`], here, is the router's layer.

mod buckets;
mod limiter;
mod limits;
mod listener;
mod socket;

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub use limiter::Limiter;
pub use limits::{Limits, Rate};
pub use listener::{Connection, Gate, LISTEN_BACKLOG, listen};

use crate::{ApiError, HostState};

/// Counts a request in flight until it is answered (or dropped).
struct InFlight<'l>(&'l AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The global limits, around every route but `/health`: a request past them is answered
/// 503 at once, before its body is read.
pub async fn shed(State(state): State<HostState>, request: Request, next: Next) -> Response {
    let limiter = &state.limiter;
    if request.uri().path() == "/health" {
        return next.run(request).await;
    }
    let connection = request
        .extensions()
        .get::<ConnectInfo<Connection>>()
        .map(|info| info.0.clone());
    let waited = connection.as_ref().and_then(Connection::waited);
    if let Some(reason) = limiter.shed_reason(waited) {
        limiter.shed.fetch_add(1, Ordering::Relaxed);
        if let Some(connection) = &connection {
            connection.answered_now();
        }
        return ApiError::overloaded(reason, 1).into_response();
    }
    limiter.in_flight.fetch_add(1, Ordering::Relaxed);
    let _counted = InFlight(&limiter.in_flight);
    let response = next.run(request).await;
    if let Some(connection) = &connection {
        connection.answered_now();
    }
    response
}
