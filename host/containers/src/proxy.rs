//! The egress proxy of a container: an HTTP proxy the host serves on the container's loopback
//! (`HTTP_PROXY`/`HTTPS_PROXY` point at it), which lets a request through only to a host named
//! in `network.egress_hosts`, by the same rule a component's outbound requests pass
//! ([`atrium_manifest::sandbox::EgressPolicy`]).
//!
//! - `CONNECT host:port` (what HTTPS clients send) opens a tunnel when `host` is allowed;
//!   the TLS inside is the app's own, end to end.
//! - A plain-HTTP request in absolute form (`GET http://host/path`) is forwarded when `host`
//!   is allowed.
//! - The host resolves the name itself and refuses an address of its own or its link
//!   (loopback, unspecified, link-local such as a cloud's metadata service, multicast), so an
//!   allowed name that resolves to one is no way into the machine.
//! - Anything else is answered 403 with a sentence naming the host.
//!
//! What it does not cover: a protocol that is not HTTP (the container has no other way out, so
//! such traffic simply fails), and what an allowed host does with the request.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use atrium_manifest::sandbox::EgressPolicy;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

type Body = BoxBody<Bytes, hyper::Error>;

fn text(status: StatusCode, message: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(message))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response
}

/// Whether the proxy may connect to `ip`.
fn reachable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            !(v6.is_loopback() || v6.is_unspecified() || v6.is_multicast() || link_local)
                && v6
                    .to_ipv4_mapped()
                    .is_none_or(|v4| reachable(IpAddr::V4(v4)))
        }
    }
}

/// Resolves `host:port` on the host and connects to the first address it may reach.
async fn connect(host: &str, port: u16) -> Result<tokio::net::TcpStream, String> {
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("`{host}` does not resolve: {e}"))?
        .collect();
    let Some(address) = addresses.iter().find(|a| reachable(a.ip())) else {
        return Err(format!(
            "`{host}` resolves only to addresses of this machine or its link ({addresses:?})"
        ));
    };
    tokio::net::TcpStream::connect(address)
        .await
        .map_err(|e| format!("connecting to `{host}` failed: {e}"))
}

async fn handle(
    policy: Arc<EgressPolicy>,
    app: Arc<str>,
    request: Request<Incoming>,
) -> Result<Response<Body>, hyper::Error> {
    let Some(authority) = request.uri().authority().cloned() else {
        return Ok(text(
            StatusCode::BAD_REQUEST,
            "the egress proxy takes CONNECT or absolute-form requests".into(),
        ));
    };
    let host = authority.host().to_owned();
    if !policy.allows(&host) {
        tracing::warn!(app = %app, host = %host, "container egress refused: not in network.egress_hosts");
        return Ok(text(
            StatusCode::FORBIDDEN,
            format!("egress to `{host}` is refused: it is not in the app's network.egress_hosts"),
        ));
    }
    if request.method() == Method::CONNECT {
        let port = authority.port_u16().unwrap_or(443);
        let upstream = match connect(&host, port).await {
            Ok(s) => s,
            Err(e) => return Ok(text(StatusCode::BAD_GATEWAY, e)),
        };
        tokio::spawn(async move {
            match hyper::upgrade::on(request).await {
                Ok(upgraded) => {
                    let mut upgraded = TokioIo::new(upgraded);
                    let mut upstream = upstream;
                    let _ = tokio::io::copy_bidirectional(&mut upgraded, &mut upstream).await;
                }
                Err(e) => tracing::debug!(error = %e, "egress tunnel not upgraded"),
            }
        });
        return Ok(Response::new(
            http_body_util::Empty::new()
                .map_err(|never| match never {})
                .boxed(),
        ));
    }
    if request.uri().scheme_str() != Some("http") {
        return Ok(text(
            StatusCode::BAD_REQUEST,
            "only http:// requests are forwarded; https goes through CONNECT".into(),
        ));
    }
    let port = authority.port_u16().unwrap_or(80);
    let upstream = match connect(&host, port).await {
        Ok(s) => s,
        Err(e) => return Ok(text(StatusCode::BAD_GATEWAY, e)),
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(e) => return Ok(text(StatusCode::BAD_GATEWAY, e.to_string())),
        };
    tokio::spawn(connection);
    let (mut parts, body) = request.into_parts();
    // Origin form upstream: the path and query only.
    parts.uri = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .unwrap_or_default();
    parts.headers.remove("proxy-connection");
    parts.headers.remove("proxy-authorization");
    match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => Ok(response.map(BodyExt::boxed)),
        Err(e) => Ok(text(StatusCode::BAD_GATEWAY, e.to_string())),
    }
}

/// Serves the egress proxy of `app` on `listener` until the listener's task is aborted.
pub(crate) async fn serve(listener: tokio::net::TcpListener, policy: EgressPolicy, app: String) {
    let policy = Arc::new(policy);
    let app: Arc<str> = app.into();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (policy, app) = (policy.clone(), app.clone());
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |r| handle(policy.clone(), app.clone(), r));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
        });
    }
}

/// Forwards every connection on `listener` to `target` (the platform's address on the host).
pub(crate) async fn forward(listener: tokio::net::TcpListener, target: SocketAddr) {
    loop {
        let Ok((mut inside, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            if let Ok(mut outside) = tokio::net::TcpStream::connect(target).await {
                let _ = outside.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut inside, &mut outside).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_of_the_machine_and_its_link_are_not_reachable() {
        for ip in [
            "127.0.0.1",
            "0.0.0.0",
            "169.254.169.254",
            "::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "224.0.0.1",
        ] {
            assert!(
                !reachable(ip.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]))),
                "{ip}"
            );
        }
        for ip in ["93.184.216.34", "10.0.0.5", "2606:4700::1111"] {
            assert!(
                reachable(ip.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]))),
                "{ip}"
            );
        }
    }
}
