//! The one error type of the /v1 API: it owns its status and OpenAI's error body,
//! `{"error": {"message", "type", "param", "code"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to a /v1 client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A sentence naming what is wrong.
    pub message: String,
    /// OpenAI's error type: `invalid_request_error`, `authentication_error`,
    /// `permission_error`, `not_found_error`, `server_error`, ...
    pub kind: &'static str,
    /// The request field at fault, when there is one.
    pub param: Option<String>,
    /// A stable code: `invalid_api_key`, `policy_violation`, `invalid_json`, ...
    pub code: Option<&'static str>,
}

impl ApiError {
    fn new(
        status: StatusCode,
        kind: &'static str,
        code: Option<&'static str>,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            message: message.into(),
            kind,
            param: None,
            code,
        }
    }

    /// 400: the request is malformed; `param` names the field when known.
    pub fn bad_request(message: impl Into<String>, param: Option<&str>) -> Self {
        ApiError {
            param: param.map(str::to_owned),
            ..Self::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                Some("invalid_request"),
                message,
            )
        }
    }

    /// 401: no key, or an unknown or revoked key.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            Some("invalid_api_key"),
            message,
        )
    }

    /// 404: nothing at this path, or no such resource.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found_error",
            Some("not_found"),
            message,
        )
    }

    /// 413: the body is larger than the host accepts.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            Some("request_too_large"),
            format!("the request body is larger than {limit} bytes"),
        )
    }

    /// 500: a failure on the host's side; the details go to the log, not to the client.
    pub fn internal(context: &str, error: &dyn std::fmt::Display) -> Self {
        tracing::error!(%error, "{context}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            Some("internal_error"),
            format!("{context}; the host logged the details"),
        )
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

impl From<atrium_store::StoreError> for ApiError {
    fn from(error: atrium_store::StoreError) -> Self {
        match error {
            atrium_store::StoreError::Invalid(message) => ApiError::bad_request(message, None),
            atrium_store::StoreError::NotFound(message) => ApiError::not_found(message),
            other => ApiError::internal("the database failed", &other),
        }
    }
}
