//! Reading YAML and JSON: positions, syntax errors, duplicate keys, YAML features.

use atrium_manifest::{Code, Format, validate, validate_as};

const MINIMAL_YAML: &str = "apiVersion: platform/v2\napp_id: demo-app\nversion: 1.0.0\nname: Demo\nruntime:\n  image: ghcr.io/acme/demo:1.0.0\n";

#[test]
fn yaml_and_json_are_both_accepted() {
    assert!(validate(MINIMAL_YAML).is_valid());
    let json = r#"{"apiVersion":"platform/v2","app_id":"demo-app","version":"1.0.0","name":"Demo \ud83d\ude00","runtime":{"image":"ghcr.io/acme/demo:1.0.0"}}"#;
    let result = validate(json);
    assert!(result.is_valid(), "{:?}", result.problems);
    assert_eq!(result.manifest.map(|m| m.name), Some("Demo 😀".to_owned()));
    // YAML flow style that is not JSON still reads as YAML.
    assert!(validate_as("{apiVersion: platform/v2, app_id: demo-app, version: 1.0.0, name: Demo, runtime: {image: acme/demo}}", Format::Yaml).is_valid());
}

#[test]
fn problems_carry_line_and_column() {
    let text = "apiVersion: platform/v2\napp_id: demo-app\nversion: 1.0.0\nname: Demo\nruntime:\n  image: ghcr.io/acme/demo:1.0.0\nagents:\n  - id: a\n    name: A\n    system_prompt: p\n    is_default: true\n    heartbeats:\n      - slug: h\n        skill: records\n        tool: query\n        interval_minutes: 2\n";
    let result = validate(text);
    assert_eq!(result.problems.len(), 1);
    let p = &result.problems[0];
    assert_eq!(p.path, "agents[0].heartbeats[0].interval_minutes");
    assert_eq!(
        (p.code, p.line, p.column),
        (Code::OutOfRange, Some(16), Some(27))
    );
    assert!(p.message.contains("between 5 and 43200"), "{}", p.message);
}

#[test]
fn json_positions() {
    let text = "{\n  \"apiVersion\": \"platform/v2\",\n  \"app_id\": \"x\",\n  \"version\": \"1.0.0\",\n  \"name\": \"Demo\",\n  \"runtime\": {\"image\": \"acme/demo\"}\n}";
    let result = validate(text);
    let p = &result.problems[0];
    assert_eq!(
        (p.path.as_str(), p.code, p.line, p.column),
        ("app_id", Code::Length, Some(3), Some(13))
    );
}

#[test]
fn unknown_field_points_at_the_key() {
    let result = validate(&format!("{MINIMAL_YAML}colour: red\n"));
    let p = &result.problems[0];
    assert_eq!(
        (p.path.as_str(), p.code, p.line, p.column),
        ("colour", Code::UnknownField, Some(7), Some(1))
    );
}

#[test]
fn missing_required_field_points_at_its_mapping() {
    let result = validate(
        "apiVersion: platform/v2\napp_id: demo-app\nversion: 1.0.0\nname: Demo\nruntime:\n  port: 8080\n",
    );
    let p = &result.problems[0];
    assert_eq!(
        (p.path.as_str(), p.code, p.line),
        ("runtime.image", Code::Required, Some(6))
    );
}

#[test]
fn syntax_errors() {
    for (text, format) in [
        ("a: [1, 2", Format::Yaml),
        ("a: b: c", Format::Yaml),
        ("{\"a\": 1,}", Format::Json),
        ("{\"a\": 1 // c\n}", Format::Json),
        ("{'a': 1}", Format::Json),
    ] {
        let result = validate_as(text, format);
        assert_eq!(result.problems.len(), 1, "{text}: {:?}", result.problems);
        assert_eq!(result.problems[0].code, Code::Syntax, "{text}");
        assert!(result.problems[0].line.is_some());
    }
}

#[test]
fn duplicate_keys() {
    let result = validate(&format!("{MINIMAL_YAML}name: Again\n"));
    let p = &result.problems[0];
    assert_eq!(
        (p.path.as_str(), p.code, p.line),
        ("name", Code::DuplicateKey, Some(7))
    );
    let result = validate(
        r#"{"apiVersion":"platform/v2","app_id":"demo-app","app_id":"demo-app","version":"1.0.0","name":"D","runtime":{"image":"a/b"}}"#,
    );
    assert_eq!(result.problems[0].code, Code::DuplicateKey);
}

#[test]
fn empty_and_non_mapping_documents() {
    for text in ["", "   \n# only a comment\n"] {
        let result = validate(text);
        assert_eq!(
            (result.problems.len(), result.problems[0].code),
            (1, Code::Required),
            "{text:?}"
        );
    }
    let result = validate("- a\n- b\n");
    assert_eq!(result.problems[0].code, Code::InvalidType);
    assert_eq!(validate("just text").problems[0].code, Code::InvalidType);
}

#[test]
fn multiple_documents_are_refused() {
    let result = validate(&format!("{MINIMAL_YAML}---\napp_id: other\n"));
    assert_eq!(result.problems[0].code, Code::Syntax);
}

#[test]
fn anchors_aliases_and_tags() {
    let text = "apiVersion: platform/v2\napp_id: demo-app\nversion: !!str 1.0.0\nname: &n Demo\ndescription: *n\nruntime:\n  image: acme/demo\n";
    let m = validate(text).manifest.expect("valid");
    assert_eq!(m.description.as_deref(), Some("Demo"));
    let result = validate(&format!("{MINIMAL_YAML}icon: !custom star\n"));
    assert_eq!(result.problems[0].code, Code::InvalidType);
}

#[test]
fn yaml_scalar_typing_gives_clear_type_errors() {
    // `1.0` is a float in YAML; the message says to quote it.
    let result = validate(&MINIMAL_YAML.replace("1.0.0", "1.0"));
    let p = &result.problems[0];
    assert_eq!((p.path.as_str(), p.code), ("version", Code::InvalidType));
    assert!(p.message.contains("quote"), "{}", p.message);
    // `09:00` stays a string (YAML 1.2 has no sexagesimal numbers).
    assert!(validate(&format!("{MINIMAL_YAML}agent:\n  name: A\n  system_prompt: p\n  heartbeats:\n    - slug: h\n      skill: records\n      tool: query\n      schedule_type: daily\n      time_of_day: 09:00\n")).is_valid());
}

#[test]
fn byte_order_mark_is_ignored() {
    assert!(validate(&format!("\u{feff}{MINIMAL_YAML}")).is_valid());
}

#[test]
fn problems_are_in_document_order() {
    let text = "apiVersion: platform/v1\napp_id: X\nversion: one\nname: Demo\nruntime:\n  image: acme/demo\n  port: 1\n";
    let lines: Vec<Option<u32>> = validate(text).problems.iter().map(|p| p.line).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
}

#[test]
fn normalised_form_round_trips_through_serde() {
    let m = validate(MINIMAL_YAML).manifest.expect("valid");
    let json = serde_json::to_value(&m).expect("serialize");
    assert_eq!(json["runtime"]["port"], 8080);
    assert_eq!(json["chrome"]["panel"]["tabs"], serde_json::json!(["chat"]));
    let back: atrium_manifest::Manifest = serde_json::from_value(json).expect("deserialize");
    assert_eq!(back, m);
}
