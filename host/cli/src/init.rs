//! `atrium init <slug>`: a new app project that builds, passes its own tests and deploys as
//! it is.
//!
//! In every language (`--lang rust`, the default, `python` or `typescript`): the manifest with
//! one tool and one setting, the handler, unit tests with the SDK's `TestClient`,
//! `app_docs/user.md`, a template default, the mock file of `atrium dev`, a CI workflow (lint,
//! test, deploy with `SERVICE_TOKEN`) and a `web/` bundle wired to the postMessage bridge of
//! `atrium dev`'s parent shell. The project depends on its language's SDK by path: `--sdk DIR`,
//! else under `ATRIUM_SDK_PATH` (the `guest-sdk` directory: the Rust SDK, with the Python SDK
//! in `python/` and the TypeScript SDK in `typescript/`), else the `guest-sdk` of the source
//! tree this `atrium` was built from. The files are in `host/cli/scaffold/`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::client::Failure;

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
    /// The language's SDK directory (default: under ATRIUM_SDK_PATH, else under the guest-sdk
    /// of the source tree this atrium was built from: `.` for Rust, `python/`, `typescript/`).
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
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
    match init(args) {
        Ok(dir) => {
            println!("Created {} in {}", args.slug, dir.display());
            println!();
            println!("Next:");
            println!("  cd {}", dir.display());
            if !matches!(args.lang, Lang::Rust) {
                // The SDK validates the manifest with the validator module in the tests too;
                // `atrium build` finds it by itself.
                match crate::build::validator_module() {
                    Ok(path) => println!(
                        "  export ATRIUM_MANIFEST_VALIDATOR={}   # the SDK's manifest validator",
                        path.display()
                    ),
                    Err(failure) => println!(
                        "  # set ATRIUM_MANIFEST_VALIDATOR to the manifest validator module: {}",
                        match failure {
                            Failure::BadInput(m) | Failure::Platform(m) | Failure::Auth(m) => m,
                        }
                    ),
                }
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
        Err(failure) => failure.report("init"),
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
    /// The SDK's directory under the `guest-sdk` directory, and the file that marks it.
    fn sdk_layout(self) -> (&'static str, &'static str) {
        match self {
            Lang::Rust => (".", "Cargo.toml"),
            Lang::Python => ("python", "pyproject.toml"),
            Lang::Typescript => ("typescript", "package.json"),
        }
    }

    /// What to run first in the new project, with a comment each.
    fn first_steps(self) -> &'static [&'static str] {
        match self {
            Lang::Rust => &["cargo test                   # the handler's unit tests, natively"],
            Lang::Python => &[
                "pip install -e .             # the SDK and componentize-py (a virtualenv is wise)",
                "python -m pytest             # the handler's unit tests, natively",
            ],
            Lang::Typescript => &[
                "npm install --install-links  # a copy of the SDK, esbuild and componentize-js",
                "npm test                     # the handler's unit tests, on Node.js",
            ],
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

/// The language's SDK directory.
fn sdk_dir(lang: Lang, flag: Option<&Path>) -> Result<PathBuf, Failure> {
    let (sub, marker) = lang.sdk_layout();
    let chosen = flag.map(Path::to_path_buf).unwrap_or_else(|| {
        std::env::var_os("ATRIUM_SDK_PATH")
            .filter(|v| !v.is_empty())
            .map_or_else(|| crate::build::sdk_source("rust"), PathBuf::from)
            .join(sub)
    });
    let dir = std::fs::canonicalize(&chosen).map_err(|_| {
        Failure::BadInput(format!(
            "the SDK is not at {}: pass --sdk DIR (the {} directory of an Atrium source tree) or set ATRIUM_SDK_PATH to its guest-sdk directory",
            chosen.display(),
            if sub == "." { "guest-sdk".to_owned() } else { format!("guest-sdk/{sub}") }
        ))
    })?;
    if !dir.join(marker).is_file() {
        return Err(Failure::BadInput(format!(
            "{} has no {marker}: pass --sdk DIR naming the SDK's directory",
            dir.display()
        )));
    }
    Ok(dir)
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
    let sdk = sdk_dir(args.lang, args.sdk.as_deref())?;
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
    Ok(dir)
}

/// The toolchain file of this source tree: the scaffold builds with the same compiler and
/// gets the wasm32-wasip2 target from rustup.
const TOOLCHAIN: &str = include_str!("../../../rust-toolchain.toml");
