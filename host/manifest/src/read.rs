//! Typed reading of [`Node`]s with problem reporting: the building blocks of validation.
//!
//! Each reader checks the type of one value, reports a problem with the value's path and
//! position when it is wrong, and returns `None`, so validation goes on and finds every other
//! problem too. `null` counts as absent everywhere: `description:` with no value is the same
//! as leaving the field out.

use crate::problem::{Code, Path, Pos, Problems};
use crate::tree::{Key, Node, Value};

/// The state of one validation run.
pub(crate) struct Cx {
    pub(crate) problems: Problems,
    /// Whether the rules that name what this host provides apply (a heartbeat's skill and
    /// tool, [`crate::skills`]): when a manifest is published, not when a stored version is
    /// read again ([`crate::parse`]), so that a version published before keeps loading.
    pub(crate) host_rules: bool,
}

impl Cx {
    pub(crate) fn error(&mut self, path: &Path, pos: Pos, code: Code, message: impl Into<String>) {
        self.problems.error(path, Some(pos), code, message);
    }

    pub(crate) fn warning(
        &mut self,
        path: &Path,
        pos: Pos,
        code: Code,
        message: impl Into<String>,
    ) {
        self.problems.warning(path, Some(pos), code, message);
    }

    fn wrong_type(&mut self, path: &Path, node: &Node, expected: &str) {
        let hint = match (&node.value, expected) {
            (Value::Int(_) | Value::Float(_) | Value::Bool(_), "a string") => {
                "; quote the value to make it a string"
            }
            _ => "",
        };
        self.error(
            path,
            node.pos,
            Code::InvalidType,
            format!("expected {expected}, found {}{hint}", node.value.kind()),
        );
    }

    pub(crate) fn string<'n>(&mut self, path: &Path, node: &'n Node) -> Option<&'n str> {
        match &node.value {
            Value::Str(s) => Some(s),
            _ => {
                self.wrong_type(path, node, "a string");
                None
            }
        }
    }

    pub(crate) fn boolean(&mut self, path: &Path, node: &Node) -> Option<bool> {
        match node.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.wrong_type(path, node, "a boolean (true or false)");
                None
            }
        }
    }

    /// An integer in `min..=max`.
    pub(crate) fn integer(&mut self, path: &Path, node: &Node, min: i64, max: i64) -> Option<i64> {
        let value = match node.value {
            Value::Int(i) => i,
            Value::Float(f) if f.fract() == 0.0 && f.is_finite() => {
                if f < min as f64 || f > max as f64 {
                    self.error(
                        path,
                        node.pos,
                        Code::OutOfRange,
                        format!("must be between {min} and {max} (got {f})"),
                    );
                    return None;
                }
                f as i64
            }
            _ => {
                self.wrong_type(path, node, "an integer");
                return None;
            }
        };
        if value < min || value > max {
            self.error(
                path,
                node.pos,
                Code::OutOfRange,
                format!("must be between {min} and {max} (got {value})"),
            );
            return None;
        }
        Some(value)
    }

    /// A finite number (integer or float), optionally within bounds.
    pub(crate) fn number(
        &mut self,
        path: &Path,
        node: &Node,
        range: Option<(f64, f64)>,
    ) -> Option<f64> {
        let value = match node.value {
            Value::Int(i) => i as f64,
            Value::Float(f) if f.is_finite() => f,
            Value::Float(_) => {
                self.error(path, node.pos, Code::OutOfRange, "must be a finite number");
                return None;
            }
            _ => {
                self.wrong_type(path, node, "a number");
                return None;
            }
        };
        if let Some((min, max)) = range
            && (value < min || value > max)
        {
            self.error(
                path,
                node.pos,
                Code::OutOfRange,
                format!("must be between {min:?} and {max:?} (got {value})"),
            );
            return None;
        }
        Some(value)
    }

    pub(crate) fn list<'n>(&mut self, path: &Path, node: &'n Node) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            _ => {
                self.wrong_type(path, node, "a list");
                None
            }
        }
    }

    /// A list of at most `max` entries (`None` for no limit); a longer list is reported and
    /// its entries are still checked.
    pub(crate) fn list_max<'n>(
        &mut self,
        path: &Path,
        node: &'n Node,
        max: usize,
        what: &str,
    ) -> Option<&'n [Node]> {
        let items = self.list(path, node)?;
        if items.len() > max {
            self.error(
                path,
                node.pos,
                Code::Count,
                format!("at most {max} {what} are allowed (found {})", items.len()),
            );
        }
        Some(items)
    }

    /// A list of strings; entries of another type are reported and skipped.
    pub(crate) fn string_list<'n>(
        &mut self,
        path: &Path,
        node: &'n Node,
    ) -> Vec<(Path, &'n Node, &'n str)> {
        let Some(items) = self.list(path, node) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let p = path.index(i);
            if let Some(s) = self.string(&p, item) {
                out.push((p, item, s));
            }
        }
        out
    }

    /// Reports each repeated value of a list of strings as `duplicate`.
    pub(crate) fn no_duplicates(&mut self, entries: &[(Path, &Node, &str)], what: &str) {
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        for (path, node, value) in entries {
            if !seen.insert(*value) {
                self.error(
                    path,
                    node.pos,
                    Code::Duplicate,
                    format!("{what} `{value}` is listed more than once"),
                );
            }
        }
    }

    /// Checks the length of a string in Unicode characters.
    pub(crate) fn length(
        &mut self,
        path: &Path,
        node: &Node,
        value: &str,
        min: usize,
        max: usize,
    ) -> bool {
        let len = value.chars().count();
        if len < min {
            let message = if min == 1 {
                "must not be empty".to_owned()
            } else {
                format!("must be {min} to {max} characters long (got {len})")
            };
            self.error(path, node.pos, Code::Length, message);
            false
        } else if len > max {
            let message = if min <= 1 {
                format!("must be at most {max} characters long (got {len})")
            } else {
                format!("must be {min} to {max} characters long (got {len})")
            };
            self.error(path, node.pos, Code::Length, message);
            false
        } else {
            true
        }
    }
}

/// Names for a message: all of them when few, else the first ten and how many more, so a
/// message never grows with the size of a hostile list.
pub(crate) fn listing<S: AsRef<str>>(names: &[S]) -> String {
    const SHOWN: usize = 10;
    let shown: Vec<&str> = names.iter().take(SHOWN).map(AsRef::as_ref).collect();
    let mut out = shown.join(", ");
    if names.len() > SHOWN {
        out.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    out
}

/// A mapping being read field by field; [`Obj::finish`] reports the fields nobody asked for.
pub(crate) struct Obj<'n> {
    pub(crate) path: Path,
    pub(crate) pos: Pos,
    entries: &'n [(Key, Node)],
    used: Vec<bool>,
}

impl<'n> Obj<'n> {
    /// Starts reading `node` as a mapping; reports a type problem and returns `None` otherwise.
    pub(crate) fn new(cx: &mut Cx, path: Path, node: &'n Node) -> Option<Obj<'n>> {
        match &node.value {
            Value::Map(entries) => Some(Obj {
                path,
                pos: node.pos,
                entries,
                used: vec![false; entries.len()],
            }),
            _ => {
                cx.wrong_type(&path, node, "a mapping");
                None
            }
        }
    }

    pub(crate) fn at(&self, key: &str) -> Path {
        self.path.field(key)
    }

    /// The value of `key`, unless absent or null.
    pub(crate) fn get(&mut self, key: &str) -> Option<&'n Node> {
        let i = self.entries.iter().position(|(k, _)| k.name == key)?;
        self.used[i] = true;
        let node = &self.entries[i].1;
        (!matches!(node.value, Value::Null)).then_some(node)
    }

    /// Whether `key` is written (even as null).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k.name == key)
    }

    /// The position of `key` itself, when written.
    pub(crate) fn key_pos(&self, key: &str) -> Option<Pos> {
        self.entries
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(k, _)| k.pos)
    }

    /// The value of a required field; reports `required` at the mapping when missing.
    pub(crate) fn require(&mut self, cx: &mut Cx, key: &str, what: &str) -> Option<&'n Node> {
        let node = self.get(key);
        if node.is_none() {
            cx.error(
                &self.at(key),
                self.key_pos(key).unwrap_or(self.pos),
                Code::Required,
                format!("`{key}` is required: {what}"),
            );
        }
        node
    }

    pub(crate) fn req_string(
        &mut self,
        cx: &mut Cx,
        key: &str,
        what: &str,
    ) -> Option<(&'n Node, &'n str)> {
        let node = self.require(cx, key, what)?;
        let value = cx.string(&self.at(key), node)?;
        Some((node, value))
    }

    pub(crate) fn opt_string(&mut self, cx: &mut Cx, key: &str) -> Option<(&'n Node, &'n str)> {
        let node = self.get(key)?;
        let value = cx.string(&self.at(key), node)?;
        Some((node, value))
    }

    /// An optional string with a maximum length, owned.
    pub(crate) fn opt_text(&mut self, cx: &mut Cx, key: &str, max: usize) -> Option<String> {
        let (node, value) = self.opt_string(cx, key)?;
        cx.length(&self.at(key), node, value, 0, max);
        Some(value.to_owned())
    }

    pub(crate) fn bool_or(&mut self, cx: &mut Cx, key: &str, default: bool) -> bool {
        self.get(key)
            .and_then(|node| cx.boolean(&self.at(key), node))
            .unwrap_or(default)
    }

    /// Reports every field that was not read, naming the allowed ones and the closest match.
    /// A misspelt required field is one problem, not two: the `required` problem of the field
    /// it was meant to be is folded into the unknown field's.
    pub(crate) fn finish(self, cx: &mut Cx, allowed: &[&str]) {
        for ((key, _), used) in self.entries.iter().zip(&self.used) {
            if *used || allowed.contains(&key.name.as_str()) {
                continue;
            }
            let mut message = format!("unknown field `{}`", key.name);
            if let Some(close) = closest(&key.name, allowed) {
                message.push_str(&format!("; did you mean `{close}`?"));
                if !self.has(close)
                    && let Some(required) = cx.problems.take_required(&self.path, close)
                {
                    message.push(' ');
                    message.push_str(required.message.trim_end_matches('.'));
                    message.push('.');
                }
            }
            if key.name == "<<" {
                message.push_str("; YAML merge keys are not supported");
            }
            // A sentence of its own, and never after a question mark's period.
            if !message.ends_with(['?', '.']) {
                message.push('.');
            }
            message.push_str(&format!(" Allowed fields here: {}", allowed.join(", ")));
            cx.error(
                &self.path.field(&key.name),
                key.pos,
                Code::UnknownField,
                message,
            );
        }
    }
}

/// The allowed name closest to `name`, when it is close enough to be a likely typo.
fn closest<'a>(name: &str, allowed: &[&'a str]) -> Option<&'a str> {
    if name.len() > 64 {
        return None;
    }
    let name = name.to_ascii_lowercase();
    allowed
        .iter()
        .map(|candidate| (edit_distance(&name, candidate), *candidate))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(
            closest("agent_visble", &["name", "agent_visible"]),
            Some("agent_visible")
        );
        assert_eq!(closest("apiversion", &["apiVersion"]), Some("apiVersion"));
        assert_eq!(closest("zzzzzz", &["name"]), None);
    }
}
