//! `/api/tenants/{tenant}/tokens`: an organization key holder issues, lists and revokes the
//! tokens of a tenant's admins and users; `/api/tenant/me`: who a tenant token speaks for.

use crate::routing::{Routes, get, post};
use atrium_store::{
    NewTenantToken, TenantPrincipal, TenantRole, TenantToken, check_display_name, check_tenant_id,
    check_user_id,
};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::views::time;
use crate::page::{Listed, Page, PageRequest, time_and_id};
use crate::principals::{OrgOrTenantAdmin, TenantUser, no_such_tenant};
use crate::{ApiError, HostState, JsonBody, Org};

/// `POST /api/tenants/{tenant}/tokens`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    /// `admin` or `user`.
    pub role: String,
    /// The user the token speaks for (a UUID); omitted: a new user with a random one.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The user's display name; omitted: the user's current one, or "Admin"/"User".
    #[serde(default)]
    pub display_name: Option<String>,
}

/// A token just issued: the only answer that carries its secret.
#[derive(Debug, Serialize)]
pub struct CreatedTokenView {
    /// `ttk_...`.
    pub id: String,
    /// `admin` or `user`.
    pub role: &'static str,
    /// The user's UUID.
    pub user_id: String,
    /// The user's display name.
    pub display_name: String,
    /// The tenant.
    pub tenant: String,
    /// The secret (`att_...`), shown once.
    pub token: String,
    /// Creation.
    pub created_at: String,
    /// When the token's user is new to the tenant: how each install's `on_user_added` ended.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub user_added: Vec<atrium_platform::serving::HookOutcome>,
}

/// A token as listed.
#[derive(Debug, Serialize)]
pub struct TokenView {
    /// `ttk_...`.
    pub id: String,
    /// `admin` or `user`.
    pub role: &'static str,
    /// The user's UUID.
    pub user_id: String,
    /// The user's display name.
    pub display_name: String,
    /// The tenant.
    pub tenant: String,
    /// The first 12 characters of the secret.
    pub prefix: String,
    /// Creation.
    pub created_at: String,
    /// Revocation, if revoked.
    pub revoked_at: Option<String>,
}

impl From<&TenantToken> for TokenView {
    fn from(t: &TenantToken) -> Self {
        TokenView {
            id: t.id.clone(),
            role: t.role.as_str(),
            user_id: t.user_id.clone(),
            display_name: t.display_name.clone(),
            tenant: t.tenant_id.clone(),
            prefix: t.prefix.clone(),
            created_at: time(t.created_at),
            revoked_at: t.revoked_at.map(time),
        }
    }
}

/// `GET /api/tenant/me`.
#[derive(Debug, Serialize)]
pub struct TenantMe {
    /// The organization's id.
    pub organization: String,
    /// The tenant's id.
    pub tenant: String,
    /// `admin` or `user`.
    pub role: &'static str,
    /// The user's UUID.
    pub user_id: String,
    /// The user's display name.
    pub display_name: String,
}

impl From<&TenantPrincipal> for TenantMe {
    fn from(p: &TenantPrincipal) -> Self {
        TenantMe {
            organization: p.org_id.clone(),
            tenant: p.tenant_id.clone(),
            role: p.role.as_str(),
            user_id: p.user_id.clone(),
            display_name: p.display_name.clone(),
        }
    }
}

fn checked_tenant(tenant: &str) -> Result<(), ApiError> {
    check_tenant_id(tenant).map_err(|e| ApiError::field("tenant", e.to_string()))
}

/// Issues a token: 201 with the secret.
pub async fn create(
    State(state): State<HostState>,
    org: Org,
    Path(tenant): Path<String>,
    JsonBody(body): JsonBody<CreateToken>,
) -> Result<(StatusCode, Json<CreatedTokenView>), ApiError> {
    checked_tenant(&tenant)?;
    let role = TenantRole::parse(&body.role).ok_or_else(|| {
        ApiError::field(
            "role",
            format!("role must be `admin` or `user`, got {:?}", body.role),
        )
    })?;
    if let Some(user_id) = &body.user_id {
        check_user_id(user_id).map_err(|e| ApiError::field("user_id", e.to_string()))?;
    }
    if let Some(name) = &body.display_name {
        check_display_name(name).map_err(|e| ApiError::field("display_name", e.to_string()))?;
    }
    let created = state
        .store
        .create_tenant_token(
            &atrium_store::TenantKey::new(&org.org_id, &tenant),
            &NewTenantToken {
                role,
                user_id: body.user_id.as_deref(),
                display_name: body.display_name.as_deref(),
            },
        )
        .await?;
    let t = created.token;
    let mut user_added = Vec::new();
    if created.user_created
        && let Ok(serving) = state.serving()
    {
        let tenant_ref = atrium_platform::registry::Actor::user(
            atrium_store::TenantKey::new(&org.org_id, &t.tenant_id),
            &t.user_id,
        );
        let user = atrium_runtime::UserAdded {
            user_id: t.user_id.clone(),
            display_name: t.display_name.clone(),
            email: None,
        };
        user_added = serving.fan_out_user_added(&tenant_ref, &user).await?;
    }
    Ok((
        StatusCode::CREATED,
        Json(CreatedTokenView {
            id: t.id,
            role: t.role.as_str(),
            user_id: t.user_id,
            display_name: t.display_name,
            tenant: t.tenant_id,
            token: created.secret,
            created_at: time(t.created_at),
            user_added,
        }),
    ))
}

/// Lists a tenant's tokens (never their secrets): for the organization, or the tenant's own
/// admin. 404 for a tenant the caller cannot see.
pub async fn list(
    State(state): State<HostState>,
    caller: OrgOrTenantAdmin,
    Path(tenant): Path<String>,
    page: PageRequest,
) -> Result<Json<Page<TokenView>>, ApiError> {
    let org_id = caller.organization_of(&tenant)?;
    let key = atrium_store::TenantKey::new(org_id, &tenant);
    if state.store.tenant(&key).await?.is_none() {
        return Err(no_such_tenant(&tenant));
    }
    let after = page.after_time_and_id()?;
    let tokens = state
        .store
        .tenant_tokens_page(&key, after, page.fetch())
        .await?;
    Ok(Json(Page::keyed(
        tokens,
        &page,
        |t| time_and_id(t.created_at, &t.id),
        |t| TokenView::from(&t),
    )))
}

impl Listed for TokenView {
    const KEY: &'static str = "tokens";
}

/// Revokes a token of the tenant: 204; 404 for a token that is not this tenant's.
pub async fn revoke(
    State(state): State<HostState>,
    org: Org,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    state
        .store
        .revoke_tenant_token(&atrium_store::TenantKey::new(&org.org_id, &tenant), &id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Who the token speaks for.
pub async fn me(TenantUser(principal): TenantUser) -> Json<TenantMe> {
    Json(TenantMe::from(&principal))
}

/// The routes of tenant tokens.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/tenants/{tenant}/tokens", post(create).get(list))
        .route(
            "/tenants/{tenant}/tokens/{id}",
            crate::routing::delete(revoke),
        )
        .route("/tenant/me", get(me))
}
