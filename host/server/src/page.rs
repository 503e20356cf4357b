//! One list shape for every list that can grow: a page of at most `limit` items (default
//! [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]) under the list's own key, and `next_cursor`, an
//! opaque string to pass back as `cursor` for the next page, null on the last one:
//!
//! ```json
//! {"installs": [...], "next_cursor": "djE6bGVkZ2Vy"}
//! ```
//!
//! The /v1 API's lists keep the OpenAI list shape its clients read, with the same cursor:
//! `{"object": "list", "data": [...], "next_cursor": ...}` ([`Listed::OBJECT`]).
//!
//! A cursor names the last item of its page by the list's sort key, so a page boundary holds
//! while items are added or removed: nothing is skipped, nothing is answered twice. A client
//! must not build cursors; a malformed one is 400 naming `cursor`.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};

use crate::ApiError;

/// The page size without `limit`.
pub const DEFAULT_LIMIT: usize = 50;
/// The largest `limit`.
pub const MAX_LIMIT: usize = 200;

/// The version prefix of a cursor: a later encoding gets another, and old cursors are refused
/// with a clear error rather than misread.
const CURSOR_PREFIX: &str = "v1:";

/// `?limit=&cursor=` of a list request.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

/// Which page a list request asks for: the sort key to start after and the page size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// The sort key of the last item of the previous page.
    pub after: Option<String>,
    /// How many items at most.
    pub limit: usize,
}

impl PageRequest {
    /// The first page of `limit` items.
    #[must_use]
    pub fn first(limit: usize) -> Self {
        PageRequest { after: None, limit }
    }

    /// How many rows to read: one more than the page, to know whether another page follows.
    #[must_use]
    pub fn fetch(&self) -> i64 {
        i64::try_from(self.limit + 1).unwrap_or(i64::MAX)
    }

    /// The sort key of a list keyed by a time and an id ([`time_and_id`]), as the pair.
    pub fn after_time_and_id(&self) -> Result<Option<(jiff::Timestamp, &str)>, ApiError> {
        self.after
            .as_deref()
            .map(|key| {
                key.split_once(':')
                    .and_then(|(at, id)| {
                        let ms = at.parse::<i64>().ok()?;
                        Some((jiff::Timestamp::from_millisecond(ms).ok()?, id))
                    })
                    .ok_or_else(|| ApiError::field("cursor", "cursor is not one this list gave"))
            })
            .transpose()
    }
}

/// The sort key of a list ordered by a time (written in ms) and then an id that breaks ties:
/// read back by [`PageRequest::after_time_and_id`].
#[must_use]
pub fn time_and_id(at: jiff::Timestamp, id: &str) -> String {
    format!("{}:{id}", at.as_millisecond())
}

impl<S: Send + Sync> FromRequestParts<S> for PageRequest {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Query(query) = Query::<PageQuery>::try_from_uri(&parts.uri)
            .map_err(|e| ApiError::bad_request(e.body_text(), None))?;
        PageRequest::parse(query.limit.as_deref(), query.cursor.as_deref())
    }
}

impl PageRequest {
    /// The page that `?limit=&cursor=` ask for: for a list whose query also has filters, whose
    /// own query struct carries these two fields.
    pub fn parse(limit: Option<&str>, cursor: Option<&str>) -> Result<Self, ApiError> {
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(text) => match text.parse::<usize>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                _ => {
                    return Err(ApiError::field(
                        "limit",
                        format!("limit must be a whole number from 1 to {MAX_LIMIT}, not `{text}`"),
                    ));
                }
            },
        };
        let after = cursor.map(decode).transpose()?;
        Ok(PageRequest { after, limit })
    }
}

fn encode(key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{key}"))
}

fn decode(cursor: &str) -> Result<String, ApiError> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix(CURSOR_PREFIX).map(str::to_owned))
        .ok_or_else(|| {
            ApiError::field(
                "cursor",
                "cursor is not one this API gave: pass back `next_cursor` as it came",
            )
        })
}

/// An item of a list: the key its list is answered under.
pub trait Listed {
    /// The list's key in the answer (`installs`, `tokens`, ...; `data` in the /v1 API).
    const KEY: &'static str;
    /// The `object` member answered before the list, for the /v1 API's OpenAI list shape
    /// (`list`); none elsewhere.
    const OBJECT: Option<&'static str> = None;
}

/// An item of a list sorted by what the item shows: its sort key, for [`Page::of`]. A list
/// sorted by what its items do not show as is (a time in ms shown in seconds) is paged with
/// [`Page::keyed`] instead.
pub trait SortedBy: Listed {
    /// The item's sort key, unique within the list, in the order the list is read.
    fn sort_key(&self) -> String;
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// The cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
}

impl<T: SortedBy> Page<T> {
    /// The page of `rows`, read with [`PageRequest::fetch`] (one more than asked when more
    /// follow).
    #[must_use]
    pub fn of(mut rows: Vec<T>, request: &PageRequest) -> Self {
        let more = rows.len() > request.limit;
        rows.truncate(request.limit);
        let next_cursor = more
            .then(|| rows.last().map(|last| encode(&last.sort_key())))
            .flatten();
        Page {
            items: rows,
            next_cursor,
        }
    }
}

impl<T: Listed> Page<T> {
    /// The page of `rows` (read with [`PageRequest::fetch`]) whose sort key is `key`, each row
    /// answered as `view` makes it: for lists sorted by what the answer does not show as is.
    pub fn keyed<R>(
        mut rows: Vec<R>,
        request: &PageRequest,
        key: impl Fn(&R) -> String,
        view: impl FnMut(R) -> T,
    ) -> Self {
        let more = rows.len() > request.limit;
        rows.truncate(request.limit);
        let next_cursor = more
            .then(|| rows.last().map(|last| encode(&key(last))))
            .flatten();
        Page {
            items: rows.into_iter().map(view).collect(),
            next_cursor,
        }
    }

    /// The same page with each item mapped.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

impl<T: Listed + Serialize> Serialize for Page<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(object) = T::OBJECT {
            map.serialize_entry("object", object)?;
        }
        map.serialize_entry(T::KEY, &self.items)?;
        map.serialize_entry("next_cursor", &self.next_cursor)?;
        map.end()
    }
}

/// A client's reading of a page (the developer tool follows `next_cursor` with it): the
/// list under [`Listed::KEY`] and `next_cursor`; other members are ignored.
impl<'de, T: Listed + Deserialize<'de>> Deserialize<'de> for Page<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Listed + Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = Page<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "a page with `{}` and `next_cursor`", T::KEY)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Page<T>, A::Error> {
                let mut items = None;
                let mut next_cursor = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == T::KEY {
                        items = Some(map.next_value::<Vec<T>>()?);
                    } else if key == "next_cursor" {
                        next_cursor = map.next_value::<Option<String>>()?;
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(Page {
                    items: items.ok_or_else(|| serde::de::Error::missing_field(T::KEY))?,
                    next_cursor,
                })
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Serialize)]
    struct Item(String);

    impl Listed for Item {
        const KEY: &'static str = "items";
    }

    impl SortedBy for Item {
        fn sort_key(&self) -> String {
            self.0.clone()
        }
    }

    fn items(names: &[&str]) -> Vec<Item> {
        names.iter().map(|n| Item((*n).to_owned())).collect()
    }

    #[test]
    fn a_page_says_whether_another_follows_and_where_it_starts() {
        let request = PageRequest::first(2);
        assert_eq!(request.fetch(), 3);
        let page = Page::of(items(&["a", "b", "c"]), &request);
        let json = serde_json::to_value(&page).unwrap();
        assert_eq!(json["items"], serde_json::json!(["a", "b"]));
        let cursor = json["next_cursor"].as_str().unwrap();
        assert_eq!(decode(cursor).unwrap(), "b");
        // Exactly a page: no next one.
        let last = Page::of(items(&["c", "d"]), &request);
        assert_eq!(
            serde_json::to_value(&last).unwrap()["next_cursor"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn cursors_are_opaque_and_checked() {
        assert_eq!(decode(&encode("org/x y")).unwrap(), "org/x y");
        for bad in [
            "",
            "!!",
            &URL_SAFE_NO_PAD.encode("v0:a"),
            &URL_SAFE_NO_PAD.encode("a"),
        ] {
            assert!(decode(bad).is_err(), "{bad}");
        }
    }
}
