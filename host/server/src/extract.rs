//! Request extractors that answer in the API's error shape: the bearer credential, the tenant
//! header, and JSON bodies whose errors name the field. The principals (who is calling) are
//! in [`crate::principals`].

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::ApiError;

/// The credential of an `Authorization: Bearer <credential>` header: `None` without the
/// header, `Some(None)` when the header is not of that form (or the credential is empty).
pub(crate) fn bearer_token(parts: &Parts) -> Option<Option<&str>> {
    let header = parts.headers.get(axum::http::header::AUTHORIZATION)?;
    Some(
        header
            .to_str()
            .ok()
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .map(str::trim)
            .filter(|t| !t.is_empty()),
    )
}

/// The header that attributes a call to a tenant.
pub const TENANT_HEADER: &str = "x-service-tenant";

/// The tenant named by `X-Service-Tenant`, if any (checked, not yet created).
#[derive(Debug, Clone)]
pub struct TenantHeader(pub Option<String>);

impl TenantHeader {
    /// The tenant named, or [`crate::DEFAULT_TENANT`] for calls that name none.
    pub fn or_default(self) -> String {
        self.0.unwrap_or_else(|| crate::DEFAULT_TENANT.to_owned())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for TenantHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get(TENANT_HEADER) else {
            return Ok(TenantHeader(None));
        };
        let id = value
            .to_str()
            .map_err(|_| {
                ApiError::bad_request(
                    "X-Service-Tenant must be printable text",
                    Some("X-Service-Tenant"),
                )
            })?
            .trim()
            .to_owned();
        atrium_store::check_tenant_id(&id)
            .map_err(|e| ApiError::bad_request(e.to_string(), Some("X-Service-Tenant")))?;
        Ok(TenantHeader(Some(id)))
    }
}

/// A typed query string (`deny_unknown_fields` on `T` refuses a parameter it does not know):
/// a parameter that does not parse is a 400 whose message names it.
#[derive(Debug, Clone)]
pub struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|axum::extract::Query(query)| QueryParams(query))
            .map_err(|e| ApiError::bad_request(e.body_text(), None))
    }
}

/// A JSON body; malformed JSON or fields are a 400 naming the field, an oversized body a 413.
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(JsonBody(value)),
            Err(rejection) => Err(json_error(rejection)),
        }
    }
}

/// A JSON body whose every field is optional: no body (or only white space) is
/// `T::default()`, as `curl -X POST` without `-d` sends it; anything else is a [`JsonBody`].
#[derive(Debug, Clone)]
pub struct OptionalJsonBody<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        let bytes = axum::body::to_bytes(body, crate::MAX_BODY_BYTES)
            .await
            .map_err(|e| {
                if e.into_inner().is::<http_body_util::LengthLimitError>() {
                    ApiError::too_large(crate::MAX_BODY_BYTES)
                } else {
                    ApiError::bad_request("the body could not be read", None)
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(T::default()));
        }
        let request = Request::from_parts(parts, axum::body::Body::from(bytes));
        let JsonBody(value) = JsonBody::from_request(request, state).await?;
        Ok(OptionalJsonBody(value))
    }
}

fn json_error(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => {
            // serde's message names the field: "missing field `name`", "invalid type ... at line".
            let detail =
                std::error::Error::source(&e).map_or_else(|| e.body_text(), ToString::to_string);
            let param = detail.split('`').nth(1).map(str::to_owned);
            ApiError::bad_request(format!("invalid request body: {detail}"), param.as_deref())
        }
        JsonRejection::JsonSyntaxError(e) => {
            let detail =
                std::error::Error::source(&e).map_or_else(|| e.body_text(), ToString::to_string);
            ApiError::invalid_json(format!("the body is not valid JSON: {detail}"))
        }
        JsonRejection::MissingJsonContentType(_) => ApiError::bad_request(
            "the body must be JSON with `Content-Type: application/json`",
            None,
        ),
        JsonRejection::BytesRejection(e) => {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::too_large(crate::MAX_BODY_BYTES)
            } else {
                ApiError::bad_request(
                    format!("the body could not be read: {}", e.body_text()),
                    None,
                )
            }
        }
        other => ApiError::bad_request(other.body_text(), None),
    }
}
