//! Document-template defaults: JSON files under `defaults/templates/`, one template each.
//!
//! A template has `slug` (`^[a-z][a-z0-9_]*$`, required), `name` (required), `description`,
//! `sections` (objects with `type`, `id`, `content`, all strings; ids unique) and `metadata`
//! (an object). Unknown fields are refused, as in the manifest.

use serde::{Deserialize, Serialize};

use crate::problem::{Code, Path, Problem, Problems};
use crate::read::{Cx, Obj};
use crate::rules;
use crate::tree::{self, Format, Value};

/// A validated document template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocTemplate {
    /// Unique slug.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Sections in order.
    pub sections: Vec<Section>,
    /// Free-form metadata.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// One section of a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// Section type, for example `markdown`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Section id, unique in the template.
    pub id: String,
    /// Content.
    pub content: String,
}

/// Validates one template file's JSON text.
pub fn validate_template(text: &str) -> Result<DocTemplate, Vec<Problem>> {
    let mut cx = Cx {
        problems: Problems::default(),
        host_rules: true,
    };
    let template = tree::read(text, Format::Json, &mut cx.problems)
        .and_then(|root| read_template(&mut cx, &root));
    match template {
        Some(t) if !cx.problems.has_errors() => Ok(t),
        _ => Err(cx.problems.into_sorted()),
    }
}

fn read_template(cx: &mut Cx, root: &tree::Node) -> Option<DocTemplate> {
    let mut obj = Obj::new(cx, Path::root(), root)?;
    let mut t = DocTemplate {
        slug: String::new(),
        name: String::new(),
        description: None,
        sections: Vec::new(),
        metadata: serde_json::Map::new(),
    };
    if let Some((node, slug)) = obj.req_string(
        cx,
        "slug",
        "the template's slug, matching ^[a-z][a-z0-9_]*$",
    ) {
        if !rules::is_template_slug(slug) {
            cx.error(
                &obj.at("slug"),
                node.pos,
                Code::Pattern,
                format!("`{slug}` must match ^[a-z][a-z0-9_]*$"),
            );
        }
        t.slug = slug.to_owned();
    }
    if let Some((node, name)) = obj.req_string(cx, "name", "the template's name") {
        cx.length(&obj.at("name"), node, name, 1, 200);
        t.name = name.to_owned();
    }
    t.description = obj.opt_string(cx, "description").map(|(_, d)| d.to_owned());
    if let Some(node) = obj.get("sections") {
        let path = obj.at("sections");
        let mut section_ids = std::collections::HashSet::new();
        for (i, item) in cx.list(&path, node).unwrap_or_default().iter().enumerate() {
            let Some(mut s) = Obj::new(cx, path.index(i), item) else {
                continue;
            };
            let kind = s.req_string(cx, "type", "the section type, for example `markdown`");
            let id = s.req_string(cx, "id", "the section id");
            let content = s.req_string(cx, "content", "the section content");
            if let Some((n, id)) = id
                && !section_ids.insert(id)
            {
                cx.error(
                    &s.at("id"),
                    n.pos,
                    Code::Duplicate,
                    format!("section id `{id}` is used twice"),
                );
            }
            s.finish(cx, &["type", "id", "content"]);
            if let (Some((_, kind)), Some((_, id)), Some((_, content))) = (kind, id, content) {
                t.sections.push(Section {
                    kind: kind.to_owned(),
                    id: id.to_owned(),
                    content: content.to_owned(),
                });
            }
        }
    }
    if let Some(node) = obj.get("metadata") {
        match (&node.value, node.to_json()) {
            (Value::Map(_), serde_json::Value::Object(map)) => t.metadata = map,
            _ => cx.error(
                &obj.at("metadata"),
                node.pos,
                Code::InvalidType,
                format!("expected an object, found {}", node.value.kind()),
            ),
        }
    }
    obj.finish(cx, &["slug", "name", "description", "sections", "metadata"]);
    Some(t)
}

/// Reports templates whose slugs repeat; `templates` pairs each file name with its template.
#[must_use]
pub fn duplicate_slugs(templates: &[(String, DocTemplate)]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut first_file: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for (file, t) in templates {
        if let Some(first) = first_file.get(t.slug.as_str()).copied() {
            out.push((
                file.clone(),
                format!("slug `{}` is already used by {first}", t.slug),
            ));
        } else {
            first_file.insert(&t.slug, file);
        }
    }
    out
}
