//! Building an app's component, for `atrium build`, `atrium deploy` and `atrium dev`.
//!
//! The project's language follows from its files: `Cargo.toml` is Rust (`cargo build --target
//! wasm32-wasip2 --release`), `package.json` is TypeScript (the TypeScript SDK's
//! `atrium-sdk-build`, from the project's `node_modules`), `pyproject.toml` or `app.py` is
//! Python (`python3 -m atrium_sdk build`, `ATRIUM_PYTHON` names another interpreter). A project
//! with none of them is a container-image app. The Python and TypeScript builds validate the
//! manifest with the validator module (`guest-sdk/manifest-wasm`): `ATRIUM_MANIFEST_VALIDATOR`
//! names it, else it is built from the source tree this `atrium` was built from.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use crate::client::Failure;

/// `atrium build` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project's directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
}

/// `atrium build`: builds the component and prints its path and size.
///
/// Exit codes: 0 built, 1 the build failed or the project has no component to build.
pub fn run(args: &Args) -> ExitCode {
    let built = Lang::of(&args.project)
        .ok_or_else(|| {
            Failure::BadInput(format!(
                "{} has no Cargo.toml, package.json, pyproject.toml or app.py: there is no component to build",
                args.project.display()
            ))
        })
        .and_then(|lang| {
            println!("building: {}", lang.command());
            component(&args.project, lang)
        });
    match built {
        Ok(path) => {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            println!("{} ({size} bytes)", path.display());
            ExitCode::SUCCESS
        }
        Err(failure) => failure.report("build"),
    }
}

/// The language of a project, from its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `Cargo.toml`.
    Rust,
    /// `pyproject.toml` or `app.py`.
    Python,
    /// `package.json`.
    TypeScript,
}

impl Lang {
    /// The language of the project in `dir`, or `None` for a container-image app.
    pub fn of(dir: &Path) -> Option<Lang> {
        if dir.join("Cargo.toml").is_file() {
            Some(Lang::Rust)
        } else if dir.join("package.json").is_file() {
            Some(Lang::TypeScript)
        } else if dir.join("pyproject.toml").is_file() || dir.join("app.py").is_file() {
            Some(Lang::Python)
        } else {
            None
        }
    }

    /// The build command, as reported to the developer.
    pub fn command(self) -> &'static str {
        match self {
            Lang::Rust => "cargo build --target wasm32-wasip2 --release",
            Lang::Python => "python3 -m atrium_sdk build",
            Lang::TypeScript => "atrium-sdk-build (componentize-js)",
        }
    }
}

/// Where the Python and TypeScript builds write the component.
const SDK_OUTPUT: &str = "build/app.wasm";

/// Builds the project's component and returns its path.
pub fn component(dir: &Path, lang: Lang) -> Result<PathBuf, Failure> {
    match lang {
        Lang::Rust => cargo_build(dir),
        Lang::Python => sdk_build(dir, python_build(dir)?),
        Lang::TypeScript => sdk_build(dir, typescript_build(dir)?),
    }
}

/// The component the last build of the project left.
pub fn last_built(dir: &Path, lang: Lang) -> Result<PathBuf, Failure> {
    if lang == Lang::Rust {
        return built_component(dir);
    }
    let path = dir.join(SDK_OUTPUT);
    if path.is_file() {
        Ok(path)
    } else {
        Err(Failure::BadInput(format!(
            "there is no built component at {}: build first (atrium build) or deploy without --skip-build",
            path.display()
        )))
    }
}

/// The Python build: `<python> -m atrium_sdk build`.
fn python_build(dir: &Path) -> Result<Command, Failure> {
    let python = std::env::var_os("ATRIUM_PYTHON").unwrap_or_else(|| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import atrium_sdk, componentize_py"])
        .current_dir(dir)
        .output()
        .map_err(|e| {
            Failure::BadInput(format!(
                "cannot run {} ({e}): install Python 3.10 or later, or set ATRIUM_PYTHON",
                python.to_string_lossy()
            ))
        })?;
    if !probe.status.success() {
        return Err(Failure::BadInput(format!(
            "{} cannot import the Python SDK and componentize-py ({}): pip install {} componentize-py==0.25.1",
            python.to_string_lossy(),
            String::from_utf8_lossy(&probe.stderr)
                .lines()
                .last()
                .unwrap_or("")
                .trim(),
            sdk_source("python").display()
        )));
    }
    let mut command = Command::new(python);
    command.args(["-m", "atrium_sdk", "build"]);
    Ok(command)
}

/// The TypeScript build: the SDK's `atrium-sdk-build` from the project's `node_modules`.
fn typescript_build(dir: &Path) -> Result<Command, Failure> {
    let bin = dir.join("node_modules/@atrium/sdk/bin/atrium-sdk-build.mjs");
    if !bin.is_file() {
        return Err(Failure::BadInput(format!(
            "{} is missing: run `npm install` in {} first (the project depends on @atrium/sdk)",
            bin.display(),
            dir.display()
        )));
    }
    let mut command = Command::new("node");
    command.arg(bin);
    Ok(command)
}

/// Runs an SDK's build command for the project in `dir`, writing [`SDK_OUTPUT`].
fn sdk_build(dir: &Path, mut command: Command) -> Result<PathBuf, Failure> {
    let out = dir.join(SDK_OUTPUT);
    let status = command
        .arg("--project")
        .arg(dir)
        .arg("--out")
        .arg(&out)
        .env("ATRIUM_MANIFEST_VALIDATOR", validator_module()?)
        .current_dir(dir)
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| Failure::BadInput(format!("cannot run the build: {e}")))?;
    if !status.success() {
        return Err(Failure::BadInput(
            "the build failed (its messages are above): nothing was built".to_owned(),
        ));
    }
    if out.is_file() {
        Ok(out)
    } else {
        Err(Failure::BadInput(format!(
            "the build succeeded but left no component at {}",
            out.display()
        )))
    }
}

/// The source tree this `atrium` was built from.
fn source_tree() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A guest SDK's directory in the source tree: `guest-sdk/<lang>` (`guest-sdk` for Rust).
pub fn sdk_source(lang: &str) -> PathBuf {
    let sdk = source_tree().join("guest-sdk");
    if lang == "rust" { sdk } else { sdk.join(lang) }
}

/// The manifest validator module: `ATRIUM_MANIFEST_VALIDATOR`, else built from the source tree
/// (`cargo build -p atrium-manifest-wasm --target wasm32-unknown-unknown --release`, into the
/// same directory as the test build's guests, so one build serves both).
pub fn validator_module() -> Result<PathBuf, Failure> {
    if let Some(path) = std::env::var_os("ATRIUM_MANIFEST_VALIDATOR") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(Failure::BadInput(format!(
                "ATRIUM_MANIFEST_VALIDATOR names {}, which is not a file",
                path.display()
            )))
        };
    }
    let root = source_tree();
    if !root.join("guest-sdk/manifest-wasm/Cargo.toml").is_file() {
        return Err(Failure::BadInput(format!(
            "the manifest validator module is not available: set ATRIUM_MANIFEST_VALIDATOR to atrium_manifest_wasm.wasm (the source tree {} is gone)",
            root.display()
        )));
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("wasm-guests");
    let target = "wasm32-unknown-unknown";
    let module = target_dir
        .join(target)
        .join("release/atrium_manifest_wasm.wasm");
    let status = cargo()
        .args([
            "build",
            "--quiet",
            "--release",
            "--target",
            target,
            "-p",
            "atrium-manifest-wasm",
        ])
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target_dir)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| Failure::BadInput(format!("cannot run cargo to build the validator: {e}")))?;
    if status.success() && module.is_file() {
        Ok(module)
    } else {
        Err(Failure::BadInput(format!(
            "building the manifest validator module failed (rustup target add {target}?), or set ATRIUM_MANIFEST_VALIDATOR"
        )))
    }
}

/// Runs the release build for wasm32-wasip2 and returns the component it made.
pub fn cargo_build(dir: &Path) -> Result<PathBuf, Failure> {
    let output = cargo()
        .args([
            "build",
            "--target",
            "wasm32-wasip2",
            "--release",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(dir)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| {
            Failure::BadInput(format!(
                "cannot run cargo ({e}): install Rust (rustup) or deploy with --skip-build"
            ))
        })?;
    if !output.status.success() {
        return Err(Failure::BadInput(
            "the build failed (cargo's messages are above): nothing was deployed".to_owned(),
        ));
    }
    let mut found = None;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<CargoMessage>(line) else {
            continue;
        };
        if message.reason == "compiler-artifact"
            && message
                .target
                .is_some_and(|t| t.kind.iter().any(|k| k == "cdylib"))
        {
            found = message
                .filenames
                .into_iter()
                .find(|f| f.extension().is_some_and(|e| e == "wasm"))
                .or(found);
        }
    }
    found.ok_or_else(|| {
        Failure::BadInput(
            "the build made no component: the package needs `crate-type = [\"cdylib\"]` (as `atrium init` writes)"
                .to_owned(),
        )
    })
}

/// A `cargo` command: the one that runs this tool when cargo does (`CARGO`), else the PATH's.
pub fn cargo() -> std::process::Command {
    std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// A line of cargo's JSON messages (the fields used).
#[derive(serde::Deserialize)]
struct CargoMessage {
    reason: String,
    #[serde(default)]
    target: Option<CargoTarget>,
    #[serde(default)]
    filenames: Vec<PathBuf>,
}

#[derive(serde::Deserialize)]
struct CargoTarget {
    kind: Vec<String>,
}

/// `cargo metadata`'s answer (the fields used).
#[derive(serde::Deserialize)]
struct CargoMetadata {
    target_directory: PathBuf,
    packages: Vec<CargoPackage>,
    #[serde(default)]
    workspace_members: Vec<String>,
}

#[derive(serde::Deserialize)]
struct CargoPackage {
    id: String,
    manifest_path: PathBuf,
    targets: Vec<CargoLib>,
}

#[derive(serde::Deserialize)]
struct CargoLib {
    name: String,
    kind: Vec<String>,
}

/// The component the last release build of the project in `dir` left.
fn built_component(dir: &Path) -> Result<PathBuf, Failure> {
    let output = cargo()
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(dir)
        .output()
        .map_err(|e| Failure::BadInput(format!("cannot run cargo metadata: {e}")))?;
    if !output.status.success() {
        return Err(Failure::BadInput(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let metadata: CargoMetadata = serde_json::from_slice(&output.stdout).map_err(|e| {
        Failure::BadInput(format!("cargo metadata's answer is not understood: {e}"))
    })?;
    let own =
        std::fs::canonicalize(dir.join("Cargo.toml")).unwrap_or_else(|_| dir.join("Cargo.toml"));
    let package = metadata
        .packages
        .iter()
        .find(|p| std::fs::canonicalize(&p.manifest_path).is_ok_and(|m| m == own))
        .or_else(|| {
            metadata
                .packages
                .iter()
                .find(|p| metadata.workspace_members.contains(&p.id))
        })
        .ok_or_else(|| Failure::BadInput("cargo metadata names no package here".to_owned()))?;
    let lib = package
        .targets
        .iter()
        .find(|t| t.kind.iter().any(|k| k == "cdylib"))
        .ok_or_else(|| {
            Failure::BadInput(
                "the package has no cdylib target: add `crate-type = [\"cdylib\"]` under [lib]"
                    .to_owned(),
            )
        })?;
    let path = metadata
        .target_directory
        .join("wasm32-wasip2")
        .join("release")
        .join(format!("{}.wasm", lib.name.replace('-', "_")));
    if path.is_file() {
        Ok(path)
    } else {
        Err(Failure::BadInput(format!(
            "there is no built component at {}: deploy without --skip-build",
            path.display()
        )))
    }
}
