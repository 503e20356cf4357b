//! `atrium deploy`: from a project directory to the app's current version on the platform.
//!
//! Five steps, each reported as it runs: the platform's preflight (`--no-preflight` skips it;
//! an error-severity problem stops the deploy with exit 1), the build of the component
//! (`cargo build --target wasm32-wasip2 --release` for a Rust project; `--skip-build` takes
//! what the last build left; a project without `Cargo.toml` is a container-image app and
//! registers its `runtime.image`), the registration of the version with its `app_docs/` and
//! `defaults/templates/`, the upload of the frontend bundle (`--bundle DIR`, else `./dist`,
//! else `./web`; `--bundle ''` skips it), and the promotion to current (`--no-promote` skips
//! it). Running it again for the same version and the same files changes nothing: the
//! platform answers registration and bundle with "already there". A registered version with
//! other content (the code changed, not the version) is told by the preflight, which compares
//! the project's build inputs, docs and templates with the version's, before anything is built;
//! `--version V` writes V into the manifest file only once those checks passed.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt as _;

use atrium_manifest::Manifest;
use atrium_server::views::{BundleSet, PreflightView, PromotedView, RegistrationView};

use crate::client::{Client, Failure, Target};
use crate::lint::{self, DEFAULT_MANIFEST, ProjectFiles};

/// `atrium deploy` arguments (its `--version` is the app's, not the tool's).
#[derive(Debug, clap::Args)]
#[command(disable_version_flag = true)]
pub struct Args {
    /// The version to register (default: the manifest's `version`); when it differs, the
    /// manifest file's `version` is set to it once the checks passed, before the build (a
    /// component embeds its manifest).
    #[arg(long)]
    version: Option<String>,
    /// Do not build: register the component the last build left.
    #[arg(long)]
    skip_build: bool,
    /// Do not ask the platform's preflight first.
    #[arg(long)]
    no_preflight: bool,
    /// Register (and upload the bundle) without making the version current.
    #[arg(long)]
    no_promote: bool,
    /// The manifest file.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_MANIFEST)]
    manifest: PathBuf,
    /// The frontend bundle's directory (default: ./dist, else ./web; an empty string skips
    /// the bundle).
    #[arg(long, value_name = "DIR")]
    bundle: Option<String>,
    /// Print a JSON summary on standard output (`app`, `version`, `component`, `registration`,
    /// `bundle`, `promotion`); the steps are reported on standard error.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
}

/// With `--json` the report of the steps goes to standard error, and standard output carries
/// the JSON summary alone.
static JSON_OUTPUT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `println!` for the report of the steps (standard error under `--json`).
macro_rules! say {
    ($($arg:tt)*) => {
        if JSON_OUTPUT.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!($($arg)*);
        } else {
            println!($($arg)*);
        }
    };
}

/// The five steps, for "[n/5]".
const STEPS: usize = 5;

fn step(n: usize, what: &str) {
    say!("[{n}/{STEPS}] {what}");
}

pub fn run(args: &Args) -> ExitCode {
    JSON_OUTPUT.store(args.json, std::sync::atomic::Ordering::Relaxed);
    crate::client::run("deploy", deploy(args))
}

async fn deploy(args: &Args) -> Result<(), Failure> {
    let project_dir = args
        .manifest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    let mut files = lint::read_project(&args.manifest).map_err(|e| Failure::BadInput(e.0))?;
    // `--version`: checked as the manifest it makes, and written into the file (a component
    // embeds the manifest it was built with, so the build must see it) only once the checks
    // passed: a refused deploy leaves the file as it was.
    let mut rewritten = None;
    if let Some(version) = &args.version {
        let changed = with_version(&files.manifest, version)?;
        if changed != files.manifest {
            files.manifest = changed;
            rewritten = Some(version.as_str());
        }
    }
    let manifest = match std::str::from_utf8(&files.manifest)
        .ok()
        .and_then(|text| atrium_manifest::parse(text).ok())
    {
        Some(manifest) => manifest,
        None => {
            lint::print_findings(&lint::check_locally(&files));

            return Err(Failure::BadInput(format!(
                "{} does not validate: fix the errors above",
                files.manifest_file
            )));
        }
    };
    let slug = manifest.app_id.clone();
    let version = manifest.version.clone();
    let client = Client::configured(&args.target)?;
    say!(
        "Deploying {slug} {version} to {} from {}",
        client.url(),
        project_dir.display()
    );

    // 1. Preflight.
    if args.no_preflight {
        step(1, "preflight: skipped (--no-preflight)");
    } else {
        step(1, "preflight");
        let mut body = lint::preflight_body(&files).ok_or_else(|| {
            Failure::BadInput(format!("{} is not UTF-8 text", files.manifest_file))
        })?;
        body.build_inputs = preflight_inputs(args, &project_dir, &files);
        let view: PreflightView = client
            .call(reqwest::Method::POST, "/api/dev/preflight", Some(&body))
            .await?;
        lint::print_problems(&view.problems);
        if !view.passed {
            return Err(Failure::BadInput(format!(
                "the preflight found {} error(s): nothing was deployed",
                view.errors
            )));
        }
        say!("      passed ({} warning(s))", view.warnings);
    }
    if let Some(set) = rewritten {
        std::fs::write(&args.manifest, &files.manifest).map_err(|e| {
            Failure::BadInput(format!("cannot write {}: {e}", args.manifest.display()))
        })?;
        say!("Set version: {set} in {}", args.manifest.display());
    }

    // 2. Build.
    let component = build(args, &project_dir, &manifest)?;
    // A Rust component carries no record of its inputs: the registration sends them, for the
    // next preflight to compare (the Python and TypeScript builds record their own).
    let build_inputs = match crate::build::Lang::of(&project_dir) {
        Some(crate::build::Lang::Rust) if component.is_some() && !args.skip_build => Some(
            crate::build::inputs(&project_dir, crate::build::Lang::Rust, None)?,
        ),
        _ => None,
    };

    // 3. Registration.
    step(3, &format!("register {slug} {version}"));
    let (content_type, body) =
        registration_body(&files, component.as_deref(), build_inputs.as_deref())?;
    let response = match client
        .send_bytes(
            reqwest::Method::POST,
            &format!("/api/dev/apps/{slug}/versions"),
            &content_type,
            body,
            "registration",
        )
        .await
    {
        Ok(response) => response,
        Err(Failure::Platform(message)) if message.contains("answered 409 immutable") => {
            let next = next_version(&client, &slug, &version).await;
            return Err(Failure::Platform(format!(
                "{message}; a registered version never changes: deploy the change as a new version, `atrium deploy --version {}`",
                next.as_deref().unwrap_or("<new version>")
            )));
        }
        Err(other) => return Err(other),
    };
    let registration: RegistrationView = read_json(response).await?;
    if !args.json {
        lint::print_problems(&registration.warnings);
    }
    let mut summary = serde_json::json!({
        "app": slug,
        "version": version,
        "component": component.as_ref().map(|bytes| serde_json::json!({
            "size": bytes.len(),
            "digest": registration.version.component_digest,
        })),
        "registration": &registration,
        "bundle": null,
        "promotion": null,
    });
    say!(
        "      {} ({} docs file(s), {} template(s))",
        if registration.created {
            "registered"
        } else {
            "already registered with the same content"
        },
        registration.docs.len(),
        registration.version.templates
    );

    // 4. Bundle.
    match bundle_dir(args, &project_dir) {
        Some(dir) => {
            step(4, &format!("bundle {}", dir.display()));
            let (archive, count) = archive(&dir)?;
            let response = client
                .send_bytes(
                    reqwest::Method::PUT,
                    &format!("/api/dev/apps/{slug}/versions/{version}/bundle"),
                    "application/gzip",
                    archive,
                    "bundle",
                )
                .await?;
            let set: BundleSet = read_json(response).await?;
            summary["bundle"] = serde_json::to_value(&set).unwrap_or_default();
            say!(
                "      {} ({count} file(s), {} bytes, {})",
                if set.created {
                    "uploaded"
                } else {
                    "already uploaded"
                },
                set.bytes,
                set.bundle_digest
            );
        }
        None => step(4, "bundle: none (no ./dist or ./web, or --bundle '')"),
    }

    // 5. Promotion.
    if args.no_promote {
        step(5, "promote: skipped (--no-promote)");
        say!("Deployed {slug} {version} without making it current.");
        return print_summary(args, &summary);
    }
    step(5, &format!("promote {version}"));
    let promoted: PromotedView = client
        .call(
            reqwest::Method::POST,
            &format!("/api/dev/apps/{slug}/versions/{version}/promote"),
            None::<&()>,
        )
        .await
        .map_err(|failure| match failure {
            Failure::Platform(message) if message.contains(" 403") => Failure::Platform(format!(
                "{message}; the version is registered: deploy with --no-promote, or ask for publish rights"
            )),
            other => other,
        })?;
    for line in crate::apps::installs_report(&promoted) {
        say!("{line}");
    }
    say!(
        "Deployed {slug}: {} is the current version.",
        promoted.app.current_version.as_deref().unwrap_or(&version)
    );
    try_it(&slug, &manifest, promoted.dev_install.as_ref());
    summary["promotion"] = serde_json::to_value(&promoted).unwrap_or_default();
    print_summary(args, &summary)
}

/// `--json`'s summary, on standard output.
fn print_summary(args: &Args, summary: &serde_json::Value) -> Result<(), Failure> {
    if args.json {
        crate::client::print_json(summary)?;
    }
    Ok(())
}

/// How to try the version just deployed: the dev tenant's install, and a call to make.
fn try_it(slug: &str, manifest: &Manifest, dev: Option<&atrium_platform::registry::DevInstall>) {
    let Some(dev) = dev else {
        say!(
            "Your account has no dev tenant, so nothing was installed to try: an operator gives it one with `atrium developers create ... --org ORG --tenant TENANT`."
        );
        return;
    };
    match dev.outcome.as_str() {
        "installed" | "upgraded" | "current" => {
            say!(
                "Your dev tenant {} ({}) runs {} {} ({}).",
                dev.tenant,
                dev.organization,
                slug,
                dev.version.as_deref().unwrap_or("?"),
                dev.outcome
            );
            if let Some(tool) = manifest.tools.first() {
                say!("Try it (the tool's arguments are a JSON object):");
                say!("  atrium apps call {slug} {} '{{}}'", tool.name);
            }
        }
        outcome => {
            say!(
                "Your dev tenant {} ({}) could not run it ({outcome}{}): {}",
                dev.tenant,
                dev.organization,
                if dev.missing.is_empty() {
                    String::new()
                } else {
                    format!(": {}", dev.missing.join(", "))
                },
                dev.message.as_deref().unwrap_or("")
            );
            if matches!(outcome, "missing_settings" | "invalid_settings") {
                say!(
                    "  give the values with `{}` (it then runs {}), or declare defaults in the manifest",
                    crate::apps::settings_command(slug, &dev.missing),
                    manifest.version
                );
            } else {
                say!(
                    "  once the dev tenant has what it lacks, `atrium apps settings set {slug}` installs the version there"
                );
            }
        }
    }
}

/// The build inputs the registration will carry, for the preflight to compare with the
/// registered version's: the project's as they are (the manifest as this deploy will write
/// it), or with `--skip-build` those the last Python or TypeScript build recorded in its
/// component. `None` when they cannot be known before the build (a Rust project with
/// `--skip-build`, an SDK not set up: the build step then says what is wrong).
fn preflight_inputs(args: &Args, dir: &Path, files: &ProjectFiles) -> Option<String> {
    let lang = crate::build::Lang::of(dir)?;
    if args.skip_build {
        if lang == crate::build::Lang::Rust {
            return None;
        }
        let bytes = std::fs::read(crate::build::last_built(dir, lang).ok()?).ok()?;
        return atrium_runtime::build_inputs::read(&bytes);
    }
    let manifest = args.manifest.file_name()?.to_string_lossy().into_owned();
    crate::build::inputs(
        dir,
        lang,
        Some((manifest.as_str(), files.manifest.as_slice())),
    )
    .ok()
}

/// The first patch version after `version` that the app has not registered, for the advice
/// after a 409 (`None` when the versions cannot be read).
async fn next_version(client: &Client, slug: &str, version: &str) -> Option<String> {
    let detail = crate::apps::app_detail(client, slug).await.ok()?;
    let mut next = atrium_manifest::rules::next_patch(version)?;
    while detail.versions.iter().any(|v| v.version == next) {
        next = atrium_manifest::rules::next_patch(&next)?;
    }
    Some(next)
}

/// The manifest with its top-level `version` set to `version` (YAML: the `version:` line;
/// JSON: the member).
fn with_version(manifest: &[u8], version: &str) -> Result<Vec<u8>, Failure> {
    let text = std::str::from_utf8(manifest)
        .map_err(|_| Failure::BadInput("the manifest is not UTF-8 text".to_owned()))?;
    if text.trim_start().starts_with('{') {
        let mut value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Failure::BadInput(format!("the manifest is not JSON: {e}")))?;
        value["version"] = serde_json::Value::String(version.to_owned());
        return Ok(value.to_string().into_bytes());
    }
    let mut found = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !found && line.starts_with("version:") {
            found = true;
            let end = if line.ends_with("\r\n") {
                "\r\n"
            } else if line.ends_with('\n') {
                "\n"
            } else {
                ""
            };
            out.push_str(&format!("version: {version}{end}"));
        } else {
            out.push_str(line);
        }
    }
    if !found {
        return Err(Failure::BadInput(
            "--version needs a top-level `version:` line in the manifest to replace".to_owned(),
        ));
    }
    Ok(out.into_bytes())
}

/// Step 2: the component's bytes, or `None` for a container-image app.
fn build(args: &Args, dir: &Path, manifest: &Manifest) -> Result<Option<Vec<u8>>, Failure> {
    let Some(lang) = crate::build::Lang::of(dir) else {
        step(
            2,
            &format!(
                "build: no Cargo.toml, package.json, pyproject.toml or app.py, a container-image app ({})",
                manifest.runtime.image
            ),
        );
        return Ok(None);
    };
    let path = if args.skip_build {
        step(2, "build: skipped (--skip-build)");
        crate::build::last_built(dir, lang)?
    } else {
        step(2, &format!("build: {}", lang.command()));
        crate::build::component(dir, lang)?
    };
    let bytes = std::fs::read(&path)
        .map_err(|e| Failure::BadInput(format!("cannot read {}: {e}", path.display())))?;
    say!("      {} ({} bytes)", path.display(), bytes.len());
    Ok(Some(bytes))
}

/// The registration's multipart body: the manifest, the component (with the digest of its
/// build inputs when the component does not carry it), every `app_docs/` file and every
/// template default.
fn registration_body(
    files: &ProjectFiles,
    component: Option<&[u8]>,
    build_inputs: Option<&str>,
) -> Result<(String, Vec<u8>), Failure> {
    let mut nonce = [0u8; 12];
    getrandom::fill(&mut nonce)
        .map_err(|e| Failure::Platform(format!("the system's random source failed: {e}")))?;
    let boundary = format!(
        "atrium-deploy-{}",
        nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let manifest_name = Path::new(&files.manifest_file).file_name().map_or_else(
        || DEFAULT_MANIFEST.to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut parts: Vec<(&str, Option<String>, &[u8])> =
        vec![("manifest", Some(manifest_name), &files.manifest)];
    if let Some(component) = component {
        parts.push(("component", None, component));
        if let Some(inputs) = build_inputs {
            parts.push(("build_inputs", None, inputs.as_bytes()));
        }
    }
    for (path, bytes) in &files.docs {
        parts.push(("app_docs", Some(path.clone()), bytes));
    }
    for (path, bytes) in &files.templates {
        parts.push(("templates", Some(path.clone()), bytes));
    }
    let mut body = Vec::new();
    for (name, file_name, bytes) in parts {
        let file = file_name
            .map(|f| format!("; filename=\"{}\"", f.replace(['"', '\r', '\n'], "_")))
            .unwrap_or_default();
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"{file}\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok((format!("multipart/form-data; boundary={boundary}"), body))
}

/// The bundle directory: `--bundle` (empty: none), else `dist/`, else `web/` of the project.
fn bundle_dir(args: &Args, project: &Path) -> Option<PathBuf> {
    match args.bundle.as_deref() {
        Some("") => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => ["dist", "web"]
            .into_iter()
            .map(|d| project.join(d))
            .find(|d| d.is_dir()),
    }
}

/// A gzip-compressed tar of `dir`'s files (hidden files and `node_modules` left out), and how
/// many files it holds.
fn archive(dir: &Path) -> Result<(Vec<u8>, usize), Failure> {
    if !dir.is_dir() {
        return Err(Failure::BadInput(format!(
            "the bundle directory {} does not exist",
            dir.display()
        )));
    }
    let fail = |e: std::io::Error| Failure::BadInput(format!("cannot pack {}: {e}", dir.display()));
    let mut files = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(current) = todo.pop() {
        for entry in std::fs::read_dir(&current).map_err(fail)? {
            let entry = entry.map_err(fail)?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            let path = entry.path();
            let kind = entry.file_type().map_err(fail)?;
            if kind.is_dir() {
                todo.push(path);
            } else if kind.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(encoder);
    for path in &files {
        let rel = path.strip_prefix(dir).unwrap_or(path);
        let bytes = std::fs::read(path).map_err(fail)?;
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, rel, bytes.as_slice())
            .map_err(fail)?;
    }
    let encoder = tar.into_inner().map_err(fail)?;
    let bytes = encoder.finish().map_err(fail)?;
    Ok((bytes, files.len()))
}

async fn read_json<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
) -> Result<T, Failure> {
    let text = response
        .text()
        .await
        .map_err(|e| Failure::Platform(format!("reading the platform's answer failed: {e}")))?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::Platform(format!("the platform's answer is not understood: {e}")))
}

/// Shows an upload's progress on standard error when it is a terminal: a bar, the bytes sent
/// and the total.
pub(crate) struct Progress {
    label: &'static str,
    total: u64,
    sent: AtomicU64,
    shown: AtomicU64,
    terminal: bool,
}

impl Progress {
    pub(crate) fn new(label: &'static str, total: u64) -> Arc<Self> {
        Arc::new(Progress {
            label,
            total,
            sent: AtomicU64::new(0),
            shown: AtomicU64::new(u64::MAX),
            terminal: std::io::stderr().is_terminal(),
        })
    }

    pub(crate) fn advance(&self, bytes: u64) {
        let sent = self.sent.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if !self.terminal {
            return;
        }
        let percent = (sent * 100).checked_div(self.total).unwrap_or(100);
        if self.shown.swap(percent, Ordering::Relaxed) == percent {
            return;
        }
        const WIDTH: usize = 30;
        let done = usize::try_from(percent.min(100)).unwrap_or(100) * WIDTH / 100;
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\r      {} [{}{}] {percent:>3}% {sent}/{} bytes",
            self.label,
            "#".repeat(done),
            " ".repeat(WIDTH - done),
            self.total
        );
        if sent >= self.total {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    }
}

impl Client {
    /// Sends `body` (of `content_type`) in chunks, showing the upload's progress, and returns
    /// the successful response.
    pub async fn send_bytes(
        &self,
        method: reqwest::Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
        label: &'static str,
    ) -> Result<reqwest::Response, Failure> {
        let total = body.len() as u64;
        let progress = Progress::new(label, total);
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = bytes::Bytes::from(body)
            .chunks(64 * 1024)
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect();
        let shown = progress.clone();
        let stream = futures::stream::iter(chunks).inspect(move |chunk| {
            if let Ok(chunk) = chunk {
                shown.advance(chunk.len() as u64);
            }
        });
        let request = self
            .request(method, path)
            .timeout(crate::client::UPLOAD_TIMEOUT)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .header(reqwest::header::CONTENT_LENGTH, total)
            .body(reqwest::Body::wrap_stream(stream));
        self.finish(request).await
    }
}
