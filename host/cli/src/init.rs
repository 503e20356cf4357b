//! `atrium init <slug>`: a new app project that builds, passes its own tests and deploys as
//! it is.
//!
//! In every language (`--lang rust`, the default, `python` or `typescript`): the manifest with
//! one tool and one setting, the handler, unit tests with the SDK's `TestClient`,
//! `app_docs/user.md`, a template default, the mock file of `atrium dev`, a CI workflow (lint,
//! test, deploy with `SERVICE_TOKEN`) and a `web/` bundle wired to the postMessage bridge of
//! `atrium dev`'s parent shell. The files are in `host/cli/scaffold/`.
//!
//! A Rust project depends on the Rust SDK by path (`--sdk DIR`, else `ATRIUM_SDK_PATH`, else
//! the `guest-sdk` of the source tree this `atrium` was built from). A Python or TypeScript
//! project gets the SDK package this `atrium` carries ([`crate::sdk`]: the validator module and
//! the WIT inside) in `vendor/`, and its environment is set up in the project: `.venv` with the
//! SDK, componentize-py and pytest, or `npm install`'s `node_modules` (`--no-install` leaves
//! that to the developer). Nothing is written outside the new directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::client::Failure;
use crate::lang::{PYTHON_SETUP, TYPESCRIPT_SETUP};

/// `atrium init` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The app's slug (its app_id): 3 to 64 lowercase letters, digits and hyphens, starting
    /// with a letter.
    slug: String,
    /// The language of the handler.
    #[arg(long, value_enum, default_value = "rust")]
    lang: Lang,
    /// The app's display name (default: derived from the slug, `invoice-desk` → `Invoice
    /// Desk`).
    #[arg(long)]
    name: Option<String>,
    /// What the app does, one line.
    #[arg(long, default_value = "")]
    description: String,
    /// The owner in the manifest's `runtime.image` label (`ghcr.io/<owner>/<slug>`).
    #[arg(long, default_value = "your-org")]
    github_owner: String,
    /// Where to create the project (default: ./<slug>); it must not exist or be empty.
    #[arg(long)]
    directory: Option<PathBuf>,
    /// The Rust SDK's directory (default: ATRIUM_SDK_PATH, else the guest-sdk of the source
    /// tree this atrium was built from). Python and TypeScript projects get the SDK package
    /// this atrium carries, in vendor/.
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
    /// Do not set up the project's environment (Python: .venv with the SDK, componentize-py and
    /// pytest; TypeScript: npm install): the next steps say how.
    #[arg(long)]
    no_install: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Lang {
    /// Rust, compiled to a WebAssembly component.
    Rust,
    /// Python, built into a component with componentize-py.
    Python,
    /// TypeScript, built into a component with componentize-js.
    Typescript,
}

pub fn run(args: &Args) -> ExitCode {
    let dir = match init(args) {
        Ok(dir) => dir,
        Err(failure) => return failure.report("init"),
    };
    println!("Created {} in {}", args.slug, dir.display());
    let installed = if args.no_install {
        false
    } else {
        match set_up(args.lang, &dir) {
            Ok(done) => done,
            Err(failure) => {
                // The files stay: the environment can be made again once the cause is fixed.
                let setup = args.lang.setup().unwrap_or_default();
                return Failure::BadInput(format!(
                    "the project's files are written, but its environment could not be set up: {}; fix that, then run `{setup}` in {}",
                    failure.message(),
                    dir.display()
                ))
                .report("init");
            }
        }
    };
    println!();
    println!("Next:");
    println!("  cd {}", dir.display());
    if !installed && let Some(setup) = args.lang.setup() {
        println!("  {setup}");
    }
    for line in args.lang.first_steps() {
        println!("  {line}");
    }
    println!("  atrium lint                  # the manifest, templates and docs");
    println!("  atrium dev                   # the web/ bundle in a local parent shell");
    println!("  atrium login --platform URL --token TOKEN");
    println!("  atrium deploy                # build, register, upload, promote");
    ExitCode::SUCCESS
}

/// Sets up a new project's environment: `Ok(false)` when its language needs none.
fn set_up(lang: Lang, dir: &Path) -> Result<bool, Failure> {
    let run = |what: &str, command: &mut std::process::Command| -> Result<(), Failure> {
        println!("{what}");
        let out = command
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                Failure::BadInput(format!(
                    "cannot run {} ({e})",
                    command.get_program().to_string_lossy()
                ))
            })?;
        if out.status.success() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(3)..].join(" / ");
        Err(Failure::BadInput(format!(
            "{} failed ({}): {tail}",
            command.get_program().to_string_lossy(),
            out.status
        )))
    };
    match lang {
        Lang::Rust => Ok(false),
        Lang::Python => {
            let python = std::env::var_os("ATRIUM_PYTHON").unwrap_or_else(|| "python3".into());
            run(
                "Setting up .venv (the SDK from vendor/, componentize-py, pytest) ...",
                std::process::Command::new(&python).args(["-m", "venv", ".venv"]),
            )?;
            run(
                "Installing requirements.txt into .venv ...",
                std::process::Command::new(crate::build::python(dir)).args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-r",
                    "requirements.txt",
                ]),
            )?;
            Ok(true)
        }
        Lang::Typescript => {
            run(
                "Running npm install (the SDK from vendor/, esbuild, componentize-js) ...",
                std::process::Command::new("npm").args([
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                ]),
            )?;
            Ok(true)
        }
    }
}

/// A slug as a display name: `invoice-desk` → `Invoice Desk`.
fn display_name(slug: &str) -> String {
    slug.split('-')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_uppercase().collect::<String>() + chars.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Lang {
    /// How the project's environment is made, when its language has one.
    fn setup(self) -> Option<&'static str> {
        match self {
            Lang::Rust => None,
            Lang::Python => Some(PYTHON_SETUP),
            Lang::Typescript => Some(TYPESCRIPT_SETUP),
        }
    }

    /// What to run first in the new project, with a comment each.
    fn first_steps(self) -> &'static [&'static str] {
        match self {
            Lang::Rust => &["cargo test                   # the handler's unit tests, natively"],
            Lang::Python => &[".venv/bin/python -m pytest   # the handler's unit tests, natively"],
            Lang::Typescript => {
                &["npm test                     # the handler's unit tests, on Node.js"]
            }
        }
    }

    /// The project's files: path in the project, then the template.
    fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Lang::Rust => &[
                ("Cargo.toml", include_str!("../scaffold/rust/Cargo.toml.in")),
                ("rust-toolchain.toml", "{{toolchain}}"),
                (".gitignore", include_str!("../scaffold/rust/.gitignore")),
                ("src/lib.rs", include_str!("../scaffold/rust/src/lib.rs")),
                (
                    ".github/workflows/deploy.yml",
                    include_str!("../scaffold/rust/.github/workflows/deploy.yml"),
                ),
                ("README.md", include_str!("../scaffold/rust/README.md")),
            ],
            Lang::Python => &[
                (
                    "pyproject.toml",
                    include_str!("../scaffold/python/pyproject.toml"),
                ),
                (".gitignore", include_str!("../scaffold/python/.gitignore")),
                (
                    "requirements.txt",
                    include_str!("../scaffold/python/requirements.txt"),
                ),
                ("app.py", include_str!("../scaffold/python/app.py")),
                (
                    "test_app.py",
                    include_str!("../scaffold/python/test_app.py"),
                ),
                (
                    ".github/workflows/deploy.yml",
                    include_str!("../scaffold/python/.github/workflows/deploy.yml"),
                ),
                ("README.md", include_str!("../scaffold/python/README.md")),
            ],
            Lang::Typescript => &[
                (
                    "package.json",
                    include_str!("../scaffold/typescript/package.json"),
                ),
                (
                    "tsconfig.json",
                    include_str!("../scaffold/typescript/tsconfig.json"),
                ),
                (
                    ".gitignore",
                    include_str!("../scaffold/typescript/.gitignore"),
                ),
                (
                    "src/app.ts",
                    include_str!("../scaffold/typescript/src/app.ts"),
                ),
                (
                    "test/app.test.ts",
                    include_str!("../scaffold/typescript/test/app.test.ts"),
                ),
                (
                    ".github/workflows/deploy.yml",
                    include_str!("../scaffold/typescript/.github/workflows/deploy.yml"),
                ),
                (
                    "README.md",
                    include_str!("../scaffold/typescript/README.md"),
                ),
            ],
        }
    }
}

/// The files of every project, whatever its language.
const COMMON: &[(&str, &str)] = &[
    (
        "atrium.app.yaml",
        include_str!("../scaffold/common/atrium.app.yaml"),
    ),
    (
        "atrium.dev.json",
        include_str!("../scaffold/common/atrium.dev.json"),
    ),
    (
        "app_docs/user.md",
        include_str!("../scaffold/common/app_docs/user.md"),
    ),
    (
        "defaults/templates/note.json",
        include_str!("../scaffold/common/defaults/templates/note.json"),
    ),
    (
        "web/index.html",
        include_str!("../scaffold/common/web/index.html"),
    ),
    ("web/app.js", include_str!("../scaffold/common/web/app.js")),
    (
        "web/style.css",
        include_str!("../scaffold/common/web/style.css"),
    ),
];

/// The Rust SDK's directory: `--sdk`, else `ATRIUM_SDK_PATH`, else this source tree's.
fn rust_sdk_dir(flag: Option<&Path>) -> Result<PathBuf, Failure> {
    let chosen = flag.map(Path::to_path_buf).unwrap_or_else(|| {
        std::env::var_os("ATRIUM_SDK_PATH")
            .filter(|v| !v.is_empty())
            .map_or_else(crate::build::rust_sdk_source, PathBuf::from)
    });
    let dir = std::fs::canonicalize(&chosen).map_err(|_| {
        Failure::BadInput(format!(
            "the Rust SDK is not at {}: pass --sdk DIR (the guest-sdk directory of an Atrium source tree) or set ATRIUM_SDK_PATH to it",
            chosen.display(),
        ))
    })?;
    if !dir.join("Cargo.toml").is_file() {
        return Err(Failure::BadInput(format!(
            "{} has no Cargo.toml: pass --sdk DIR naming the Rust SDK's directory",
            dir.display()
        )));
    }
    Ok(dir)
}

/// The SDK package of a Python or TypeScript project.
fn sdk_package(lang: Lang) -> Result<Option<crate::sdk::Package>, Failure> {
    match lang {
        Lang::Rust => Ok(None),
        Lang::Python => crate::sdk::python_wheel().map(Some),
        Lang::Typescript => crate::sdk::typescript_tarball().map(Some),
    }
    .map_err(Failure::BadInput)
}

/// A YAML double-quoted string.
fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

fn init(args: &Args) -> Result<PathBuf, Failure> {
    let slug = &args.slug;
    crate::apps::check_slug(slug)?;
    let name = args.name.clone().unwrap_or_else(|| display_name(slug));
    if name.trim().is_empty() || name.chars().count() > 80 {
        return Err(Failure::BadInput(
            "--name must be 1 to 80 characters".to_owned(),
        ));
    }
    if !atrium_manifest::rules::is_lower_slug(&args.github_owner.to_lowercase())
        || args.github_owner.contains('/')
    {
        return Err(Failure::BadInput(format!(
            "--github-owner `{}` is not an owner name",
            args.github_owner
        )));
    }
    let dir = args
        .directory
        .clone()
        .unwrap_or_else(|| PathBuf::from(slug));
    if dir.exists() {
        let empty = std::fs::read_dir(&dir)
            .map(|mut entries| entries.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(Failure::BadInput(format!(
                "{} exists and is not empty: choose another --directory",
                dir.display()
            )));
        }
    }
    let sdk = match args.lang {
        Lang::Rust => rust_sdk_dir(args.sdk.as_deref())?,
        _ => PathBuf::new(),
    };
    let package = sdk_package(args.lang)?;
    let sdk_version = package.as_ref().map_or("", |p| p.version.as_str());
    let sdk_file = package.as_ref().map_or("", |p| p.file_name.as_str());
    let crate_name = slug.replace('-', "_");
    let fill = |template: &str| {
        template
            .replace("{{slug}}", slug)
            .replace("{{crate}}", &crate_name)
            .replace("{{name}}", &name)
            .replace("{{name_yaml}}", &yaml_string(&name))
            .replace(
                "{{name_json}}",
                &serde_json::to_string(&name).unwrap_or_default(),
            )
            .replace("{{description_yaml}}", &yaml_string(&args.description))
            .replace("{{owner}}", &args.github_owner.to_lowercase())
            .replace("{{sdk}}", &sdk.display().to_string().replace('\\', "/"))
            .replace("{{toolchain}}", TOOLCHAIN)
            .replace("{{sdk_version}}", sdk_version)
            .replace("{{sdk_wheel}}", sdk_file)
    };
    for (path, template) in COMMON.iter().chain(args.lang.files()) {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::BadInput(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        std::fs::write(&target, fill(template))
            .map_err(|e| Failure::BadInput(format!("cannot write {}: {e}", target.display())))?;
    }
    if let Some(package) = package {
        let target = dir.join("vendor").join(&package.file_name);
        std::fs::create_dir_all(dir.join("vendor"))
            .and_then(|()| std::fs::write(&target, &package.bytes))
            .map_err(|e| Failure::BadInput(format!("cannot write {}: {e}", target.display())))?;
    }
    Ok(dir)
}

/// The toolchain file of this source tree: the scaffold builds with the same compiler and
/// gets the wasm32-wasip2 target from rustup.
const TOOLCHAIN: &str = include_str!("../../../rust-toolchain.toml");
