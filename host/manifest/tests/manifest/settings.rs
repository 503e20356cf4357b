//! `install_settings[]`.

use atrium_manifest::{AutoDefault, Code, SettingType};
use serde_json::{Value, json};

use crate::{fails, fails_at, minimal, ok, warns, with};

fn one(setting: Value) -> Value {
    with(minimal(), "/install_settings", json!([setting]))
}

fn setting(kind: &str, extra: Value) -> Value {
    let mut base = json!({ "id": "value", "type": kind, "label": "Value" });
    if let (Some(map), Value::Object(extra)) = (base.as_object_mut(), extra) {
        map.extend(extra);
    }
    base
}

const AT: &str = "install_settings[0]";

#[test]
fn every_type_is_accepted_with_defaults() {
    for kind in SettingType::ALL {
        let extra = if kind == "select" {
            json!({ "options": ["a"] })
        } else {
            json!({})
        };
        let m = ok(&one(setting(kind, extra)));
        assert!(!m.install_settings[0].required && !m.install_settings[0].expose_to_bundle);
    }
    fails_at(
        &one(setting("color", json!({}))),
        &format!("{AT}.type"),
        Code::InvalidValue,
    );
}

#[test]
fn required_fields_and_ids() {
    fails_at(
        &one(json!({ "type": "string", "label": "L" })),
        &format!("{AT}.id"),
        Code::Required,
    );
    fails_at(
        &one(json!({ "id": "x", "label": "L" })),
        &format!("{AT}.type"),
        Code::Required,
    );
    fails_at(
        &one(json!({ "id": "x", "type": "string" })),
        &format!("{AT}.label"),
        Code::Required,
    );
    fails_at(
        &one(setting("string", json!({ "id": "Company Name" }))),
        &format!("{AT}.id"),
        Code::Pattern,
    );
    fails(
        &with(
            minimal(),
            "/install_settings",
            json!([setting("string", json!({})), setting("text", json!({}))]),
        ),
        &[("install_settings[1].id", Code::Duplicate)],
    );
}

#[test]
fn default_matches_the_type() {
    ok(&one(setting("string", json!({ "default": "x" }))));
    ok(&one(setting("number", json!({ "default": 3.5 }))));
    ok(&one(setting("boolean", json!({ "default": false }))));
    ok(&one(setting(
        "select",
        json!({ "options": ["a", "b"], "default": "b" }),
    )));
    ok(&one(setting(
        "select_or_custom",
        json!({ "options": ["a"], "default": "custom" }),
    )));
    fails_at(
        &one(setting("string", json!({ "default": 3 }))),
        &format!("{AT}.default"),
        Code::DefaultMismatch,
    );
    fails_at(
        &one(setting("number", json!({ "default": "3" }))),
        &format!("{AT}.default"),
        Code::DefaultMismatch,
    );
    fails_at(
        &one(setting("boolean", json!({ "default": "true" }))),
        &format!("{AT}.default"),
        Code::DefaultMismatch,
    );
    fails_at(
        &one(setting(
            "select",
            json!({ "options": ["a", "b"], "default": "c" }),
        )),
        &format!("{AT}.default"),
        Code::DefaultMismatch,
    );
    fails_at(
        &one(setting(
            "number",
            json!({ "min": 0, "max": 10, "default": 11 }),
        )),
        &format!("{AT}.default"),
        Code::DefaultMismatch,
    );
    warns(
        &one(setting("secret", json!({ "default": "hunter2" }))),
        &format!("{AT}.default"),
        Code::PossibleSecret,
    );
}

#[test]
fn options_min_max_apply_to_their_types() {
    fails_at(
        &one(setting("select", json!({}))),
        &format!("{AT}.options"),
        Code::Required,
    );
    fails_at(
        &one(setting("select", json!({ "options": [] }))),
        &format!("{AT}.options"),
        Code::Count,
    );
    fails_at(
        &one(setting("select", json!({ "options": ["a", "a"] }))),
        &format!("{AT}.options[1]"),
        Code::Duplicate,
    );
    fails_at(
        &one(setting("string", json!({ "options": ["a"] }))),
        &format!("{AT}.options"),
        Code::NotApplicable,
    );
    fails_at(
        &one(setting("string", json!({ "min": 1 }))),
        &format!("{AT}.min"),
        Code::NotApplicable,
    );
    let m = ok(&one(setting("number", json!({ "min": -5, "max": 5 }))));
    assert_eq!(
        (m.install_settings[0].min, m.install_settings[0].max),
        (Some(-5.0), Some(5.0))
    );
    fails_at(
        &one(setting("number", json!({ "min": 5, "max": 1 }))),
        &format!("{AT}.max"),
        Code::InvalidRange,
    );
}

#[test]
fn secrets_are_never_exposed_to_the_bundle() {
    ok(&one(setting("string", json!({ "expose_to_bundle": true }))));
    fails_at(
        &one(setting("secret", json!({ "expose_to_bundle": true }))),
        &format!("{AT}.expose_to_bundle"),
        Code::NotAllowed,
    );
}

#[test]
fn auto_default() {
    let m = ok(&one(setting(
        "string",
        json!({ "auto_default": "activator_user_id" }),
    )));
    assert_eq!(
        m.install_settings[0].auto_default,
        Some(AutoDefault::ActivatorUserId)
    );
    fails_at(
        &one(setting(
            "string",
            json!({ "auto_default": "mail_primary_email" }),
        )),
        &format!("{AT}.auto_default"),
        Code::Requires,
    );
    let with_mail = with(
        one(setting(
            "string",
            json!({ "auto_default": "mail_primary_email" }),
        )),
        "/required_integrations",
        json!(["gmail"]),
    );
    assert_eq!(
        ok(&with_mail).install_settings[0].auto_default,
        Some(AutoDefault::MailPrimaryEmail)
    );
    fails_at(
        &one(setting("string", json!({ "auto_default": "tenant_id" }))),
        &format!("{AT}.auto_default"),
        Code::InvalidValue,
    );
    fails_at(
        &one(setting(
            "boolean",
            json!({ "auto_default": "activator_user_id" }),
        )),
        &format!("{AT}.auto_default"),
        Code::NotApplicable,
    );
}
