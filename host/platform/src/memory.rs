//! Agent memory: the entries an app's agent writes and reads back, of its own install, never
//! another app's or tenant's. The platform tools `memory.*` (docs/platform.md); in the agent
//! runner, the running agent's own memory whatever agent the model names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::scopes::Risk;
use crate::tools::{Fault, Name, PlatformTool, Text, Tool, ToolContext, Whole};

/// The memory tools, for the catalogue.
pub(crate) const TOOLS: &[PlatformTool] = &[
    PlatformTool::of::<QueryMemory>(),
    PlatformTool::of::<WriteMemory>(),
];

/// The longest memory entry, in characters.
pub const MAX_MEMORY_CONTENT_CHARS: usize = 8_000;
/// The longest memory kind, in characters.
pub const MAX_MEMORY_KIND_CHARS: usize = 64;

/// A memory kind: 1 to 64 characters.
type Kind = Text<1, MAX_MEMORY_KIND_CHARS>;

/// `agent`, checked to be one of the install's agents.
fn own_agent<'a>(cx: &ToolContext<'_>, agent: &'a Name) -> Result<&'a str, Fault> {
    let agents = &cx.knowledge.agents;
    let agent = agent.as_str();
    if agents.iter().any(|a| a == agent) {
        return Ok(agent);
    }
    Err(Fault::new(
        atrium_manifest::sandbox::Decision::UnknownAgent,
        format!(
            "`{agent}` is not an agent of this app ({})",
            agents.join(", ")
        ),
    ))
}

/// `memory.query`.
pub(crate) struct QueryMemory;

/// The arguments of `memory.query`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct QueryArgs {
    /// The app's agent whose memory to read.
    agent: Name,
    /// Only entries of this kind.
    kind: Option<Kind>,
    /// At most this many entries (default 20).
    limit: Option<Whole<1, 100>>,
}

/// One memory entry, as the tool answers it.
#[derive(Debug, Serialize)]
pub(crate) struct Entry {
    id: String,
    kind: String,
    content: String,
    data: Map<String, Value>,
    /// ISO-8601.
    created_at: String,
}

/// `{entries}`, newest first.
#[derive(Debug, Serialize)]
pub(crate) struct Entries {
    entries: Vec<Entry>,
}

impl Tool for QueryMemory {
    const NAME: &'static str = "memory.query";
    const SCOPES: &'static [&'static str] = &["memory.read"];
    const DESCRIPTION: &'static str = "The memory entries of the app's agent `agent` (in the agent runner: the running agent), newest first: of `kind` when given, at most `limit` (1 to 100, default 20). Answers `{entries: [{id, kind, content, data, created_at}]}`.";
    const RISK: Risk = Risk::Low;
    const RUNNER_FILLS_AGENT: Option<&'static str> = Some("agent");
    type Args = QueryArgs;
    type Answer = Entries;

    async fn run(cx: &ToolContext<'_>, args: QueryArgs) -> Result<Entries, Fault> {
        let agent = own_agent(cx, &args.agent)?;
        let limit = args.limit.map_or(20, |l| l.0);
        let kind = args.kind.as_ref().map(Text::as_str);
        let entries = cx
            .store()
            .memories(&cx.install(), agent, kind, limit)
            .await
            .map_err(|e| Fault::failed(&e))?;
        let entries = entries
            .into_iter()
            .map(|m| Entry {
                id: m.id,
                kind: m.kind,
                content: m.content,
                data: m.data,
                created_at: m.created_at.to_string(),
            })
            .collect();
        Ok(Entries { entries })
    }
}

/// `memory.write`.
pub(crate) struct WriteMemory;

/// The arguments of `memory.write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    /// The app's agent whose memory to write.
    agent: Name,
    /// What kind of entry this is: 1 to 64 characters.
    kind: Kind,
    /// The entry: at most 8,000 characters.
    content: Text<0, MAX_MEMORY_CONTENT_CHARS>,
    /// Structured data kept with it.
    data: Option<Map<String, Value>>,
}

/// `{id}`.
#[derive(Debug, Serialize)]
pub(crate) struct Written {
    id: String,
}

impl Tool for WriteMemory {
    const NAME: &'static str = "memory.write";
    const SCOPES: &'static [&'static str] = &["memory.write"];
    const DESCRIPTION: &'static str = "Writes a memory entry `{kind, content, data?}` of the app's agent `agent` (in the agent runner: the running agent): `kind` 1 to 64 characters, `content` at most 8,000, `data` an object. Answers `{id}`.";
    const RISK: Risk = Risk::Medium;
    const RUNNER_FILLS_AGENT: Option<&'static str> = Some("agent");
    type Args = WriteArgs;
    type Answer = Written;

    async fn run(cx: &ToolContext<'_>, args: WriteArgs) -> Result<Written, Fault> {
        let agent = own_agent(cx, &args.agent)?;
        let data = args.data.unwrap_or_default();
        let entry = cx
            .store()
            .put_memory(
                &cx.install(),
                agent,
                args.kind.as_str(),
                args.content.as_str(),
                &data,
            )
            .await
            .map_err(|e| Fault::failed(&e))?;
        Ok(Written { id: entry.id })
    }
}
