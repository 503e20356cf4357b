//! One HTTP/1.1 request and its response over a connection the host made: to a container's
//! port inside its network namespace ([`crate::Container::send`]) or to an address an
//! operator registered (a `url` container, [`send_to`]). The response body is read up to a cap,
//! so a container cannot make the host buffer more than it allows.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;

/// Why an exchange did not produce a response.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// Nothing answered the connection.
    #[error("connecting failed: {0}")]
    Connect(std::io::Error),
    /// The connection broke or the answer was not HTTP.
    #[error("the HTTP exchange failed: {0}")]
    Http(String),
    /// The body was larger than the cap.
    #[error("the response body is larger than {0} bytes")]
    TooLarge(usize),
}

/// Sends `request` over `stream` and reads the response, its body at most `max_bytes`.
///
/// # Errors
///
/// [`ExchangeError`].
pub async fn exchange<S>(
    stream: S,
    request: http::Request<Bytes>,
    max_bytes: usize,
) -> Result<http::Response<Bytes>, ExchangeError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| ExchangeError::Http(e.to_string()))?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let result = async {
        let response = sender
            .send_request(request.map(Full::new))
            .await
            .map_err(|e| ExchangeError::Http(e.to_string()))?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, max_bytes).collect().await.map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                ExchangeError::TooLarge(max_bytes)
            } else {
                ExchangeError::Http(e.to_string())
            }
        })?;
        Ok(http::Response::from_parts(parts, body.to_bytes()))
    }
    .await;
    driver.abort();
    result
}

/// Sends `request` to `authority` (`host:port`, plain HTTP) and reads the response.
///
/// # Errors
///
/// [`ExchangeError`].
pub async fn send_to(
    authority: &str,
    request: http::Request<Bytes>,
    max_bytes: usize,
) -> Result<http::Response<Bytes>, ExchangeError> {
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(ExchangeError::Connect)?;
    let _ = stream.set_nodelay(true);
    exchange(stream, request, max_bytes).await
}
