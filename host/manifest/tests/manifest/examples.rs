//! The example apps' manifests and the document-template rules.

use atrium_manifest::templates::{duplicate_slugs, validate_template};
use atrium_manifest::{AgentForm, Code, validate};

fn example(name: &str) -> String {
    let path = format!(
        "{}/../../examples/{name}/atrium.app.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn minimal_example_is_valid() {
    let result = validate(&example("minimal"));
    assert!(result.problems.is_empty(), "{:?}", result.problems);
}

#[test]
fn rich_example_uses_every_section_and_is_valid() {
    let result = validate(&example("invoices"));
    assert!(result.problems.is_empty(), "{:#?}", result.problems);
    let m = result.manifest.expect("valid");
    assert_eq!(m.agent_form, AgentForm::Plural);
    assert!(!m.tools.is_empty() && !m.workflows.is_empty() && !m.install_settings.is_empty());
    assert!(!m.http_routes.is_empty() && m.chrome.panel.enabled && !m.rag_slots.is_empty());
    assert!(
        !m.emits.is_empty() && !m.subscribes_to.is_empty() && !m.cross_app_dependencies.is_empty()
    );
    assert!(!m.lifecycle.schedules.is_empty() && !m.network.egress_hosts.is_empty());
    assert!(
        m.agents.iter().any(|a| a.vision.is_some())
            && m.agents.iter().any(|a| !a.heartbeats.is_empty())
    );
    assert_eq!(m.cross_app_dependencies[0].routes[1], "GET /accounts/{id}");
}

#[test]
fn document_templates() {
    let good = r#"{"slug":"invoice_letter","name":"Invoice letter","description":"d","sections":[{"type":"markdown","id":"intro","content":"Hello"}],"metadata":{"lang":"en"}}"#;
    let t = validate_template(good).expect("valid template");
    assert_eq!(t.sections[0].kind, "markdown");
    let codes = |text: &str| {
        validate_template(text)
            .expect_err("invalid")
            .into_iter()
            .map(|p| (p.path, p.code))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        codes(r#"{"slug":"Invoice","name":"n"}"#),
        vec![("slug".to_owned(), Code::Pattern)]
    );
    assert_eq!(
        codes(r#"{"name":"n"}"#),
        vec![("slug".to_owned(), Code::Required)]
    );
    assert_eq!(
        codes(r#"{"slug":"a","name":"n","extra":1}"#),
        vec![("extra".to_owned(), Code::UnknownField)]
    );
    assert_eq!(
        codes(r#"{"slug":"a","name":"n","sections":[{"type":"markdown","id":"x"}]}"#),
        vec![("sections[0].content".to_owned(), Code::Required)]
    );
    assert_eq!(
        codes(r#"{"slug":"a","name":"n","metadata":[]}"#),
        vec![("metadata".to_owned(), Code::InvalidType)]
    );
    let a = validate_template(r#"{"slug":"a","name":"n"}"#).expect("valid");
    assert_eq!(
        duplicate_slugs(&[("one.json".into(), a.clone()), ("two.json".into(), a)]).len(),
        1
    );
}

#[test]
fn secret_key_format() {
    use atrium_manifest::rules::is_secret_key;
    assert!(is_secret_key("A") && is_secret_key(&format!("A{}", "B".repeat(63))));
    assert!(
        !is_secret_key(&format!("A{}", "B".repeat(64)))
            && !is_secret_key("_A")
            && !is_secret_key("a")
    );
}
