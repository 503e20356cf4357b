//! `install_settings[]`: values collected from the tenant at install.

use super::Declared;
use super::tools::{Located, each, unique_keys};
use crate::model::{AutoDefault, InstallSetting, SettingType};
use crate::problem::Code;
use crate::read::{Cx, Obj};
use crate::rules;
use crate::tree::{Node, Value};

const FIELDS: &[&str] = &[
    "id",
    "type",
    "label",
    "description",
    "required",
    "default",
    "options",
    "min",
    "max",
    "expose_to_bundle",
    "auto_default",
];

fn setting_type(name: &str) -> Option<SettingType> {
    Some(match name {
        "string" => SettingType::String,
        "text" => SettingType::Text,
        "number" => SettingType::Number,
        "boolean" => SettingType::Boolean,
        "select" => SettingType::Select,
        "select_or_custom" => SettingType::SelectOrCustom,
        "project_picker" => SettingType::ProjectPicker,
        "secret" => SettingType::Secret,
        _ => return None,
    })
}

pub(super) fn install_settings(
    cx: &mut Cx,
    parent: &mut Obj<'_>,
    declared: &Declared,
) -> Vec<InstallSetting> {
    let read = each(cx, parent, "install_settings", None, |cx, obj| {
        setting(cx, obj, declared)
    });
    unique_keys(
        cx,
        read.iter().map(|s| s.key.as_ref()),
        "install setting id",
    );
    read.into_iter().map(|s| s.value).collect()
}

fn setting<'n>(cx: &mut Cx, mut obj: Obj<'n>, declared: &Declared) -> Located<'n, InstallSetting> {
    let mut s = InstallSetting {
        id: String::new(),
        kind: SettingType::String,
        label: String::new(),
        description: None,
        required: false,
        default: None,
        options: Vec::new(),
        min: None,
        max: None,
        expose_to_bundle: false,
        auto_default: None,
    };
    let mut key = None;
    if let Some((node, id)) = obj.req_string(cx, "id", "a lowercase slug, the key in ctx.config") {
        let path = obj.at("id");
        if cx.length(&path, node, id, 1, 64) && !rules::is_lower_slug(id) {
            cx.error(
                &path,
                node.pos,
                Code::Pattern,
                format!("`{id}` is not a lowercase slug: lowercase letters, digits, `-` and `_`"),
            );
        }
        s.id = id.to_owned();
        key = Some((id.to_owned(), path, node));
    }
    let mut kind = None;
    if let Some((node, name)) = obj.req_string(
        cx,
        "type",
        "one of string, text, number, boolean, select, select_or_custom, project_picker, secret",
    ) {
        kind = setting_type(name);
        if kind.is_none() {
            cx.error(
                &obj.at("type"),
                node.pos,
                Code::InvalidValue,
                format!(
                    "must be one of {} (got `{name}`)",
                    SettingType::ALL.join(", ")
                ),
            );
        }
    }
    if let Some((node, label)) = obj.req_string(cx, "label", "the label shown in the consent form")
    {
        cx.length(&obj.at("label"), node, label, 1, 200);
        s.label = label.to_owned();
    }
    s.description = obj.opt_text(cx, "description", 2000);
    s.required = obj.bool_or(cx, "required", false);
    s.expose_to_bundle = obj.bool_or(cx, "expose_to_bundle", false);

    // options: only for the select types, and required by `select`.
    let is_select = matches!(
        kind,
        Some(SettingType::Select | SettingType::SelectOrCustom)
    );
    if let Some(node) = obj.get("options") {
        let path = obj.at("options");
        if kind.is_some() && !is_select {
            cx.error(
                &path,
                obj.key_pos("options").unwrap_or(node.pos),
                Code::NotApplicable,
                "`options` applies only to types select and select_or_custom",
            );
        } else {
            let entries = cx.string_list(&path, node);
            cx.no_duplicates(&entries, "option");
            for (p, n, v) in &entries {
                cx.length(p, n, v, 1, 200);
            }
            s.options = entries.iter().map(|(_, _, v)| (*v).to_owned()).collect();
            if entries.is_empty() && matches!(kind, Some(SettingType::Select)) {
                cx.error(
                    &path,
                    node.pos,
                    Code::Count,
                    "a `select` setting needs at least one option",
                );
            }
        }
    } else if matches!(kind, Some(SettingType::Select)) {
        cx.error(
            &obj.at("options"),
            obj.pos,
            Code::Required,
            "`options` is required for type select: the allowed values",
        );
    }

    // min and max: only for numbers.
    for bound in ["min", "max"] {
        let Some(node) = obj.get(bound) else { continue };
        if kind.is_some() && kind != Some(SettingType::Number) {
            cx.error(
                &obj.at(bound),
                obj.key_pos(bound).unwrap_or(node.pos),
                Code::NotApplicable,
                format!("`{bound}` applies only to type number"),
            );
            continue;
        }
        let value = cx.number(&obj.at(bound), node, None);
        if bound == "min" {
            s.min = value
        } else {
            s.max = value
        }
    }
    if let (Some(min), Some(max)) = (s.min, s.max)
        && min > max
        && let Some(node) = obj.get("max")
    {
        cx.error(
            &obj.at("max"),
            node.pos,
            Code::InvalidRange,
            format!("max ({max}) is smaller than min ({min})"),
        );
    }

    if let Some(node) = obj.get("default")
        && let Some(kind) = kind
    {
        default_value(cx, &obj, node, kind, &s);
        s.default = Some(node.to_json());
    }

    if kind == Some(SettingType::Secret) && s.expose_to_bundle {
        let pos = obj.key_pos("expose_to_bundle").unwrap_or(obj.pos);
        cx.error(
            &obj.at("expose_to_bundle"),
            pos,
            Code::NotAllowed,
            "a secret setting is never exposed to the frontend bundle",
        );
    }

    if let Some((node, value)) = obj.opt_string(cx, "auto_default") {
        let path = obj.at("auto_default");
        match value {
            "activator_user_id" => s.auto_default = Some(AutoDefault::ActivatorUserId),
            "mail_primary_email" => {
                s.auto_default = Some(AutoDefault::MailPrimaryEmail);
                if !declared
                    .integrations
                    .iter()
                    .any(|p| rules::is_mail_provider(p))
                {
                    cx.error(&path, node.pos, Code::Requires, "`mail_primary_email` requires a mail provider (for example `gmail` or `outlook`) in required_integrations");
                }
            }
            other => cx.error(
                &path,
                node.pos,
                Code::InvalidValue,
                format!("must be `activator_user_id` or `mail_primary_email` (got `{other}`)"),
            ),
        }
        if s.auto_default.is_some()
            && let Some(kind) = kind
            && !matches!(kind, SettingType::String | SettingType::Text)
        {
            cx.error(
                &path,
                node.pos,
                Code::NotApplicable,
                "`auto_default` fills a text value and applies only to types string and text",
            );
        }
    }
    s.kind = kind.unwrap_or(SettingType::String);
    obj.finish(cx, FIELDS);
    Located { value: s, key }
}

/// Checks that `default` matches the declared type (and options and bounds).
fn default_value(cx: &mut Cx, obj: &Obj<'_>, node: &Node, kind: SettingType, s: &InstallSetting) {
    let path = obj.at("default");
    let mismatch = |cx: &mut Cx, expected: &str| {
        cx.error(
            &path,
            node.pos,
            Code::DefaultMismatch,
            format!(
                "the default must be {expected} for type `{}` (found {})",
                type_name(kind),
                node.value.kind()
            ),
        );
    };
    match (kind, &node.value) {
        (SettingType::Number, Value::Int(_) | Value::Float(_)) => {
            let value = match node.value {
                Value::Int(i) => i as f64,
                Value::Float(f) => f,
                _ => 0.0,
            };
            if s.min.is_some_and(|min| value < min) || s.max.is_some_and(|max| value > max) {
                let (min, max) = (s.min.map_or("-inf".into(), |m| m.to_string()), s.max.map_or("inf".into(), |m| m.to_string()));
                cx.error(&path, node.pos, Code::DefaultMismatch, format!("the default {value} is outside min..max ({min} to {max})"));
            }
        }
        (SettingType::Number, _) => mismatch(cx, "a number"),
        (SettingType::Boolean, Value::Bool(_)) => {}
        (SettingType::Boolean, _) => mismatch(cx, "a boolean"),
        (SettingType::Select, Value::Str(v)) => {
            if !s.options.is_empty() && !s.options.iter().any(|o| o == v) {
                cx.error(&path, node.pos, Code::DefaultMismatch, format!("the default `{v}` is not one of the options ({})", s.options.join(", ")));
            }
        }
        (SettingType::Secret, Value::Str(_)) => cx.warning(
            &path,
            node.pos,
            Code::PossibleSecret,
            "a default for a secret setting is stored in the manifest in clear text; leave it out and let the tenant fill it",
        ),
        (_, Value::Str(_)) => {}
        _ => mismatch(cx, "a string"),
    }
}

fn type_name(kind: SettingType) -> &'static str {
    match kind {
        SettingType::String => "string",
        SettingType::Text => "text",
        SettingType::Number => "number",
        SettingType::Boolean => "boolean",
        SettingType::Select => "select",
        SettingType::SelectOrCustom => "select_or_custom",
        SettingType::ProjectPicker => "project_picker",
        SettingType::Secret => "secret",
    }
}
