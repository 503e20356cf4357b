//! The checks of a whole app project: its manifest, the template defaults under
//! `defaults/templates/` and the end-user docs under `app_docs/`.
//!
//! `atrium lint` runs them on the files of a local directory; the host runs the same functions
//! on the files a developer uploads (preflight and version registration), so a project that
//! passes one passes the other. Each problem is a [`Finding`]: the file it was found in and the
//! [`Problem`].

use serde::{Deserialize, Serialize};

use crate::templates::{self, DocTemplate};
use crate::{Code, Format, Problem, Severity, Validation};

/// Where template defaults live in a project.
pub const TEMPLATES_DIR: &str = "defaults/templates";
/// Where end-user docs live in a project.
pub const DOCS_DIR: &str = "app_docs";
/// The docs entry point.
pub const DOCS_ENTRY: &str = "user.md";

/// A problem together with the file it was found in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The file, as the caller named it.
    pub file: String,
    /// The problem.
    #[serde(flatten)]
    pub problem: Problem,
}

impl Finding {
    /// A finding with no position in the file.
    #[must_use]
    pub fn plain(file: &str, severity: Severity, code: Code, path: &str, message: String) -> Self {
        Finding {
            file: file.to_owned(),
            problem: Problem {
                path: path.to_owned(),
                code,
                severity,
                message,
                line: None,
                column: None,
            },
        }
    }

    /// Whether this finding makes the project invalid.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.problem.severity == Severity::Error
    }
}

/// The text of a file, or the problem that it is not UTF-8.
pub fn utf8(bytes: &[u8]) -> Result<&str, Problem> {
    std::str::from_utf8(bytes).map_err(|e| Problem {
        path: String::new(),
        code: Code::Syntax,
        severity: Severity::Error,
        message: format!(
            "the file is not UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        ),
        line: None,
        column: None,
    })
}

/// The manifest format named by a file's extension (`.json`, `.yaml`/`.yml`; else guessed).
#[must_use]
pub fn format_of(file: &str) -> Format {
    match file.rsplit_once('.').map(|(_, ext)| ext) {
        Some("json") => Format::Json,
        Some("yaml" | "yml") => Format::Yaml,
        _ => Format::Auto,
    }
}

/// Validates the manifest `bytes` of `file`: the validation (with the manifest when valid)
/// and its problems as findings.
#[must_use]
pub fn check_manifest(file: &str, bytes: &[u8]) -> (Option<Validation>, Vec<Finding>) {
    match utf8(bytes) {
        Ok(text) => {
            let validation = crate::validate_as(text, format_of(file));
            let findings = validation
                .problems
                .iter()
                .map(|problem| Finding {
                    file: file.to_owned(),
                    problem: problem.clone(),
                })
                .collect();
            (Some(validation), findings)
        }
        Err(problem) => (
            None,
            vec![Finding {
                file: file.to_owned(),
                problem,
            }],
        ),
    }
}

/// Validates template files, each given as (file name, bytes): a file holds one template
/// object, or a JSON array of them whose elements are reported as `<file>[i]`. Returns the
/// valid templates (with their file) and the findings, including slugs used twice anywhere.
#[must_use]
pub fn check_templates(files: &[(String, &[u8])]) -> (Vec<(String, DocTemplate)>, Vec<Finding>) {
    let mut findings = Vec::new();
    let mut valid = Vec::new();
    for (file, bytes) in files {
        let text = match utf8(bytes) {
            Ok(text) => text,
            Err(problem) => {
                findings.push(Finding {
                    file: file.clone(),
                    problem,
                });
                continue;
            }
        };
        if text.trim_start().starts_with('[') {
            match serde_json::from_str::<Vec<serde_json::Value>>(text) {
                Ok(elements) => {
                    for (i, element) in elements.iter().enumerate() {
                        check_one(
                            &format!("{file}[{i}]"),
                            &element.to_string(),
                            &mut valid,
                            &mut findings,
                        );
                    }
                }
                Err(e) => findings.push(Finding::plain(
                    file,
                    Severity::Error,
                    Code::Syntax,
                    "",
                    format!("the template defaults are not a JSON array of templates: {e}"),
                )),
            }
        } else {
            check_one(file, text, &mut valid, &mut findings);
        }
    }
    for (file, message) in templates::duplicate_slugs(&valid) {
        findings.push(Finding::plain(
            &file,
            Severity::Error,
            Code::Duplicate,
            "slug",
            message,
        ));
    }
    (valid, findings)
}

fn check_one(
    file: &str,
    text: &str,
    valid: &mut Vec<(String, DocTemplate)>,
    findings: &mut Vec<Finding>,
) {
    match templates::validate_template(text) {
        Ok(template) => valid.push((file.to_owned(), template)),
        Err(problems) => findings.extend(problems.into_iter().map(|problem| Finding {
            file: file.to_owned(),
            problem,
        })),
    }
}

/// Validates the JSON array of templates that the template-defaults upload takes; anything
/// but an array is one error.
#[must_use]
pub fn check_template_array(file: &str, bytes: &[u8]) -> (Vec<DocTemplate>, Vec<Finding>) {
    let is_array = utf8(bytes).is_ok_and(|t| t.trim_start().starts_with('['));
    if !is_array {
        return (
            Vec::new(),
            vec![Finding::plain(
                file,
                Severity::Error,
                Code::InvalidType,
                "",
                "the template defaults must be a JSON array of templates".into(),
            )],
        );
    }
    let (valid, findings) = check_templates(&[(file.to_owned(), bytes)]);
    (valid.into_iter().map(|(_, t)| t).collect(), findings)
}

/// Checks the docs bundle given as (path relative to `app_docs/`, size) pairs: the limits of
/// [`crate::bundle`] (errors) and the `user.md` entry point (a warning). `file` names the
/// bundle in findings.
#[must_use]
pub fn check_docs(file: &str, files: &[(String, u64)]) -> Vec<Finding> {
    if files.is_empty() {
        return Vec::new();
    }
    let mut findings: Vec<Finding> = crate::bundle::check(files)
        .into_iter()
        .map(|message| Finding::plain(file, Severity::Error, Code::InputLimit, "", message))
        .collect();
    if !files.iter().any(|(p, _)| p == DOCS_ENTRY) {
        findings.push(Finding::plain(
            file,
            Severity::Warning,
            Code::Required,
            "",
            "app_docs/ has no user.md entry point; apps without user.md are not listed on the docs site".into(),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_arrays_report_each_element() {
        let good = br#"[{"slug": "memo", "name": "Memo", "sections": [], "metadata": {}}]"#;
        let (valid, findings) = check_template_array("templates", good);
        assert_eq!(valid.len(), 1);
        assert!(findings.is_empty(), "{findings:?}");
        let bad = br#"[{"slug": "memo", "name": "Memo", "sections": [], "metadata": {}},
                       {"slug": "memo", "name": "Again", "sections": [], "metadata": {}},
                       {"slug": "Bad Slug", "name": "x", "sections": [], "metadata": {}}]"#;
        let (_, findings) = check_template_array("templates", bad);
        assert!(
            findings
                .iter()
                .any(|f| f.file == "templates[1]" && f.problem.code == Code::Duplicate),
            "{findings:?}"
        );
        assert!(
            findings
                .iter()
                .any(|f| f.file == "templates[2]" && f.problem.path == "slug"),
            "{findings:?}"
        );
        let (_, findings) = check_template_array("templates", b"{}");
        assert_eq!(findings[0].problem.code, Code::InvalidType);
    }

    #[test]
    fn docs_need_an_entry_point_and_stay_in_limits() {
        assert!(check_docs("app_docs", &[]).is_empty());
        let warn = check_docs("app_docs", &[("guide.md".into(), 10)]);
        assert_eq!(warn.len(), 1);
        assert!(!warn[0].is_error());
        let big = check_docs("app_docs", &[("user.md".into(), 600_000)]);
        assert!(big[0].is_error() && big[0].problem.message.contains("user.md"));
    }
}
