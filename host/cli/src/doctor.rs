//! `atrium doctor`: the five checks of the spec, adapted to components. Login (a token for
//! the platform, and `/api/dev/me` answering 200; `publish_allowed=false` is a warning), the
//! build toolchain of the project's language (cargo and the wasm32-wasip2 target; Python 3.10
//! or later with componentize-py; Node.js 20 or later), the registry credential (the
//! platform's registry accepts the token), the SDK (the project uses an Atrium SDK compatible
//! with this tool: `atrium-sdk` for Rust and Python, `@atrium/sdk` for TypeScript), the manifest
//! (present and valid). Exit 1 when a check failed,
//! else 0 (warnings allowed).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use atrium_server::views::Me;

use crate::build::Lang;
use crate::client::{Client, Failure, Target};
use crate::lint::DEFAULT_MANIFEST;

/// `atrium doctor` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project's manifest.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_MANIFEST)]
    manifest: PathBuf,
    /// Print the checks as JSON: `{"passed", "checks": [{"check", "status", "detail"}]}`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
}

/// One check, for `--json`.
#[derive(serde::Serialize)]
struct CheckView<'a> {
    check: &'a str,
    /// `ok`, `warning` or `failed`.
    status: &'static str,
    detail: &'a str,
}

/// How a check went.
enum Outcome {
    Ok(String),
    Warning(String),
    Failed(String),
}

fn show(name: &str, outcome: &Outcome) -> bool {
    let (mark, text, failed) = match outcome {
        Outcome::Ok(t) => ("ok  ", t, false),
        Outcome::Warning(t) => ("warn", t, false),
        Outcome::Failed(t) => ("FAIL", t, true),
    };
    println!("[{mark}] {name}: {text}");
    failed
}

pub fn run(args: &Args) -> ExitCode {
    let project = args
        .manifest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    let (login, registry) = match crate::async_runtime(false) {
        Ok(runtime) => runtime.block_on(platform_checks(&args.target)),
        Err(message) => (Outcome::Failed(message.clone()), Outcome::Failed(message)),
    };
    let lang = Lang::of(&project).unwrap_or(Lang::Rust);
    let checks = [
        ("login", login),
        ("build toolchain", toolchain(&project, lang)),
        ("registry credential", registry),
        ("SDK", sdk(&project, lang)),
        ("manifest", manifest(&args.manifest)),
    ];
    let failed = checks
        .iter()
        .any(|(_, outcome)| matches!(outcome, Outcome::Failed(_)));
    if args.json {
        let views: Vec<CheckView<'_>> = checks
            .iter()
            .map(|(check, outcome)| {
                let (status, detail) = match outcome {
                    Outcome::Ok(t) => ("ok", t),
                    Outcome::Warning(t) => ("warning", t),
                    Outcome::Failed(t) => ("failed", t),
                };
                CheckView {
                    check,
                    status,
                    detail,
                }
            })
            .collect();
        let body = serde_json::json!({"passed": !failed, "checks": views});
        println!(
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
        return if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        };
    }
    for (name, outcome) in &checks {
        show(name, outcome);
    }
    if failed {
        println!("doctor: a check failed");
        ExitCode::from(1)
    } else {
        println!("doctor: ready to deploy");
        ExitCode::SUCCESS
    }
}

fn failure_text(failure: Failure) -> String {
    match failure {
        Failure::BadInput(m) | Failure::Platform(m) | Failure::Auth(m) => m,
    }
}

/// Login and the registry credential: both need the platform.
async fn platform_checks(target: &Target) -> (Outcome, Outcome) {
    let client = match Client::configured(target) {
        Ok(client) => client,
        Err(failure) => {
            let text = failure_text(failure);
            return (
                Outcome::Failed(text),
                Outcome::Failed("not checked without a login".to_owned()),
            );
        }
    };
    let me: Me = match client
        .call(reqwest::Method::GET, "/api/dev/me", None::<&()>)
        .await
    {
        Ok(me) => me,
        Err(failure) => {
            return (
                Outcome::Failed(failure_text(failure)),
                Outcome::Failed("not checked without a login".to_owned()),
            );
        }
    };
    let login = if me.publish_allowed {
        Outcome::Ok(format!("{} <{}> on {}", me.login, me.email, client.url()))
    } else {
        Outcome::Warning(format!(
            "{} <{}> on {}, but publish_allowed is false: versions can be registered, not promoted",
            me.login,
            me.email,
            client.url()
        ))
    };
    let registry = match client
        .all::<atrium_server::views::AppView>("/api/dev/apps")
        .await
    {
        Ok(list) => Outcome::Ok(format!(
            "the registry accepts the token ({} app(s))",
            list.len()
        )),
        Err(failure) => Outcome::Failed(failure_text(failure)),
    };
    (login, registry)
}

/// The first line a command prints, when it runs and succeeds.
fn first_line(command: &mut Command) -> Option<String> {
    let out = command.output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(text.lines().next().unwrap_or("").trim().to_owned())
}

/// The toolchain of the project's language.
fn toolchain(project: &Path, lang: Lang) -> Outcome {
    match lang {
        Lang::Rust => rust_toolchain(),
        Lang::Python => {
            let python = crate::build::python(project);
            let script = "import sys, componentize_py; print('Python %d.%d' % sys.version_info[:2]) if sys.version_info >= (3, 10) else sys.exit('Python %d.%d is older than 3.10' % sys.version_info[:2])";
            match first_line(Command::new(&python).args(["-c", script])) {
                Some(version) => Outcome::Ok(format!("{version} with componentize-py")),
                None => Outcome::Failed(format!(
                    "{} must be Python 3.10 or later with componentize-py: set up the project's environment with `{}`",
                    python.to_string_lossy(),
                    crate::lang::PYTHON_SETUP
                )),
            }
        }
        Lang::TypeScript => match first_line(Command::new("node").arg("--version")) {
            Some(version) => {
                let major: u32 = version
                    .trim_start_matches('v')
                    .split('.')
                    .next()
                    .and_then(|m| m.parse().ok())
                    .unwrap_or(0);
                if major >= 20 {
                    Outcome::Ok(format!("Node.js {version}"))
                } else {
                    Outcome::Failed(format!(
                        "Node.js {version} is older than 20, which the TypeScript SDK needs"
                    ))
                }
            }
            None => Outcome::Failed("node does not run: install Node.js 20 or later".to_owned()),
        },
    }
}

/// cargo runs, and the compiler has the wasm32-wasip2 standard library.
fn rust_toolchain() -> Outcome {
    let version = match crate::build::cargo().arg("--version").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        _ => {
            return Outcome::Failed(
                "cargo does not run: install Rust with rustup (https://rustup.rs)".to_owned(),
            );
        }
    };
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    match sysroot {
        Some(root) if root.join("lib/rustlib/wasm32-wasip2").is_dir() => {
            Outcome::Ok(format!("{version}, target wasm32-wasip2"))
        }
        Some(_) => Outcome::Failed(format!(
            "{version}, but the wasm32-wasip2 target is missing: rustup target add wasm32-wasip2"
        )),
        None => Outcome::Failed("rustc does not run: install Rust with rustup".to_owned()),
    }
}

/// `cargo metadata`'s packages (the fields used).
#[derive(serde::Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

#[derive(serde::Deserialize)]
struct Package {
    name: String,
    version: String,
}

/// Whether an SDK version is compatible with this tool: the same major version (the same
/// minor one below 1.0).
fn compatible(sdk: &str, tool: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> {
        v.split(['.', '-', '+'])
            .take(3)
            .map(|p| p.parse().unwrap_or(u64::MAX))
            .collect()
    };
    let (s, t) = (parts(sdk), parts(tool));
    match (s.first(), t.first()) {
        (Some(0), Some(0)) => s.get(1) == t.get(1),
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The SDK version the project uses, and whether it is compatible with this tool.
fn sdk_version(name: &str, version: &str) -> Outcome {
    let tool = env!("CARGO_PKG_VERSION");
    if compatible(version, tool) {
        Outcome::Ok(format!("{name} {version} (this tool is {tool})"))
    } else {
        Outcome::Failed(format!(
            "{name} {version} does not match this tool ({tool}): use the SDK of the same release"
        ))
    }
}

/// The project uses an SDK of its language that resolves and is compatible.
fn sdk(project: &Path, lang: Lang) -> Outcome {
    match lang {
        Lang::Rust => rust_sdk(project),
        Lang::Python => {
            let python = crate::build::python(project);
            match first_line(
                Command::new(&python)
                    .args(["-c", "import atrium_sdk; print(atrium_sdk.__version__)"])
                    .current_dir(project),
            ) {
                Some(version) => sdk_version("atrium-sdk (Python)", &version),
                None => Outcome::Failed(format!(
                    "{} cannot import atrium_sdk: set up the project's environment with `{}`",
                    python.to_string_lossy(),
                    crate::lang::PYTHON_SETUP
                )),
            }
        }
        Lang::TypeScript => {
            let package = project.join("node_modules/@atrium/sdk/package.json");
            let version = std::fs::read(&package)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v["version"].as_str().map(str::to_owned));
            match version {
                Some(version) => sdk_version("@atrium/sdk", &version),
                None => Outcome::Failed(format!(
                    "{} is missing: run `npm install` (the project depends on @atrium/sdk)",
                    package.display()
                )),
            }
        }
    }
}

/// The project depends on an `atrium-sdk` that resolves and is compatible.
fn rust_sdk(project: &Path) -> Outcome {
    if !project.join("Cargo.toml").is_file() {
        return Outcome::Failed(format!(
            "{} has no Cargo.toml: `atrium init` makes a project that depends on the SDK",
            project.display()
        ));
    }
    let out = crate::build::cargo()
        .args(["metadata", "--format-version", "1"])
        .current_dir(project)
        .output();
    let out = match out {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            return Outcome::Failed(format!(
                "cargo metadata failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Err(e) => return Outcome::Failed(format!("cargo metadata does not run: {e}")),
    };
    let Ok(metadata) = serde_json::from_slice::<Metadata>(&out.stdout) else {
        return Outcome::Failed("cargo metadata's answer is not understood".to_owned());
    };
    match metadata.packages.iter().find(|p| p.name == "atrium-sdk") {
        Some(p) => sdk_version("atrium-sdk", &p.version),
        None => Outcome::Failed("the project does not depend on atrium-sdk".to_owned()),
    }
}

/// The manifest is there and passes the local checks.
fn manifest(path: &Path) -> Outcome {
    let Ok(bytes) = std::fs::read(path) else {
        return Outcome::Failed(format!(
            "{} is missing: `atrium init` writes one",
            path.display()
        ));
    };
    let (_, findings) =
        atrium_manifest::project::check_manifest(&path.display().to_string(), &bytes);
    let errors = findings.iter().filter(|f| f.is_error()).count();
    if errors == 0 {
        Outcome::Ok(format!("{} is valid", path.display()))
    } else {
        Outcome::Failed(format!(
            "{} has {errors} error(s): `atrium lint` shows them",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sdk_versions_match_by_major_or_zero_minor() {
        assert!(super::compatible("0.4.1", "0.4.0"));
        assert!(!super::compatible("0.3.9", "0.4.0"));
        assert!(super::compatible("1.7.0", "1.2.3"));
        assert!(!super::compatible("2.0.0", "1.2.3"));
        assert!(!super::compatible("x", "1.2.3"));
    }
}
