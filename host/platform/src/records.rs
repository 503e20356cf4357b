//! The app's own records: typed JSON objects of one install, which no other app or tenant
//! reaches. The platform tools `records.*` (docs/platform.md, "Platform tools").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::scopes::Risk;
use crate::tools::{Fault, Name, PlatformTool, Tool, ToolContext};

/// The records tools, for the catalogue.
pub(crate) const TOOLS: &[PlatformTool] = &[
    PlatformTool::of::<Put>(),
    PlatformTool::of::<Get>(),
    PlatformTool::of::<Query>(),
    PlatformTool::of::<Update>(),
    PlatformTool::of::<Delete>(),
];

/// The most records one query answers.
const MAX_QUERY: i64 = 1_000;

/// The longest record id, in characters.
const MAX_ID_CHARS: usize = 200;

/// A record as stored: a JSON object with its `id`.
type Record = Map<String, Value>;

/// `{id}`: the id of what was stored.
#[derive(Debug, Serialize)]
pub(crate) struct Stored {
    id: String,
}

/// `records.put`.
pub(crate) struct Put;

/// The arguments of `records.put`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PutArgs {
    /// The type of record.
    record_type: Name,
    /// The record, a JSON object: its `id` (a string of 1 to 200 characters) is kept, or
    /// one is generated.
    record: Record,
}

impl Tool for Put {
    const NAME: &'static str = "records.put";
    const DESCRIPTION: &'static str = "Stores `record` (an object) as a record of `record_type`; its `id` is kept or generated. Answers `{id}`.";
    const RISK: Risk = Risk::Medium;
    type Args = PutArgs;
    type Answer = Stored;

    async fn run(cx: &ToolContext<'_>, args: PutArgs) -> Result<Stored, Fault> {
        let mut record = args.record;
        let id = match record.get("id") {
            Some(Value::String(id)) if !id.is_empty() && id.chars().count() <= MAX_ID_CHARS => {
                id.clone()
            }
            Some(_) => {
                return Err(Fault::invalid(format!(
                    "`record.id`: must be a string of 1 to {MAX_ID_CHARS} characters"
                )));
            }
            None => {
                let mut bytes = [0u8; 8];
                getrandom::fill(&mut bytes).map_err(|e| Fault::failed(&e))?;
                let id = format!("rec_{}", crate::keyfile::hex_encode(&bytes));
                record.insert("id".into(), Value::String(id.clone()));
                id
            }
        };
        cx.store()
            .put_record(&cx.install(), &id, args.record_type.as_str(), &record)
            .await
            .map_err(|e| Fault::failed(&e))?;
        Ok(Stored { id })
    }
}

/// The arguments of a tool about one record.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ById {
    /// The record's id.
    id: Name,
}

/// `records.get`.
pub(crate) struct Get;

impl Tool for Get {
    const NAME: &'static str = "records.get";
    const DESCRIPTION: &'static str = "One record by `id`, or null.";
    const RISK: Risk = Risk::Low;
    type Args = ById;
    type Answer = Option<Record>;

    async fn run(cx: &ToolContext<'_>, args: ById) -> Result<Option<Record>, Fault> {
        let found = cx
            .store()
            .record(&cx.install(), args.id.as_str())
            .await
            .map_err(|e| Fault::failed(&e))?;
        Ok(found.map(|r| r.data))
    }
}

/// `records.query`.
pub(crate) struct Query;

/// The arguments of `records.query`: the type, and the fields a record must equal.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct QueryArgs {
    /// The type of record.
    record_type: Name,
    /// A top-level field of the record and the value it must equal.
    #[serde(flatten)]
    filter: Map<String, Value>,
}

impl Tool for Query {
    const NAME: &'static str = "records.query";
    const DESCRIPTION: &'static str = "The records of `record_type` whose top-level fields equal every other argument, oldest first (at most 1,000).";
    const RISK: Risk = Risk::Low;
    type Args = QueryArgs;
    type Answer = Vec<Record>;

    async fn run(cx: &ToolContext<'_>, args: QueryArgs) -> Result<Vec<Record>, Fault> {
        let records = cx
            .store()
            .records(&cx.install(), args.record_type.as_str(), MAX_QUERY)
            .await
            .map_err(|e| Fault::failed(&e))?;
        Ok(records
            .into_iter()
            .filter(|r| args.filter.iter().all(|(k, v)| r.data.get(k) == Some(v)))
            .map(|r| r.data)
            .collect())
    }
}

/// `records.update`.
pub(crate) struct Update;

/// The arguments of `records.update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateArgs {
    /// The record's id.
    id: Name,
    /// The fields to set (its `id` stays).
    fields: Map<String, Value>,
}

/// `{ok: true}`.
#[derive(Debug, Serialize)]
pub(crate) struct Done {
    ok: bool,
}

impl Tool for Update {
    const NAME: &'static str = "records.update";
    const DESCRIPTION: &'static str = "Merges `fields` into the record `id`. Answers `{ok: true}`.";
    const RISK: Risk = Risk::Medium;
    type Args = UpdateArgs;
    type Answer = Done;

    async fn run(cx: &ToolContext<'_>, args: UpdateArgs) -> Result<Done, Fault> {
        let install = cx.install();
        let id = args.id.as_str();
        let Some(mut record) = cx
            .store()
            .record(&install, id)
            .await
            .map_err(|e| Fault::failed(&e))?
        else {
            return Err(Fault::invalid(format!("there is no record `{id}`")));
        };
        for (k, v) in args.fields {
            if k != "id" {
                record.data.insert(k, v);
            }
        }
        cx.store()
            .put_record(&install, id, &record.record_type, &record.data)
            .await
            .map_err(|e| Fault::failed(&e))?;
        Ok(Done { ok: true })
    }
}

/// `records.delete`.
pub(crate) struct Delete;

/// `{deleted}`: whether there was such a record.
#[derive(Debug, Serialize)]
pub(crate) struct Deleted {
    deleted: bool,
}

impl Tool for Delete {
    const NAME: &'static str = "records.delete";
    const DESCRIPTION: &'static str =
        "Deletes one of the app's records of this install by `id`. Answers `{deleted}`.";
    const RISK: Risk = Risk::High;
    type Args = ById;
    type Answer = Deleted;

    async fn run(cx: &ToolContext<'_>, args: ById) -> Result<Deleted, Fault> {
        let deleted = cx
            .store()
            .delete_record(&cx.install(), args.id.as_str())
            .await
            .map_err(|e| Fault::failed(&e))?;
        Ok(Deleted { deleted })
    }
}
