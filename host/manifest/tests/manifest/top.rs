//! Top-level fields.

use atrium_manifest::Code;
use serde_json::json;

use crate::{fails, fails_at, minimal, ok, warns, with, without};

#[test]
fn minimal_manifest_is_valid_with_defaults() {
    let m = ok(&minimal());
    assert_eq!(m.api_version, "platform/v2");
    assert_eq!(m.runtime.port, 8080);
    assert_eq!(m.runtime.resources.memory_mb, 256);
    assert!((m.runtime.resources.cpu_cores - 0.5).abs() < f64::EPSILON);
    assert_eq!(m.agent_form, atrium_manifest::AgentForm::None);
    assert!(m.agents.is_empty() && m.tools.is_empty());
    assert!(!m.chrome.panel.enabled);
    assert_eq!(m.chrome.panel.width, 400);
    assert_eq!(m.chrome.panel.default_tab, "chat");
}

#[test]
fn each_required_field() {
    for field in ["apiVersion", "app_id", "version", "name", "runtime"] {
        fails_at(
            &without(minimal(), &format!("/{field}")),
            field,
            Code::Required,
        );
    }
    fails_at(
        &without(minimal(), "/runtime/image"),
        "runtime.image",
        Code::Required,
    );
    fails_at(
        &with(minimal(), "/name", json!(null)),
        "name",
        Code::Required,
    );
}

#[test]
fn api_version_is_a_constant() {
    fails_at(
        &with(minimal(), "/apiVersion", json!("platform/v1")),
        "apiVersion",
        Code::InvalidValue,
    );
    fails_at(
        &with(minimal(), "/apiVersion", json!(2)),
        "apiVersion",
        Code::InvalidType,
    );
}

#[test]
fn app_id_slug() {
    for good in ["abc", "invoice-desk", "a1-2", &"a".repeat(64)] {
        ok(&with(minimal(), "/app_id", json!(good)));
    }
    fails_at(
        &with(minimal(), "/app_id", json!("ab")),
        "app_id",
        Code::Length,
    );
    fails_at(
        &with(minimal(), "/app_id", json!("a".repeat(65))),
        "app_id",
        Code::Length,
    );
    for bad in ["1abc", "Abc", "a_bc", "ab c", "-abc"] {
        fails_at(
            &with(minimal(), "/app_id", json!(bad)),
            "app_id",
            Code::Pattern,
        );
    }
}

#[test]
fn version_is_semver() {
    for good in ["0.1.0", "10.20.30", "1.0.0-beta.1", "1.0.0-rc1"] {
        ok(&with(minimal(), "/version", json!(good)));
    }
    for bad in ["1.0", "v1.0.0", "1.0.0+build.5", "01.0.0", "1.0.0-"] {
        fails_at(
            &with(minimal(), "/version", json!(bad)),
            "version",
            Code::Pattern,
        );
    }
    fails_at(
        &with(minimal(), "/version", json!(1.5)),
        "version",
        Code::InvalidType,
    );
}

#[test]
fn display_strings() {
    let m = ok(&with(
        with(
            with(minimal(), "/description", json!("Does things.")),
            "/icon",
            json!("star"),
        ),
        "/category",
        json!("finance"),
    ));
    assert_eq!(m.category.as_deref(), Some("finance"));
    fails_at(&with(minimal(), "/name", json!("")), "name", Code::Length);
    fails_at(
        &with(minimal(), "/description", json!(["x"])),
        "description",
        Code::InvalidType,
    );
}

#[test]
fn unknown_fields_everywhere() {
    fails_at(
        &with(minimal(), "/colour", json!("red")),
        "colour",
        Code::UnknownField,
    );
    fails_at(
        &with(minimal(), "/runtime/cpu", json!(1)),
        "runtime.cpu",
        Code::UnknownField,
    );
    fails_at(
        &with(minimal(), "/network/ingress", json!([])),
        "network.ingress",
        Code::UnknownField,
    );
    fails_at(
        &with(minimal(), "/chrome/panel/height", json!(3)),
        "chrome.panel.height",
        Code::UnknownField,
    );
}

#[test]
fn unknown_field_suggests_the_closest_name() {
    let result = crate::validate(&with(minimal(), "/required_scope", json!([])));
    assert!(
        result.problems[0]
            .message
            .contains("did you mean `required_scopes`"),
        "{}",
        result.problems[0].message
    );
}

/// A misspelt required field is one problem, not an unknown field and a missing one: the
/// unknown field's message names the field it stands for and its rule. No message has a
/// question mark followed by a period.
#[test]
fn a_misspelt_required_field_is_one_problem() {
    let cases = [
        (
            with(without(minimal(), "/name"), "/nmae", json!("Demo")),
            "nmae",
            "name",
        ),
        (
            with(
                without(minimal(), "/runtime"),
                "/runtme",
                json!({"image": "x"}),
            ),
            "runtme",
            "runtime",
        ),
        (
            with(
                without(minimal(), "/runtime/image"),
                "/runtime/imgae",
                json!("x"),
            ),
            "runtime.imgae",
            "image",
        ),
    ];
    for (manifest, path, meant) in cases {
        fails_at(&manifest, path, Code::UnknownField);
        let message = crate::validate(&manifest).problems[0].message.clone();
        assert!(
            message.contains(&format!("did you mean `{meant}`? `{meant}` is required: ")),
            "{message}"
        );
        assert!(!message.contains("?."), "{message}");
    }
    // Written both ways, the field is there: only the misspelt one is at fault.
    let both = with(minimal(), "/nmae", json!("Demo"));
    fails_at(&both, "nmae", Code::UnknownField);
    let message = crate::validate(&both).problems[0].message.clone();
    assert!(
        message.contains("did you mean `name`? Allowed fields here: ") && !message.contains("?."),
        "{message}"
    );
    // No close match: the list of allowed fields is a sentence of its own.
    let far = crate::validate(&with(minimal(), "/colour", json!("red")));
    assert!(
        far.problems[0]
            .message
            .starts_with("unknown field `colour`. Allowed fields here: "),
        "{}",
        far.problems[0].message
    );
}

#[test]
fn required_scopes_and_integrations() {
    ok(&with(
        with(
            minimal(),
            "/required_scopes",
            json!(["crm.read", "mail:send"]),
        ),
        "/required_integrations",
        json!(["gmail", "slack"]),
    ));
    fails_at(
        &with(
            minimal(),
            "/required_scopes",
            json!(["crm.read", "crm.read"]),
        ),
        "required_scopes[1]",
        Code::Duplicate,
    );
    fails_at(
        &with(minimal(), "/required_scopes", json!(["has space"])),
        "required_scopes[0]",
        Code::Pattern,
    );
    fails_at(
        &with(minimal(), "/required_scopes", json!("crm.read")),
        "required_scopes",
        Code::InvalidType,
    );
    fails_at(
        &with(minimal(), "/required_integrations", json!(["Gmail"])),
        "required_integrations[0]",
        Code::Pattern,
    );
}

#[test]
fn docs_url_is_absolute_http() {
    ok(&with(
        minimal(),
        "/docs_url",
        json!("https://docs.example.com/app"),
    ));
    fails_at(
        &with(minimal(), "/docs_url", json!("docs/index.html")),
        "docs_url",
        Code::Pattern,
    );
    fails_at(
        &with(minimal(), "/docs_url", json!("ftp://example.com")),
        "docs_url",
        Code::Pattern,
    );
}

#[test]
fn deprecated_seed_doc_templates_from_warns() {
    let m = warns(
        &with(
            minimal(),
            "/seed_doc_templates_from",
            json!("first-party-app"),
        ),
        "seed_doc_templates_from",
        Code::Deprecated,
    );
    assert_eq!(
        m.seed_doc_templates_from.as_deref(),
        Some("first-party-app")
    );
    fails_at(
        &with(minimal(), "/seed_doc_templates_from", json!("xy")),
        "seed_doc_templates_from",
        Code::Length,
    );
}

#[test]
fn all_problems_are_reported_at_once() {
    let v = with(
        with(
            with(minimal(), "/app_id", json!("X")),
            "/runtime/port",
            json!(1),
        ),
        "/emits",
        json!(["A"]),
    );
    fails(
        &v,
        &[
            ("app_id", Code::Length),
            ("app_id", Code::Pattern),
            ("runtime.port", Code::OutOfRange),
            ("emits[0]", Code::Pattern),
        ],
    );
}

#[test]
fn a_list_of_the_wrong_type_is_reported_once() {
    fails_at(
        &with(minimal(), "/agents", json!("lead")),
        "agents",
        Code::InvalidType,
    );
    let wf = json!([{ "id": "w", "name": "W", "intent": "i", "flow": "step" }]);
    fails_at(
        &with(minimal(), "/workflows", wf),
        "workflows[0].flow",
        Code::InvalidType,
    );
}
