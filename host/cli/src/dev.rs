//! `atrium dev`: the app's frontend bundle and its component, run locally.
//!
//! Two servers on 127.0.0.1. The bundle server (`--bundle-port`, 5173) serves the project's
//! `dist/` or `web/` with live reload: every HTML page gets a small script that listens to
//! the server's events and reloads the page when a file of the bundle changes or the
//! component was rebuilt. The parent shell (`--parent-port`, 5174) is what the workspace is to
//! a bundle: a page that frames the bundle, speaks the postMessage bridge (docs/cli.md), has a
//! theme toggle, shows the build state and logs every tool call. A tool call from the bundle
//! runs in the app's component through the real runtime, as a tenant user's call would (the
//! manifest's required scopes granted, its settings' defaults), against the platform tools of
//! the mock file (`--mocks`, default `atrium.dev.json`), which is read again whenever it
//! changes; a platform tool it does not mock answers decision `unmocked`. When a source file
//! changes (`src/`, `Cargo.toml`, the manifest) the component is rebuilt
//! (`cargo build --target wasm32-wasip2 --release`) and loaded again. Production's content
//! security policy and sandbox checks are not applied.

use std::collections::BTreeMap;
use std::future::IntoFuture as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{App, CallError, Caller, Invocation, Runtime, RuntimeConfig};
use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use crate::lint::DEFAULT_MANIFEST;

/// `atrium dev` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project's directory.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// The app's id (default: the manifest's app_id).
    #[arg(long)]
    app_id: Option<String>,
    /// The mock file of platform tools, relative to --dir.
    #[arg(long, default_value = "atrium.dev.json")]
    mocks: PathBuf,
    /// The bundle server's port.
    #[arg(long, default_value_t = 5173)]
    bundle_port: u16,
    /// The parent shell's port.
    #[arg(long, default_value_t = 5174)]
    parent_port: u16,
    /// Do not open the parent shell in a browser.
    #[arg(long)]
    no_open: bool,
    /// Serve this component instead of building the project (no rebuild on changes).
    #[arg(long, value_name = "FILE")]
    component: Option<PathBuf>,
}

/// What the servers share.
struct Dev {
    dir: PathBuf,
    bundle: PathBuf,
    mocks: PathBuf,
    app_id: String,
    bundle_origin: String,
    runtime: Runtime,
    /// The loaded component, or why there is none.
    app: Mutex<Result<App, String>>,
    /// Bumped when the bundle should reload; the value says why.
    events: tokio::sync::watch::Sender<(u64, String)>,
}

impl Dev {
    fn app(&self) -> Result<App, String> {
        self.app
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn announce(&self, what: &str) {
        self.events.send_modify(|(n, why)| {
            *n += 1;
            what.clone_into(why);
        });
    }
}

pub fn run(args: &Args) -> ExitCode {
    crate::init_logging("atrium=info");
    match crate::async_runtime(true) {
        Ok(runtime) => match runtime.block_on(serve(args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err((code, message)) => {
                eprintln!("atrium dev: {message}");
                ExitCode::from(code)
            }
        },
        Err(message) => {
            eprintln!("atrium dev: {message}");
            ExitCode::from(2)
        }
    }
}

async fn serve(args: &Args) -> Result<(), (u8, String)> {
    let bad = |message: String| (1u8, message);
    let dir = std::fs::canonicalize(&args.dir)
        .map_err(|e| bad(format!("cannot open {}: {e}", args.dir.display())))?;
    let manifest_path = dir.join(DEFAULT_MANIFEST);
    let text = std::fs::read_to_string(&manifest_path)
        .map_err(|e| bad(format!("cannot read {}: {e}", manifest_path.display())))?;
    let manifest = atrium_manifest::parse(&text).map_err(|e| {
        bad(format!(
            "{} is not valid: {e} (`atrium lint` says more)",
            manifest_path.display()
        ))
    })?;
    let bundle = ["dist", "web"]
        .into_iter()
        .map(|d| dir.join(d))
        .find(|d| d.is_dir())
        .ok_or_else(|| {
            bad(format!(
                "{} has no dist/ or web/ bundle to serve",
                dir.display()
            ))
        })?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: crate::call::default_cache_dir(),
        // One developer's app: it runs at its manifest's `cpu_cores`.
        max_cpu_cores_per_tenant: None,
        ..RuntimeConfig::default()
    })
    .map_err(|e| (2, format!("cannot start the runtime: {e}")))?;
    let bundle_listener = tokio::net::TcpListener::bind(("127.0.0.1", args.bundle_port))
        .await
        .map_err(|e| {
            bad(format!(
                "cannot listen on 127.0.0.1:{} (--bundle-port): {e}",
                args.bundle_port
            ))
        })?;
    let parent_listener = tokio::net::TcpListener::bind(("127.0.0.1", args.parent_port))
        .await
        .map_err(|e| {
            bad(format!(
                "cannot listen on 127.0.0.1:{} (--parent-port): {e}",
                args.parent_port
            ))
        })?;
    let bundle_addr = bundle_listener
        .local_addr()
        .map_err(|e| (2, e.to_string()))?;
    let parent_addr = parent_listener
        .local_addr()
        .map_err(|e| (2, e.to_string()))?;
    let (events, _) = tokio::sync::watch::channel((0, "start".to_owned()));
    let dev = Arc::new(Dev {
        mocks: dir.join(&args.mocks),
        app_id: args
            .app_id
            .clone()
            .unwrap_or_else(|| manifest.app_id.clone()),
        bundle_origin: format!("http://{bundle_addr}"),
        dir: dir.clone(),
        bundle,
        runtime,
        app: Mutex::new(Err("building".to_owned())),
        events,
    });

    let seen_sources = fingerprint_of(sources(&dev.dir)).await;
    let loaded = match &args.component {
        Some(file) => load_off_runtime(&dev, file.clone()).await,
        None => build_and_load(&dev).await,
    };
    if let Err(message) = &loaded {
        eprintln!("atrium dev: {message}");
    }
    *dev.app.lock().unwrap_or_else(PoisonError::into_inner) = loaded;

    let bundle_router = Router::new()
        .route("/__atrium/events", get(events_stream))
        .route("/__atrium/live.js", get(live_script))
        .fallback(get(bundle_file))
        .layer(axum::middleware::from_fn_with_state(
            bundle_addr.port(),
            local_host_only,
        ))
        .with_state(dev.clone());
    let parent_router = Router::new()
        .route("/", get(shell))
        .route("/__atrium/events", get(events_stream))
        .route("/__atrium/status", get(status))
        .route("/__atrium/tools/{name}", post(call_tool))
        .layer(axum::middleware::from_fn_with_state(
            parent_addr.port(),
            local_host_only,
        ))
        .with_state(dev.clone());
    let parent_url = format!("http://{parent_addr}/");
    println!(
        "Bundle:       http://{bundle_addr}/ ({})",
        dev.bundle.display()
    );
    println!("Parent shell: {parent_url}");
    println!(
        "Mocks:        {} (read again when it changes)",
        dev.mocks.display()
    );
    println!("Press Ctrl-C to stop.");
    if !args.no_open {
        let _ = std::process::Command::new(if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        })
        .arg(&parent_url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    }
    let watcher = tokio::spawn(watch(dev.clone(), args.component.is_none(), seen_sources));
    // Stops at once on Ctrl-C: the pages' event streams never end by themselves.
    let outcome = tokio::select! {
        served = axum::serve(bundle_listener, bundle_router).into_future() => served,
        served = axum::serve(parent_listener, parent_router).into_future() => served,
        () = atrium_server::shutdown_signal() => Ok(()),
    };
    watcher.abort();
    outcome.map_err(|e| (2, format!("a server stopped: {e}")))
}

fn load(dev: &Dev, component: &Path) -> Result<App, String> {
    let text = std::fs::read_to_string(dev.dir.join(DEFAULT_MANIFEST))
        .map_err(|e| format!("cannot read the manifest: {e}"))?;
    let manifest =
        atrium_manifest::parse(&text).map_err(|e| format!("the manifest is not valid: {e}"))?;
    dev.runtime
        .load_file(component, manifest)
        .map_err(|e| format!("cannot load {}: {e}", component.display()))
}

/// [`load`] (which compiles the component) off the async runtime's threads.
async fn load_off_runtime(dev: &Arc<Dev>, component: PathBuf) -> Result<App, String> {
    let dev = dev.clone();
    tokio::task::spawn_blocking(move || load(&dev, &component))
        .await
        .map_err(|e| format!("loading stopped: {e}"))?
}

async fn build_and_load(dev: &Arc<Dev>) -> Result<App, String> {
    println!("Building the component ...");
    let dir = dev.dir.clone();
    let built = tokio::task::spawn_blocking(move || {
        let lang = crate::build::Lang::of(&dir).ok_or_else(|| {
            crate::client::Failure::BadInput(format!(
                "{} has no Cargo.toml, package.json, pyproject.toml or app.py: pass --component FILE",
                dir.display()
            ))
        })?;
        crate::build::component(&dir, lang)
    })
        .await
        .map_err(|e| format!("the build stopped: {e}"))?;
    let path = built.map_err(|f| match f {
        crate::client::Failure::BadInput(m)
        | crate::client::Failure::Platform(m)
        | crate::client::Failure::Auth(m) => m,
    })?;
    let app = load_off_runtime(dev, path.clone()).await?;
    println!("Built and loaded {}", path.display());
    Ok(app)
}

/// A fingerprint of the files under `paths`: each file's path, size and modification time
/// (so a deleted or renamed file counts too). Hidden entries, `node_modules` and `target` are
/// left out, and symbolic links are not followed.
fn fingerprint(paths: &[PathBuf]) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut seen = Vec::new();
    let mut todo: Vec<PathBuf> = paths.to_vec();
    while let Some(path) = todo.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                todo.extend(entries.flatten().map(|e| e.path()).filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        !n.starts_with('.') && n != "node_modules" && n != "target"
                    })
                }));
            }
        } else if meta.is_file() {
            seen.push((path, meta.len(), meta.modified().ok()));
        }
    }
    seen.sort();
    seen
}

/// [`fingerprint`], off the async runtime's threads.
async fn fingerprint_of(paths: Vec<PathBuf>) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    tokio::task::spawn_blocking(move || fingerprint(&paths))
        .await
        .unwrap_or_default()
}

/// The files whose change rebuilds the component: `src/`, the manifest and the project files
/// of every language (a missing one counts as nothing), and a Python project's top-level
/// modules.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut paths = vec![
        dir.join("src"),
        dir.join(DEFAULT_MANIFEST),
        dir.join("Cargo.toml"),
        dir.join("package.json"),
        dir.join("pyproject.toml"),
    ];
    if let Ok(entries) = std::fs::read_dir(dir) {
        paths.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "py")),
        );
    }
    paths
}

/// Polls the bundle and the sources twice a second: a bundle change reloads the page, a
/// source change rebuilds the component first. `seen_sources` is what the first build saw
/// (taken before it), so an edit made while it ran rebuilds too.
async fn watch(
    dev: Arc<Dev>,
    rebuild: bool,
    mut seen_sources: Vec<(PathBuf, u64, Option<SystemTime>)>,
) {
    let sources = sources(&dev.dir);
    let bundle = vec![dev.bundle.clone()];
    let mut seen_bundle = fingerprint_of(bundle.clone()).await;
    let mut ticks = tokio::time::interval(Duration::from_millis(500));
    loop {
        ticks.tick().await;
        let now_bundle = fingerprint_of(bundle.clone()).await;
        if now_bundle != seen_bundle {
            seen_bundle = now_bundle;
            dev.announce("bundle changed");
        }
        let now_sources = fingerprint_of(sources.clone()).await;
        if rebuild && now_sources != seen_sources {
            seen_sources = now_sources;
            let loaded = build_and_load(&dev).await;
            let what = match &loaded {
                Ok(_) => "component rebuilt".to_owned(),
                Err(e) => {
                    eprintln!("atrium dev: {e}");
                    "build failed".to_owned()
                }
            };
            *dev.app.lock().unwrap_or_else(PoisonError::into_inner) = loaded;
            dev.announce(&what);
        }
    }
}

/// Refuses requests whose `Host` is not this server's loopback address (a page of another
/// site reaching it through DNS rebinding), and cross-site writes: a `POST` must come from the
/// server's own origin, with a JSON body.
async fn local_host_only(
    State(port): State<u16>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(refusal) = foreign(port, &request) {
        return refusal;
    }
    next.run(request).await
}

/// Why [`local_host_only`] refuses `request` (another host, a cross-site write), if it does.
fn foreign(port: u16, request: &axum::extract::Request) -> Option<Response> {
    let header = |name: header::HeaderName| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let allowed = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    if !header(header::HOST).is_some_and(|h| allowed.contains(&h)) {
        return Some(
            (
                StatusCode::FORBIDDEN,
                "atrium dev answers on its loopback address only",
            )
                .into_response(),
        );
    }
    if request.method() == axum::http::Method::POST {
        let origin_ok = header(header::ORIGIN)
            .is_none_or(|o| allowed.iter().any(|a| o == format!("http://{a}")));
        let json = header(header::CONTENT_TYPE).is_some_and(|t| t.starts_with("application/json"));
        if !origin_ok || !json {
            return Some(
                (
                    StatusCode::FORBIDDEN,
                    "tool calls come from the parent shell, as JSON",
                )
                    .into_response(),
            );
        }
    }
    None
}

/// Server-sent events: one `reload` event per change, its data the reason.
async fn events_stream(State(dev): State<Arc<Dev>>) -> Response {
    let mut receiver = dev.events.subscribe();
    receiver.mark_unchanged();
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.changed().await.ok()?;
        let why = receiver.borrow_and_update().1.clone();
        let event = format!("event: reload\ndata: {why}\n\n");
        Some((Ok::<_, std::convert::Infallible>(event), receiver))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        axum::body::Body::from_stream(stream),
    )
        .into_response()
}

const LIVE_SCRIPT: &str = r#"(() => {
  const events = new EventSource("/__atrium/events");
  events.addEventListener("reload", () => location.reload());
})();
"#;

async fn live_script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript")], LIVE_SCRIPT).into_response()
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript",
        "css" => "text/css",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "wasm" => "application/wasm",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// A file of the bundle (`index.html` for a directory); HTML gets the live-reload script.
async fn bundle_file(State(dev): State<Arc<Dev>>, uri: axum::http::Uri) -> Response {
    let relative = uri.path().trim_start_matches('/');
    // No parent directories, no hidden files (`.env`, `.git`), as `deploy` leaves them out.
    let safe = relative
        .split('/')
        .all(|c| !c.starts_with('.') && !c.contains('\\') && !c.contains(':'));
    if !safe {
        return (StatusCode::BAD_REQUEST, "no such path").into_response();
    }
    let mut path = dev.bundle.join(relative);
    if path.is_dir() {
        path = path.join("index.html");
    }
    let Ok(bytes) = tokio::fs::read(&path).await else {
        return (
            StatusCode::NOT_FOUND,
            format!("{} is not in the bundle", uri.path()),
        )
            .into_response();
    };
    let kind = content_type(&path);
    let body = if kind.starts_with("text/html") {
        let html = String::from_utf8_lossy(&bytes);
        let tag = "<script src=\"/__atrium/live.js\"></script>";
        match html.rfind("</body>") {
            Some(at) => format!("{}{tag}{}", &html[..at], &html[at..]).into_bytes(),
            None => format!("{html}{tag}").into_bytes(),
        }
    } else {
        bytes
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// The build state, for the shell.
async fn status(State(dev): State<Arc<Dev>>) -> axum::Json<Value> {
    axum::Json(match dev.app() {
        Ok(_) => json!({"app_id": dev.app_id, "component": "ready"}),
        Err(e) => json!({"app_id": dev.app_id, "component": "unavailable", "error": e}),
    })
}

/// The in-memory platform of one call: the mock file as it is now.
fn platform(dev: &Dev) -> Result<MemoryPlatform, String> {
    let platform = MemoryPlatform::new("http://127.0.0.1");
    match std::fs::read_to_string(&dev.mocks) {
        Ok(text) => crate::call::with_mocks(platform, &text, &dev.mocks),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(platform.answering_unmocked()),
        Err(e) => Err(format!("cannot read {}: {e}", dev.mocks.display())),
    }
}

fn refusal(decision: &str, message: String, needed: &[String]) -> Value {
    json!({"ok": false, "error": {"decision": decision, "message": message, "neededScopes": needed}})
}

/// A tool call of the bundle: `{ok: true, result}` or `{ok: false, error: {decision, message,
/// neededScopes}}`, the bridge's shapes.
async fn call_tool(
    State(dev): State<Arc<Dev>>,
    UrlPath(name): UrlPath<String>,
    body: axum::body::Bytes,
) -> axum::Json<Value> {
    let answer = async {
        let args: Value = if body.is_empty() {
            json!({})
        } else {
            serde_json::from_slice(&body).map_err(|e| {
                refusal(
                    "invalid_request",
                    format!("the arguments are not JSON: {e}"),
                    &[],
                )
            })?
        };
        let app = dev.app().map_err(|e| refusal("app_unavailable", e, &[]))?;
        let platform = Arc::new(platform(&dev).map_err(|e| refusal("invalid_mocks", e, &[]))?);
        let manifest = app.manifest().clone();
        let mut inv = Invocation::new("dev-tenant", platform.clone());
        inv.granted_scopes = manifest.required_scopes.iter().cloned().collect();
        inv.settings = manifest
            .install_settings
            .iter()
            .filter_map(|s| s.default.clone().map(|d| (s.id.clone(), d)))
            .collect::<Map<String, Value>>();
        inv.caller = Caller::Agent;
        let result = app
            .call_tool(&inv, &name, &args.to_string())
            .await
            .map_err(|e| match e {
                CallError::Tool(t) => refusal(&t.decision, t.message, &t.needed_scopes),
                CallError::ScopeDenied { ref needed, .. } => {
                    refusal("scope_denied", e.to_string(), needed)
                }
                CallError::NotAgentVisible(_) => refusal("not_agent_visible", e.to_string(), &[]),
                CallError::NotDeclared(_) => refusal("unknown_tool", e.to_string(), &[]),
                CallError::NoHandler(_) => refusal("no_handler", e.to_string(), &[]),
                CallError::InvalidInput(_) => refusal("invalid_request", e.to_string(), &[]),
                CallError::Deadline(_) => refusal("deadline_exceeded", e.to_string(), &[]),
                other => refusal("app_failed", other.to_string(), &[]),
            })?;
        let calls: BTreeMap<usize, Value> = platform
            .tool_calls()
            .into_iter()
            .enumerate()
            .map(|(i, (tool, args))| (i, json!({"tool": tool, "args": args})))
            .collect();
        tracing::info!(tool = %name, platform_calls = calls.len(), "tool call");
        let result: Value = serde_json::from_str(&result).unwrap_or(Value::String(result));
        Ok::<Value, Value>(json!({"ok": true, "result": result}))
    }
    .await;
    axum::Json(answer.unwrap_or_else(|refused| refused))
}

/// The parent shell.
async fn shell(State(dev): State<Arc<Dev>>) -> Response {
    let page = SHELL
        .replace("{{app_id}}", &dev.app_id)
        .replace("{{bundle}}", &format!("{}/", dev.bundle_origin))
        .replace("{{bundle_origin}}", &dev.bundle_origin);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

const SHELL: &str = r##"<!doctype html>
<html lang="en" data-theme="light">
<head>
<meta charset="utf-8">
<title>{{app_id}} · atrium dev</title>
<style>
  :root { --bg: #f4f5f7; --fg: #1d1d1f; --panel: #ffffff; }
  :root[data-theme="dark"] { --bg: #0f1012; --fg: #ececf1; --panel: #1b1c20; }
  body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--fg); display: grid; grid-template-rows: auto 1fr auto; height: 100vh; }
  header { display: flex; gap: 1rem; align-items: center; padding: 0.5rem 1rem; background: var(--panel); }
  header h1 { font-size: 1rem; margin: 0; flex: 1; }
  iframe { width: 100%; height: 100%; border: 0; background: var(--panel); }
  #log { max-height: 10rem; overflow: auto; margin: 0; padding: 0.5rem 1rem; background: var(--panel); font: 12px ui-monospace, monospace; }
</style>
</head>
<body>
<header>
  <h1>{{app_id}} <small>atrium dev</small></h1>
  <span id="status">…</span>
  <button id="theme" type="button">Dark theme</button>
</header>
<iframe id="app" src="{{bundle}}" title="{{app_id}}"></iframe>
<pre id="log" aria-label="Tool calls"></pre>
<script>
const frame = document.getElementById("app");
const log = document.getElementById("log");
const bundleOrigin = "{{bundle_origin}}";
let theme = "light";

function send(message) { frame.contentWindow.postMessage(message, bundleOrigin); }
function note(line) { log.textContent += line + "\n"; log.scrollTop = log.scrollHeight; }

window.addEventListener("message", async (event) => {
  if (event.origin !== bundleOrigin) return;
  const message = event.data || {};
  if (message.type === "atrium:ready") {
    send({ type: "atrium:init", theme, appId: "{{app_id}}", tenantId: "dev-tenant" });
    note("ready");
  } else if (message.type === "atrium:call-tool") {
    let answer;
    try {
      const response = await fetch("/__atrium/tools/" + encodeURIComponent(message.name), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(message.args ?? {}),
      });
      answer = await response.json();
    } catch (error) {
      answer = { ok: false, error: { decision: "network_error", message: String(error), neededScopes: [] } };
    }
    note(`${message.name} ${JSON.stringify(message.args ?? {})} -> ${JSON.stringify(answer)}`);
    send({ type: "atrium:tool-result", id: message.id, ...answer });
  }
});

document.getElementById("theme").addEventListener("click", (event) => {
  theme = theme === "light" ? "dark" : "light";
  document.documentElement.dataset.theme = theme;
  event.target.textContent = theme === "light" ? "Dark theme" : "Light theme";
  send({ type: "atrium:theme", theme });
});

async function refresh() {
  const status = await (await fetch("/__atrium/status")).json();
  document.getElementById("status").textContent =
    status.component === "ready" ? "component ready" : "component unavailable: " + status.error;
}
refresh();
new EventSource("/__atrium/events").addEventListener("reload", (event) => {
  note("reload: " + event.data);
  refresh();
});
</script>
</body>
</html>
"##;
