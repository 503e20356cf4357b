//! A small document tree with positions, read from YAML or JSON text.
//!
//! Validation needs three things that typed deserialisers do not give: the position of every
//! value, every duplicate key, and all problems at once. The readers here turn YAML (through
//! saphyr's event parser) or JSON (through jsonc-parser with every extension turned off) into
//! the same [`Node`] tree, resolving YAML 1.2 core-schema scalars. Input limits — size, nesting
//! depth and alias expansion — keep hostile text from exhausting memory or the stack.
//!
//! [`read`] picks the reader; [`yaml`] and [`json`] build the tree, and [`scalar`] resolves
//! YAML's plain scalars to typed values. The tree types and the limits live here, shared by
//! both readers and by the validation that walks the tree.

mod json;
mod scalar;
mod yaml;

use crate::problem::{Code, Path, Pos, Problems};

use json::read_json;
use yaml::read_yaml;

/// Largest accepted input, in bytes.
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;
/// Deepest accepted nesting of mappings and sequences.
pub const MAX_DEPTH: usize = 64;
/// Most nodes a document may expand to, counting every copy made by a YAML alias.
pub const MAX_NODES: usize = 100_000;

/// A value with the position where it starts in the text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) value: Value,
    pub(crate) pos: Pos,
}

/// A key of a mapping with its own position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    pub(crate) name: String,
    pub(crate) pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

impl Value {
    /// The type name used in messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// Converts to JSON for free-form fields (`params`, `metadata`, setting defaults).
    /// Non-finite floats become null, as JSON has no spelling for them.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match &self.value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::Seq(items) => {
                serde_json::Value::Array(items.iter().map(Node::to_json).collect())
            }
            Value::Map(entries) => serde_json::Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// The format of the input text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// YAML 1.2 (JSON is accepted too, as YAML is a superset of it).
    Yaml,
    /// Strict JSON (RFC 8259): no comments, no trailing commas.
    Json,
    /// JSON when the first non-blank character is `{`, YAML otherwise.
    Auto,
}

/// Reads `text` into a tree. Problems (syntax errors, duplicate keys, limits) go to `problems`;
/// `None` means nothing usable was read.
pub(crate) fn read(text: &str, format: Format, problems: &mut Problems) -> Option<Node> {
    let root = Path::root();
    if text.len() > MAX_INPUT_BYTES {
        problems.error(
            &root,
            None,
            Code::InputLimit,
            format!(
                "the manifest is {} bytes; at most {MAX_INPUT_BYTES} bytes are accepted",
                text.len()
            ),
        );
        return None;
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let format = match format {
        Format::Auto if text.trim_start().starts_with('{') => Format::Json,
        Format::Auto => Format::Yaml,
        other => other,
    };
    let node = match format {
        Format::Json => read_json(text, problems),
        _ => read_yaml(text, problems),
    }?;
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> (Option<Node>, Vec<crate::Problem>) {
        let mut problems = Problems::default();
        let node = read(text, Format::Yaml, &mut problems);
        (node, problems.into_sorted())
    }

    #[test]
    fn core_schema_scalars() {
        let (node, problems) =
            yaml("a: 1\nb: 0.5\nc: true\nd: ~\ne: '1'\nf: 09:00\ng: 1.0.0\nh: .inf\ni: 0x1F\n");
        assert!(problems.is_empty());
        let Some(Node {
            value: Value::Map(entries),
            ..
        }) = node
        else {
            panic!("not a map")
        };
        let values: Vec<_> = entries.into_iter().map(|(_, v)| v.value).collect();
        assert_eq!(values[0], Value::Int(1));
        assert_eq!(values[1], Value::Float(0.5));
        assert_eq!(values[2], Value::Bool(true));
        assert_eq!(values[3], Value::Null);
        assert_eq!(values[4], Value::Str("1".into()));
        assert_eq!(values[5], Value::Str("09:00".into()));
        assert_eq!(values[6], Value::Str("1.0.0".into()));
        assert_eq!(values[7], Value::Float(f64::INFINITY));
        assert_eq!(values[8], Value::Int(31));
    }

    #[test]
    fn positions_are_one_based() {
        let (node, _) = yaml("a:\n  b: x\n");
        let Some(Node {
            value: Value::Map(entries),
            ..
        }) = node
        else {
            panic!("not a map")
        };
        let (_, inner) = &entries[0];
        let Value::Map(inner) = &inner.value else {
            panic!("not a map")
        };
        assert_eq!(inner[0].0.pos, Pos { line: 2, column: 3 });
        assert_eq!(inner[0].1.pos, Pos { line: 2, column: 6 });
    }

    #[test]
    fn duplicate_keys_are_reported() {
        let (_, problems) = yaml("a: 1\nb:\n  c: 1\n  c: 2\n");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].code, Code::DuplicateKey);
        assert_eq!(problems[0].path, "b.c");
        assert_eq!(problems[0].line, Some(4));
    }

    #[test]
    fn alias_bomb_is_stopped() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let prev = i - 1;
            text.push_str(&format!("a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"));
        }
        let (node, problems) = yaml(&text);
        assert!(node.is_none());
        assert_eq!(problems[0].code, Code::InputLimit);
    }

    #[test]
    fn deep_nesting_is_stopped() {
        let text = "[".repeat(10_000);
        let (node, problems) = yaml(&text);
        assert!(node.is_none());
        assert_eq!(problems[0].code, Code::InputLimit, "{problems:?}");
        let mut problems = Problems::default();
        assert!(read(&"[".repeat(100_000), Format::Json, &mut problems).is_none());
        assert_eq!(problems.into_sorted()[0].code, Code::InputLimit);
    }

    #[test]
    fn json_positions_and_duplicates() {
        let mut problems = Problems::default();
        let node = read(
            "{\n  \"a\": 1,\n  \"a\": \"\\ud83d\\ude00\"\n}",
            Format::Auto,
            &mut problems,
        );
        let problems = problems.into_sorted();
        assert!(node.is_some());
        assert_eq!(problems[0].code, Code::DuplicateKey);
        assert_eq!((problems[0].line, problems[0].column), (Some(3), Some(3)));
    }

    #[test]
    fn multiple_documents_are_refused() {
        let (_, problems) = yaml("a: 1\n---\nb: 2\n");
        assert_eq!(problems[0].code, Code::Syntax);
    }
}
