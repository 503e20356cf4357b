//! The platform tools apps reach through `tools.call`: a documented catalogue, each with the
//! scopes an install must hold (docs/platform.md): the app's own records, the knowledge
//! collections bound to its rag slots, and chat through the /v1 gateway, billed to the tenant.

use atrium_manifest::sandbox::{Decision, ToolRefusal};
use atrium_runtime::ToolCallError;
use atrium_store::{InstallKey, Record, Store, TenantKey};

use crate::scopes::Risk;
use serde_json::{Map, Value, json};

/// A platform tool.
#[derive(Debug, Clone, Copy)]
pub struct PlatformTool {
    /// Its name in `tools.call`.
    pub name: &'static str,
    /// The scopes the install must hold.
    pub scopes: &'static [&'static str],
    /// What it does.
    pub description: &'static str,
    /// The JSON schema of its arguments, as the agent runner describes it to a model.
    pub parameters: &'static str,
    /// How much a call exposes, in the scope catalogue's terms: at least the risk of each of
    /// its scopes; a tool that changes data or spends money is not LOW. A heartbeat's
    /// pre-filter runs only LOW-risk tools.
    pub risk: Risk,
}

/// Every platform tool, by name: exactly the names of
/// [`atrium_manifest::skills::PLATFORM_TOOLS`], the list the validator holds a heartbeat's
/// skill and tool to (a test of the pre-filter checks that they agree).
pub const TOOLS: &[PlatformTool] = &[
    PlatformTool {
        name: "chat.complete",
        scopes: &[],
        description: "A chat completion through the host's gateway: the body of /v1/chat/completions (`messages`, and `tier`, `provider`, `model`, `contains_pii` and the OpenAI parameters), not streamed. Billed to the install's tenant, the app named in the usage record. Answers `{content, message, finish_reason, model, provider, usage: {prompt_tokens, completion_tokens, total_tokens, cost_usd}}`.",
        parameters: r#"{"type":"object","properties":{"messages":{"type":"array","items":{"type":"object"}},"tier":{"type":"string"},"provider":{"type":"string"},"model":{"type":"string"}},"required":["messages"]}"#,
        risk: Risk::Medium,
    },
    PlatformTool {
        name: "knowledge.add",
        scopes: &["knowledge.write"],
        description: "Adds a document `{slot, title, text}` to the collection bound to a `read_write` knowledge slot. Answers `{document_id, chunks}`.",
        parameters: r#"{"type":"object","properties":{"slot":{"type":"string"},"title":{"type":"string"},"text":{"type":"string"}},"required":["slot","title","text"],"additionalProperties":false}"#,
        risk: Risk::Medium,
    },
    PlatformTool {
        name: "knowledge.query",
        scopes: &["knowledge.read"],
        description: "Searches the collection bound to knowledge slot `slot` for `query` (`top_k` 1 to 50, default 5). Answers `{matches: [{text, title, score, document_id}]}`.",
        parameters: r#"{"type":"object","properties":{"slot":{"type":"string"},"query":{"type":"string"},"top_k":{"type":"integer","minimum":1,"maximum":50}},"required":["slot","query"],"additionalProperties":false}"#,
        risk: Risk::Low,
    },
    PlatformTool {
        name: "memory.query",
        scopes: &["memory.read"],
        description: "The memory entries of the app's agent `agent` (in the agent runner: the running agent), newest first: of `kind` when given, at most `limit` (1 to 100, default 20). Answers `{entries: [{id, kind, content, data, created_at}]}`.",
        parameters: r#"{"type":"object","properties":{"agent":{"type":"string"},"kind":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100}},"additionalProperties":false}"#,
        risk: Risk::Low,
    },
    PlatformTool {
        name: "memory.write",
        scopes: &["memory.write"],
        description: "Writes a memory entry `{kind, content, data?}` of the app's agent `agent` (in the agent runner: the running agent): `kind` 1 to 64 characters, `content` at most 8,000, `data` an object. Answers `{id}`.",
        parameters: r#"{"type":"object","properties":{"agent":{"type":"string"},"kind":{"type":"string"},"content":{"type":"string"},"data":{"type":"object"}},"required":["kind","content"],"additionalProperties":false}"#,
        risk: Risk::Medium,
    },
    PlatformTool {
        name: "rooms.messages",
        scopes: &["rooms.read"],
        description: "The timeline of room `room_id` that the app's agent `from_agent` is a member of, newest first: at most `limit` messages (1 to 100, default 20) stored before `before` (the `created_at` of a message, for the next page). Answers `{messages: [{id, seq, sender_type, sender_ref, sender_display, content, mentions, metadata, created_at}]}`.",
        parameters: r#"{"type":"object","properties":{"room_id":{"type":"string"},"from_agent":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100},"before":{"type":"string"}},"required":["room_id","from_agent"],"additionalProperties":false}"#,
        risk: Risk::Low,
    },
    PlatformTool {
        name: "records.delete",
        scopes: &[],
        description: "Deletes one of the app's records of this install by `id`.",
        parameters: r#"{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}"#,
        risk: Risk::High,
    },
    PlatformTool {
        name: "records.get",
        scopes: &[],
        description: "One record by `id`, or null.",
        parameters: r#"{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}"#,
        risk: Risk::Low,
    },
    PlatformTool {
        name: "records.put",
        scopes: &[],
        description: "Stores `record` (an object) as a record of `record_type`; its `id` is kept or generated. Answers `{id}`.",
        parameters: r#"{"type":"object","properties":{"record_type":{"type":"string"},"record":{"type":"object"}},"required":["record_type","record"],"additionalProperties":false}"#,
        risk: Risk::Medium,
    },
    PlatformTool {
        name: "records.query",
        scopes: &[],
        description: "The records of `record_type` whose top-level fields equal every other argument, oldest first (at most 1,000).",
        parameters: r#"{"type":"object","properties":{"record_type":{"type":"string"}},"required":["record_type"],"additionalProperties":{"description":"a top-level field of the record and the value it must equal"}}"#,
        risk: Risk::Low,
    },
    PlatformTool {
        name: "records.update",
        scopes: &[],
        description: "Merges `fields` into the record `id`. Answers `{ok: true}`.",
        parameters: r#"{"type":"object","properties":{"id":{"type":"string"},"fields":{"type":"object"}},"required":["id","fields"],"additionalProperties":false}"#,
        risk: Risk::Medium,
    },
];

/// The most records one query answers.
const MAX_QUERY: i64 = 1_000;

fn refuse(tool: &str, decision: Decision, message: impl Into<String>) -> ToolCallError {
    ToolCallError::from(ToolRefusal::new(tool, decision, message))
}

fn failed(tool: &str, error: &dyn std::fmt::Display) -> ToolCallError {
    refuse(
        tool,
        Decision::Failed,
        format!("the platform failed: {error}"),
    )
}

fn string_arg<'a>(tool: &str, args: &'a Value, key: &str) -> Result<&'a str, ToolCallError> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 200)
        .ok_or_else(|| {
            refuse(
                tool,
                Decision::InvalidArguments,
                format!("`{key}` must be a string of 1 to 200 characters"),
            )
        })
}

fn record_json(record: Record) -> Value {
    Value::Object(record.data)
}

/// The most messages `rooms.messages` answers at once.
const MAX_ROOM_READ: i64 = 100;

/// `rooms.messages`: a page of the timeline of a room the calling agent is a member of.
pub(crate) async fn room_messages(
    store: &Store,
    install: &InstallKey,
    tool: &str,
    args: &Value,
) -> Result<Value, ToolCallError> {
    let room = string_arg(tool, args, "room_id")?;
    let agent = string_arg(tool, args, "from_agent")?;
    let limit = match args.get("limit") {
        None | Some(Value::Null) => 20,
        Some(v) => v
            .as_i64()
            .filter(|n| (1..=MAX_ROOM_READ).contains(n))
            .ok_or_else(|| {
                refuse(
                    tool,
                    Decision::InvalidArguments,
                    format!("`limit` must be a whole number from 1 to {MAX_ROOM_READ}"),
                )
            })?,
    };
    let before = match args.get("before") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| t.as_microsecond())
                .ok_or_else(|| {
                    refuse(
                        tool,
                        Decision::InvalidArguments,
                        "`before` must be an ISO-8601 time, the `created_at` of a message",
                    )
                })?,
        ),
    };
    let tenant = TenantKey::new(&install.org_id, &install.tenant_id);
    let key = format!("{}:{agent}", install.app_slug);
    let found = store
        .room(&tenant, room)
        .await
        .map_err(|e| failed(tool, &e))?;
    let Some(found) = found else {
        return Err(refuse(
            tool,
            Decision::UnknownRoom,
            format!("there is no room `{room}`"),
        ));
    };
    if !found.members.iter().any(|m| m.key == key) {
        return Err(refuse(
            tool,
            Decision::NotMember,
            format!("`{key}` is not a member of room `{room}`"),
        ));
    }
    let messages = store
        .room_messages_before(&tenant, room, before, limit)
        .await
        .map_err(|e| failed(tool, &e))?;
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({
                "id": m.id, "seq": m.seq, "sender_type": m.sender_type,
                "sender_ref": m.sender_ref, "sender_display": m.sender_display,
                "content": m.content, "mentions": m.mentions, "metadata": m.metadata,
                "created_at": crate::rooms::post::iso_micros(m.created_at),
            })
        })
        .collect();
    Ok(json!({ "messages": messages }))
}

/// Runs a records tool for the install `install`.
pub(crate) async fn records(
    store: &Store,
    install: &InstallKey,
    tool: &str,
    args: &Value,
) -> Result<Value, ToolCallError> {
    if !args.is_object() {
        return Err(refuse(
            tool,
            Decision::InvalidArguments,
            "the arguments must be a JSON object",
        ));
    }
    match tool {
        "records.put" => {
            let record_type = string_arg(tool, args, "record_type")?;
            let Some(Value::Object(record)) = args.get("record") else {
                return Err(refuse(
                    tool,
                    Decision::InvalidArguments,
                    "`record` must be a JSON object",
                ));
            };
            let mut record = record.clone();
            let id = match record.get("id") {
                Some(Value::String(id)) if !id.is_empty() && id.len() <= 200 => id.clone(),
                Some(_) => {
                    return Err(refuse(
                        tool,
                        Decision::InvalidArguments,
                        "`record.id` must be a string of 1 to 200 characters",
                    ));
                }
                None => {
                    let mut bytes = [0u8; 8];
                    getrandom::fill(&mut bytes).map_err(|e| failed(tool, &e))?;
                    let id = format!("rec_{}", crate::keyfile::hex_encode(&bytes));
                    record.insert("id".into(), Value::String(id.clone()));
                    id
                }
            };
            store
                .put_record(install, &id, record_type, &record)
                .await
                .map_err(|e| failed(tool, &e))?;
            Ok(json!({"id": id}))
        }
        "records.get" => {
            let id = string_arg(tool, args, "id")?;
            let found = store
                .record(install, id)
                .await
                .map_err(|e| failed(tool, &e))?;
            Ok(found.map_or(Value::Null, record_json))
        }
        "records.query" => {
            let record_type = string_arg(tool, args, "record_type")?;
            let filter: Map<String, Value> = args
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(k, _)| *k != "record_type")
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            let records = store
                .records(install, record_type, MAX_QUERY)
                .await
                .map_err(|e| failed(tool, &e))?;
            Ok(Value::Array(
                records
                    .into_iter()
                    .filter(|r| filter.iter().all(|(k, v)| r.data.get(k) == Some(v)))
                    .map(record_json)
                    .collect(),
            ))
        }
        "records.update" => {
            let id = string_arg(tool, args, "id")?;
            let Some(Value::Object(fields)) = args.get("fields") else {
                return Err(refuse(
                    tool,
                    Decision::InvalidArguments,
                    "`fields` must be a JSON object",
                ));
            };
            let Some(mut record) = store
                .record(install, id)
                .await
                .map_err(|e| failed(tool, &e))?
            else {
                return Err(refuse(
                    tool,
                    Decision::InvalidArguments,
                    format!("there is no record `{id}`"),
                ));
            };
            for (k, v) in fields {
                if k != "id" {
                    record.data.insert(k.clone(), v.clone());
                }
            }
            store
                .put_record(install, id, &record.record_type, &record.data)
                .await
                .map_err(|e| failed(tool, &e))?;
            Ok(json!({"ok": true}))
        }
        "records.delete" => {
            let id = string_arg(tool, args, "id")?;
            let deleted = store
                .delete_record(install, id)
                .await
                .map_err(|e| failed(tool, &e))?;
            Ok(json!({"deleted": deleted}))
        }
        other => Err(refuse(
            other,
            Decision::UnknownTool,
            format!("the platform has no tool `{other}`"),
        )),
    }
}

/// What the knowledge tools need of an install: its slot bindings and the manifest's slots.
#[derive(Debug, Clone, Default)]
pub struct Knowledge {
    /// Slot name to the name of one of the tenant's collections.
    pub bindings: Map<String, Value>,
    /// The slots the install's manifest declares.
    pub slots: Vec<atrium_manifest::RagSlot>,
    /// The agents the install's manifest declares (whose memory the `memory.*` tools reach).
    pub agents: Vec<String>,
}

/// Runs a knowledge tool: the app names a slot, never a collection; the host resolves the
/// install's binding.
pub(crate) async fn knowledge(
    retrieval: Option<&std::sync::Arc<atrium_retrieval::Retrieval>>,
    k: &Knowledge,
    tenant: &TenantKey,
    tool: &str,
    args: &Value,
) -> Result<Value, ToolCallError> {
    let slot_name = string_arg(tool, args, "slot")?;
    let Some(slot) = k.slots.iter().find(|s| s.name == slot_name) else {
        return Err(refuse(
            tool,
            Decision::InvalidArguments,
            format!("the app declares no knowledge slot `{slot_name}`"),
        ));
    };
    let Some(collection) = k.bindings.get(slot_name).and_then(Value::as_str) else {
        return Err(refuse(
            tool,
            Decision::InvalidArguments,
            format!("knowledge slot `{slot_name}` is not bound for this tenant"),
        ));
    };
    let Some(retrieval) = retrieval else {
        return Err(failed(
            tool,
            &"managed retrieval is not running on this host",
        ));
    };
    match tool {
        "knowledge.query" => {
            let query = args
                .get("query")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let top_k = args
                .get("top_k")
                .and_then(Value::as_u64)
                .unwrap_or(5)
                .clamp(1, 50);
            let outcome = retrieval
                .query(
                    tenant,
                    collection,
                    query,
                    usize::try_from(top_k).unwrap_or(5),
                )
                .await
                .map_err(|e| refuse(tool, Decision::InvalidArguments, e.to_string()))?;
            let matches: Vec<Value> = outcome
                .matches
                .into_iter()
                .map(|m| json!({"text": m.text, "title": m.title, "score": m.score, "document_id": m.document_id}))
                .collect();
            Ok(json!({"matches": matches}))
        }
        "knowledge.add" => {
            if slot.scope != atrium_manifest::RagScope::ReadWrite {
                return Err(refuse(
                    tool,
                    Decision::InvalidArguments,
                    format!("knowledge slot `{slot_name}` is read-only"),
                ));
            }
            let title = string_arg(tool, args, "title")?;
            let text = args
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let added = retrieval
                .add_document(tenant, collection, title, text, "app")
                .await
                .map_err(|e| refuse(tool, Decision::InvalidArguments, e.to_string()))?;
            Ok(json!({"document_id": added.document.id, "chunks": added.document.chunks}))
        }
        other => Err(refuse(
            other,
            Decision::UnknownTool,
            format!("the platform has no tool `{other}`"),
        )),
    }
}

/// What the chat tool needs: the gateway the /v1 API routes through and the metering writer
/// that bills the tenant.
#[derive(Clone)]
pub(crate) struct Chat {
    pub(crate) gateway: std::sync::Arc<atrium_inference::Gateway>,
    pub(crate) metering: atrium_store::Metering,
}

impl Chat {
    /// Meters `completed` to `tenant`, naming the app and the agent it was for (none for the
    /// platform's own calls); answers its cost in micro-dollars.
    pub(crate) async fn meter(
        &self,
        tenant: &TenantKey,
        completed: &atrium_inference::Completed,
        app_slug: Option<&str>,
        agent: Option<&str>,
    ) -> i64 {
        let outcome = &completed.outcome;
        let cost =
            completed
                .model
                .cost_micros(outcome.prompt_tokens, outcome.completion_tokens, false);
        self.metering
            .record(atrium_store::UsageRecord {
                org_id: tenant.org_id.clone(),
                tenant_id: tenant.tenant_id.clone(),
                kind: "chat".into(),
                provider: completed.model.provider.as_str().into(),
                model: completed.model.id.clone(),
                prompt_tokens: i64::try_from(outcome.prompt_tokens).unwrap_or(i64::MAX),
                completion_tokens: i64::try_from(outcome.completion_tokens).unwrap_or(i64::MAX),
                cost_micros: cost,
                batch: false,
                app_slug: app_slug.map(str::to_owned),
                agent: agent.map(str::to_owned),
            })
            .await;
        cost
    }
}

/// The refusal of a gateway failure: a request no backend would take is the app's to mend
/// (`invalid_arguments`); backends that failed or none configured are the platform's.
fn gateway_refusal(tool: &str, error: &atrium_inference::GatewayError) -> ToolCallError {
    use atrium_inference::{GatewayError, RouteError};
    match error {
        GatewayError::Route(RouteError::Policy(_) | RouteError::Invalid { .. })
        | GatewayError::Refused(_) => refuse(tool, Decision::InvalidArguments, error.to_string()),
        GatewayError::Exhausted(_) => refuse(tool, Decision::NetworkError, error.to_string()),
        GatewayError::Route(RouteError::Unavailable(_)) => failed(tool, error),
    }
}

/// Runs `chat.complete` for the install of `app_slug` in `tenant`, and meters it to them.
pub(crate) async fn chat(
    chat: Option<&Chat>,
    tenant: &crate::registry::Actor,
    app_slug: &str,
    tool: &str,
    args: &Value,
) -> Result<Value, ToolCallError> {
    let call = atrium_inference::parse_chat(args.clone()).map_err(|e| {
        let message = match &e.param {
            Some(param) if !e.message.contains(param.as_str()) => {
                format!("`{param}`: {}", e.message)
            }
            _ => e.message.clone(),
        };
        refuse(tool, Decision::InvalidArguments, message)
    })?;
    if call.stream {
        return Err(refuse(
            tool,
            Decision::InvalidArguments,
            "`stream` cannot be true: the platform tool answers with the whole completion",
        ));
    }
    let Some(chat) = chat else {
        return Err(failed(
            tool,
            &"the chat gateway is not running on this host",
        ));
    };
    let completed = chat
        .gateway
        .chat(&call.selection, &call.request)
        .await
        .map_err(|e| gateway_refusal(tool, &e))?;
    let cost = chat.meter(tenant, &completed, Some(app_slug), None).await;
    let outcome = &completed.outcome;
    Ok(json!({
        "content": outcome.message.get("content").cloned().unwrap_or(Value::Null),
        "message": outcome.message,
        "finish_reason": outcome.finish_reason,
        "model": completed.model.id,
        "provider": completed.model.provider.as_str(),
        "usage": {
            "prompt_tokens": outcome.prompt_tokens,
            "completion_tokens": outcome.completion_tokens,
            "total_tokens": outcome.prompt_tokens + outcome.completion_tokens,
            "cost_usd": cost as f64 / 1_000_000.0,
        },
    }))
}

/// The longest memory entry, in characters.
pub const MAX_MEMORY_CONTENT_CHARS: usize = 8_000;
/// The longest memory kind, in characters.
pub const MAX_MEMORY_KIND_CHARS: usize = 64;

/// Runs a memory tool for the install `install`, whose agents are `agents`: the entries of
/// one of its own agents, never another app's or tenant's.
pub(crate) async fn memory(
    store: &Store,
    install: &InstallKey,
    agents: &[String],
    tool: &str,
    args: &Value,
) -> Result<Value, ToolCallError> {
    if !args.is_object() {
        return Err(refuse(
            tool,
            Decision::InvalidArguments,
            "the arguments must be a JSON object",
        ));
    }
    let agent = string_arg(tool, args, "agent")?;
    if !agents.iter().any(|a| a == agent) {
        return Err(refuse(
            tool,
            Decision::UnknownAgent,
            format!(
                "`{agent}` is not an agent of this app ({})",
                agents.join(", ")
            ),
        ));
    }
    let kind = match args.get("kind") {
        None | Some(Value::Null) => None,
        Some(Value::String(k)) if !k.is_empty() && k.chars().count() <= MAX_MEMORY_KIND_CHARS => {
            Some(k.as_str())
        }
        Some(_) => {
            return Err(refuse(
                tool,
                Decision::InvalidArguments,
                format!("`kind` must be a string of 1 to {MAX_MEMORY_KIND_CHARS} characters"),
            ));
        }
    };
    match tool {
        "memory.write" => {
            let Some(kind) = kind else {
                return Err(refuse(
                    tool,
                    Decision::InvalidArguments,
                    "`kind` is required",
                ));
            };
            let content = match args.get("content") {
                Some(Value::String(c)) if c.chars().count() <= MAX_MEMORY_CONTENT_CHARS => c,
                _ => {
                    return Err(refuse(
                        tool,
                        Decision::InvalidArguments,
                        format!(
                            "`content` must be a string of at most {MAX_MEMORY_CONTENT_CHARS} characters"
                        ),
                    ));
                }
            };
            let data = match args.get("data") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(d)) => d.clone(),
                Some(_) => {
                    return Err(refuse(
                        tool,
                        Decision::InvalidArguments,
                        "`data` must be a JSON object",
                    ));
                }
            };
            let entry = store
                .put_memory(install, agent, kind, content, &data)
                .await
                .map_err(|e| failed(tool, &e))?;
            Ok(json!({"id": entry.id}))
        }
        "memory.query" => {
            let limit = match args.get("limit") {
                None | Some(Value::Null) => 20,
                Some(v) => v
                    .as_i64()
                    .filter(|n| (1..=100).contains(n))
                    .ok_or_else(|| {
                        refuse(
                            tool,
                            Decision::InvalidArguments,
                            "`limit` must be a whole number from 1 to 100",
                        )
                    })?,
            };
            let entries = store
                .memories(install, agent, kind, limit)
                .await
                .map_err(|e| failed(tool, &e))?;
            let entries: Vec<Value> = entries
                .into_iter()
                .map(|m| {
                    json!({
                        "id": m.id, "kind": m.kind, "content": m.content, "data": m.data,
                        "created_at": jiff::Timestamp::from_millisecond(m.created_at)
                            .map(|t| t.to_string()).unwrap_or_default(),
                    })
                })
                .collect();
            Ok(json!({"entries": entries}))
        }
        other => Err(refuse(
            other,
            Decision::UnknownTool,
            format!("the platform has no tool `{other}`"),
        )),
    }
}
