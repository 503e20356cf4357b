//! The knowledge tools: an app names one of its rag slots, never a collection, and the host
//! resolves the install's binding to one of the tenant's collections in managed retrieval
//! (docs/platform.md, "Platform tools").

use std::sync::Arc;

use atrium_manifest::{RagScope, RagSlot};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scopes::Risk;
use crate::tools::{Fault, Name, PlatformTool, Tool, ToolContext, Whole};

/// The knowledge tools, for the catalogue.
pub(crate) const TOOLS: &[PlatformTool] = &[
    PlatformTool::of::<AddDocument>(),
    PlatformTool::of::<Search>(),
];

/// The slot named `slot`, the collection the tenant bound to it, and retrieval.
fn resolve<'a>(
    cx: &'a ToolContext<'_>,
    slot: &Name,
) -> Result<(&'a RagSlot, &'a str, &'a Arc<atrium_retrieval::Retrieval>), Fault> {
    let name = slot.as_str();
    let Some(slot) = cx.knowledge.slots.iter().find(|s| s.name == name) else {
        return Err(Fault::invalid(format!(
            "the app declares no knowledge slot `{name}`"
        )));
    };
    let Some(collection) = cx.knowledge.bindings.get(name).and_then(Value::as_str) else {
        return Err(Fault::invalid(format!(
            "knowledge slot `{name}` is not bound for this tenant"
        )));
    };
    let Some(retrieval) = cx.retrieval else {
        return Err(Fault::failed(
            &"managed retrieval is not running on this host",
        ));
    };
    Ok((slot, collection, retrieval))
}

/// `knowledge.query`.
pub(crate) struct Search;

/// The arguments of `knowledge.query`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// One of the app's knowledge slots.
    slot: Name,
    /// What to search for.
    query: String,
    /// How many matches (default 5).
    top_k: Option<Whole<1, 50>>,
}

/// One match of a search.
#[derive(Debug, Serialize)]
pub(crate) struct Match {
    text: String,
    title: String,
    score: f64,
    document_id: String,
}

/// `{matches}`, best first.
#[derive(Debug, Serialize)]
pub(crate) struct Matches {
    matches: Vec<Match>,
}

impl Tool for Search {
    const NAME: &'static str = "knowledge.query";
    const SCOPES: &'static [&'static str] = &["knowledge.read"];
    const DESCRIPTION: &'static str = "Searches the collection bound to knowledge slot `slot` for `query` (`top_k` 1 to 50, default 5). Answers `{matches: [{text, title, score, document_id}]}`.";
    const RISK: Risk = Risk::Low;
    type Args = SearchArgs;
    type Answer = Matches;

    async fn run(cx: &ToolContext<'_>, args: SearchArgs) -> Result<Matches, Fault> {
        let (_, collection, retrieval) = resolve(cx, &args.slot)?;
        let top_k = args.top_k.map_or(5, |k| k.0);
        let outcome = retrieval
            .query(
                cx.tenant,
                collection,
                &args.query,
                usize::try_from(top_k).unwrap_or(5),
            )
            .await
            .map_err(|e| Fault::invalid(e.to_string()))?;
        let matches = outcome
            .matches
            .into_iter()
            .map(|m| Match {
                text: m.text,
                title: m.title,
                score: m.score,
                document_id: m.document_id,
            })
            .collect();
        Ok(Matches { matches })
    }
}

/// `knowledge.add`.
pub(crate) struct AddDocument;

/// The arguments of `knowledge.add`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddArgs {
    /// One of the app's `read_write` knowledge slots.
    slot: Name,
    /// The document's title.
    title: Name,
    /// The document's text.
    text: String,
}

/// `{document_id, chunks}`.
#[derive(Debug, Serialize)]
pub(crate) struct Added {
    document_id: String,
    chunks: i64,
}

impl Tool for AddDocument {
    const NAME: &'static str = "knowledge.add";
    const SCOPES: &'static [&'static str] = &["knowledge.write"];
    const DESCRIPTION: &'static str = "Adds a document `{slot, title, text}` to the collection bound to a `read_write` knowledge slot. Answers `{document_id, chunks}`.";
    const RISK: Risk = Risk::Medium;
    type Args = AddArgs;
    type Answer = Added;

    async fn run(cx: &ToolContext<'_>, args: AddArgs) -> Result<Added, Fault> {
        let (slot, collection, retrieval) = resolve(cx, &args.slot)?;
        if slot.scope != RagScope::ReadWrite {
            return Err(Fault::invalid(format!(
                "knowledge slot `{}` is read-only",
                slot.name
            )));
        }
        let added = retrieval
            .add_document(cx.tenant, collection, args.title.as_str(), args.text, "app")
            .await
            .map_err(|e| Fault::invalid(e.to_string()))?;
        Ok(Added {
            document_id: added.document.id,
            chunks: added.document.chunks,
        })
    }
}
