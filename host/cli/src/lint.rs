//! `atrium lint`: validates the manifest, the template defaults under `defaults/templates/`
//! and the docs bundle under `app_docs/` without deploying anything.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use atrium_manifest::{Code, Problem, Severity};
use serde::Serialize;

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
}

/// A problem together with the file it was found in.
#[derive(Debug, Serialize)]
struct Finding {
    file: String,
    #[serde(flatten)]
    problem: Problem,
}

/// Why the check could not run (exit code 2).
struct CannotRun(String);

pub fn run(args: &Args) -> ExitCode {
    match collect(&args.manifest) {
        Ok(findings) => {
            report(args, &findings);
            if findings
                .iter()
                .any(|f| f.problem.severity == Severity::Error)
            {
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

fn read_text(path: &Path) -> Result<Result<String, Problem>, CannotRun> {
    let bytes = std::fs::read(path)
        .map_err(|e| CannotRun(format!("cannot read {}: {e}", path.display())))?;
    Ok(String::from_utf8(bytes).map_err(|e| Problem {
        path: String::new(),
        code: Code::Syntax,
        severity: Severity::Error,
        message: format!(
            "the file is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
        line: None,
        column: None,
    }))
}

fn collect(manifest: &Path) -> Result<Vec<Finding>, CannotRun> {
    let file = manifest.display().to_string();
    let mut findings = Vec::new();
    match read_text(manifest)? {
        Ok(text) => {
            let format = match manifest.extension().and_then(|e| e.to_str()) {
                Some("json") => atrium_manifest::Format::Json,
                Some("yaml" | "yml") => atrium_manifest::Format::Yaml,
                _ => atrium_manifest::Format::Auto,
            };
            let validation = atrium_manifest::validate_as(&text, format);
            findings.extend(validation.problems.into_iter().map(|problem| Finding {
                file: file.clone(),
                problem,
            }));
        }
        Err(problem) => findings.push(Finding {
            file: file.clone(),
            problem,
        }),
    }
    let dir = manifest
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .unwrap_or(Path::new("."));
    findings.extend(templates(&dir.join("defaults").join("templates"))?);
    findings.extend(docs(&dir.join("app_docs"))?);
    Ok(findings)
}

fn plain(severity: Severity, code: Code, message: String) -> Problem {
    Problem {
        path: String::new(),
        code,
        severity,
        message,
        line: None,
        column: None,
    }
}

/// Validates every `*.json` under `defaults/templates/`.
fn templates(dir: &Path) -> Result<Vec<Finding>, CannotRun> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CannotRun(format!("cannot list {}: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut findings = Vec::new();
    let mut valid = Vec::new();
    for path in files {
        let file = path.display().to_string();
        match read_text(&path)? {
            Ok(text) => match atrium_manifest::templates::validate_template(&text) {
                Ok(template) => valid.push((file, template)),
                Err(problems) => findings.extend(problems.into_iter().map(|problem| Finding {
                    file: file.clone(),
                    problem,
                })),
            },
            Err(problem) => findings.push(Finding { file, problem }),
        }
    }
    for (file, message) in atrium_manifest::templates::duplicate_slugs(&valid) {
        let mut problem = plain(Severity::Error, Code::Duplicate, message);
        problem.path = "slug".into();
        findings.push(Finding { file, problem });
    }
    Ok(findings)
}

/// Checks the docs bundle limits and the `user.md` entry point.
fn docs(dir: &Path) -> Result<Vec<Finding>, CannotRun> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(current) = todo.pop() {
        let entries = std::fs::read_dir(&current)
            .map_err(|e| CannotRun(format!("cannot list {}: {e}", current.display())))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| CannotRun(format!("cannot list {}: {e}", current.display())))?;
            let meta = entry
                .metadata()
                .map_err(|e| CannotRun(format!("cannot read {}: {e}", entry.path().display())))?;
            if meta.is_dir() {
                todo.push(entry.path());
            } else {
                let rel = entry
                    .path()
                    .strip_prefix(dir)
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                files.push((rel, meta.len()));
            }
        }
    }
    let file = dir.display().to_string();
    let mut findings: Vec<Finding> = atrium_manifest::bundle::check(&files)
        .into_iter()
        .map(|message| Finding {
            file: file.clone(),
            problem: plain(Severity::Error, Code::InputLimit, message),
        })
        .collect();
    if !files.iter().any(|(p, _)| p == "user.md") {
        findings.push(Finding {
            file,
            problem: plain(Severity::Warning, Code::Required, "app_docs/ has no user.md entry point; apps without user.md are not listed on the docs site".into()),
        });
    }
    Ok(findings)
}

fn report(args: &Args, findings: &[Finding]) {
    if args.json {
        match serde_json::to_string_pretty(findings) {
            Ok(json) => println!("{json}"),
            Err(e) => eprintln!("atrium lint: cannot encode the result: {e}"),
        }
        return;
    }
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
    let errors = findings
        .iter()
        .filter(|f| f.problem.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let verdict = if errors == 0 { "passed" } else { "failed" };
    println!(
        "lint {verdict}: {}, {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    );
}
