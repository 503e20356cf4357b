//! The Atrium app manifest (`apiVersion: platform/v2`): a typed model and strict validation.
//!
//! [`validate`] reads YAML or JSON text and returns every problem at once — each with a path
//! such as `agents[1].heartbeats[0].interval_minutes`, a stable [`Code`], a [`Severity`], a
//! message naming the rule, and the line and column where the value is written — together with
//! the normalised [`Manifest`] (all defaults applied) when there is no error.
//!
//! The crate does no I/O and builds for `wasm32-wasip2`, so the guest SDK embeds the same
//! rules the host and `atrium lint` apply.
//!
//! ```
//! let text = "
//! apiVersion: platform/v2
//! app_id: hello-world
//! version: 1.0.0
//! name: Hello
//! runtime:
//!   image: ghcr.io/acme/hello:1.0.0
//! ";
//! let manifest = atrium_manifest::parse(text).unwrap();
//! assert_eq!(manifest.runtime.port, 8080);
//! assert_eq!(manifest.runtime.resources.memory_mb, 256);
//!
//! let bad = text.replace("8080", "").replace("hello-world", "Hello World");
//! let result = atrium_manifest::validate(&bad);
//! assert_eq!(result.problems[0].path, "app_id");
//! assert_eq!(result.problems[0].code, atrium_manifest::Code::Pattern);
//! assert_eq!(result.problems[0].line, Some(3));
//! ```

pub mod bundle;
pub mod cron;
pub mod devmock;
mod model;
mod problem;
pub mod project;
mod read;
pub mod rules;
pub mod sandbox;
pub mod skills;
pub mod templates;
mod tree;
mod validate;

use std::fmt;

pub use model::*;
pub use problem::{Code, Pos, Problem, Severity};
pub use tree::{Format, MAX_DEPTH, MAX_INPUT_BYTES, MAX_NODES};

/// The outcome of validating one manifest text.
#[derive(Debug, Clone, PartialEq)]
pub struct Validation {
    /// The normalised manifest; `Some` exactly when no problem has error severity.
    pub manifest: Option<Manifest>,
    /// Every problem found, in document order; warnings included.
    pub problems: Vec<Problem>,
}

impl Validation {
    /// Whether the manifest is accepted (warnings allowed).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.manifest.is_some()
    }

    /// The error-severity problems.
    pub fn errors(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Warning)
    }
}

/// Validates a manifest written in YAML or JSON (JSON when the text starts with `{`).
#[must_use]
pub fn validate(text: &str) -> Validation {
    validate_as(text, Format::Auto)
}

/// Validates a manifest in the given format.
#[must_use]
pub fn validate_as(text: &str, format: Format) -> Validation {
    validate_with(text, format, true)
}

/// Validates a manifest; `host_rules` applies the rules that name what this host provides
/// (a heartbeat's skill and tool: [`skills`]).
fn validate_with(text: &str, format: Format, host_rules: bool) -> Validation {
    let mut cx = read::Cx {
        problems: problem::Problems::default(),
        host_rules,
    };
    let manifest = match tree::read(text, format, &mut cx.problems) {
        Some(root) if !matches!(root.value, tree::Value::Null) => {
            validate::manifest(&mut cx, &root)
        }
        Some(_) => {
            cx.problems.error(
                &problem::Path::root(),
                Some(Pos { line: 1, column: 1 }),
                Code::Required,
                "the manifest is empty; it needs at least apiVersion, app_id, version, name and runtime.image",
            );
            None
        }
        None => None,
    };
    let has_errors = cx.problems.has_errors();
    Validation {
        manifest: if has_errors { None } else { manifest },
        problems: cx.problems.into_sorted(),
    }
}

/// Validates and returns the manifest, or a [`InvalidManifest`] holding every problem.
///
/// This reads a manifest for what it declares, as the host reads a stored version again: every
/// rule of [`validate`] applies except those that name what this host provides (a heartbeat's
/// skill and tool, [`skills`]), which publishing checks (`atrium lint`, preflight and
/// registration validate). A version published before a host stopped providing a skill keeps
/// loading; its heartbeat fails at run time with the same message.
pub fn parse(text: &str) -> Result<Manifest, InvalidManifest> {
    let validation = validate_with(text, Format::Auto, false);
    validation.manifest.ok_or(InvalidManifest {
        problems: validation.problems,
    })
}

/// A manifest that failed to parse or validate.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidManifest {
    /// Every problem found (errors and warnings).
    pub problems: Vec<Problem>,
}

impl fmt::Display for InvalidManifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors: Vec<&Problem> = self.problems.iter().filter(|p| p.is_error()).collect();
        write!(
            f,
            "invalid manifest ({} error{})",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        )?;
        for problem in errors {
            write!(f, "\n  {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidManifest {}
