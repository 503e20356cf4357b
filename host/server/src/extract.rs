//! Request extractors that answer in the API's error shape: the bearer credential, the tenant
//! header, and JSON bodies whose errors name the field. The principals (who is calling) are
//! in [`crate::principals`].

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

/// A JSON body (one rule for every JSON endpoint, docs/api.md "Request bodies"): a JSON
/// object, read whatever the `Content-Type` if it has none or one that JSON is sent as
/// ([`json_content_type`]); a field of the wrong type, a missing or an unknown field is a 400
/// whose `param` is the field's path (`roles.fast.tier`, `members[0].key`), malformed JSON a
/// 400 `invalid_json`, a body that is not an object a 400, an oversized body a 413, another
/// content type a 415.
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, ApiError> {
        let bytes = json_bytes(request).await?;
        parse_object(&bytes).map(JsonBody)
    }
}

/// A JSON body whose every field is optional: no body (or only white space) is
/// `T::default()`, as `curl -X POST` without `-d` sends it; anything else is a [`JsonBody`].
#[derive(Debug, Clone)]
pub struct OptionalJsonBody<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, ApiError> {
        let bytes = json_bytes(request).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(T::default()));
        }
        parse_object(&bytes).map(OptionalJsonBody)
    }
}

/// A JSON object of arguments, open to any field (a tool's arguments, an app's own input):
/// no body is `{}`; otherwise the rules of [`JsonBody`].
#[derive(Debug, Clone)]
pub struct JsonArguments(pub serde_json::Map<String, serde_json::Value>);

impl<S: Send + Sync> FromRequest<S> for JsonArguments {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, ApiError> {
        let bytes = json_bytes(request).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonArguments(serde_json::Map::new()));
        }
        parse_object(&bytes).map(JsonArguments)
    }
}

/// Whether a request's `Content-Type` lets its body be read as JSON: none, `application/json`,
/// any `+json` type, or `application/x-www-form-urlencoded`, which `curl -d` sends unless
/// told otherwise (the body is still read as JSON, never as a form). Any other type names a
/// format the body is not in.
pub(crate) fn json_content_type(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let json = essence == "application/json"
        || essence == "application/x-www-form-urlencoded"
        || (essence.contains('/') && essence.ends_with("+json"));
    if json {
        return Ok(());
    }
    Err(ApiError::unsupported_media_type(format!(
        "this endpoint takes a JSON object, and the body says it is `{}`: send it with \
         `Content-Type: application/json` (or none)",
        value.to_str().unwrap_or("not text")
    )))
}

/// The body of a JSON request, within [`crate::MAX_BODY_BYTES`].
async fn json_bytes(request: Request) -> Result<axum::body::Bytes, ApiError> {
    let (parts, body) = request.into_parts();
    json_content_type(&parts.headers)?;
    axum::body::to_bytes(body, crate::MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            if e.into_inner().is::<http_body_util::LengthLimitError>() {
                ApiError::too_large(crate::MAX_BODY_BYTES)
            } else {
                ApiError::bad_request("the body could not be read", None)
            }
        })
}

/// Parses `bytes` as a JSON object into `T`; a refusal names the field by its path.
pub(crate) fn parse_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        None => {
            return Err(ApiError::bad_request(
                "the body is empty: this endpoint takes a JSON object",
                None,
            ));
        }
        Some(_) => {
            // Not an object: say what it is, if it is JSON at all. A struct would take an
            // array as its fields in order, which no client means.
            let what = match serde_json::from_slice::<serde_json::Value>(bytes) {
                Ok(serde_json::Value::Array(_)) => "an array",
                Ok(serde_json::Value::String(_)) => "a string",
                Ok(serde_json::Value::Number(_)) => "a number",
                Ok(serde_json::Value::Bool(_)) => "a boolean",
                Ok(serde_json::Value::Null) => "null",
                Ok(serde_json::Value::Object(_)) => "an object",
                Err(e) => {
                    return Err(ApiError::invalid_json(format!(
                        "the body is not valid JSON: {e}"
                    )));
                }
            };
            return Err(ApiError::bad_request(
                format!("the body must be a JSON object, not {what}"),
                None,
            ));
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| refusal(&e))?;
    deserializer
        .end()
        .map_err(|e| ApiError::invalid_json(format!("the body is not valid JSON: {e}")))?;
    Ok(value)
}

/// The 400 of a body that does not parse: malformed JSON, or a field that breaks its type
/// (named as `atrium_platform::fields` names it).
fn refusal(e: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let named = atrium_platform::fields::named(e);
    if named.syntax {
        return ApiError::invalid_json(format!("the body is not valid JSON: {}", named.message));
    }
    ApiError::bad_request(
        format!("invalid request body: {}", named.sentence()),
        named.path.as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Role {
        tier: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Settings {
        roles: std::collections::BTreeMap<String, Role>,
        #[serde(default)]
        members: Vec<Role>,
        limit: Option<i64>,
    }

    fn param(body: &str) -> Option<String> {
        let error = parse_object::<Settings>(body.as_bytes()).unwrap_err();
        error.body()["error"]["param"].as_str().map(str::to_owned)
    }

    #[test]
    fn a_refused_field_is_named_by_its_path_whatever_the_value_sent() {
        assert_eq!(
            param(r#"{"roles":{"fast":{"tier":5}}}"#).unwrap(),
            "roles.fast.tier"
        );
        assert_eq!(param(r#"{"roles":{},"limit":2.5}"#).unwrap(), "limit");
        assert_eq!(param(r#"{"roles":{},"limit":true}"#).unwrap(), "limit");
        assert_eq!(param(r#"{"roles":{},"limit":"10"}"#).unwrap(), "limit");
        assert_eq!(
            param(r#"{"roles":{},"members":[{"tier":"a"},{"tier":[]}]}"#).unwrap(),
            "members[1].tier"
        );
        assert_eq!(
            param(r#"{"roles":{"fast":{}}}"#).unwrap(),
            "roles.fast.tier"
        );
        assert_eq!(param(r#"{}"#).unwrap(), "roles");
        assert_eq!(param(r#"{"roles":{},"colour":1}"#).unwrap(), "colour");
        assert_eq!(
            param(r#"{"roles":{"fast":{"tier":"a","x":1}}}"#).unwrap(),
            "roles.fast.x"
        );
    }

    #[test]
    fn only_an_object_is_a_body() {
        for (body, says) in [
            (r#"["name"]"#, "not an array"),
            ("\"name\"", "not a string"),
            ("5", "not a number"),
            ("null", "not null"),
            ("", "the body is empty"),
        ] {
            let error = parse_object::<Settings>(body.as_bytes()).unwrap_err();
            assert_eq!(
                error.status(),
                axum::http::StatusCode::BAD_REQUEST,
                "{body}"
            );
            assert!(
                error.message().contains(says),
                "{body}: {}",
                error.message()
            );
        }
        let error = parse_object::<Settings>(b"{\"roles\": {}} trailing").unwrap_err();
        assert_eq!(error.body()["error"]["code"], "invalid_json");
        let error = parse_object::<Settings>(b"{\"roles\": ").unwrap_err();
        assert_eq!(error.body()["error"]["code"], "invalid_json");
    }

    #[test]
    fn json_is_read_whatever_the_content_type_says_unless_it_names_another_format() {
        let headers = |value: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_str(value).unwrap(),
            );
            headers
        };
        assert!(json_content_type(&axum::http::HeaderMap::new()).is_ok());
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/merge-patch+json",
            "application/x-www-form-urlencoded",
        ] {
            assert!(json_content_type(&headers(ok)).is_ok(), "{ok}");
        }
        for refused in [
            "multipart/form-data; boundary=x",
            "text/html",
            "application/xml",
        ] {
            let error = json_content_type(&headers(refused)).unwrap_err();
            assert_eq!(
                error.status(),
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE
            );
            assert_eq!(error.body()["error"]["param"], "Content-Type");
        }
    }
}
