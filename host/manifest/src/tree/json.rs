//! The JSON reader: strict RFC 8259 through jsonc-parser, with every extension turned off,
//! converted into the same [`Node`] tree as YAML.
//!
//! Nesting is checked on the raw text before parsing, so the parser's recursion cannot run
//! away; duplicate keys are reported with the line of their first occurrence.

use std::collections::HashMap;

use super::{Key, MAX_DEPTH, MAX_NODES, Node, Value};
use crate::problem::{Code, Path, Pos, Problems};

/// Turns byte offsets into 1-based line and column (in characters) in O(log n), so that
/// positioning every value of a large single-line document stays linear overall.
struct LineIndex {
    line_starts: Vec<usize>,
    /// Characters before each byte offset.
    chars_before: Vec<u32>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        let mut chars_before = Vec::with_capacity(text.len() + 1);
        let mut chars = 0u32;
        for (i, b) in text.bytes().enumerate() {
            chars_before.push(chars);
            if b & 0xC0 != 0x80 {
                chars += 1;
            }
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        chars_before.push(chars);
        LineIndex {
            line_starts,
            chars_before,
        }
    }

    fn pos(&self, at: usize) -> Pos {
        let at = at.min(self.chars_before.len() - 1);
        let line = self.line_starts.partition_point(|&start| start <= at);
        let start = self.line_starts[line.saturating_sub(1)];
        Pos {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: self.chars_before[at] - self.chars_before[start] + 1,
        }
    }
}

/// The deepest nesting of `[`/`{` outside strings, checked before parsing so that no parser
/// recursion can run away on hostile input.
fn json_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

pub(super) fn read_json(text: &str, problems: &mut Problems) -> Option<Node> {
    let root = Path::root();
    if json_depth(text) > MAX_DEPTH {
        problems.error(
            &root,
            None,
            Code::InputLimit,
            format!("values are nested more than {MAX_DEPTH} levels deep"),
        );
        return None;
    }
    let options = jsonc_parser::ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_extended_string_escapes: false,
        allow_non_finite_numbers: false,
    };
    let parsed = match jsonc_parser::parse_to_ast(
        text,
        &jsonc_parser::CollectOptions::default(),
        &options,
    ) {
        Ok(parsed) => parsed,
        Err(err) => {
            let pos = LineIndex::new(text).pos(err.range().start);
            problems.error(
                &root,
                Some(pos),
                Code::Syntax,
                format!("invalid JSON: {}", err.kind()),
            );
            return None;
        }
    };
    let Some(value) = parsed.value else {
        problems.error(
            &root,
            Some(Pos { line: 1, column: 1 }),
            Code::Syntax,
            "invalid JSON: the text holds no value",
        );
        return None;
    };
    let mut nodes = 0usize;
    let node = convert_json(&LineIndex::new(text), &value, &root, problems, &mut nodes);
    if nodes > MAX_NODES {
        problems.error(
            &root,
            None,
            Code::InputLimit,
            format!("the document has more than {MAX_NODES} values"),
        );
        return None;
    }
    Some(node)
}

fn convert_json(
    index: &LineIndex,
    value: &jsonc_parser::ast::Value<'_>,
    path: &Path,
    problems: &mut Problems,
    nodes: &mut usize,
) -> Node {
    use jsonc_parser::ast::{ObjectPropName, Value as J};
    use jsonc_parser::common::Ranged;
    *nodes += 1;
    let pos = index.pos(value.range().start);
    let value = match value {
        J::NullKeyword(_) => Value::Null,
        J::BooleanLit(b) => Value::Bool(b.value),
        J::StringLit(s) => Value::Str(s.value.to_string()),
        J::NumberLit(n) => match n.value.parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => n
                .value
                .parse::<f64>()
                .map_or_else(|_| Value::Str(n.value.to_owned()), Value::Float),
        },
        J::Array(a) => Value::Seq(
            a.elements
                .iter()
                .enumerate()
                .map(|(i, v)| convert_json(index, v, &path.index(i), problems, nodes))
                .collect(),
        ),
        J::Object(o) => {
            let mut entries: Vec<(Key, Node)> = Vec::with_capacity(o.properties.len());
            let mut lines: HashMap<String, u32> = HashMap::new();
            for prop in &o.properties {
                let name = match &prop.name {
                    ObjectPropName::String(s) => s.value.to_string(),
                    ObjectPropName::Word(w) => w.value.to_owned(),
                };
                let key = Key {
                    name,
                    pos: index.pos(prop.name.range().start),
                };
                let child_path = path.field(&key.name);
                if let Some(&first_line) = lines.get(&key.name) {
                    problems.error(
                        &child_path,
                        Some(key.pos),
                        Code::DuplicateKey,
                        format!(
                            "key `{}` appears twice in this object (first on line {})",
                            key.name, first_line
                        ),
                    );
                    continue;
                }
                lines.insert(key.name.clone(), key.pos.line);
                let node = convert_json(index, &prop.value, &child_path, problems, nodes);
                entries.push((key, node));
            }
            Value::Map(entries)
        }
    };
    Node { value, pos }
}
