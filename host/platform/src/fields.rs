//! How a JSON value that breaks its type is named: by the path of the field that broke it
//! (`roles.fast.tier`, `members[0].key`), whatever the value sent. The API's request bodies
//! (`host/server/src/extract.rs`) and the platform tools' arguments (`tools`) are read
//! through it, so that both name a field the same way.

use serde::de::DeserializeOwned;

/// A field that breaks its type: its path (none for the value itself) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path: `roles.fast.tier`, `members[0].key`; none for the value itself.
    pub path: Option<String>,
    /// What serde, or the field's own type, said is wrong.
    pub message: String,
    /// Whether the JSON itself is malformed (rather than a field of the wrong type).
    pub syntax: bool,
}

impl FieldError {
    /// `` `path`: message ``, or the message alone for the value itself.
    #[must_use]
    pub fn sentence(&self) -> String {
        match &self.path {
            Some(path) => format!("`{path}`: {}", self.message),
            None => self.message.clone(),
        }
    }
}

/// What a `serde_path_to_error` error names: a missing field at the path of its object (an
/// unknown one is on the path already).
#[must_use]
pub fn named(e: &serde_path_to_error::Error<serde_json::Error>) -> FieldError {
    let inner = e.inner();
    let mut path = field_path(e.path());
    let message = inner.to_string();
    if let Some(rest) = message.strip_prefix("missing field `")
        && let Some((name, _)) = rest.split_once('`')
    {
        path = Some(match path {
            Some(parent) => format!("{parent}.{name}"),
            None => name.to_owned(),
        });
    }
    FieldError {
        path,
        message,
        syntax: inner.is_syntax() || inner.is_eof(),
    }
}

/// `value` as a `T`, or the field that breaks `T`'s type.
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(value).map_err(|e| named(&e))
}

/// A path as clients see it: `roles.fast.tier`, `members[0].key`; none for the value itself.
fn field_path(path: &serde_path_to_error::Path) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut shown = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => shown.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !shown.is_empty() {
                    shown.push('.');
                }
                shown.push_str(key);
            }
            // A segment serde cannot name (a flattened or untagged part): the path so far.
            Segment::Unknown => break,
        }
    }
    (!shown.is_empty()).then_some(shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Member {
        key: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Room {
        members: Vec<Member>,
    }

    #[test]
    fn a_field_is_named_by_its_path_and_a_missing_one_by_its_own_name() {
        let e = from_value::<Room>(json!({"members": [{"key": "a"}, {"key": 5}]})).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("members[1].key"));
        assert!(e.sentence().starts_with("`members[1].key`: invalid type"));
        let e = from_value::<Room>(json!({"members": [{}]})).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("members[0].key"));
        let e = from_value::<Room>(json!({"members": [], "colour": 1})).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("colour"));
        let e = from_value::<Room>(json!({})).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("members"));
        assert!(!e.syntax);
    }
}
