//! The manifest validator of `atrium lint` ([`atrium_manifest::project::check_manifest`]) as a
//! WebAssembly module with no imports (`wasm32-unknown-unknown`), so that the Python and
//! TypeScript SDKs validate manifests with the very code the host and the Rust SDK use, never a
//! second implementation: the SDKs, `atrium lint` and the registry cannot disagree.
//!
//! The module's interface is three functions over its linear memory, JSON in and out:
//!
//! - `atrium_alloc(len) -> ptr`: `len` bytes for the caller to write its request into;
//! - `atrium_check(ptr, len) -> u64`: takes (and frees) the request `{"file": "atrium.app.yaml",
//!   "text": "..."}` and answers `(answer_ptr << 32) | answer_len`, the answer being
//!   [`Answer`] as JSON;
//! - `atrium_free(ptr, len)`: gives an answer's memory back.
//!
//! A request that is not such JSON is answered with a single `syntax` finding saying so.
//!
//! A fourth function, `atrium_sandbox(ptr, len) -> u64`, runs the host's sandbox rules for the
//! SDKs' test clients in the same way ([`sandbox`]).

#![allow(unsafe_code)] // The three exported functions hand raw memory across the module's edge.

pub mod sandbox;

use atrium_manifest::project::{self, Finding};
use serde::{Deserialize, Serialize};

/// What a caller asks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The manifest's file name: names it in findings and picks the format (`.json` is JSON,
    /// anything else YAML).
    pub file: String,
    /// The manifest's text.
    pub text: String,
}

/// What the module answers.
#[derive(Debug, Serialize)]
pub struct Answer {
    /// Whether the manifest is accepted (warnings allowed).
    pub valid: bool,
    /// The normalised manifest when it is accepted.
    pub manifest: Option<atrium_manifest::Manifest>,
    /// Every problem, in `atrium lint --json`'s shape.
    pub findings: Vec<Finding>,
}

/// Checks one request's manifest: the function behind `atrium_check`.
pub fn check(request: &[u8]) -> Answer {
    let request: Request = match serde_json::from_slice(request) {
        Ok(request) => request,
        Err(e) => {
            return Answer {
                valid: false,
                manifest: None,
                findings: vec![Finding {
                    file: String::new(),
                    problem: atrium_manifest::Problem {
                        path: String::new(),
                        code: atrium_manifest::Code::Syntax,
                        severity: atrium_manifest::Severity::Error,
                        message: format!(
                            "the request to the validator is not {{\"file\", \"text\"}} JSON: {e}"
                        ),
                        line: None,
                        column: None,
                    },
                }],
            };
        }
    };
    let (validation, findings) = project::check_manifest(&request.file, request.text.as_bytes());
    let manifest = validation.and_then(|v| v.manifest);
    Answer {
        valid: manifest.is_some(),
        manifest,
        findings,
    }
}

/// Reserves `len` bytes for a request.
#[unsafe(no_mangle)]
pub extern "C" fn atrium_alloc(len: usize) -> *mut u8 {
    let mut buffer = Vec::<u8>::with_capacity(len.max(1));
    let ptr = buffer.as_mut_ptr();
    std::mem::forget(buffer);
    ptr
}

/// Gives back `len` bytes at `ptr` that [`atrium_alloc`] reserved or [`atrium_check`] answered.
///
/// # Safety
///
/// `ptr` and `len` must be exactly what one of those functions handed out, given back once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn atrium_free(ptr: *mut u8, len: usize) {
    // SAFETY: the caller gives back a buffer of capacity `len.max(1)` this module leaked.
    drop(unsafe { Vec::from_raw_parts(ptr, 0, len.max(1)) });
}

/// Hands `answer` to the caller: `(ptr << 32) | len`, to be given back with [`atrium_free`].
fn hand_over(answer: Vec<u8>) -> u64 {
    let answer = answer.into_boxed_slice();
    let answer_len = answer.len();
    let answer_ptr = Box::into_raw(answer).cast::<u8>();
    // The answer's capacity equals its length (a boxed slice), as `atrium_free` expects.
    ((answer_ptr as usize as u64) << 32) | answer_len as u64
}

/// Takes back the request of `len` bytes at `ptr`.
///
/// # Safety
///
/// `ptr` must come from [`atrium_alloc`]`(len)` with `len` bytes written there.
unsafe fn take_request(ptr: *mut u8, len: usize) -> Vec<u8> {
    // SAFETY: the caller wrote `len` bytes into the buffer `atrium_alloc(len)` reserved.
    unsafe { Vec::from_raw_parts(ptr, len, len.max(1)) }
}

/// Checks the request of `len` bytes at `ptr` (then frees it) and answers where the answer is.
///
/// # Safety
///
/// `ptr` must come from [`atrium_alloc`]`(len)` with `len` bytes written there.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn atrium_check(ptr: *mut u8, len: usize) -> u64 {
    // SAFETY: as this function's own contract.
    let request = unsafe { take_request(ptr, len) };
    let answer = serde_json::to_vec(&check(&request)).unwrap_or_else(|e| {
        format!(r#"{{"valid": false, "manifest": null, "findings": [], "error": "{e}"}}"#)
            .into_bytes()
    });
    hand_over(answer)
}

/// Runs the sandbox check of the request of `len` bytes at `ptr` (then frees it) and answers
/// where the answer is ([`sandbox::Outcome`] as JSON).
///
/// # Safety
///
/// `ptr` must come from [`atrium_alloc`]`(len)` with `len` bytes written there.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn atrium_sandbox(ptr: *mut u8, len: usize) -> u64 {
    // SAFETY: as this function's own contract.
    let request = unsafe { take_request(ptr, len) };
    let answer = serde_json::to_vec(&sandbox::run(&request))
        .unwrap_or_else(|e| format!(r#"{{"error": "{e}"}}"#).into_bytes());
    hand_over(answer)
}

#[cfg(test)]
mod tests {
    #[test]
    fn answers_the_findings_of_lint() {
        let answer = super::check(
            br#"{"file": "atrium.app.yaml", "text": "apiVersion: platform/v2\napp_id: Bad\n"}"#,
        );
        assert!(!answer.valid);
        assert!(answer.manifest.is_none());
        assert!(
            answer.findings.iter().any(|f| f.problem.path == "app_id"),
            "{answer:?}"
        );
        let bad = super::check(b"not json");
        assert_eq!(bad.findings[0].problem.code, atrium_manifest::Code::Syntax);
        assert!(bad.findings[0].problem.message.contains("validator"));
    }
}
