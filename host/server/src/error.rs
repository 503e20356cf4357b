//! The one error type of the HTTP API, and the one place that maps the domain errors to it.
//!
//! An [`ApiError`] owns its status and OpenAI's error body,
//! `{"error": {"message", "type", "param", "code"}}`. It is built only here: by a constructor
//! per kind of answer, or by a `From` impl for each domain error (the store, the gateway, the
//! embedders, retrieval), so a status mapping is written once. Failures on the host's side
//! never show their internal text to the client: the client gets a sentence and an error id
//! (also in the `x-error-id` header), and [`log_requests`], the one middleware that logs
//! requests, writes the details of a server error under that id.

use atrium_inference::embed::EmbedError;
use atrium_inference::providers::UpstreamError;
use atrium_inference::{GatewayError, RouteError};
use atrium_retrieval::RetrievalError;
use axum::Json;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The response header that carries the id of a server error, as in the host's log.
pub const ERROR_ID_HEADER: &str = "x-error-id";

/// An error answered to a client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    kind: &'static str,
    param: Option<String>,
    code: Option<&'static str>,
    /// A list the answer carries beside the message, under its key in `error`: every problem
    /// of a project (`problems`), what an activation misses (`missing`).
    extra: Option<Box<(&'static str, serde_json::Value)>>,
    /// For a failure on the host's side: the id the client gets and the details only the log
    /// gets.
    internal: Option<Box<Internal>>,
    /// Seconds the client should wait before trying again (the `Retry-After` header).
    retry_after: Option<u64>,
    /// Trying again cannot help (`X-Should-Retry: false`, which the OpenAI SDKs honour).
    final_answer: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Internal {
    id: String,
    detail: String,
}

/// What [`log_requests`] reads from a response: set by [`ApiError::into_response`].
#[derive(Debug, Clone)]
struct ServerErrorRecord {
    message: String,
    internal: Option<Box<Internal>>,
}

impl ApiError {
    fn new(
        status: StatusCode,
        kind: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            message: message.into(),
            kind,
            param: None,
            code: Some(code),
            extra: None,
            internal: None,
            retry_after: None,
            final_answer: false,
        }
    }

    /// The same error, naming the request field at fault.
    #[must_use]
    fn with_param(mut self, param: Option<&str>) -> Self {
        self.param = param.map(str::to_owned);
        self
    }

    /// An error of the client's request with a status other than 400, typed as the client's
    /// mistake.
    fn client(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self::new(status, "invalid_request_error", code, message)
    }

    /// An error on the host's or an upstream's side that says what failed (no internals).
    fn server(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self::new(status, "server_error", code, message)
    }

    /// 400: the request is malformed; `param` names the field when known.
    pub fn bad_request(message: impl Into<String>, param: Option<&str>) -> Self {
        Self::client(StatusCode::BAD_REQUEST, "invalid_request", message).with_param(param)
    }

    /// 400: the body is not JSON.
    pub fn invalid_json(message: impl Into<String>) -> Self {
        Self::client(StatusCode::BAD_REQUEST, "invalid_json", message)
    }

    /// 415: the body says it is in a format the endpoint does not read.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::client(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            message,
        )
        .with_param(Some("Content-Type"))
    }

    /// 405: the path exists, the method does not; `allowed` is the `Allow` header's value.
    pub fn method_not_allowed(method: &str, path: &str, allowed: &str) -> Self {
        Self::client(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{path} does not answer {method}; it answers {allowed}"),
        )
    }

    /// 400 naming the request field at fault.
    pub fn field(param: &str, message: impl Into<String>) -> Self {
        Self::bad_request(message, Some(param))
    }

    /// 401: no key, or an unknown or revoked key.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid_api_key",
            message,
        )
    }

    /// 401 for a developer token, with a `code` that says why: `missing_token`,
    /// `invalid_token`, `token_expired`, `unknown_issuer`, `unknown_developer` or
    /// `account_suspended`.
    pub fn unauthorized_because(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            code,
            message,
        )
    }

    /// 403: the caller is known but may not do this.
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "permission_error", code, message)
    }

    /// 503 `registry_unavailable`: this host runs without the app platform (`what` says
    /// which part: the app registry, developer accounts).
    pub fn registry_unavailable(what: &str) -> Self {
        ApiError::unavailable(
            "registry_unavailable",
            format!("{what} is not configured on this host"),
        )
    }

    /// 409: the request contradicts what is stored.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::CONFLICT, code, message)
    }

    /// 413 naming the part or field over its limit.
    pub fn part_too_large(param: &str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::PAYLOAD_TOO_LARGE, "request_too_large", message)
            .with_param(Some(param))
    }

    /// 422: the request is well-formed but its content is refused; `problems` lists every
    /// problem found (in `atrium lint --json`'s shape) when there is such a list.
    pub fn unprocessable(
        code: &'static str,
        param: Option<&str>,
        message: impl Into<String>,
        problems: Option<serde_json::Value>,
    ) -> Self {
        ApiError {
            extra: problems.map(|p| Box::new(("problems", p))),
            ..Self::client(StatusCode::UNPROCESSABLE_ENTITY, code, message).with_param(param)
        }
    }

    /// 422 for a refused state change, `code` naming the outcome and `error.<key>` listing
    /// what is missing or wrong (an activation's scopes, settings, slots or apps).
    pub fn refused(
        code: &'static str,
        message: impl Into<String>,
        key: &'static str,
        names: Vec<String>,
    ) -> Self {
        ApiError {
            extra: Some(Box::new((key, serde_json::Value::from(names)))),
            ..Self::client(StatusCode::UNPROCESSABLE_ENTITY, code, message)
        }
    }

    /// 501: the host does not offer what the request needs (`not_available`).
    pub fn not_implemented(code: &'static str, message: impl Into<String>) -> Self {
        Self::server(StatusCode::NOT_IMPLEMENTED, code, message)
    }

    /// 502: what the request reached upstream (an app, a tool's provider) failed.
    pub fn bad_gateway(code: &'static str, message: impl Into<String>) -> Self {
        Self::server(StatusCode::BAD_GATEWAY, code, message)
    }

    /// 404: nothing at this path, or no such resource.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found_error",
            "not_found",
            message,
        )
    }

    /// 404 with a `code` of its own: a thing this host does not offer.
    pub fn not_offered(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found_error", code, message)
    }

    /// 413: the body is larger than the host accepts.
    pub fn too_large(limit: usize) -> Self {
        Self::client(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request_too_large",
            format!("the request body is larger than {limit} bytes"),
        )
    }

    /// 413 for an uploaded file (the `file` field) over `limit` bytes.
    pub fn file_too_large(limit: usize) -> Self {
        Self::client(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request_too_large",
            format!("the file is larger than {limit} bytes"),
        )
        .with_param(Some("file"))
    }

    /// 415: the uploaded file (the `file` field) is of a type the endpoint does not take.
    pub fn unsupported_file_type(message: impl Into<String>) -> Self {
        Self::client(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_file_type",
            message,
        )
        .with_param(Some("file"))
    }

    /// 503: a part of the host this request needs is not running or not configured.
    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        Self::server(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }

    /// The same error, marked as one that another try cannot change: a 503 that lasts until
    /// the operator acts (no provider configured). The OpenAI SDKs retry every 5xx unless the
    /// answer says `X-Should-Retry: false`, which this sets.
    #[must_use]
    pub fn final_answer(mut self) -> Self {
        self.final_answer = true;
        self
    }

    /// The same error with a `Retry-After` of `seconds`.
    #[must_use]
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds.max(1));
        self
    }

    /// 429: a credential or a tenant sent more than its rate; try again after `seconds`.
    pub fn rate_limited(message: impl Into<String>, seconds: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "requests",
            "rate_limit_exceeded",
            message,
        )
        .retry_after(seconds)
    }

    /// 503: the host is past its capacity and sheds the request; try again after `seconds`.
    pub fn overloaded(message: impl Into<String>, seconds: u64) -> Self {
        Self::unavailable("overloaded", message).retry_after(seconds)
    }

    /// 500: a failure on the host's side. The client gets `context` and an error id; the
    /// details are logged under that id and never sent.
    pub fn internal(context: &str, error: &dyn std::fmt::Display) -> Self {
        let id = error_id();
        ApiError {
            internal: Some(Box::new(Internal {
                id: id.clone(),
                detail: error.to_string(),
            })),
            ..Self::server(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                format!("{context}; the host logged the details under error id {id}"),
            )
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The sentence answered to the client.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}});
        if let Some(extra) = &self.extra {
            body["error"][extra.0] = extra.1.clone();
        }
        body
    }
}

/// A short random id that ties a client's error to the host's log line.
fn error_id() -> String {
    let mut bytes = [0u8; 8];
    // A failed read of the system's randomness leaves zeros: the id is for correlation only.
    let _ = getrandom::fill(&mut bytes);
    format!(
        "err_{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.final_answer {
            response.headers_mut().insert(
                axum::http::HeaderName::from_static("x-should-retry"),
                HeaderValue::from_static("false"),
            );
        }
        if self.status.is_server_error() {
            if let Some(internal) = &self.internal
                && let Ok(id) = HeaderValue::from_str(&internal.id)
            {
                response.headers_mut().insert(ERROR_ID_HEADER, id);
            }
            response.extensions_mut().insert(ServerErrorRecord {
                message: self.message,
                internal: self.internal,
            });
        }
        response
    }
}

/// The one place requests are logged: every answer at info (method, path without its query,
/// status, milliseconds to the response's head), every 5xx answer instead as a warning (502 and
/// 503: an upstream or a part of the host is down) or an error (the rest, with a host failure's
/// id and details).
pub async fn log_requests(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let started = std::time::Instant::now();
    let mut response = next.run(request).await;
    let status = response.status();
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if !status.is_server_error() {
        tracing::info!(target: "atrium::request", %method, %path, status = status.as_u16(), elapsed_ms, "request");
        return response;
    }
    let record = response.extensions_mut().remove::<ServerErrorRecord>();
    let message = record.as_ref().map_or("", |r| r.message.as_str());
    match record.as_ref().and_then(|r| r.internal.as_ref()) {
        Some(internal) => tracing::error!(
            target: "atrium::request",
            %method, %path, status = status.as_u16(), elapsed_ms, error_id = %internal.id,
            detail = %internal.detail, "{message}"
        ),
        None if matches!(
            status,
            StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE
        ) =>
        {
            tracing::warn!(target: "atrium::request", %method, %path, status = status.as_u16(), elapsed_ms, "{message}");
        }
        None => {
            tracing::error!(target: "atrium::request", %method, %path, status = status.as_u16(), elapsed_ms, "{message}")
        }
    }
    response
}

/// Runs every request's handler in a task of its own: a client that disconnects (or a
/// connection that breaks) stops the wait for the answer, never the work it asked for, so a
/// handler is never dropped halfway through what it writes (docs/ARCHITECTURE.md,
/// "Invariants"). A handler that panics is a 500 with an error id instead of a dropped
/// connection.
pub async fn to_the_end(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    match tokio::spawn(next.run(request)).await {
        Ok(response) => response,
        Err(e) => {
            let detail = format!("{method} {path}: {e}");
            ApiError::internal("the request's handler failed", &detail).into_response()
        }
    }
}

/// The router's 405 (a path it has, a method it does not answer there) in the API's error
/// shape: 405 `method_not_allowed`, the message naming the methods it answers, the `Allow`
/// header kept.
pub async fn json_method_not_allowed(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    if response.status() != StatusCode::METHOD_NOT_ALLOWED
        || response
            .headers()
            .contains_key(axum::http::header::CONTENT_TYPE)
    {
        return response;
    }
    let allow = response.headers().get(axum::http::header::ALLOW).cloned();
    let allowed = allow
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let mut answer = ApiError::method_not_allowed(method.as_str(), &path, &allowed).into_response();
    if let Some(allow) = allow {
        answer
            .headers_mut()
            .insert(axum::http::header::ALLOW, allow);
    }
    answer
}

/// The store's errors: the client's mistakes (a rule broken, nothing found, a conflict, a
/// refusal) keep their words; every fault of the host (the database, a corrupt row, an
/// encoding or random-source failure) is a 500 whose details only the log gets.
impl From<atrium_store::StoreError> for ApiError {
    fn from(error: atrium_store::StoreError) -> Self {
        use atrium_store::StoreError as E;
        match error {
            E::Invalid(message) => ApiError::bad_request(message, None),
            E::NotFound(message) => ApiError::not_found(message),
            E::Conflict(message) => ApiError::conflict("conflict", message),
            E::Forbidden(message) => ApiError::forbidden("forbidden", message),
            other @ (E::Corrupt(_) | E::Internal(_)) => {
                ApiError::internal("the host failed", &other)
            }
            other @ (E::Open { .. } | E::Migrate(_) | E::Database(_)) => {
                ApiError::internal("the database failed", &other)
            }
        }
    }
}

/// What a capability of the platform refused, or the host fault that stopped it: the one
/// mapping of [`atrium_platform::Refusal`] to a status and body, whichever capability or
/// endpoint answers it.
impl From<atrium_platform::Refusal> for ApiError {
    fn from(refusal: atrium_platform::Refusal) -> Self {
        use atrium_platform::Refusal as R;
        match refusal {
            R::Invalid { field, message } => ApiError::field(&field, message),
            R::Unknown {
                code,
                field,
                message,
            } => ApiError::unprocessable(code, Some(field.as_ref()), message, None),
            R::NotFound { code, message } => ApiError::not_offered(code, message),
            R::Conflict { code, message } | R::Limit { code, message, .. } => {
                ApiError::conflict(code, message)
            }
            R::Forbidden { code, message } => ApiError::forbidden(code, message),
            R::NotAvailable { code, message } => ApiError::unavailable(code, message),
            R::Serve(e) => ApiError::from(*e),
            R::Store(e) => ApiError::from(e),
        }
    }
}

/// An embedder's failure: 503 when the backend could not be reached (another try may work),
/// 502 when it answered something unusable.
impl From<EmbedError> for ApiError {
    fn from(error: EmbedError) -> Self {
        let status = if error.unavailable() {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::BAD_GATEWAY
        };
        ApiError::server(status, "embedding_failed", error.to_string())
    }
}

impl From<GatewayError> for ApiError {
    fn from(error: GatewayError) -> Self {
        match error {
            GatewayError::Route(RouteError::Policy(message)) => ApiError::new(
                StatusCode::FORBIDDEN,
                "permission_error",
                "policy_violation",
                message,
            )
            .with_param(Some("contains_pii")),
            GatewayError::Route(RouteError::Invalid { param, message }) => {
                ApiError::bad_request(message, Some(param))
            }
            GatewayError::Route(RouteError::Unavailable(message)) => {
                ApiError::unavailable("no_backend", message).final_answer()
            }
            GatewayError::Refused(attempt) => match &attempt.error {
                UpstreamError::Status {
                    status: 400 | 404 | 422,
                    ..
                } => ApiError::bad_request(
                    format!(
                        "{} refused the request for model `{}`: {}",
                        attempt.provider.as_str(),
                        attempt.model,
                        attempt.error
                    ),
                    None,
                ),
                _ => ApiError::server(
                    StatusCode::BAD_GATEWAY,
                    "upstream_error",
                    format!(
                        "{} failed for model `{}`: {}",
                        attempt.provider.as_str(),
                        attempt.model,
                        attempt.error
                    ),
                ),
            },
            GatewayError::Exhausted(attempts) => {
                // Every backend had as many requests in flight as its limit: the host sheds
                // the request as it does past its own capacity.
                if !attempts.is_empty()
                    && attempts
                        .iter()
                        .all(|a| matches!(a.error, UpstreamError::Busy { .. }))
                {
                    return ApiError::overloaded(GatewayError::Exhausted(attempts).to_string(), 1);
                }
                let unreachable_only = attempts.iter().all(|a| {
                    matches!(
                        a.error,
                        UpstreamError::Connect(_)
                            | UpstreamError::Timeout(_)
                            | UpstreamError::Busy { .. }
                    )
                });
                let status = if unreachable_only {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::BAD_GATEWAY
                };
                ApiError::server(
                    status,
                    "upstream_unavailable",
                    GatewayError::Exhausted(attempts).to_string(),
                )
            }
        }
    }
}

impl From<RetrievalError> for ApiError {
    fn from(error: RetrievalError) -> Self {
        match error {
            RetrievalError::NotFound(message) => ApiError::not_found(message),
            RetrievalError::Invalid { param, message } => ApiError::bad_request(message, param),
            RetrievalError::TooLarge(message) => {
                ApiError::client(StatusCode::PAYLOAD_TOO_LARGE, "document_too_large", message)
            }
            RetrievalError::Unprocessable(message) => ApiError::client(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unprocessable_document",
                message,
            ),
            RetrievalError::Embedding(e) => {
                let mapped = ApiError::from(e);
                ApiError {
                    message: format!("embedding failed: {}", mapped.message),
                    ..mapped
                }
            }
            e @ RetrievalError::EmbedderMissing { .. } => {
                ApiError::unavailable("embedder_unavailable", e.to_string())
            }
            RetrievalError::Unavailable(message) => {
                ApiError::unavailable("retrieval_unavailable", message)
            }
            RetrievalError::Storage(detail) => ApiError {
                code: Some("storage_failed"),
                ..ApiError::internal("the retrieval store failed", &detail)
            },
            RetrievalError::Store(e) => ApiError::from(e),
        }
    }
}

impl From<atrium_platform::registry::RegistryError> for ApiError {
    fn from(error: atrium_platform::registry::RegistryError) -> Self {
        use atrium_platform::registry::RegistryError as E;
        match error {
            E::BadRequest { param, message } => {
                ApiError::bad_request(message, (!param.is_empty()).then_some(param))
            }
            E::Forbidden(message) => ApiError::forbidden("forbidden", message),
            E::NotFound(message) => ApiError::not_found(message),
            E::Conflict(message) => ApiError::conflict("immutable", message),
            E::TooLarge { param, message } => ApiError::part_too_large(param, message),
            E::Invalid { message, findings } => ApiError::unprocessable(
                "invalid_project",
                Some("manifest"),
                message,
                Some(serde_json::to_value(&findings).unwrap_or_default()),
            ),
            E::InvalidComponent(message) => {
                ApiError::unprocessable("invalid_component", Some("component"), message, None)
            }
            E::AtCapacity(message) => ApiError::unavailable("at_capacity", message).retry_after(1),
            E::InvalidImage(message) => {
                ApiError::unprocessable("invalid_image", Some("runtime.image"), message, None)
            }
            E::Activation {
                outcome,
                message,
                names,
            } => ApiError::refused(outcome, message, "missing", names),
            E::InvalidArchive { param, message } => {
                ApiError::unprocessable("invalid_archive", Some(param), message, None)
            }
            E::Unavailable(detail) => ApiError {
                code: Some("artifacts_unavailable"),
                status: StatusCode::SERVICE_UNAVAILABLE,
                ..ApiError::internal("the artifact store is unavailable", &detail)
            },
            E::Internal { context, detail } => ApiError::internal(&context, &detail),
        }
    }
}

/// A call into an installed app: the runtime's typed error as a status. The app's own
/// failures (a trap, a panic, a limit) are 502: the host is fine, the app is not.
impl From<atrium_platform::serving::ServeError> for ApiError {
    fn from(error: atrium_platform::serving::ServeError) -> Self {
        use atrium_platform::serving::ServeError;
        use atrium_runtime::CallError as C;
        let call = match error {
            ServeError::Registry(e) => return ApiError::from(e),
            ServeError::Call(call) => call,
            ServeError::Hook { hook, error } => {
                return ApiError::unprocessable(
                    "install_hook_failed",
                    None,
                    format!("the app's {hook} failed, so the activation was undone: {error}"),
                    None,
                );
            }
        };
        let message = call.to_string();
        match call {
            C::NotDeclared(_) => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found_error",
                "unknown_tool",
                message,
            ),
            C::NoHandler(_) | C::NotSupported(_) => ApiError::new(
                StatusCode::NOT_IMPLEMENTED,
                "server_error",
                "no_handler",
                message,
            ),
            C::ScopeDenied { needed, .. } => ApiError {
                extra: Some(Box::new(("needed_scopes", serde_json::Value::from(needed)))),
                ..ApiError::forbidden("scope_denied", message)
            },
            C::NotAgentVisible(_) => ApiError::forbidden("not_agent_visible", message),
            C::InvalidInput(_) => ApiError::bad_request(message, None),
            C::Deadline(_) => {
                ApiError::server(StatusCode::GATEWAY_TIMEOUT, "deadline_exceeded", message)
            }
            C::Capacity(_) => ApiError::unavailable("at_capacity", message).retry_after(1),
            C::Unavailable(_) => ApiError::unavailable("app_unavailable", message).retry_after(5),
            _ => ApiError::server(StatusCode::BAD_GATEWAY, "app_failed", message),
        }
    }
}

impl From<atrium_platform::identity::TokenError> for ApiError {
    fn from(error: atrium_platform::identity::TokenError) -> Self {
        use atrium_platform::identity::TokenError as E;
        let code = match &error {
            E::Expired(_) => "token_expired",
            E::Invalid(_) => "invalid_token",
            E::UnknownIssuer(_) => "unknown_issuer",
            E::IssuerUnavailable(_) => {
                return ApiError::unavailable("identity_provider_unavailable", error.to_string());
            }
        };
        ApiError::unauthorized_because(code, error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_failure_shows_its_id_and_not_its_details() {
        let error = ApiError::internal("the database failed", &"disk I/O error at page 7");
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!error.message().contains("page 7"), "{}", error.message());
        let id = error.internal.as_ref().map(|i| i.id.clone()).unwrap();
        assert!(error.message().ends_with(&id), "{}", error.message());
        let response = error.into_response();
        assert_eq!(response.headers()[ERROR_ID_HEADER], id.as_str());
    }

    #[test]
    fn retrieval_storage_failures_keep_their_code_and_hide_the_details() {
        let error = ApiError::from(RetrievalError::Storage(
            "lance: object store at s3://secret-bucket/rag refused".into(),
        ));
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(error.body()["error"]["code"], "storage_failed");
        assert!(
            !error.message().contains("secret-bucket"),
            "{}",
            error.message()
        );
    }
}
