//! A small document tree with positions, read from YAML or JSON text.
//!
//! Validation needs three things that typed deserialisers do not give: the position of every
//! value, every duplicate key, and all problems at once. The readers here turn YAML (through
//! saphyr's event parser) or JSON (through jsonc-parser with every extension turned off) into
//! the same [`Node`] tree, resolving YAML 1.2 core-schema scalars. Input limits — size, nesting
//! depth and alias expansion — keep hostile text from exhausting memory or the stack.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use crate::problem::{Code, Path, Pos, Problems};

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

// ---------------------------------------------------------------------------------------------
// YAML

fn pos_of(span: &Span) -> Pos {
    Pos {
        line: u32::try_from(span.start.line()).unwrap_or(u32::MAX),
        column: u32::try_from(span.start.col() + 1).unwrap_or(u32::MAX),
    }
}

enum Frame {
    Seq {
        items: Vec<Node>,
        pos: Pos,
        anchor: usize,
    },
    Map {
        entries: Vec<(Key, Node)>,
        pending_key: Option<Key>,
        pos: Pos,
        anchor: usize,
        path: Path,
        /// First line of each key, to find duplicates without a quadratic scan.
        lines: HashMap<String, u32>,
    },
}

struct YamlBuilder<'p> {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    docs: usize,
    root: Option<Node>,
    problems: &'p mut Problems,
    failed: bool,
}

fn count_nodes(node: &Node) -> usize {
    let mut count = 0;
    let mut todo = vec![node];
    while let Some(n) = todo.pop() {
        count += 1;
        match &n.value {
            Value::Seq(items) => todo.extend(items.iter()),
            Value::Map(entries) => todo.extend(entries.iter().map(|(_, v)| v)),
            _ => {}
        }
    }
    count
}

impl YamlBuilder<'_> {
    fn current_path(&self) -> Path {
        let mut path = Path::root();
        for frame in &self.stack {
            match frame {
                Frame::Seq { items, .. } => path = path.index(items.len()),
                Frame::Map {
                    pending_key: Some(k),
                    ..
                } => path = path.field(&k.name),
                Frame::Map { .. } => {}
            }
        }
        path
    }

    fn limit(&mut self, pos: Pos, message: String) {
        if !self.failed {
            self.problems
                .error(&Path::root(), Some(pos), Code::InputLimit, message);
        }
        self.failed = true;
    }

    /// Places a finished node into its parent (or as the document root).
    fn place(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                self.docs += 1;
                if self.docs == 1 {
                    self.root = Some(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                pending_key,
                path,
                lines,
                ..
            }) => match pending_key.take() {
                Some(key) => {
                    if let Some(&line) = lines.get(&key.name) {
                        self.problems.error(
                            &path.field(&key.name),
                            Some(key.pos),
                            Code::DuplicateKey,
                            format!(
                                "key `{}` appears twice in this mapping (first on line {line})",
                                key.name
                            ),
                        );
                    } else {
                        lines.insert(key.name.clone(), key.pos.line);
                        entries.push((key, node));
                    }
                }
                None => {
                    let key_path = path.clone();
                    match node.value {
                        Value::Str(name) => {
                            *pending_key = Some(Key {
                                name,
                                pos: node.pos,
                            })
                        }
                        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                            // Plain scalars such as `1:` or `true:` are keys by their text; the
                            // resolver kept only the value, so render it back.
                            let name = match node.value {
                                Value::Null => "null".to_owned(),
                                Value::Bool(b) => b.to_string(),
                                Value::Int(i) => i.to_string(),
                                Value::Float(f) => f.to_string(),
                                _ => String::new(),
                            };
                            *pending_key = Some(Key {
                                name,
                                pos: node.pos,
                            });
                        }
                        Value::Seq(_) | Value::Map(_) => {
                            self.problems.error(
                                &key_path,
                                Some(node.pos),
                                Code::InvalidType,
                                "mapping keys must be plain strings, not lists or mappings",
                            );
                            *pending_key = Some(Key {
                                name: String::new(),
                                pos: node.pos,
                            });
                        }
                    }
                }
            },
        }
    }

    fn on_event(&mut self, event: Event<'_>, span: Span) {
        let pos = pos_of(&span);
        match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
            Event::DocumentStart(_) => {
                if self.docs >= 1 && !self.failed {
                    self.problems.error(
                        &Path::root(),
                        Some(pos),
                        Code::Syntax,
                        "the file holds more than one YAML document; a manifest is a single document",
                    );
                    self.failed = true;
                }
            }
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(node) => {
                    self.nodes += count_nodes(&node);
                    if self.nodes > MAX_NODES {
                        self.limit(pos, format!("the document expands to more than {MAX_NODES} values through aliases"));
                        return;
                    }
                    let node = Node { pos, ..node };
                    self.place(node, 0);
                }
                None => {
                    self.problems.error(
                        &self.current_path(),
                        Some(pos),
                        Code::Syntax,
                        "alias refers to an unknown anchor",
                    );
                    self.failed = true;
                }
            },
            Event::Scalar(text, style, anchor, tag) => {
                self.nodes += 1;
                if self.nodes > MAX_NODES {
                    self.limit(
                        pos,
                        format!("the document has more than {MAX_NODES} values"),
                    );
                    return;
                }
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                let value = match resolve_scalar(&text, style, tag.as_deref()) {
                    Ok(v) => v,
                    Err(message) => {
                        self.problems.error(
                            &self.current_path(),
                            Some(pos),
                            Code::InvalidType,
                            message,
                        );
                        Value::Str(text.into_owned())
                    }
                };
                self.place(Node { value, pos }, anchor);
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.nodes += 1;
                if self.stack.len() >= MAX_DEPTH {
                    self.limit(
                        pos,
                        format!("values are nested more than {MAX_DEPTH} levels deep"),
                    );
                    return;
                }
                let frame = if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq {
                        items: Vec::new(),
                        pos,
                        anchor,
                    }
                } else {
                    Frame::Map {
                        entries: Vec::new(),
                        pending_key: None,
                        pos,
                        anchor,
                        path: self.current_path(),
                        lines: HashMap::new(),
                    }
                };
                self.stack.push(frame);
            }
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Seq { items, pos, anchor }) => self.place(
                    Node {
                        value: Value::Seq(items),
                        pos,
                    },
                    anchor,
                ),
                Some(Frame::Map {
                    entries,
                    pos,
                    anchor,
                    ..
                }) => {
                    self.place(
                        Node {
                            value: Value::Map(entries),
                            pos,
                        },
                        anchor,
                    );
                }
                None => {}
            },
        }
    }
}

fn read_yaml(text: &str, problems: &mut Problems) -> Option<Node> {
    let mut builder = YamlBuilder {
        stack: Vec::new(),
        anchors: HashMap::new(),
        nodes: 0,
        docs: 0,
        root: None,
        problems,
        failed: false,
    };
    for item in Parser::new_from_str(text) {
        match item {
            Ok((event, span)) => {
                builder.on_event(event, span);
                if builder.failed {
                    return None;
                }
            }
            Err(err) => {
                let marker = err.marker();
                let pos = Pos {
                    line: u32::try_from(marker.line()).unwrap_or(u32::MAX),
                    column: u32::try_from(marker.col() + 1).unwrap_or(u32::MAX),
                };
                let info = if err.info().contains("recursion limit") {
                    format!("values are nested too deeply ({})", err.info())
                } else {
                    err.info().to_owned()
                };
                let code = if err.info().contains("recursion limit") {
                    Code::InputLimit
                } else {
                    Code::Syntax
                };
                builder.problems.error(
                    &Path::root(),
                    Some(pos),
                    code,
                    format!("invalid YAML: {info}"),
                );
                return None;
            }
        }
    }
    match builder.root {
        Some(root) => Some(root),
        None => Some(Node {
            value: Value::Null,
            pos: Pos { line: 1, column: 1 },
        }),
    }
}

/// Resolves a scalar by the YAML 1.2 core schema: plain `null`/`~`/empty, booleans, integers
/// (decimal, `0x`, `0o`) and floats (including `.inf` and `.nan`); everything else, and every
/// quoted or block scalar, is a string. The core-schema tags `!!str`, `!!int`, `!!float`,
/// `!!bool` and `!!null` force a type; other tags are refused.
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> Result<Value, String> {
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

// ---------------------------------------------------------------------------------------------
// JSON

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

fn read_json(text: &str, problems: &mut Problems) -> Option<Node> {
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
