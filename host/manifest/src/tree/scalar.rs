//! YAML 1.2 core-schema resolution of scalars: what a plain scalar's text means (null, a
//! boolean, an integer, a float or a string), and what a core-schema tag forces it to be.

use saphyr_parser::ScalarStyle;

use super::Value;

/// Resolves a scalar by the YAML 1.2 core schema: plain `null`/`~`/empty, booleans, integers
/// (decimal, `0x`, `0o`) and floats (including `.inf` and `.nan`); everything else, and every
/// quoted or block scalar, is a string. The core-schema tags `!!str`, `!!int`, `!!float`,
/// `!!bool` and `!!null` force a type; other tags are refused.
pub(super) fn resolve_scalar(
    text: &str,
    style: ScalarStyle,
    tag: Option<&str>,
) -> Result<Value, String> {
    if let Some(tag) = tag {
        let suffix = tag.strip_prefix("tag:yaml.org,2002:").unwrap_or("");
        return match suffix {
            "str" => Ok(Value::Str(text.to_string())),
            "int" => resolve_int(text)
                .map(Value::Int)
                .ok_or_else(|| format!("`{text}` is not an integer (tag !!int)")),
            "float" => resolve_float(text)
                .or_else(|| resolve_int(text).map(|i| i as f64))
                .map(Value::Float)
                .ok_or_else(|| format!("`{text}` is not a number (tag !!float)")),
            "bool" => resolve_bool(text)
                .map(Value::Bool)
                .ok_or_else(|| format!("`{text}` is not a boolean (tag !!bool)")),
            "null" => Ok(Value::Null),
            _ => Err(format!(
                "YAML tag `{tag}` is not supported; only core-schema tags (!!str, !!int, !!float, !!bool, !!null) are"
            )),
        };
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::Str(text.to_string()));
    }
    let t: &str = text;
    if matches!(t, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Value::Null);
    }
    if let Some(b) = resolve_bool(t) {
        return Ok(Value::Bool(b));
    }
    if let Some(i) = resolve_int(t) {
        return Ok(Value::Int(i));
    }
    if let Some(f) = resolve_float(t) {
        return Ok(Value::Float(f));
    }
    Ok(Value::Str(t.to_owned()))
}

fn resolve_bool(t: &str) -> Option<bool> {
    match t {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn resolve_int(t: &str) -> Option<i64> {
    if let Some(hex) = t.strip_prefix("0x") {
        return (!hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| i64::from_str_radix(hex, 16).ok())
            .flatten();
    }
    if let Some(oct) = t.strip_prefix("0o") {
        return (!oct.is_empty() && oct.bytes().all(|b| (b'0'..=b'7').contains(&b)))
            .then(|| i64::from_str_radix(oct, 8).ok())
            .flatten();
    }
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A decimal integer too large for i64 still is an integer in YAML; keep it as a float so
    // that range checks report it instead of a type error.
    t.parse::<i64>().ok()
}

fn resolve_float(t: &str) -> Option<f64> {
    match t {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    // Core schema: [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            (!int.is_empty() || !frac.is_empty())
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
                && !(int.is_empty() && frac.is_empty())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    (mantissa_ok && exponent_ok)
        .then(|| t.parse::<f64>().ok())
        .flatten()
}
