//! [`ContainerApp`]: the runtime's `External` backend of one container app's version, which
//! carries each call over the container protocol ([`super::protocol`]) to the version's
//! running container.

use std::sync::Arc;

use async_trait::async_trait;
use atrium_manifest::Manifest;
use atrium_runtime::{CallError, External, HandlerCall, HandlerReply, Invocation, RouteResponse};
use bytes::Bytes;

use super::{Containers, Running, VersionKey, protocol};

/// The backend of one container app's version.
pub struct ContainerApp {
    pub(super) containers: Containers,
    pub(super) key: VersionKey,
    pub(super) image: String,
    pub(super) manifest: Arc<Manifest>,
}

/// Request headers a route's caller sent that the app never sees: the caller's credentials
/// and what belongs to one hop.
const STRIPPED: &[&str] = &[
    "authorization",
    "cookie",
    "proxy-authorization",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    protocol::HEADER_TENANT,
    protocol::HEADER_CALL,
    protocol::HEADER_VERSION,
    protocol::HEADER_PUBLIC,
    protocol::HEADER_APP_TOKEN,
    atrium_runtime::HEADER_CHAIN_DEPTH,
    atrium_runtime::HEADER_VISITED_AGENTS,
];

impl ContainerApp {
    fn call_headers(
        &self,
        inv: &Invocation,
        headers: &mut http::HeaderMap,
    ) -> Result<(), CallError> {
        let info = inv.info(&self.manifest);
        let token = inv
            .platform
            .callback_token(&info)
            .map_err(|e| CallError::Internal(format!("no APP_MCP_TOKEN for the call: {e}")))?;
        for (name, value) in protocol::call_headers(&info, &token) {
            let value = http::HeaderValue::from_str(&value).map_err(|_| {
                CallError::Internal(format!("the call's {name} is not a header value"))
            })?;
            headers.insert(name, value);
        }
        Ok(())
    }

    async fn send(
        &self,
        running: &Arc<Running>,
        request: http::Request<Bytes>,
        max_bytes: usize,
    ) -> Result<http::Response<Bytes>, CallError> {
        match running.send(request, max_bytes).await {
            Ok(response) => Ok(response),
            Err(atrium_containers::ExchangeError::TooLarge(limit)) => Err(CallError::TooLarge {
                what: "result",
                limit,
            }),
            Err(e) => {
                let (slug, version) = &self.key;
                let error = if running.alive().await {
                    CallError::Unavailable(format!(
                        "the container of `{slug}` {version} did not answer: {e}"
                    ))
                } else {
                    CallError::Failed(format!(
                        "the container of `{slug}` {version} stopped during the call (for example killed at its memory limit of {} MiB); it said: {}",
                        self.manifest.runtime.resources.memory_mb,
                        running.said().await.trim()
                    ))
                };
                self.containers.lost(self, running).await;
                Err(error)
            }
        }
    }
}

#[async_trait]
impl External for ContainerApp {
    async fn ready(&self) -> Result<(), CallError> {
        self.containers.ensure(self).await.map(drop)
    }

    async fn handle(
        &self,
        inv: &Invocation,
        call: HandlerCall,
        max_bytes: usize,
    ) -> Result<HandlerReply, CallError> {
        let running = self.containers.ensure(self).await?;
        let answers_json = call.answers_json();
        let (path, body) = protocol::request_of(call)?;
        let mut request = http::Request::post(path)
            .header(http::header::HOST, "app")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Bytes::from(body.to_string()))
            .map_err(|e| CallError::Internal(e.to_string()))?;
        self.call_headers(inv, request.headers_mut())?;
        let response = self.send(&running, request, max_bytes).await?;
        protocol::reply_of(path, answers_json, response.status(), response.body())
    }

    async fn route(
        &self,
        inv: &Invocation,
        request: http::Request<Bytes>,
        max_bytes: usize,
    ) -> Result<RouteResponse, CallError> {
        let running = self.containers.ensure(self).await?;
        let (mut parts, body) = request.into_parts();
        let prefix = if inv.public_route {
            "/public"
        } else {
            "/route"
        };
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.uri = format!("{prefix}{path}")
            .parse()
            .map_err(|e| CallError::InvalidInput(format!("invalid request path: {e}")))?;
        for name in STRIPPED {
            parts.headers.remove(*name);
        }
        parts
            .headers
            .insert(http::header::HOST, http::HeaderValue::from_static("app"));
        self.call_headers(inv, &mut parts.headers)?;
        let response = self
            .send(&running, http::Request::from_parts(parts, body), max_bytes)
            .await
            .map_err(|e| match e {
                CallError::TooLarge { limit, .. } => CallError::TooLarge {
                    what: "response body",
                    limit,
                },
                other => other,
            })?;
        Ok(response)
    }
}
