//! Integration tests of manifest validation: one module per manifest area.
//!
//! Most tests start from the minimal manifest as JSON, change one thing, and assert the exact
//! set of error problems (path and code), so a rule that fires too widely fails the test too.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod agents;
mod events;
mod examples;
mod heartbeats;
mod mentions;
mod parsing;
mod robustness;
mod runtime;
mod settings;
mod surface;
mod tools;
mod top;
mod wasm;

use atrium_manifest::{Code, Format, Manifest, Severity, Validation};
use serde_json::{Value, json};

/// The seed's minimal manifest: five fields.
pub fn minimal() -> Value {
    json!({
        "apiVersion": "platform/v2",
        "app_id": "demo-app",
        "version": "1.0.0",
        "name": "Demo",
        "runtime": { "image": "ghcr.io/acme/demo:1.0.0" }
    })
}

/// `base` with the value at JSON pointer `pointer` set (objects created on the way).
pub fn with(mut base: Value, pointer: &str, value: Value) -> Value {
    let mut node = &mut base;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        node = match node {
            Value::Array(items) => {
                let index: usize = part.parse().expect("array index");
                if last {
                    items[index] = value;
                    return base;
                }
                &mut items[index]
            }
            Value::Object(map) => {
                if last {
                    map.insert((*part).to_owned(), value);
                    return base;
                }
                map.entry((*part).to_owned()).or_insert_with(|| json!({}))
            }
            _ => panic!("cannot descend into {pointer}"),
        };
    }
    base
}

/// `base` without the field at `pointer`.
pub fn without(mut base: Value, pointer: &str) -> Value {
    let (parent, field) = pointer.rsplit_once('/').expect("pointer");
    if let Some(Value::Object(map)) = base.pointer_mut(parent) {
        map.remove(field);
    }
    base
}

/// Validates the JSON text of `value`.
pub fn validate(value: &Value) -> Validation {
    atrium_manifest::validate_as(
        &serde_json::to_string_pretty(value).expect("json"),
        Format::Json,
    )
}

/// Asserts that the manifest is valid and returns it.
#[track_caller]
pub fn ok(value: &Value) -> Manifest {
    let result = validate(value);
    let errors: Vec<String> = result.errors().map(ToString::to_string).collect();
    assert!(
        errors.is_empty(),
        "expected a valid manifest, got:\n{}",
        errors.join("\n")
    );
    result.manifest.expect("valid manifest")
}

/// Asserts that the errors are exactly `expected` (path, code), in any order.
#[track_caller]
pub fn fails(value: &Value, expected: &[(&str, Code)]) {
    let result = validate(value);
    assert!(
        result.manifest.is_none(),
        "an invalid manifest must not be returned"
    );
    let mut got: Vec<(String, Code)> = result.errors().map(|p| (p.path.clone(), p.code)).collect();
    let mut want: Vec<(String, Code)> = expected
        .iter()
        .map(|(p, c)| ((*p).to_owned(), *c))
        .collect();
    got.sort();
    want.sort();
    let detail: Vec<String> = result.problems.iter().map(ToString::to_string).collect();
    assert_eq!(got, want, "problems:\n{}", detail.join("\n"));
    for problem in result.errors() {
        assert!(
            problem.line.is_some() || problem.path.is_empty(),
            "no line for {problem}"
        );
        assert!(!problem.message.is_empty());
    }
}

/// Asserts a single error at `path` with `code`.
#[track_caller]
pub fn fails_at(value: &Value, path: &str, code: Code) {
    fails(value, &[(path, code)]);
}

/// Asserts that the manifest is valid and carries a warning at `path` with `code`.
#[track_caller]
pub fn warns(value: &Value, path: &str, code: Code) -> Manifest {
    let result = validate(value);
    assert!(
        result
            .problems
            .iter()
            .any(|p| p.severity == Severity::Warning && p.path == path && p.code == code),
        "expected warning {code} at {path}, got {:?}",
        result.problems
    );
    result.manifest.expect("warnings keep the manifest valid")
}

/// A manifest with two agents, a tool and scopes, for cross-reference rules.
pub fn with_agents() -> Value {
    let base = with(minimal(), "/required_scopes", json!(["crm.read"]));
    let base = with(
        base,
        "/tools",
        json!([{ "name": "lookup", "description": "Looks a customer up.", "scopes_required": ["crm.read"] }]),
    );
    with(
        base,
        "/agents",
        json!([
            { "id": "lead", "name": "Lead", "system_prompt": "You lead.", "is_default": true, "team": ["helper"] },
            { "id": "helper", "name": "Helper", "system_prompt": "You help." }
        ]),
    )
}
