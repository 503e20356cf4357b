//! The languages a project is written in, as the developer tool finds them (from the
//! project's files) and sets their environment up: what `build`, `inputs`, `sdk` and `init`
//! share, below them all.

use std::path::Path;

/// How a Python project's environment is made (in the project's directory).
pub const PYTHON_SETUP: &str =
    "python3 -m venv .venv && .venv/bin/python -m pip install -r requirements.txt";
/// How a TypeScript project's environment is made.
pub const TYPESCRIPT_SETUP: &str = "npm install";

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
