//! `/api/dev/apps/{slug}/secrets`: an app's dev-default secrets. Values go in and never come
//! back out.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::registry;
use super::views::{PutSecret, SecretList, SecretView};
use crate::principals::Dev;
use crate::routing::Routes;
use crate::{ApiError, HostState, JsonBody};

/// Sets a secret: 201 when new, 200 when replaced.
pub async fn put(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path((slug, key)): Path<(String, String)>,
    JsonBody(body): JsonBody<PutSecret>,
) -> Result<(StatusCode, Json<SecretView>), ApiError> {
    let (meta, created) = registry(&state)?
        .put_secret(&dev, &slug, &key, &body.value, body.description.as_deref())
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(SecretView::from(&meta))))
}

/// Lists an app's secrets (metadata only).
pub async fn list(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path(slug): Path<String>,
) -> Result<Json<SecretList>, ApiError> {
    let secrets = registry(&state)?.secrets(&dev, &slug).await?;
    Ok(Json(SecretList {
        secrets: secrets.iter().map(SecretView::from).collect(),
    }))
}

/// One secret's metadata.
pub async fn get(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path((slug, key)): Path<(String, String)>,
) -> Result<Json<SecretView>, ApiError> {
    let meta = registry(&state)?.secret(&dev, &slug, &key).await?;
    Ok(Json(SecretView::from(&meta)))
}

/// Deletes a secret: 204.
pub async fn delete(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path((slug, key)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    registry(&state)?.delete_secret(&dev, &slug, &key).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The routes of an app's dev-default secrets, under `/api/dev`.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/apps/{slug}/secrets", crate::routing::get(list))
        .route(
            "/apps/{slug}/secrets/{key}",
            crate::routing::put(put).get(get).delete(delete),
        )
}
