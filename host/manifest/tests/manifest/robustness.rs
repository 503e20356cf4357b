//! No input makes the reader or validator panic, hang, or grow without bound.

use atrium_manifest::{Code, Format, MAX_INPUT_BYTES, validate, validate_as};
use proptest::prelude::*;

const FIELDS: &[&str] = &[
    "apiVersion",
    "app_id",
    "version",
    "name",
    "runtime",
    "image",
    "port",
    "resources",
    "memory_mb",
    "cpu_cores",
    "env",
    "tools",
    "scopes_required",
    "agents",
    "agent",
    "heartbeats",
    "schedule_type",
    "interval_minutes",
    "cron_expression",
    "time_of_day",
    "day_of_week",
    "active_hours",
    "install_settings",
    "type",
    "default",
    "options",
    "http_routes",
    "path",
    "method",
    "public",
    "chrome",
    "panel",
    "tabs",
    "rag_slots",
    "emits",
    "subscribes_to",
    "target_agent",
    "target_heartbeat",
    "team",
    "is_default",
    "vision",
    "workflows",
    "flow",
    "lifecycle",
    "schedules",
    "cron",
];

/// Arbitrary YAML-ish documents built from manifest vocabulary, so the validator's deeper
/// paths are reached, not just the parser's error paths.
fn yamlish() -> impl Strategy<Value = String> {
    let scalar = prop_oneof![
        Just("platform/v2".to_owned()),
        Just("1.0.0".to_owned()),
        Just("\"09:00\"".to_owned()),
        Just("'* * * * *'".to_owned()),
        Just("~".to_owned()),
        Just("true".to_owned()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        "[a-z_/{}:*.-]{0,12}",
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("&a x".to_owned()),
        Just("*a".to_owned()),
    ];
    let line = (
        0usize..6,
        prop::sample::select(FIELDS),
        prop::bool::ANY,
        scalar,
    )
        .prop_map(|(indent, key, dash, value)| {
            format!(
                "{}{}{key}: {value}",
                "  ".repeat(indent),
                if dash { "- " } else { "" }
            )
        });
    prop::collection::vec(line, 0..40).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        let _ = validate(&text);
        let _ = validate_as(&text, Format::Json);
    }

    #[test]
    fn manifest_shaped_yaml_never_panics(text in yamlish()) {
        let result = validate(&text);
        // Invalid results never carry a manifest; valid ones carry no error.
        prop_assert_eq!(result.manifest.is_some(), result.errors().next().is_none());
    }

    #[test]
    fn json_with_random_values_never_panics(value in json_value()) {
        let text = serde_json::json!({
            "apiVersion": "platform/v2", "app_id": "demo-app", "version": "1.0.0", "name": "x",
            "runtime": { "image": "acme/x", "port": value.clone() },
            "agents": [{ "id": "a", "name": "a", "system_prompt": "p", "is_default": value.clone(), "heartbeats": [value.clone()] }],
            "install_settings": [{ "id": "s", "type": "number", "label": "l", "default": value.clone() }],
            "http_routes": value.clone(),
            "chrome": { "panel": { "tabs": value } }
        }).to_string();
        let _ = validate(&text);
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "[ -~]{0,16}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn oversized_input_is_refused_before_parsing() {
    let text = "#".repeat(MAX_INPUT_BYTES + 1);
    let result = validate(&text);
    assert_eq!(result.problems[0].code, Code::InputLimit);
}

#[test]
fn deep_nesting_is_refused() {
    for text in [
        "[".repeat(100_000),
        format!("a: {}", "[".repeat(1_000)),
        "{\"a\":".repeat(50_000),
    ] {
        let result = validate(&text);
        assert_eq!(
            result.problems[0].code,
            Code::InputLimit,
            "{:?}",
            result.problems
        );
    }
    // Deep block nesting (no flow collections) is caught by the tree's own depth limit.
    let block: String = (0..200)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    assert_eq!(validate(&block).problems[0].code, Code::InputLimit);
}

#[test]
fn alias_expansion_is_bounded() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let result = validate(&text);
    assert_eq!(result.problems[0].code, Code::InputLimit);
}

#[test]
fn hostile_lists_near_the_size_limit_are_handled_and_messages_stay_short() {
    // Tens of thousands of declared tools and as many undeclared references: every check is
    // hash-based, and messages list at most ten names.
    let n = 10_000;
    let tools: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({ "name": format!("tool_{i}"), "description": "d", "scopes_required": [] }))
        .collect();
    let allowed: Vec<String> = (0..n).map(|i| format!("missing_{i}")).collect();
    let emits: Vec<String> = (0..n).map(|i| format!("e{}", i % (n / 2))).collect();
    let text = serde_json::json!({
        "apiVersion": "platform/v2", "app_id": "demo-app", "version": "1.0.0", "name": "x",
        "runtime": { "image": "acme/x" },
        "tools": tools,
        "agents": [{ "id": "a", "name": "a", "system_prompt": "p", "is_default": true, "tools_allowed": allowed }],
        "emits": emits,
    })
    .to_string();
    assert!(text.len() <= MAX_INPUT_BYTES, "{}", text.len());
    let result = validate(&text);
    let undeclared = result
        .problems
        .iter()
        .filter(|p| p.code == Code::UndeclaredReference)
        .count();
    let duplicates = result
        .problems
        .iter()
        .filter(|p| p.code == Code::Duplicate)
        .count();
    assert_eq!((undeclared, duplicates), (n, n / 2));
    assert!(
        result.problems.iter().all(|p| p.message.len() < 600),
        "a message grew with the input"
    );
}
