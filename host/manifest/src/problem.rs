//! Problems found while reading or validating a manifest.
//!
//! Every problem carries the path of the offending value (`agents[1].heartbeats[0].slug`),
//! a stable machine [`Code`], a [`Severity`], a message that names the rule and the allowed
//! values, and — when the input text has one — the line and column of the value.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How serious a problem is. Errors make the manifest invalid; warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The manifest is rejected.
    Error,
    /// The manifest is accepted; the author should still look.
    Warning,
}

/// A stable, machine-readable problem code. The list and the meaning of each code is
/// documented in `docs/manifest.md`; codes are never renamed, only added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// The text is not well-formed YAML or JSON.
    Syntax,
    /// The input is too large, too deeply nested, or expands to too many nodes.
    InputLimit,
    /// The same key appears twice in one mapping.
    DuplicateKey,
    /// A field that the manifest format does not define.
    UnknownField,
    /// A required field is missing (or empty where a value is needed).
    Required,
    /// The value has the wrong type (for example a list where a string is expected).
    InvalidType,
    /// The value is not one of the allowed constants or choices.
    InvalidValue,
    /// A string does not match the required pattern (slug, semver, `HH:MM`, path grammar, ...).
    Pattern,
    /// A string is shorter or longer than allowed (counted in Unicode characters).
    Length,
    /// A number is outside its allowed range.
    OutOfRange,
    /// A list has more (or fewer) entries than allowed.
    Count,
    /// A value that must be unique appears more than once.
    Duplicate,
    /// A reference names something that is not declared in the manifest.
    UndeclaredReference,
    /// An entity refers to itself where that is forbidden (an agent in its own team).
    SelfReference,
    /// Two fields that cannot be used together are both present.
    MutuallyExclusive,
    /// A field or value is not allowed in this context (team on the singular agent, a public
    /// route with a non-GET method, ...).
    NotAllowed,
    /// A field does not apply to the chosen type or mode (options on a `number` setting,
    /// `cron_expression` on an interval heartbeat, ...).
    NotApplicable,
    /// The plural `agents` form needs exactly one agent with `is_default: true`.
    ExactlyOneDefault,
    /// An HTTP route uses a first path segment reserved by the platform.
    Reserved,
    /// A cron expression is not a valid standard 5-field expression.
    InvalidCron,
    /// A lower bound is greater than its upper bound.
    InvalidRange,
    /// An active-hours window whose start equals its end; as a warning, a daily or weekly
    /// heartbeat whose time lies outside its active hours (it never runs).
    EmptyWindow,
    /// A value requires another declaration that is missing (a sentinel skill requires tool
    /// `query`; `mail_primary_email` requires a mail provider in required_integrations).
    Requires,
    /// An install setting's default does not match its declared type or options.
    DefaultMismatch,
    /// A value that looks like a secret is placed where secrets do not belong (warning).
    PossibleSecret,
    /// A field that is accepted but has no effect here (warning).
    Ignored,
    /// A deprecated field (warning).
    Deprecated,
}

impl Code {
    /// The snake_case name used in JSON output and documentation.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Syntax => "syntax",
            Code::InputLimit => "input_limit",
            Code::DuplicateKey => "duplicate_key",
            Code::UnknownField => "unknown_field",
            Code::Required => "required",
            Code::InvalidType => "invalid_type",
            Code::InvalidValue => "invalid_value",
            Code::Pattern => "pattern",
            Code::Length => "length",
            Code::OutOfRange => "out_of_range",
            Code::Count => "count",
            Code::Duplicate => "duplicate",
            Code::UndeclaredReference => "undeclared_reference",
            Code::SelfReference => "self_reference",
            Code::MutuallyExclusive => "mutually_exclusive",
            Code::NotAllowed => "not_allowed",
            Code::NotApplicable => "not_applicable",
            Code::ExactlyOneDefault => "exactly_one_default",
            Code::Reserved => "reserved",
            Code::InvalidCron => "invalid_cron",
            Code::InvalidRange => "invalid_range",
            Code::EmptyWindow => "empty_window",
            Code::Requires => "requires",
            Code::DefaultMismatch => "default_mismatch",
            Code::PossibleSecret => "possible_secret",
            Code::Ignored => "ignored",
            Code::Deprecated => "deprecated",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A position in the input text: 1-based line, 1-based column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// Line, starting at 1.
    pub line: u32,
    /// Column, starting at 1, counted in Unicode characters.
    pub column: u32,
}

/// One problem found in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// Where the problem is: `runtime.resources.memory_mb`, `tools[2].name`; empty for the
    /// document as a whole.
    pub path: String,
    /// Stable machine code.
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// Human-readable explanation naming the rule and the allowed values.
    pub message: String,
    /// 1-based line of the value in the input text, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column of the value in the input text, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

impl Problem {
    /// Whether this problem makes the manifest invalid.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(manifest)"
        } else {
            &self.path
        };
        write!(f, "{path}: {} [{}]", self.message, self.code)?;
        if let Some(line) = self.line {
            write!(f, " (line {line}")?;
            if let Some(column) = self.column {
                write!(f, ", column {column}")?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// The path of a value inside the document, built as the validator descends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    pub(crate) fn root() -> Self {
        Path(String::new())
    }

    pub(crate) fn field(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_owned())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    pub(crate) fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Collects problems during one validation run.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    list: Vec<Problem>,
}

impl Problems {
    pub(crate) fn push(
        &mut self,
        severity: Severity,
        path: &Path,
        pos: Option<Pos>,
        code: Code,
        message: impl Into<String>,
    ) {
        self.list.push(Problem {
            path: path.as_str().to_owned(),
            code,
            severity,
            message: message.into(),
            line: pos.map(|p| p.line),
            column: pos.map(|p| p.column),
        });
    }

    pub(crate) fn error(
        &mut self,
        path: &Path,
        pos: Option<Pos>,
        code: Code,
        message: impl Into<String>,
    ) {
        self.push(Severity::Error, path, pos, code, message);
    }

    pub(crate) fn warning(
        &mut self,
        path: &Path,
        pos: Option<Pos>,
        code: Code,
        message: impl Into<String>,
    ) {
        self.push(Severity::Warning, path, pos, code, message);
    }

    /// Removes and answers the `required` error about field `field` of the mapping at `path`:
    /// reported at the field, or at the mapping naming the field (`` `field` ``) when one of
    /// several fields is required.
    pub(crate) fn take_required(&mut self, path: &Path, field: &str) -> Option<Problem> {
        let at = path.field(field);
        let named = format!("`{field}`");
        let i = self.list.iter().position(|p| {
            p.code == Code::Required
                && p.is_error()
                && (p.path == at.as_str()
                    || (p.path == path.as_str() && p.message.contains(&named)))
        })?;
        Some(self.list.remove(i))
    }

    pub(crate) fn has_errors(&self) -> bool {
        self.list.iter().any(Problem::is_error)
    }

    /// The problems in document order (by line, then column), errors before warnings at
    /// the same place; problems without a position keep their discovery order at the end.
    pub(crate) fn into_sorted(mut self) -> Vec<Problem> {
        self.list
            .sort_by_key(|p| (p.line.is_none(), p.line, p.column));
        self.list
    }
}
