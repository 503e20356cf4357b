//! `/v1/rag`: managed retrieval over a tenant's collections.
//!
//! The tenant is `X-Service-Tenant` (or `default`); a collection is found only within the
//! calling organization's tenant, so another tenant's collection of the same name is a
//! different one, and an unknown one is a 404. Embedding work (ingestion and queries) is
//! metered to the tenant as `embedding` usage.

use std::sync::Arc;

use atrium_retrieval::{EmbedUsage, Retrieval};
use atrium_store::{Collection, Document, TenantKey};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde::Serialize;
use serde_json::{Value, json};

use crate::extract::{JsonBody, TenantHeader};
use crate::page::{Listed, Page, PageRequest, time_and_id};
use crate::principals::Org;
use crate::routing::Routes;
use crate::{ApiError, HostState};

/// The largest file `POST /v1/rag/{collection}/files` takes: 32 MiB.
pub const MAX_FILE_BYTES: usize = 32 * 1024 * 1024;

fn retrieval(state: &HostState) -> Result<Arc<Retrieval>, ApiError> {
    state.retrieval.clone().ok_or_else(|| {
        ApiError::unavailable(
            "retrieval_unavailable",
            "managed retrieval is not enabled on this host",
        )
    })
}

async fn meter(state: &HostState, org: &Org, tenant: &str, usage: &EmbedUsage) {
    state
        .metering
        .record(atrium_store::UsageRecord {
            org_id: org.org_id.clone(),
            tenant_id: tenant.to_owned(),
            kind: "embedding".into(),
            provider: usage.provider.clone(),
            model: usage.model.clone(),
            prompt_tokens: i64::try_from(usage.prompt_tokens).unwrap_or(i64::MAX),
            completion_tokens: 0,
            cost_micros: usage.cost_micros,
            batch: false,
            app_slug: None,
            agent: None,
        })
        .await;
}

fn seconds(at: jiff::Timestamp) -> i64 {
    at.as_second()
}

fn collection_json(c: &Collection) -> Value {
    json!({
        "object": "collection",
        "name": c.name,
        "embedder": {"provider": c.embedder, "model": c.model},
        "dimensions": atrium_inference::embed::DIMENSIONS,
        "created_at": seconds(c.created_at),
    })
}

/// A document as the API answers it.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentView {
    /// `document`.
    pub object: &'static str,
    /// `doc_...`.
    pub id: String,
    /// The same id, under the name the query's matches use.
    pub document_id: String,
    /// The title.
    pub title: String,
    /// Where the text came from: `text`, `pdf` or `file`.
    pub source: String,
    /// Number of chunks.
    pub chunks: i64,
    /// Characters of text.
    pub chars: i64,
    /// `indexed` (a document being indexed is not listed).
    pub status: String,
    /// Creation time, seconds since the epoch.
    pub created_at: i64,
}

impl From<&Document> for DocumentView {
    fn from(d: &Document) -> Self {
        DocumentView {
            object: "document",
            id: d.id.clone(),
            document_id: d.id.clone(),
            title: d.title.clone(),
            source: d.source.clone(),
            chunks: d.chunks,
            chars: d.chars,
            status: d.status.clone(),
            created_at: seconds(d.created_at),
        }
    }
}

impl Listed for DocumentView {
    const KEY: &'static str = "data";
    const OBJECT: Option<&'static str> = Some("list");
}

/// `POST /v1/rag/{collection}`: 201 with the collection when created, 200 when it existed.
pub async fn create_collection(
    State(state): State<HostState>,
    org: Org,
    header: TenantHeader,
    Path(name): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let retrieval = retrieval(&state)?;
    let tenant = header.or_default();
    let (collection, created) = retrieval
        .create_collection(&TenantKey::new(&org.org_id, &tenant), &name)
        .await?;
    let mut body = collection_json(&collection);
    body["created"] = json!(created);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(body)))
}

/// `GET /v1/rag`: the tenant's collections.
pub async fn list_collections(
    State(state): State<HostState>,
    org: Org,
    header: TenantHeader,
) -> Result<Json<Value>, ApiError> {
    let retrieval = retrieval(&state)?;
    let tenant = header.or_default();
    let list = retrieval
        .list_collections(&TenantKey::new(&org.org_id, &tenant))
        .await?;
    let data: Vec<Value> = list
        .iter()
        .map(|s| {
            let mut c = collection_json(&s.collection);
            c["documents"] = json!(s.documents);
            c["chunks"] = json!(s.chunks);
            c
        })
        .collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

/// `GET /v1/rag/{collection}/documents`: a page of the indexed documents, oldest first.
pub async fn list_documents(
    State(state): State<HostState>,
    org: Org,
    header: TenantHeader,
    Path(name): Path<String>,
    page: PageRequest,
) -> Result<Json<Page<DocumentView>>, ApiError> {
    let retrieval = retrieval(&state)?;
    let tenant = TenantKey::new(&org.org_id, header.or_default());
    let documents = retrieval
        .documents_page(&tenant, &name, page.after_time_and_id()?, page.fetch())
        .await?;
    Ok(Json(Page::keyed(
        documents,
        &page,
        |d| time_and_id(d.created_at, &d.id),
        |d| DocumentView::from(&d),
    )))
}

/// `DELETE /v1/rag/{collection}/documents/{id}`.
pub async fn delete_document(
    State(state): State<HostState>,
    org: Org,
    header: TenantHeader,
    Path((name, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let retrieval = retrieval(&state)?;
    let tenant = header.or_default();
    retrieval
        .delete_document(&TenantKey::new(&org.org_id, &tenant), &name, &id)
        .await?;
    Ok(Json(
        json!({"object": "document", "id": id, "deleted": true}),
    ))
}

fn string_field<'a>(body: &'a Value, field: &'static str) -> Result<&'a str, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Err(ApiError::bad_request(
            format!("{field} is required"),
            Some(field),
        )),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(ApiError::bad_request(
            format!("{field} must be a string"),
            Some(field),
        )),
    }
}

async fn add(
    state: &HostState,
    org: &Org,
    tenant: &str,
    name: &str,
    title: &str,
    text: String,
    source: &str,
) -> Result<(StatusCode, Json<DocumentView>), ApiError> {
    let retrieval = retrieval(state)?;
    let added = retrieval
        .add_document(
            &TenantKey::new(&org.org_id, tenant),
            name,
            title,
            text,
            source,
        )
        .await?;
    meter(state, org, tenant, &added.usage).await;
    Ok((
        StatusCode::CREATED,
        Json(DocumentView::from(&added.document)),
    ))
}

/// `POST /v1/rag/{collection}/documents` with `title` and `text`: 201 with the document
/// (`document_id`, `chunks`, `chars`, `status: "indexed"`, ...).
pub async fn add_document(
    State(state): State<HostState>,
    org: Org,
    header: TenantHeader,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Result<impl IntoResponse, ApiError> {
    let tenant = header.or_default();
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body must be a JSON object with `title` and `text`",
            None,
        ));
    }
    let title = string_field(&body, "title")?;
    let text = string_field(&body, "text")?;
    add(&state, &org, &tenant, &name, title, text.to_owned(), "text").await
}

/// What a file is, from its declared type and its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pdf,
    Text,
}

/// The kind of a file with `content_type` (without parameters) and `bytes`: `application/pdf`
/// is a PDF; `text/plain`, `text/markdown` and `text/csv` are text; with no type or
/// `application/octet-stream`, a file starting `%PDF-` is a PDF and valid UTF-8 is text.
fn kind_of(content_type: Option<&str>, bytes: &[u8]) -> Result<Kind, ApiError> {
    let declared = content_type
        .map(|t| {
            t.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|t| !t.is_empty());
    match declared.as_deref() {
        Some("application/pdf") => Ok(Kind::Pdf),
        Some("text/plain" | "text/markdown" | "text/x-markdown" | "text/csv") => Ok(Kind::Text),
        None | Some("application/octet-stream") => {
            if bytes.starts_with(b"%PDF-") {
                Ok(Kind::Pdf)
            } else if std::str::from_utf8(bytes).is_ok() && !bytes.contains(&0) {
                Ok(Kind::Text)
            } else {
                Err(unsupported("the file is neither a PDF nor UTF-8 text"))
            }
        }
        Some(other) => Err(unsupported(&format!(
            "files of type `{other}` are not accepted"
        ))),
    }
}

fn unsupported(what: &str) -> ApiError {
    ApiError::unsupported_file_type(format!(
        "{what}; send a PDF (application/pdf) or text (text/plain, text/markdown, text/csv)"
    ))
}

/// `POST /v1/rag/{collection}/files`: a PDF or a text file, as `multipart/form-data` (a `file`
/// part, an optional `title` part) or as the raw body with its Content-Type (and an optional
/// `?title=`). 201 with `document_id`, `chunks`, `chars`, `status: "indexed"`.
pub async fn upload_file(
    State(state): State<HostState>,
    org: Org,
    header: TenantHeader,
    Path(name): Path<String>,
    Query(params): Query<std::collections::HashMap<String, String>>,
    request: Request,
) -> Result<impl IntoResponse, ApiError> {
    let tenant = header.or_default();
    let retrieval = retrieval(&state)?;
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_multipart = content_type
        .as_deref()
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("multipart/form-data"));
    let (bytes, file_type, mut title) = if is_multipart {
        let mut multipart = Multipart::from_request(request, &state)
            .await
            .map_err(|e| {
                ApiError::bad_request(
                    format!("the multipart body is malformed: {e}"),
                    Some("file"),
                )
            })?;
        let mut file: Option<(Bytes, Option<String>, Option<String>)> = None;
        let mut title: Option<String> = None;
        while let Some(field) = multipart
            .next_field()
            .await
            .map_err(|e| multipart_error(&e))?
        {
            match field.name() {
                Some("file") => {
                    let part_type = field.content_type().map(str::to_owned);
                    let filename = field.file_name().map(str::to_owned);
                    let data = field.bytes().await.map_err(|e| multipart_error(&e))?;
                    file = Some((data, part_type, filename));
                }
                Some("title") => {
                    title = Some(field.text().await.map_err(|e| multipart_error(&e))?);
                }
                _ => {}
            }
        }
        let Some((data, part_type, filename)) = file else {
            return Err(ApiError::bad_request(
                "the multipart body has no `file` part",
                Some("file"),
            ));
        };
        (data, part_type, title.or(filename))
    } else {
        let data = Bytes::from_request(request, &state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::file_too_large(MAX_FILE_BYTES)
            } else {
                ApiError::bad_request(format!("cannot read the body: {e}"), Some("file"))
            }
        })?;
        (data, content_type, None)
    };
    if let Some(t) = params.get("title") {
        title = Some(t.clone());
    }
    if bytes.is_empty() {
        return Err(ApiError::bad_request("the file is empty", Some("file")));
    }
    if bytes.len() > MAX_FILE_BYTES {
        return Err(ApiError::file_too_large(MAX_FILE_BYTES));
    }
    let title = title
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "untitled".to_owned());
    let (text, source) = match kind_of(file_type.as_deref(), &bytes)? {
        Kind::Pdf => (retrieval.pdf_text(bytes.to_vec()).await?, "pdf"),
        Kind::Text => match String::from_utf8(bytes.to_vec()) {
            Ok(text) => (text, "text"),
            Err(_) => return Err(unsupported("the text file is not valid UTF-8")),
        },
    };
    add(&state, &org, &tenant, &name, &title, text, source).await
}

fn multipart_error(e: &axum::extract::multipart::MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::file_too_large(MAX_FILE_BYTES)
    } else {
        ApiError::bad_request(
            format!("the multipart body is malformed: {}", e.body_text()),
            Some("file"),
        )
    }
}

/// `POST /v1/rag/{collection}/query` with `query` and `top_k` (1 to 50, default 5):
/// `matches`, best first, each with `text`, `title`, `score` (in (0, 1], larger is better),
/// `document_id` and `position`.
pub async fn query(
    State(state): State<HostState>,
    org: Org,
    header: TenantHeader,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let retrieval = retrieval(&state)?;
    let tenant = header.or_default();
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body must be a JSON object with `query`",
            None,
        ));
    }
    let text = string_field(&body, "query")?;
    let top_k = match body.get("top_k") {
        None | Some(Value::Null) => atrium_retrieval::DEFAULT_TOP_K,
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=atrium_retrieval::MAX_TOP_K).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(
                    format!(
                        "top_k must be an integer from 1 to {}",
                        atrium_retrieval::MAX_TOP_K
                    ),
                    Some("top_k"),
                )
            })?,
    };
    let outcome = retrieval
        .query(&TenantKey::new(&org.org_id, &tenant), &name, text, top_k)
        .await?;
    meter(&state, &org, &tenant, &outcome.usage).await;
    let matches: Vec<Value> = outcome
        .matches
        .iter()
        .map(|m| {
            json!({
                "text": m.text,
                "title": m.title,
                "score": m.score,
                "document_id": m.document_id,
                "position": m.position,
            })
        })
        .collect();
    Ok(Json(json!({
        "object": "list",
        "matches": matches,
        "model": outcome.usage.model,
        "usage": {"prompt_tokens": outcome.usage.prompt_tokens, "total_tokens": outcome.usage.prompt_tokens},
    })))
}

/// The routes of managed retrieval.
pub(crate) fn router() -> Routes {
    use crate::routing::{delete, get, post};
    Routes::new()
        .route("/rag", get(list_collections))
        .route("/rag/{collection}", post(create_collection))
        .route(
            "/rag/{collection}/documents",
            post(add_document).get(list_documents),
        )
        .route("/rag/{collection}/documents/{id}", delete(delete_document))
        .route(
            "/rag/{collection}/files",
            post(upload_file).limit_body(MAX_FILE_BYTES + 64 * 1024),
        )
        .route("/rag/{collection}/query", post(query))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_kinds_follow_the_type_and_then_the_bytes() {
        assert_eq!(kind_of(Some("application/pdf"), b"x").unwrap(), Kind::Pdf);
        assert_eq!(
            kind_of(Some("text/plain; charset=utf-8"), b"x").unwrap(),
            Kind::Text
        );
        assert_eq!(kind_of(None, b"%PDF-1.7\n").unwrap(), Kind::Pdf);
        assert_eq!(
            kind_of(Some("application/octet-stream"), "héllo".as_bytes()).unwrap(),
            Kind::Text
        );
        assert_eq!(
            kind_of(Some("image/png"), b"\x89PNG").unwrap_err().status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert_eq!(
            kind_of(None, b"\xff\xfe\x00").unwrap_err().status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
    }
}
