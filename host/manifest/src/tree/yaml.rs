//! The YAML reader: saphyr's events, built into a [`Node`] tree.
//!
//! An event parser rather than a deserialiser, so that every value keeps its position, every
//! duplicate key is reported, and the limits (nesting depth, values counted through every
//! alias expansion) are checked as the tree grows, before hostile text can exhaust memory.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, Span};

use super::scalar::resolve_scalar;
use super::{Key, MAX_DEPTH, MAX_NODES, Node, Value};
use crate::problem::{Code, Path, Pos, Problems};

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

pub(super) fn read_yaml(text: &str, problems: &mut Problems) -> Option<Node> {
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
