//! `/api/dev`: the developer's account, the app registry and preflight.

use crate::routing::{Routes, get, post, put};
use atrium_manifest::project;
use atrium_platform::registry::{PreflightRequest, Upload};
use axum::Json;
use axum::body::Bytes;
use axum::extract::multipart::MultipartError;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;

use super::registry;
use super::views::{
    AppChanged, AppDetailView, AppView, BundleSet, DevSettingsView, DevToolResult, FileView,
    LoginProvider, Me, PreflightView, PromotedView, RegistrationView, ScopeList, TemplatesSet,
    UpgradeRun, VersionView,
};
use crate::page::{DEFAULT_LIMIT, Page, PageRequest, time_and_id};
use crate::principals::Dev;
use crate::{ApiError, HostState, JsonBody};

/// The developer the token speaks for.
pub async fn me(Dev(dev): Dev) -> Json<Me> {
    Json(Me::from(&dev))
}

/// Where developers sign in (no credential needed): the OpenID Connect provider the host
/// trusts, or 404 `oidc_not_configured` when it has none (developers then use tokens the
/// operator issues).
pub async fn login(State(state): State<HostState>) -> Result<Json<LoginProvider>, ApiError> {
    state
        .platform()
        .and_then(|platform| platform.identity().oidc())
        .map(|oidc| {
            Json(LoginProvider {
                issuer: oidc.issuer().to_owned(),
                client_id: oidc.audience().to_owned(),
            })
        })
        .ok_or_else(|| {
            ApiError::not_offered(
                "oidc_not_configured",
                "this host trusts no OpenID Connect provider: ask its operator for a developer token (`atrium developers token`) and use `atrium login --token`",
            )
        })
}

/// The platform's scope catalogue; no credential needed.
pub async fn scopes() -> Json<ScopeList> {
    Json(ScopeList {
        scopes: atrium_platform::scopes::CATALOGUE,
    })
}

/// Checks a project without registering anything.
pub async fn preflight(
    State(state): State<HostState>,
    Dev(dev): Dev,
    JsonBody(request): JsonBody<PreflightRequest>,
) -> Result<Json<PreflightView>, ApiError> {
    let problems = registry(&state)?.preflight(&dev, &request).await?;
    let errors = problems.iter().filter(|f| f.is_error()).count();
    Ok(Json(PreflightView {
        passed: errors == 0,
        errors,
        warnings: problems.len() - errors,
        problems,
    }))
}

/// The developer's apps.
pub async fn list_apps(
    State(state): State<HostState>,
    Dev(dev): Dev,
    page: PageRequest,
) -> Result<Json<Page<AppView>>, ApiError> {
    let apps = registry(&state)?
        .apps(&dev, page.after.as_deref(), page.fetch())
        .await?;
    Ok(Json(Page::of(
        apps.iter().map(AppView::from).collect(),
        &page,
    )))
}

/// One app with its newest versions (the first page of its versions).
pub async fn show_app(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path(slug): Path<String>,
) -> Result<Json<AppDetailView>, ApiError> {
    let (app, versions) =
        versions_page(&state, &dev, &slug, &PageRequest::first(DEFAULT_LIMIT)).await?;
    // What `atrium apps show` lists, and the `unknown_tool` answer of a dev call points to.
    let tools = match &app.current_version {
        Some(current) => registry(&state)?.manifest_of(&slug, current).await?.tools,
        None => Vec::new(),
    };
    Ok(Json(AppDetailView {
        app,
        versions: versions.items,
        versions_next_cursor: versions.next_cursor,
        tools,
    }))
}

/// A page of an app's versions, newest first.
pub async fn list_versions(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path(slug): Path<String>,
    page: PageRequest,
) -> Result<Json<Page<VersionView>>, ApiError> {
    let (_, versions) = versions_page(&state, &dev, &slug, &page).await?;
    Ok(Json(versions))
}

async fn versions_page(
    state: &HostState,
    dev: &atrium_store::Developer,
    slug: &str,
    page: &PageRequest,
) -> Result<(AppView, Page<VersionView>), ApiError> {
    let detail = registry(state)?
        .app(dev, slug, page.after_time_and_id()?, page.fetch())
        .await?;
    let current = detail.app.current_version.as_deref();
    let versions = Page::keyed(
        detail.versions,
        page,
        |v| time_and_id(v.created_at, &v.version),
        |v| VersionView::new(&v, current),
    );
    Ok((AppView::from(&detail.app), versions))
}

/// A raw body, or the API's error: 413 naming the limit when it is too large.
fn raw_body(body: Result<Bytes, BytesRejection>, limit: usize) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::part_too_large(
                "body",
                format!("the request body is larger than {limit} bytes"),
            )
        } else {
            ApiError::bad_request(
                format!("the body cannot be read: {}", rejection.body_text()),
                None,
            )
        }
    })
}

fn multipart_error(e: &MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::too_large(REGISTER_BODY_BYTES)
    } else {
        ApiError::bad_request(
            format!("the multipart body is malformed: {}", e.body_text()),
            None,
        )
    }
}

/// A relative path under `app_docs/` from a part's file name; refuses what could escape.
fn docs_path(name: &str) -> Result<String, ApiError> {
    let trimmed = name.trim_start_matches("./");
    let rel = trimmed
        .strip_prefix(project::DOCS_DIR)
        .and_then(|p| p.strip_prefix('/'))
        .unwrap_or(trimmed);
    let ok = !rel.is_empty()
        && !rel.starts_with('/')
        && !rel.contains('\\')
        && !rel.contains('\0')
        && rel
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if ok {
        Ok(rel.to_owned())
    } else {
        Err(ApiError::bad_request(
            format!("the app_docs file name `{name}` is not a relative path inside app_docs/"),
            Some("app_docs"),
        ))
    }
}

/// Registers a version from a multipart body: `manifest` (required), `component`,
/// `build_inputs` (the digest of what the component was built from, kept for preflight), and
/// any number of `app_docs` (file name = path under `app_docs/`) and `templates` parts. 201
/// when created, 200 when the same version with the same content was already registered.
pub async fn register(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path(slug): Path<String>,
    mut multipart: Multipart,
) -> Result<(StatusCode, Json<RegistrationView>), ApiError> {
    let registry = registry(&state)?;
    let mut upload = Upload::default();
    let mut manifest = None;
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| multipart_error(&e))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let bytes = field.bytes().await.map_err(|e| multipart_error(&e))?;
        match name.as_str() {
            "manifest" => {
                if manifest.is_some() {
                    return Err(ApiError::bad_request(
                        "send one `manifest` part",
                        Some("manifest"),
                    ));
                }
                upload.manifest_file = file_name.unwrap_or_else(|| "atrium.app.yaml".into());
                manifest = Some(bytes);
            }
            "component" => {
                if upload.component.is_some() {
                    return Err(ApiError::bad_request(
                        "send one `component` part",
                        Some("component"),
                    ));
                }
                upload.component = Some(bytes);
            }
            "build_inputs" => {
                if upload.build_inputs.is_some() {
                    return Err(ApiError::bad_request(
                        "send one `build_inputs` part",
                        Some("build_inputs"),
                    ));
                }
                // Checked by the registry, which names the rule.
                upload.build_inputs = Some(String::from_utf8_lossy(&bytes).trim().to_owned());
            }
            "app_docs" => {
                let name = file_name.ok_or_else(|| {
                    ApiError::bad_request(
                        "each `app_docs` part needs a file name: its path under app_docs/",
                        Some("app_docs"),
                    )
                })?;
                let path = docs_path(&name)?;
                if upload.docs.iter().any(|(p, _)| *p == path) {
                    return Err(ApiError::bad_request(
                        format!("app_docs/{path} is sent twice"),
                        Some("app_docs"),
                    ));
                }
                upload.docs.push((path, bytes));
            }
            "templates" => {
                let file =
                    file_name.unwrap_or_else(|| format!("templates[{}]", upload.templates.len()));
                upload.templates.push((file, bytes));
            }
            other => {
                return Err(ApiError::bad_request(
                    format!(
                        "unknown part `{other}`: the parts are manifest, component, build_inputs, app_docs and templates"
                    ),
                    Some(if other.is_empty() { "multipart" } else { other }),
                ));
            }
        }
    }
    upload.manifest = manifest.ok_or_else(|| {
        ApiError::bad_request(
            "the `manifest` part is missing: send the manifest's YAML or JSON text",
            Some("manifest"),
        )
    })?;
    let registration = registry.register(&dev, &slug, upload).await?;
    let docs = registry
        .store()
        .version_files(
            &slug,
            &registration.version.version,
            atrium_store::FileRole::Docs,
        )
        .await?;
    let status = if registration.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let current = registration.app.current_version.as_deref();
    Ok((
        status,
        Json(RegistrationView {
            version: VersionView::new(&registration.version, current),
            app: AppView::from(&registration.app),
            docs: docs.iter().map(FileView::from).collect(),
            created: registration.created,
            warnings: registration.warnings,
        }),
    ))
}

/// Sets a version's template defaults from the JSON array of section 2.14.
pub async fn set_templates(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path((slug, version)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<TemplatesSet>), ApiError> {
    let body = raw_body(body, crate::MAX_BODY_BYTES)?;
    let (version, created) = registry(&state)?
        .set_templates(&dev, &slug, &version, &body)
        .await?;
    let templates = VersionView::new(&version, None).templates;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(TemplatesSet {
            version: version.version,
            templates,
            templates_digest: version.templates_digest,
            created,
        }),
    ))
}

/// Sets a version's frontend bundle from a tar, tar.gz or zip archive (the request body).
pub async fn set_bundle(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path((slug, version)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<BundleSet>), ApiError> {
    let body = raw_body(body, atrium_platform::registry::BUNDLE_ARCHIVE_BYTES)?;
    let bundle = registry(&state)?
        .set_bundle(&dev, &slug, &version, &body)
        .await?;
    let status = if bundle.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(BundleSet {
            version: bundle.version.version,
            bundle_digest: bundle.digest,
            files: bundle.files.len(),
            bytes: bundle.files.iter().map(|f| f.size).sum(),
            created: bundle.created,
        }),
    ))
}

/// Makes a registered version the app's current version.
pub async fn promote(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path((slug, version)): Path<(String, String)>,
) -> Result<Json<PromotedView>, ApiError> {
    let promoted = registry(&state)?.promote(&dev, &slug, &version).await?;
    Ok(Json(PromotedView {
        app: AppView::from(&promoted.app),
        installs: promoted.installs,
        dev_install: promoted.dev_install,
    }))
}

/// Archives an app.
pub async fn archive(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path(slug): Path<String>,
) -> Result<Json<AppChanged>, ApiError> {
    let app = registry(&state)?.archive(&dev, &slug).await?;
    Ok(Json(AppChanged {
        app: AppView::from(&app),
    }))
}

/// The developer's dev tenant, where they try their apps, with the developer acting as a user
/// of it; 409 `no_dev_tenant` for a developer without one.
fn dev_tenant(
    dev: &atrium_store::Developer,
    slug: &str,
) -> Result<atrium_platform::registry::Actor, ApiError> {
    let Some((org, tenant)) = &dev.dev_tenant else {
        return Err(ApiError::conflict(
            "no_dev_tenant",
            format!(
                "{} has no dev tenant to run `{slug}` in: the host's administrator gives one with `atrium developers create ... --org ORG --tenant TENANT`",
                dev.login
            ),
        ));
    };
    Ok(atrium_platform::registry::Actor::user(
        atrium_store::TenantKey::new(org, tenant),
        &dev.id,
    ))
}

/// `POST /api/dev/apps/{slug}/tools/{name}`: calls a tool of the developer's app in their dev
/// tenant, as its install there runs it (the developer acting as a user of the dev tenant): the
/// call `atrium deploy` suggests, to try what was just deployed. The answer names the version
/// that answered and the current one, which differ when the install could not follow a
/// promotion.
pub async fn call_tool(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path((slug, tool)): Path<(String, String)>,
    crate::extract::JsonArguments(args): crate::extract::JsonArguments,
) -> Result<Json<DevToolResult>, ApiError> {
    let app = registry(&state)?.owned_app(&dev, &slug).await?;
    let actor = dev_tenant(&dev, &slug)?;
    let serving = state.serving()?;
    let install = match serving.active_install(&actor, &slug).await {
        Ok(install) => install,
        Err(atrium_platform::registry::RegistryError::NotFound(_)) => {
            return Err(ApiError::not_offered(
                "not_installed",
                format!(
                    "your dev tenant `{}` has no active install of `{slug}`: a promotion installs the current version there unless the version needs what the dev tenant lacks (a required setting without a default, say); `atrium apps settings get {slug}` shows what it needs, `atrium apps settings set {slug} KEY=VALUE` gives it and installs the version",
                    actor.tenant_id
                ),
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let args = serde_json::Value::Object(args);
    match serving.call_tool(&actor, &slug, &tool, &args).await {
        Ok(result) => Ok(Json(DevToolResult {
            result,
            version: install.version,
            current_version: app.current_version,
        })),
        Err(atrium_platform::serving::ServeError::Call(
            atrium_runtime::CallError::NotDeclared(message),
        )) => {
            let behind = match app.current_version.as_deref() {
                Some(current) if current != install.version => format!(
                    ", in {} (the version your dev tenant runs; the current version is {current}: `atrium apps settings get {slug}` shows what the install needs to move to it)",
                    install.version
                ),
                _ => String::new(),
            };
            Err(ApiError::not_offered(
                "unknown_tool",
                format!(
                    "{message}{behind}; `atrium apps show {slug}` lists the tools of its current version"
                ),
            ))
        }
        Err(e) => Err(e.into()),
    }
}

/// `GET /api/dev/apps/{slug}/settings`: the developer's dev tenant's install of their app, the
/// settings of the version it is meant to run (the current one) and what that version still
/// needs.
pub async fn get_settings(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path(slug): Path<String>,
) -> Result<Json<DevSettingsView>, ApiError> {
    let registry = registry(&state)?;
    let app = registry.owned_app(&dev, &slug).await?;
    let actor = dev_tenant(&dev, &slug)?;
    let settings = registry.dev_settings(&actor, &app).await?;
    Ok(Json(DevSettingsView::new(&actor.tenant, &app, settings)))
}

/// `PATCH /api/dev/apps/{slug}/settings`: the developer sets settings of their dev tenant's
/// install, with the checks of a tenant admin's `PATCH /api/installs/{app}` (the same code); an
/// install not on the current version, or none yet, is activated on it with them
/// (`Registry::set_dev_settings`), as a tenant's activation is.
pub async fn patch_settings(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path(slug): Path<String>,
    JsonBody(body): JsonBody<super::installs::PatchInstall>,
) -> Result<Json<DevSettingsView>, ApiError> {
    let registry = registry(&state)?;
    let app = registry.owned_app(&dev, &slug).await?;
    let actor = dev_tenant(&dev, &slug)?;
    let changed = state
        .serving()?
        .set_dev_settings(&actor, &app, &body.settings)
        .await?;
    Ok(Json(DevSettingsView::new(&actor.tenant, &app, changed)))
}

/// The developer forces installs of their app to a version, bypassing their upgrade policy.
pub async fn force_upgrade(
    State(state): State<HostState>,
    Dev(dev): Dev,
    Path(slug): Path<String>,
    JsonBody(request): JsonBody<atrium_platform::registry::ForcedUpgrade>,
) -> Result<Json<UpgradeRun>, ApiError> {
    let installs = registry(&state)?
        .force_upgrade(&dev, &slug, &request)
        .await?;
    Ok(Json(UpgradeRun { installs }))
}

/// The request body limit of a version registration: the largest component and a full docs
/// bundle, with room for the multipart framing.
const REGISTER_BODY_BYTES: usize = atrium_platform::registry::MAX_COMPONENT_BYTES + 8 * 1024 * 1024;

/// The developer API's routes, under `/api/dev`.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/me", get(me))
        .route("/login", get(login))
        .route("/preflight", post(preflight))
        .route("/apps", get(list_apps))
        .route("/apps/{slug}", get(show_app))
        .route(
            "/apps/{slug}/versions",
            post(register)
                .limit_body(REGISTER_BODY_BYTES)
                .get(list_versions),
        )
        .route(
            "/apps/{slug}/versions/{version}/defaults/templates",
            post(set_templates),
        )
        .route(
            "/apps/{slug}/versions/{version}/bundle",
            put(set_bundle).limit_body(atrium_platform::registry::BUNDLE_ARCHIVE_BYTES),
        )
        .route("/apps/{slug}/versions/{version}/promote", post(promote))
        .route("/apps/{slug}/archive", post(archive))
        .route("/apps/{slug}/upgrade", post(force_upgrade))
        .route("/apps/{slug}/tools/{name}", post(call_tool))
        .route(
            "/apps/{slug}/settings",
            get(get_settings).patch(patch_settings),
        )
}
