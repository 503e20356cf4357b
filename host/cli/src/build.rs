//! Building an app's component, for `atrium build`, `atrium deploy` and `atrium dev`.
//!
//! The project's language follows from its files: `Cargo.toml` is Rust (`cargo build --target
//! wasm32-wasip2 --release`, with the build machine's paths remapped so that the same sources
//! give the same bytes anywhere), `package.json` is TypeScript (the TypeScript SDK's
//! `atrium-sdk-build`, from the project's `node_modules`), `pyproject.toml` or `app.py` is
//! Python (`python -m atrium_sdk build` with the project's `.venv`, else `ATRIUM_PYTHON`, else
//! `python3`). A project with none of them is a container-image app.
//!
//! A Python or TypeScript component records the digest of its build's inputs
//! ([`crate::inputs`]): a build whose inputs did not change leaves the component as it is
//! (those toolchains do not make the same bytes twice), and the registry recognises a rebuild
//! of the same inputs as the version it already has.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use crate::client::Failure;

/// `atrium build` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project's directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
    /// Build even when the inputs of the last Python or TypeScript build did not change.
    #[arg(long)]
    force: bool,
    /// Print the result as JSON: `{"component", "size", "digest", "built"}`.
    #[arg(long)]
    json: bool,
}

/// What a build answered.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Built {
    /// The component's path.
    pub component: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// The SHA-256 of its bytes (`sha256:...`).
    pub digest: String,
    /// The digest of its build inputs (Python and TypeScript).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
    /// `false` when the inputs had not changed and the last component was kept.
    pub built: bool,
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
            if !args.json {
                println!("building: {}", lang.command());
            }
            build(&args.project, lang, args.force)
        });
    match built {
        Ok(built) if args.json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&built).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(built) => {
            if !built.built {
                println!(
                    "up to date: the inputs did not change since the last build (--force builds again)"
                );
            }
            println!(
                "{} ({} bytes, {})",
                built.component.display(),
                built.size,
                built.digest
            );
            ExitCode::SUCCESS
        }
        Err(failure) => failure.report("build"),
    }
}

pub use crate::lang::Lang;

/// Where the Python and TypeScript builds write the component.
const SDK_OUTPUT: &str = "build/app.wasm";

/// Builds the project's component and returns its path.
pub fn component(dir: &Path, lang: Lang) -> Result<PathBuf, Failure> {
    build(dir, lang, false).map(|built| built.component)
}

/// Builds the project's component (a Python or TypeScript one only when its inputs changed
/// since the last build, or `force`).
pub fn build(dir: &Path, lang: Lang, force: bool) -> Result<Built, Failure> {
    let (component, inputs, built) = match lang {
        Lang::Rust => (cargo_build(dir)?, None, true),
        Lang::Python | Lang::TypeScript => {
            let tool = sdk_tool(dir, lang)?;
            let toolchain = tool.toolchain(dir)?;
            let inputs = crate::inputs::digest(dir, lang, &toolchain)?;
            let out = dir.join(SDK_OUTPUT);
            let unchanged = !force
                && std::fs::read(&out).is_ok_and(|bytes| {
                    atrium_runtime::build_inputs::read(&bytes).as_deref() == Some(inputs.as_str())
                });
            if !unchanged {
                sdk_build(&tool, dir, &out)?;
                record_inputs(&out, &inputs)?;
            }
            (out, Some(inputs), !unchanged)
        }
    };
    let bytes = std::fs::read(&component)
        .map_err(|e| Failure::BadInput(format!("cannot read {}: {e}", component.display())))?;
    Ok(Built {
        size: bytes.len() as u64,
        digest: format!(
            "sha256:{}",
            hex(&<sha2::Sha256 as sha2::Digest>::digest(&bytes))
        ),
        component,
        inputs,
        built,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of the build inputs of the project in `dir` as they are now, with one file's
/// bytes replaced as `with` says ([`crate::inputs::digest_with`]). For Python and TypeScript,
/// what their build records in the component (it asks the SDK's build tool for its
/// toolchain, so it fails where the build would); for Rust, the project's files alone: a
/// Rust component is identified by its bytes, which the same sources reproduce, and this
/// digest only lets preflight tell that the code changed before anything is built.
pub fn inputs(dir: &Path, lang: Lang, with: Option<(&str, &[u8])>) -> Result<String, Failure> {
    let toolchain = match lang {
        Lang::Rust => String::new(),
        Lang::Python | Lang::TypeScript => sdk_tool(dir, lang)?.toolchain(dir)?,
    };
    crate::inputs::digest_with(dir, lang, &toolchain, with)
}

/// Writes the inputs digest into the component at `path` (through a file renamed over it).
fn record_inputs(path: &Path, inputs: &str) -> Result<(), Failure> {
    let failed = |e: String| {
        Failure::BadInput(format!(
            "cannot record the build inputs in {}: {e}",
            path.display()
        ))
    };
    let bytes = std::fs::read(path).map_err(|e| failed(e.to_string()))?;
    let tagged = atrium_runtime::build_inputs::embed(&bytes, inputs)
        .ok_or_else(|| failed("the build's output is not a WebAssembly binary".to_owned()))?;
    let partial = path.with_extension("wasm.partial");
    std::fs::write(&partial, tagged)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| failed(e.to_string()))
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

/// An SDK's build tool for a project: a program and its first arguments, to which
/// `--print-toolchain` or the build's arguments are added.
struct SdkTool {
    program: std::ffi::OsString,
    args: Vec<std::ffi::OsString>,
    /// What runs it, for messages.
    label: String,
}

impl SdkTool {
    /// A command that runs the tool in `dir`.
    fn command(&self, dir: &Path) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).current_dir(dir);
        command
    }

    /// The tool's `--print-toolchain` answer (one JSON line).
    fn toolchain(&self, dir: &Path) -> Result<String, Failure> {
        let out = self
            .command(dir)
            .arg("--print-toolchain")
            .output()
            .map_err(|e| Failure::BadInput(format!("cannot run {} ({e})", self.label)))?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !out.status.success() || !text.starts_with('{') {
            let why = String::from_utf8_lossy(&out.stderr);
            let why = why
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            return Err(Failure::BadInput(format!(
                "{} cannot build this project: {}",
                self.label,
                if why.is_empty() {
                    "it does not know --print-toolchain (an older SDK?)"
                } else {
                    why
                }
            )));
        }
        Ok(text)
    }
}

fn sdk_tool(dir: &Path, lang: Lang) -> Result<SdkTool, Failure> {
    match lang {
        Lang::Python => python_build(dir),
        _ => typescript_build(dir),
    }
}

/// The Python a project's commands run with: `ATRIUM_PYTHON`, else the project's virtual
/// environment (`.venv`, as `atrium init` makes it), else `python3`.
pub fn python(dir: &Path) -> std::ffi::OsString {
    if let Some(python) = std::env::var_os("ATRIUM_PYTHON") {
        return python;
    }
    let venv = dir.join(if cfg!(windows) {
        ".venv/Scripts/python.exe"
    } else {
        ".venv/bin/python"
    });
    if venv.is_file() {
        // As it is: the venv's `python` is a link to the base interpreter, and resolving it
        // would run the base interpreter outside the venv (installing into the machine's
        // site-packages). Absolute, since the build runs in the project's directory.
        return std::path::absolute(&venv).unwrap_or(venv).into_os_string();
    }
    "python3".into()
}

/// The Python build: `<python> -m atrium_sdk build`.
fn python_build(dir: &Path) -> Result<SdkTool, Failure> {
    let python = python(dir);
    let program = python.to_string_lossy().into_owned();
    let probe = Command::new(&python)
        .args(["-c", "import atrium_sdk"])
        .current_dir(dir)
        .output()
        .map_err(|e| {
            Failure::BadInput(format!(
                "cannot run {program} ({e}): install Python 3.10 or later (or set ATRIUM_PYTHON)"
            ))
        })?;
    if !probe.status.success() {
        return Err(Failure::BadInput(format!(
            "{program} cannot import the Python SDK ({}): set up the project's environment with `{}`",
            String::from_utf8_lossy(&probe.stderr)
                .lines()
                .last()
                .unwrap_or("")
                .trim(),
            crate::lang::PYTHON_SETUP
        )));
    }
    Ok(SdkTool {
        label: format!("{program} -m atrium_sdk build"),
        program: python,
        args: ["-m", "atrium_sdk", "build"].map(Into::into).to_vec(),
    })
}

/// The TypeScript build: the SDK's `atrium-sdk-build` from the project's `node_modules`.
fn typescript_build(dir: &Path) -> Result<SdkTool, Failure> {
    let bin = dir.join("node_modules/@atrium/sdk/bin/atrium-sdk-build.mjs");
    if !bin.is_file() {
        return Err(Failure::BadInput(format!(
            "{} is missing: run `npm install` in {} first (the project depends on @atrium/sdk)",
            bin.display(),
            dir.display()
        )));
    }
    Ok(SdkTool {
        program: "node".into(),
        args: vec![bin.into_os_string()],
        label: "atrium-sdk-build".to_owned(),
    })
}

/// Runs an SDK's build command for the project in `dir`, writing `out`.
fn sdk_build(tool: &SdkTool, dir: &Path, out: &Path) -> Result<(), Failure> {
    let status = tool
        .command(dir)
        .arg("--project")
        .arg(dir)
        .arg("--out")
        .arg(out)
        // The tool's messages (and the path it prints) go to standard error: standard output
        // is this tool's own (`--json`).
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| Failure::BadInput(format!("cannot run the build: {e}")))?;
    if !status.success() {
        return Err(Failure::BadInput(
            "the build failed (its messages are above): nothing was built".to_owned(),
        ));
    }
    if out.is_file() {
        Ok(())
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

/// The Rust SDK's directory in the source tree (`guest-sdk`).
pub fn rust_sdk_source() -> PathBuf {
    source_tree().join("guest-sdk")
}

/// Cargo's `--config` of the component build: rustc's `--remap-path-prefix` for the
/// directories whose paths a build embeds (in panic locations and debug names), so that the same
/// sources give the same bytes on every machine: the project as `/app`, cargo's home (the
/// registry's sources) as `/cargo`, this source tree's Rust SDK as `/atrium-sdk`. rustc already
/// remaps its own standard library. `RUSTFLAGS`, when set, takes precedence (cargo's rule).
fn remap_paths(dir: &Path) -> String {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    let mut flags = Vec::new();
    // The last matching prefix wins: the project comes last, being the most specific.
    for (from, to) in [
        (cargo_home, "/cargo"),
        (Some(rust_sdk_source()), "/atrium-sdk"),
        (Some(dir.to_path_buf()), "/app"),
    ] {
        if let Some(from) = from.and_then(|p| std::fs::canonicalize(p).ok()) {
            flags.push(toml::Value::String(format!(
                "--remap-path-prefix={}={to}",
                from.display()
            )));
        }
    }
    format!("build.rustflags={}", toml::Value::Array(flags))
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
            "--config",
        ])
        .arg(remap_paths(dir))
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
