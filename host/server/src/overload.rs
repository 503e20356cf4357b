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

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;

use crate::{ApiError, HostState};

/// A token bucket's shape: `rate` requests a second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Requests a second.
    pub rate: f64,
    /// Requests at once.
    pub burst: f64,
}

/// The host's limits. Every field has a default fit for one host; `from_env` reads the
/// operator's.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Per credential (`ATRIUM_KEY_RATE`, `ATRIUM_KEY_BURST`); none is unlimited.
    pub per_key: Option<Rate>,
    /// Per tenant of an organization (`ATRIUM_TENANT_RATE`, `ATRIUM_TENANT_BURST`).
    pub per_tenant: Option<Rate>,
    /// Requests in flight on the host (`ATRIUM_MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
    /// The longest a request may wait before the host reads it, or a ready request for a core
    /// (`ATRIUM_MAX_QUEUE_DELAY_MS`).
    pub max_queue_delay: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_key: Some(Rate {
                rate: 1000.0,
                burst: 2000.0,
            }),
            per_tenant: Some(Rate {
                rate: 1000.0,
                burst: 2000.0,
            }),
            max_in_flight: 4096,
            max_queue_delay: Duration::from_millis(200),
        }
    }
}

impl Limits {
    /// The defaults with the operator's variables applied; an error names the variable.
    /// A rate of 0 turns that limit off.
    pub fn from_env(vars: &[(String, String)]) -> Result<Limits, String> {
        let var = |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.trim().to_owned())
        };
        fn number(name: &str, text: &str) -> Result<f64, String> {
            match text.parse::<f64>() {
                Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
                _ => Err(format!(
                    "{name} must be a number of 0 or more, not `{text}`"
                )),
            }
        }
        let rate = |rate_var: &str, burst_var: &str, default: Option<Rate>| {
            let rate = match var(rate_var) {
                Some(text) => number(rate_var, &text)?,
                None => default.map_or(0.0, |r| r.rate),
            };
            if rate == 0.0 {
                return Ok::<_, String>(None);
            }
            let burst = match var(burst_var) {
                Some(text) => number(burst_var, &text)?,
                None => (rate * 2.0).max(1.0),
            };
            if burst < 1.0 {
                return Err(format!("{burst_var} must be at least 1, not {burst}"));
            }
            Ok(Some(Rate { rate, burst }))
        };
        let defaults = Limits::default();
        let max_in_flight = match var("ATRIUM_MAX_IN_FLIGHT") {
            Some(text) => match text.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(format!(
                        "ATRIUM_MAX_IN_FLIGHT must be a whole number above 0, not `{text}`"
                    ));
                }
            },
            None => defaults.max_in_flight,
        };
        let max_queue_delay = match var("ATRIUM_MAX_QUEUE_DELAY_MS") {
            Some(text) => match text.parse::<u64>() {
                Ok(n) if n > 0 => Duration::from_millis(n),
                _ => {
                    return Err(format!(
                        "ATRIUM_MAX_QUEUE_DELAY_MS must be a whole number of milliseconds above 0, not `{text}`"
                    ));
                }
            },
            None => defaults.max_queue_delay,
        };
        Ok(Limits {
            per_key: rate("ATRIUM_KEY_RATE", "ATRIUM_KEY_BURST", defaults.per_key)?,
            per_tenant: rate(
                "ATRIUM_TENANT_RATE",
                "ATRIUM_TENANT_BURST",
                defaults.per_tenant,
            )?,
            max_in_flight,
            max_queue_delay,
        })
    }
}

/// The most buckets of one kind kept; beyond, full buckets (the same as none) are dropped.
const MAX_BUCKETS: usize = 100_000;
const SHARDS: usize = 16;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by principal, in shards so that cores do not queue on one lock.
struct Buckets {
    rate: Rate,
    shards: Vec<Mutex<HashMap<String, Bucket>>>,
}

impl Buckets {
    fn new(rate: Rate) -> Self {
        Buckets {
            rate,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// The shard of `key`, locked.
    fn shard(&self, key: &str) -> std::sync::MutexGuard<'_, HashMap<String, Bucket>> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        let shard = usize::try_from(hasher.finish() % SHARDS as u64).unwrap_or(0);
        self.shards[shard]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one token of `key`'s bucket, or answers how long until one is there.
    fn take(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut map = self.shard(key);
        let Rate { rate, burst } = self.rate;
        if map.len() >= MAX_BUCKETS / SHARDS && !map.contains_key(key) {
            map.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
        }
        let bucket = map.entry(key.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refilled =
            (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(burst);
        bucket.at = now;
        if refilled >= 1.0 {
            bucket.tokens = refilled - 1.0;
            Ok(())
        } else {
            bucket.tokens = refilled;
            Err(Duration::from_secs_f64((1.0 - refilled) / rate))
        }
    }

    /// Gives back the token [`Buckets::take`] took (the request was refused by another limit).
    fn refund(&self, key: &str) {
        if let Some(bucket) = self.shard(key).get_mut(key) {
            bucket.tokens = (bucket.tokens + 1.0).min(self.rate.burst);
        }
    }
}

/// The limits of one host, shared by every request.
pub struct Limiter {
    limits: Limits,
    keys: Option<Buckets>,
    tenants: Option<Buckets>,
    in_flight: AtomicUsize,
    /// The queue delay the probe last measured, in microseconds.
    queue_delay_us: AtomicU64,
    shed: AtomicU64,
    limited: AtomicU64,
    /// When the host began to serve: a request that arrived before (a client that connected
    /// while the host was starting) waited for the start, not in a queue of the host's.
    serving_since: Mutex<Option<Instant>>,
    /// The metering writer, whose queue every answered request hands its usage record to.
    metering: std::sync::OnceLock<atrium_store::Metering>,
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter::new(Limits::default())
    }
}

/// Whole seconds to wait, at least one (the `Retry-After` header).
fn seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

impl Limiter {
    /// A limiter with these limits.
    pub fn new(limits: Limits) -> Self {
        Limiter {
            keys: limits.per_key.map(Buckets::new),
            tenants: limits.per_tenant.map(Buckets::new),
            limits,
            in_flight: AtomicUsize::new(0),
            queue_delay_us: AtomicU64::new(0),
            shed: AtomicU64::new(0),
            limited: AtomicU64::new(0),
            serving_since: Mutex::new(None),
            metering: std::sync::OnceLock::new(),
        }
    }

    /// Sheds requests, too, while the usage records of those answered wait longer than
    /// `max_queue_delay` for `metering`'s writer, or fill its queue (`atrium_server::serve`
    /// calls it): past that point every admitted request would wait to hand over its record.
    pub fn watch_metering(&self, metering: atrium_store::Metering) {
        let _ = self.metering.set(metering);
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Admits a request of an authenticated credential (`kind` and id, for example
    /// `key:<id>`; none for an anonymous caller) for a tenant of an organization, or answers
    /// 429.
    pub fn admit(
        &self,
        credential: Option<&str>,
        org_id: &str,
        tenant_id: Option<&str>,
    ) -> Result<(), ApiError> {
        let now = Instant::now();
        if let (Some(keys), Some(credential)) = (&self.keys, credential)
            && let Err(wait) = keys.take(credential, now)
        {
            self.limited.fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::rate_limited(
                format!(
                    "this credential sent more than {} requests a second (ATRIUM_KEY_RATE); retry after {} s",
                    self.limits.per_key.map_or(0.0, |r| r.rate),
                    seconds(wait)
                ),
                seconds(wait),
            ));
        }
        if let (Some(tenants), Some(tenant)) = (&self.tenants, tenant_id)
            && let Err(wait) = tenants.take(&format!("{org_id}\u{0}{tenant}"), now)
        {
            // A refused request spends nothing: the credential's token goes back.
            if let (Some(keys), Some(credential)) = (&self.keys, credential) {
                keys.refund(credential);
            }
            self.limited.fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::rate_limited(
                format!(
                    "tenant `{tenant}` sent more than {} requests a second (ATRIUM_TENANT_RATE); retry after {} s",
                    self.limits.per_tenant.map_or(0.0, |r| r.rate),
                    seconds(wait)
                ),
                seconds(wait),
            ));
        }
        Ok(())
    }

    /// Notes that the host begins to serve now (`atrium_server::serve` calls it).
    pub fn serving(&self) {
        *self
            .serving_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// Whether a new request that waited `waited` before the host read it is shed, and why.
    fn shed_reason(&self, waited: Option<Duration>) -> Option<String> {
        let limit = self.limits.max_queue_delay;
        // Only a wait while the host served counts.
        let waited = waited.filter(|w| *w > limit).map(|w| {
            self.serving_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .map_or(w, |since| w.min(since.elapsed()))
        });
        if let Some(waited) = waited
            && waited > limit
        {
            return Some(format!(
                "the host is overloaded: this request waited {} ms before the host could read it (the limit is {} ms)",
                waited.as_millis(),
                self.limits.max_queue_delay.as_millis()
            ));
        }
        let delay = Duration::from_micros(self.queue_delay_us.load(Ordering::Relaxed));
        if delay > self.limits.max_queue_delay {
            return Some(format!(
                "the host is overloaded: requests wait {} ms for a core (the limit is {} ms)",
                delay.as_millis(),
                self.limits.max_queue_delay.as_millis()
            ));
        }
        if let Some(backlog) = self
            .metering
            .get()
            .and_then(atrium_store::Metering::backlog)
            && (backlog.full || backlog.wait > self.limits.max_queue_delay)
        {
            return Some(format!(
                "the host is overloaded: the usage records of answered requests wait {} ms to be stored (the limit is {} ms)",
                backlog.wait.as_millis(),
                self.limits.max_queue_delay.as_millis()
            ));
        }
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        if in_flight >= self.limits.max_in_flight {
            return Some(format!(
                "the host is overloaded: {in_flight} requests are in flight (the limit is {})",
                self.limits.max_in_flight
            ));
        }
        None
    }

    /// Measures the queue delay until `stop` says so: how late a task that asked to wake
    /// after 5 ms is actually polled. The delay that counts is the least of the last four
    /// probes: one long step that held a core once is not overload, a queue is.
    pub async fn probe_queue_delay(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        const PERIOD: Duration = Duration::from_millis(5);
        let mut last_report = Instant::now();
        let (mut shed_before, mut limited_before) = (0, 0);
        let mut recent = [0u64; 4];
        let mut next = 0;
        loop {
            let asked = Instant::now();
            tokio::select! {
                () = tokio::time::sleep(PERIOD) => {}
                _ = stop.changed() => return,
            }
            let late = asked.elapsed().saturating_sub(PERIOD);
            recent[next] = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
            next = (next + 1) % recent.len();
            let least = recent.iter().copied().min().unwrap_or(0);
            self.queue_delay_us.store(least, Ordering::Relaxed);
            if last_report.elapsed() >= Duration::from_secs(10) {
                let (shed, limited) = (
                    self.shed.load(Ordering::Relaxed),
                    self.limited.load(Ordering::Relaxed),
                );
                if shed > shed_before || limited > limited_before {
                    tracing::warn!(
                        shed = shed - shed_before,
                        rate_limited = limited - limited_before,
                        "overload: requests were answered 503 (shed) or 429 (rate limited) in the last 10 s"
                    );
                }
                (shed_before, limited_before) = (shed, limited);
                last_report = Instant::now();
            }
        }
    }
}

/// Counts a request in flight until it is answered (or dropped).
struct InFlight<'l>(&'l AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A request's connection, as `atrium_server::serve` records it for every request (a
/// [`ConnectInfo`]): its socket, to ask the kernel how long the request's bytes waited there
/// unread, and when the connection's previous answer left.
#[derive(Clone, Debug)]
pub struct Connection {
    socket: Option<std::os::fd::RawFd>,
    answered: Arc<Mutex<Option<Instant>>>,
}

/// How many connections the kernel may hold for the host before it accepts them. The standard
/// library's and tokio's `bind` ask for 128: a host taking a few thousand new connections a
/// second fills that in a few tens of milliseconds of a busy core, and the kernel then drops
/// the clients' SYNs, which they send again only after a second (then 3 s, 7 s). A longer
/// queue keeps those connections, and [`Gate`] answers the ones that waited too long with a
/// 503 as soon as it accepts them. The kernel caps it at `net.core.somaxconn` (4096 by default).
pub const LISTEN_BACKLOG: u32 = 4096;

/// A TCP listener on `addr` with a backlog of [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, as
/// `bind` sets it).
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(not(windows))]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The host's listener: a TCP listener that refuses, as it accepts them, the connections whose
/// first request arrives while the host is past its capacity (see the module's documentation).
pub struct Gate {
    listener: tokio::net::TcpListener,
    limiter: Arc<Limiter>,
}

impl Gate {
    /// Accepts on `listener`, shedding by `limiter`.
    pub fn new(listener: tokio::net::TcpListener, limiter: Arc<Limiter>) -> Self {
        Gate { listener, limiter }
    }

    /// Answers the request waiting on `stream` with 503 `overloaded` and closes the connection.
    /// Nothing here waits: what is not readable or writable at once is left to the close.
    fn refuse(stream: &tokio::net::TcpStream, reason: String) {
        // The request's bytes are read first, so that the close that follows the answer is a
        // FIN, not a reset that could overtake the answer (a body still on its way meets the
        // reset, after the answer).
        let mut sink = [0u8; 16 * 1024];
        for _ in 0..4 {
            match stream.try_read(&mut sink) {
                Ok(n) if n == sink.len() => {}
                _ => break,
            }
        }
        let body = ApiError::overloaded(reason, 1).body().to_string();
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.try_write(answer.as_bytes());
    }
}

impl axum::serve::Listener for Gate {
    type Io = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        use std::os::fd::AsRawFd;
        loop {
            let (stream, addr) = axum::serve::Listener::accept(&mut self.listener).await;
            // Only a connection whose request is already there is answered here: a client
            // that has connected and not yet written gets its answer, 503 or not, from the
            // router. The health check is never shed, here as in [`shed`].
            let fd = stream.as_raw_fd();
            if readable_bytes(fd) > 0
                && let Some(reason) = self.limiter.shed_reason(unread_for(fd))
                && !asks_for_health(fd)
            {
                self.limiter.shed.fetch_add(1, Ordering::Relaxed);
                Gate::refuse(&stream, reason);
                continue;
            }
            return (stream, addr);
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

impl Connected<IncomingStream<'_, Gate>> for Connection {
    fn connect_info(stream: IncomingStream<'_, Gate>) -> Self {
        use std::os::fd::AsRawFd;
        Connection {
            socket: Some(stream.io().as_raw_fd()),
            answered: Arc::default(),
        }
    }
}

impl Connection {
    /// How long the request now being read waited before the host read it: the time since the
    /// connection last received data, or since its previous answer left if that is sooner.
    /// Called while the connection serves the request, so the socket is still the connection's.
    fn waited(&self) -> Option<Duration> {
        let unread = self.socket.and_then(unread_for)?;
        let since_answer = self
            .answered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map(|at| at.elapsed());
        Some(since_answer.map_or(unread, |since| since.min(unread)))
    }

    fn answered_now(&self) {
        *self.answered.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }
}

/// The time since the TCP socket `fd` last received data, by the kernel's clock (`TCP_INFO`,
/// `tcpi_last_data_recv`, in milliseconds); none if the kernel does not say.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn unread_for(fd: std::os::fd::RawFd) -> Option<Duration> {
    let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
    let size = std::mem::size_of::<libc::tcp_info>();
    let mut len = libc::socklen_t::try_from(size).ok()?;
    // SAFETY: `info` is a writable buffer of `len` bytes that outlives the call; the kernel
    // writes at most `len` bytes to it and says how many in `len`. A descriptor that is not a
    // TCP socket fails the call and is answered with none.
    let read = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &raw mut len,
        )
    };
    let filled = usize::try_from(len).ok()?;
    if read != 0 || filled < std::mem::offset_of!(libc::tcp_info, tcpi_last_data_recv) + 4 {
        return None;
    }
    // SAFETY: zeroed, then filled by the kernel: every field is an integer.
    let info = unsafe { info.assume_init() };
    Some(Duration::from_millis(u64::from(info.tcpi_last_data_recv)))
}

#[cfg(not(target_os = "linux"))]
fn unread_for(_fd: std::os::fd::RawFd) -> Option<Duration> {
    None
}

/// How many bytes wait unread on the socket `fd` (`FIONREAD`); 0 if the kernel does not say.
#[cfg(unix)]
#[allow(unsafe_code)]
fn readable_bytes(fd: std::os::fd::RawFd) -> usize {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD writes one `int` through the pointer, which is valid for the call; a
    // descriptor that is not a socket fails the call and is answered with 0.
    let read = unsafe { libc::ioctl(fd, libc::FIONREAD, &raw mut count) };
    if read == 0 {
        usize::try_from(count).unwrap_or(0)
    } else {
        0
    }
}

/// Whether the request waiting on the socket `fd` is the health check (`GET /health` or
/// `HEAD /health`), by a look at its first bytes that leaves them for the reader.
#[cfg(unix)]
#[allow(unsafe_code)]
fn asks_for_health(fd: std::os::fd::RawFd) -> bool {
    let mut head = [0u8; 13];
    // SAFETY: `recv` writes at most `head.len()` bytes into `head`, which is valid for the
    // call; MSG_PEEK leaves them in the socket and MSG_DONTWAIT keeps the call from waiting.
    let read = unsafe {
        libc::recv(
            fd,
            head.as_mut_ptr().cast(),
            head.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    let Ok(read) = usize::try_from(read) else {
        return false;
    };
    let head = &head[..read];
    [&b"GET /health"[..], b"HEAD /health"].iter().any(|line| {
        head.strip_prefix(*line)
            .is_some_and(|rest| rest.first().is_none_or(|b| matches!(b, b' ' | b'?')))
    })
}

#[cfg(not(unix))]
fn asks_for_health(_fd: std::os::fd::RawFd) -> bool {
    false
}

#[cfg(not(unix))]
fn readable_bytes(_fd: std::os::fd::RawFd) -> usize {
    0
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

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate_and_says_how_long_to_wait() {
        let buckets = Buckets::new(Rate {
            rate: 2.0,
            burst: 3.0,
        });
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(buckets.take("k", t0), Ok(()));
        }
        let wait = buckets.take("k", t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert_eq!(seconds(wait), 1);
        // Another key has its own bucket.
        assert_eq!(buckets.take("other", t0), Ok(()));
        // Half a second later one token is back, and only one.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(buckets.take("k", t1), Ok(()));
        assert!(buckets.take("k", t1).is_err());
    }

    #[test]
    fn the_limits_come_from_the_environment_and_bad_values_name_the_variable() {
        assert_eq!(Limits::from_env(&[]).unwrap(), Limits::default());
        let limits = Limits::from_env(&vars(&[
            ("ATRIUM_KEY_RATE", "5"),
            ("ATRIUM_TENANT_RATE", "0"),
            ("ATRIUM_MAX_IN_FLIGHT", "64"),
            ("ATRIUM_MAX_QUEUE_DELAY_MS", "250"),
        ]))
        .unwrap();
        assert_eq!(
            limits.per_key,
            Some(Rate {
                rate: 5.0,
                burst: 10.0
            })
        );
        assert_eq!(limits.per_tenant, None);
        assert_eq!(limits.max_in_flight, 64);
        assert_eq!(limits.max_queue_delay, Duration::from_millis(250));
        for (name, value) in [
            ("ATRIUM_KEY_RATE", "fast"),
            ("ATRIUM_TENANT_BURST", "0.5"),
            ("ATRIUM_MAX_IN_FLIGHT", "0"),
            ("ATRIUM_MAX_QUEUE_DELAY_MS", "-1"),
        ] {
            let err = Limits::from_env(&vars(&[(name, value)])).unwrap_err();
            assert!(err.starts_with(name), "{err}");
        }
    }

    #[test]
    fn a_queue_delay_past_the_limit_sheds_and_the_in_flight_cap_too() {
        let limiter = Limiter::new(Limits {
            max_in_flight: 2,
            ..Limits::default()
        });
        assert_eq!(limiter.shed_reason(None), None);
        limiter.queue_delay_us.store(250_000, Ordering::Relaxed);
        let reason = limiter.shed_reason(None).unwrap();
        assert!(reason.contains("wait 250 ms"), "{reason}");
        limiter.queue_delay_us.store(0, Ordering::Relaxed);
        limiter.in_flight.store(2, Ordering::Relaxed);
        let reason = limiter.shed_reason(None).unwrap();
        assert!(reason.contains("2 requests are in flight"), "{reason}");
        limiter.in_flight.store(0, Ordering::Relaxed);
        // A request's own wait: up to the limit it is served, past it shed.
        let limit = limiter.limits().max_queue_delay;
        assert_eq!(limiter.shed_reason(Some(limit)), None);
        let reason = limiter
            .shed_reason(Some(limit + Duration::from_millis(1)))
            .unwrap();
        assert!(
            reason.contains("waited 201 ms before the host could read it"),
            "{reason}"
        );
        // A request that arrived while the host was starting waited for the start, not for
        // the host's queue.
        limiter.serving();
        assert_eq!(limiter.shed_reason(Some(limit * 5)), None);
    }

    #[tokio::test]
    async fn the_listener_holds_more_connections_than_the_usual_128_before_it_accepts() {
        let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        // Nothing accepts. With a backlog of 128 the kernel would drop the SYNs past the
        // 129th connection, and those clients would wait for a resend that meets a full
        // queue again.
        let connected = tokio::task::spawn_blocking(move || {
            (0..300)
                .map(|_| std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(10)))
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .unwrap();
        assert_eq!(connected.unwrap().len(), 300);
        drop(listener);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_kernel_says_how_long_a_sockets_bytes_waited_unread() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let connection = Connection {
            socket: Some(server.as_raw_fd()),
            answered: Arc::default(),
        };
        let waited = connection.waited().unwrap();
        // The kernel's clock ticks in jiffies (at least 100 a second).
        assert!(waited >= Duration::from_millis(290), "{waited:?}");
        // Once the connection's previous answer left, the wait counts from then.
        connection.answered_now();
        assert!(connection.waited().unwrap() < waited);
        // A descriptor that is not a TCP socket is answered with none.
        let file = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(unread_for(file.as_raw_fd()), None);
    }
}
