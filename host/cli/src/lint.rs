//! `atrium lint`: validates the manifest, the template defaults under `defaults/templates/`
//! and the docs bundle under `app_docs/` without deploying anything.
//!
//! Offline it runs the checks of [`atrium_manifest::project`] on the local files. When a
//! platform address and a developer token are configured (see [`crate::platform`]) it sends
//! the same files to the platform's preflight instead, which runs the same checks and adds the
//! platform's own (unknown scopes, an app_id owned by someone else, a version already
//! registered with another manifest).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use atrium_manifest::Severity;
use atrium_manifest::project::{self, Finding};
use atrium_platform::registry::{PreflightFile, PreflightRequest};
use base64::Engine;

/// The manifest file name looked for in the current directory.
pub const DEFAULT_MANIFEST: &str = "atrium.app.yaml";

/// Arguments of `atrium lint`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Manifest file to check.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_MANIFEST)]
    manifest: PathBuf,
    /// Print the problems as a JSON array instead of text.
    #[arg(long)]
    json: bool,
    /// Check locally even when a platform is configured.
    #[arg(long)]
    offline: bool,
    #[command(flatten)]
    target: crate::client::Target,
}

/// Why the check could not run (exit code 2).
pub(crate) struct CannotRun(pub(crate) String);

/// A project read from disk: paths relative to the project's directory.
pub(crate) struct ProjectFiles {
    /// The manifest's path as given.
    pub(crate) manifest_file: String,
    /// The manifest's bytes.
    pub(crate) manifest: Vec<u8>,
    /// `defaults/templates/*.json`, by path.
    pub(crate) templates: Vec<(String, Vec<u8>)>,
    /// The files under `app_docs/`, by path relative to it.
    pub(crate) docs: Vec<(String, Vec<u8>)>,
}

pub fn run(args: &Args) -> ExitCode {
    let outcome = read_project(&args.manifest).and_then(|files| {
        let remote = if args.offline {
            None
        } else {
            crate::platform::configured(args.target.platform.as_deref()).map_err(CannotRun)?
        };
        match remote {
            Some(platform) => preflight(&platform, &files),
            None => Ok(check_locally(&files)),
        }
    });
    match outcome {
        Ok(findings) => {
            report(args, &findings);
            if findings.iter().any(Finding::is_error) {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(CannotRun(message)) => {
            eprintln!("atrium lint: {message}");
            ExitCode::from(2)
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CannotRun> {
    std::fs::read(path).map_err(|e| CannotRun(format!("cannot read {}: {e}", path.display())))
}

pub(crate) fn read_project(manifest: &Path) -> Result<ProjectFiles, CannotRun> {
    let dir = manifest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let manifest_bytes = std::fs::read(manifest).map_err(|e| {
        if e.kind() != std::io::ErrorKind::NotFound {
            return CannotRun(format!("cannot read {}: {e}", manifest.display()));
        }
        // Outside a project: say where it looked, and how to name another manifest.
        let looked_in = match std::env::current_dir() {
            Ok(cwd) if dir == Path::new(".") => cwd,
            Ok(cwd) => cwd.join(dir),
            Err(_) => dir.to_owned(),
        };
        CannotRun(format!(
            "cannot read {}: there is no such file in {}; run the command in the project's directory, or name its manifest with --manifest PATH (`atrium init <slug>` makes a new project)",
            manifest.display(),
            looked_in.display()
        ))
    })?;
    let mut templates = Vec::new();
    let templates_dir = dir.join(project::TEMPLATES_DIR);
    if templates_dir.is_dir() {
        let entries = std::fs::read_dir(&templates_dir)
            .map_err(|e| CannotRun(format!("cannot list {}: {e}", templates_dir.display())))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for path in files {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            templates.push((format!("{}/{name}", project::TEMPLATES_DIR), read(&path)?));
        }
    }
    let mut docs = Vec::new();
    let docs_dir = dir.join(project::DOCS_DIR);
    if docs_dir.is_dir() {
        let mut todo = vec![docs_dir.clone()];
        while let Some(current) = todo.pop() {
            let entries = std::fs::read_dir(&current)
                .map_err(|e| CannotRun(format!("cannot list {}: {e}", current.display())))?;
            for entry in entries {
                let entry = entry
                    .map_err(|e| CannotRun(format!("cannot list {}: {e}", current.display())))?;
                let path = entry.path();
                if path.is_dir() {
                    todo.push(path);
                } else {
                    let rel = path
                        .strip_prefix(&docs_dir)
                        .map(|p| p.to_string_lossy().replace('\\', "/"))
                        .unwrap_or_default();
                    docs.push((rel, read(&path)?));
                }
            }
        }
        docs.sort();
    }
    Ok(ProjectFiles {
        manifest_file: manifest.display().to_string(),
        manifest: manifest_bytes,
        templates,
        docs,
    })
}

pub(crate) fn check_locally(files: &ProjectFiles) -> Vec<Finding> {
    let (_, mut findings) = project::check_manifest(&files.manifest_file, &files.manifest);
    let templates: Vec<(String, &[u8])> = files
        .templates
        .iter()
        .map(|(f, b)| (f.clone(), b.as_slice()))
        .collect();
    findings.extend(project::check_templates(&templates).1);
    let docs: Vec<(String, u64)> = files
        .docs
        .iter()
        .map(|(p, b)| (p.clone(), b.len() as u64))
        .collect();
    findings.extend(project::check_docs(project::DOCS_DIR, &docs));
    findings
}

/// The body of `POST /api/dev/preflight` for a project, or `None` when the manifest is not
/// text (nothing the platform could add: the local check reports it).
pub(crate) fn preflight_body(files: &ProjectFiles) -> Option<PreflightRequest> {
    let manifest = String::from_utf8(files.manifest.clone()).ok()?;
    let encode = |path: String, bytes: &[u8]| match std::str::from_utf8(bytes) {
        Ok(text) => PreflightFile {
            path,
            content: Some(text.to_owned()),
            content_base64: None,
        },
        Err(_) => PreflightFile {
            path,
            content: None,
            content_base64: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        },
    };
    let mut sent: Vec<PreflightFile> = files
        .templates
        .iter()
        .map(|(p, b)| encode(p.clone(), b))
        .collect();
    sent.extend(
        files
            .docs
            .iter()
            .map(|(p, b)| encode(format!("{}/{p}", project::DOCS_DIR), b)),
    );
    Some(PreflightRequest {
        manifest,
        manifest_file: Some(files.manifest_file.clone()),
        files: sent,
        build_inputs: None,
    })
}

/// Sends the project to `POST /api/dev/preflight`; any failure to get an answer is exit 2.
fn preflight(
    platform: &crate::platform::PlatformConfig,
    files: &ProjectFiles,
) -> Result<Vec<Finding>, CannotRun> {
    let Some(body) = preflight_body(files) else {
        return Ok(check_locally(files));
    };
    let url = format!("{}/api/dev/preflight", platform.url);
    let runtime = crate::async_runtime(false).map_err(CannotRun)?;
    runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(&url)
            .bearer_auth(&platform.token)
            .timeout(std::time::Duration::from_secs(60))
            .json(&body)
            .send()
            .await
            .map_err(|e| {
                CannotRun(
                    crate::client::unreachable(&platform.url, &e)
                        .message()
                        .to_owned(),
                )
            })?;
        let status = response.status();
        let text = response.text().await.map_err(|e| {
            CannotRun(format!(
                "reading the preflight answer from {url} failed: {e}"
            ))
        })?;
        if !status.is_success() {
            let message = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or(text);
            return Err(CannotRun(format!(
                "the platform refused the preflight ({status}): {message}"
            )));
        }
        #[derive(serde::Deserialize)]
        struct Answer {
            problems: Vec<Finding>,
        }
        serde_json::from_str::<Answer>(&text)
            .map(|a| a.problems)
            .map_err(|e| {
                CannotRun(format!(
                    "the platform's preflight answer is not understood: {e}"
                ))
            })
    })
}

fn report(args: &Args, findings: &[Finding]) {
    if args.json {
        match serde_json::to_string_pretty(findings) {
            Ok(json) => println!("{json}"),
            Err(e) => eprintln!("atrium lint: cannot encode the result: {e}"),
        }
        return;
    }
    print_findings(findings);
}

/// Prints each problem, then the verdict.
pub(crate) fn print_findings(findings: &[Finding]) {
    print_problems(findings);
    let errors = findings.iter().filter(|f| f.is_error()).count();
    let warnings = findings.len() - errors;
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let verdict = if errors == 0 { "passed" } else { "failed" };
    println!(
        "lint {verdict}: {}, {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    );
}

/// Prints each problem as `file:line:column: severity[code] path: message`.
pub(crate) fn print_problems(findings: &[Finding]) {
    for f in findings {
        let p = &f.problem;
        let location = match (p.line, p.column) {
            (Some(line), Some(column)) => format!("{}:{line}:{column}", f.file),
            (Some(line), None) => format!("{}:{line}", f.file),
            _ => f.file.clone(),
        };
        let severity = match p.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let path = if p.path.is_empty() { "(file)" } else { &p.path };
        println!("{location}: {severity}[{}] {path}: {}", p.code, p.message);
    }
}
