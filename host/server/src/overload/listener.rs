//! The host's listener: a TCP listener with a long backlog, the [`Gate`] that answers 503 to
//! the connections whose first request arrives while the host is past its capacity, before any
//! task or parser, and the [`Connection`] every request records, to measure how long its bytes
//! waited unread.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;

use super::Limiter;
use super::socket::{asks_for_health, readable_bytes, unread_for};
use crate::ApiError;

/// A request's connection, as `atrium_server::serve` records it for every request (a
/// [`ConnectInfo`]): its socket, to ask the kernel how long the request's bytes waited there
/// unread, and when the connection's previous answer left.
///
/// [`ConnectInfo`]: axum::extract::connect_info::ConnectInfo
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
    pub(super) fn waited(&self) -> Option<Duration> {
        let unread = self.socket.and_then(unread_for)?;
        let since_answer = self
            .answered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map(|at| at.elapsed());
        Some(since_answer.map_or(unread, |since| since.min(unread)))
    }

    pub(super) fn answered_now(&self) {
        *self.answered.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
