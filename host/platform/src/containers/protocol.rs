//! The container protocol: what the host sends to a container app's reserved paths and what
//! it reads back (docs/wit.md, "The container protocol"). Every body is a typed struct; a
//! container's answer that breaks the shape is the app's contract error, naming the field.
//!
//! | call | request | answer |
//! |---|---|---|
//! | health | `GET /health` | any 2xx |
//! | manifest | `GET /manifest` | the manifest's text (YAML or JSON) |
//! | a tool | `POST /tool` [`ToolRequest`] | [`Reply`] with the result |
//! | an event, a lifecycle hook, a schedule, a room message | `POST /event` [`Dispatch`] | [`Reply`] |
//! | a declared route | `<method> /route<path>`, `/public<path>` on a public route | the route's response |
//!
//! Every request carries the call's headers ([`call_headers`]).

use atrium_runtime::{
    AgentCallError, AppEvent, CallError, CallInfo, HandlerCall, HandlerReply, InboundEnvelope,
    RoomMessage, SenderType, ToolCallError, UserAdded,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The tenant of the call.
pub const HEADER_TENANT: &str = "x-atrium-tenant";
/// The call's id.
pub const HEADER_CALL: &str = "x-atrium-call";
/// The version of the app the host calls.
pub const HEADER_VERSION: &str = "x-atrium-app-version";
/// `1` when the call arrived on a public route.
pub const HEADER_PUBLIC: &str = "x-atrium-public-route";
/// The call's `APP_MCP_TOKEN`: the bearer token of the container's calls back to the
/// platform (`/api/mcp/...`) during this call.
pub const HEADER_APP_TOKEN: &str = "x-app-mcp-token";

/// The headers of every request of one call: its tenant, id, version, public-route flag, the
/// chain (`X-Service-Chain-Depth`, `X-Service-Visited-Agents`) and its `APP_MCP_TOKEN`.
#[must_use]
pub fn call_headers(info: &CallInfo, token: &str) -> Vec<(&'static str, String)> {
    let chain = atrium_runtime::ChainContext {
        depth: info.chain_depth,
        visited: info.visited_agents.clone(),
    };
    let mut headers = vec![
        (HEADER_TENANT, info.tenant_id.clone()),
        (HEADER_CALL, info.call_id.clone()),
        (HEADER_VERSION, info.app_version.clone()),
        (HEADER_APP_TOKEN, token.to_owned()),
    ];
    if info.public_route {
        headers.push((HEADER_PUBLIC, "1".into()));
    }
    for (name, value) in chain.to_headers() {
        headers.push((name, value));
    }
    headers
}

/// `POST /tool`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolRequest {
    /// The declared tool.
    pub name: String,
    /// Its arguments, a JSON object.
    pub args: Value,
}

/// `POST /event`: what the container's handlers dispatch on `type`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Dispatch {
    /// An event over an approved wire.
    Event {
        /// The event's name.
        event_name: String,
        /// The emitting app.
        emitter_app_id: String,
        /// What the emitter sent.
        payload: Value,
        /// The agent the subscription targets, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_agent_slug: Option<String>,
    },
    /// `on_install`.
    Install,
    /// `on_uninstall`.
    Uninstall,
    /// `on_inbound`.
    Inbound {
        /// The message.
        envelope: Envelope,
    },
    /// `on_user_added`.
    UserAdded {
        /// The user's id.
        user_id: String,
        /// The name shown for the user.
        display_name: String,
        /// The e-mail address, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        email: Option<String>,
    },
    /// A named schedule is due.
    Schedule {
        /// The schedule's name.
        name: String,
    },
    /// A room message that mentions one of the app's agents (`on_message`).
    Message {
        /// The agent mentioned.
        agent: String,
        /// The message.
        message: Message,
    },
}

/// An inbound message (`InboundEnvelope`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The platform's id of the message.
    pub message_id: String,
    /// The channel.
    pub channel: String,
    /// The sender's address.
    pub from: String,
    /// The text.
    pub body: String,
    /// The subject, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// When it arrived, ISO-8601.
    pub received_at: String,
    /// Ids of its attachments.
    pub attachment_ids: Vec<String>,
    /// Channel-specific details.
    pub metadata: Value,
}

/// A room message.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Its id.
    pub id: String,
    /// The room.
    pub room_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// `agent`, `user` or `system`.
    pub sender_type: String,
    /// The sender's canonical key.
    pub sender_ref: String,
    /// The sender's display name.
    pub sender_display: String,
    /// The text.
    pub content: String,
    /// The mentioned members' keys.
    pub mentions: Vec<String>,
    /// A JSON object.
    pub metadata: Value,
    /// When it was posted, ISO-8601.
    pub created_at: String,
}

/// JSON text the runtime checked, as a value (text that is not JSON stays a string).
fn value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

impl From<InboundEnvelope> for Envelope {
    fn from(e: InboundEnvelope) -> Self {
        Envelope {
            message_id: e.message_id,
            channel: e.channel,
            from: e.from,
            body: e.body,
            subject: e.subject,
            received_at: e.received_at,
            attachment_ids: e.attachment_ids,
            metadata: value(&e.metadata),
        }
    }
}

impl From<RoomMessage> for Message {
    fn from(m: RoomMessage) -> Self {
        Message {
            id: m.id,
            room_id: m.room_id,
            tenant_id: m.tenant_id,
            sender_type: match m.sender_type {
                SenderType::Agent => "agent",
                SenderType::User => "user",
                SenderType::System => "system",
            }
            .into(),
            sender_ref: m.sender_ref,
            sender_display: m.sender_display,
            content: m.content,
            mentions: m.mentions,
            metadata: value(&m.metadata),
            created_at: m.created_at,
        }
    }
}

/// A handler call as the request the container gets: its path and body.
///
/// # Errors
///
/// [`CallError::Internal`] for `describe`, which a container is never asked.
pub fn request_of(call: HandlerCall) -> Result<(&'static str, Value), CallError> {
    let dispatch = match call {
        HandlerCall::Describe => {
            return Err(CallError::Internal(
                "a container app is not asked to describe itself; its /manifest is read".into(),
            ));
        }
        HandlerCall::Tool { name, args } => {
            let body = ToolRequest {
                name,
                args: value(&args),
            };
            return Ok(("/tool", serde_json::to_value(body).unwrap_or(Value::Null)));
        }
        HandlerCall::Install => Dispatch::Install,
        HandlerCall::Uninstall => Dispatch::Uninstall,
        HandlerCall::Inbound(envelope) => Dispatch::Inbound {
            envelope: envelope.into(),
        },
        HandlerCall::UserAdded(UserAdded {
            user_id,
            display_name,
            email,
        }) => Dispatch::UserAdded {
            user_id,
            display_name,
            email,
        },
        HandlerCall::Schedule(name) => Dispatch::Schedule { name },
        HandlerCall::Event(AppEvent {
            event_name,
            emitter_app_id,
            payload,
            target_agent_slug,
        }) => Dispatch::Event {
            event_name,
            emitter_app_id,
            payload: value(&payload),
            target_agent_slug,
        },
        HandlerCall::Message { agent, message } => Dispatch::Message {
            agent,
            message: message.into(),
        },
    };
    Ok((
        "/event",
        serde_json::to_value(dispatch).unwrap_or(Value::Null),
    ))
}

/// What `/tool` and `/event` answer: `{"ok": true, "result": ...}`, `{"ok": false,
/// "no_handler": true}` (the spec's answer of a declared handler the app did not register), or
/// `{"ok": false, "error": {...}}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Whether the handler succeeded.
    pub ok: bool,
    /// A tool's or an event handler's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The app registered no handler for what was declared.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_handler: bool,
    /// Why the handler failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ReplyError>,
}

/// How a handler failed: the SDK's error types as JSON.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReplyError {
    /// The arguments or payload did not match what the handler accepts.
    InvalidInput {
        /// What is wrong.
        message: String,
    },
    /// A tool call of the handler failed and it passed the failure on (`ToolCallError`).
    Tool {
        /// The tool.
        #[serde(default)]
        tool_name: String,
        /// The decision (`scope_denied`, `not_member`, ...).
        decision: String,
        /// What the platform said.
        message: String,
        /// The scopes missing, for `scope_denied`.
        #[serde(default, alias = "neededScopes")]
        needed_scopes: Vec<String>,
    },
    /// An agent call of the handler failed and it passed the failure on (`AgentCallError`).
    Agent {
        /// Why.
        reason: String,
    },
    /// Any other failure.
    Failed {
        /// What the app says.
        message: String,
    },
}

/// The most characters of an answer that is not the protocol's quoted in the error.
const QUOTED: usize = 300;

fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut quoted: String = text.chars().take(QUOTED).collect();
    if text.chars().count() > QUOTED {
        quoted.push_str("...");
    }
    quoted
}

/// The answer of `/tool` or `/event` to `call` as the runtime's reply: `status` and `body`
/// as the container sent them.
///
/// # Errors
///
/// The handler's error as the runtime's [`CallError`], or [`CallError::Contract`] for an
/// answer that is not the protocol's.
pub fn reply_of(
    path: &str,
    answers_json: bool,
    status: http::StatusCode,
    body: &[u8],
) -> Result<HandlerReply, CallError> {
    let reply: Reply = serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(
        body,
    ))
    .map_err(|e| {
        if status.is_success() {
            CallError::Contract(format!(
                "`{path}` answered what is not the container protocol's reply (at `{}`: {}): {}",
                e.path(),
                e.inner(),
                quote(body)
            ))
        } else {
            CallError::Failed(format!("`{path}` answered {status}: {}", quote(body)))
        }
    })?;
    if reply.ok {
        if !answers_json {
            return Ok(HandlerReply::Unit);
        }
        let result = reply.result.unwrap_or(Value::Null);
        return Ok(HandlerReply::Json(result.to_string()));
    }
    if reply.no_handler {
        return Err(CallError::NoHandler(format!(
            "the container has no handler for what `{path}` was sent"
        )));
    }
    Err(match reply.error {
        Some(ReplyError::InvalidInput { message }) => CallError::InvalidInput(message),
        Some(ReplyError::Tool {
            tool_name,
            decision,
            message,
            needed_scopes,
        }) => CallError::Tool(ToolCallError {
            tool_name,
            decision,
            message,
            needed_scopes,
        }),
        Some(ReplyError::Agent { reason }) => CallError::Agent(AgentCallError { reason }),
        Some(ReplyError::Failed { message }) => CallError::Failed(message),
        None => CallError::Contract(format!(
            "`{path}` answered `ok: false` with neither `error` nor `no_handler`"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_handler_call_is_a_request_the_container_dispatches_on_its_type() {
        let (path, body) = request_of(HandlerCall::Tool {
            name: "list".into(),
            args: r#"{"status":"new"}"#.into(),
        })
        .unwrap();
        assert_eq!(path, "/tool");
        assert_eq!(body, json!({"name": "list", "args": {"status": "new"}}));
        let (path, body) = request_of(HandlerCall::Schedule("nightly".into())).unwrap();
        assert_eq!(path, "/event");
        assert_eq!(body, json!({"type": "schedule", "name": "nightly"}));
        let (_, body) = request_of(HandlerCall::Event(AppEvent {
            event_name: "entry_booked".into(),
            emitter_app_id: "ledger".into(),
            payload: r#"{"id":1}"#.into(),
            target_agent_slug: None,
        }))
        .unwrap();
        assert_eq!(
            body,
            json!({"type": "event", "event_name": "entry_booked", "emitter_app_id": "ledger", "payload": {"id": 1}})
        );
        assert_eq!(
            request_of(HandlerCall::Install).unwrap().1,
            json!({"type": "install"})
        );
        assert!(request_of(HandlerCall::Describe).is_err());
    }

    #[test]
    fn a_reply_is_the_result_or_the_apps_typed_error() {
        let ok = br#"{"ok": true, "result": {"n": 1}}"#;
        assert_eq!(
            reply_of("/tool", true, http::StatusCode::OK, ok).unwrap(),
            HandlerReply::Json(r#"{"n":1}"#.into())
        );
        assert_eq!(
            reply_of("/event", false, http::StatusCode::OK, br#"{"ok": true}"#).unwrap(),
            HandlerReply::Unit
        );
        let refused = br#"{"ok": false, "error": {"kind": "tool", "tool_name": "mail.send", "decision": "scope_denied", "message": "no", "neededScopes": ["mail.send"]}}"#;
        match reply_of("/tool", true, http::StatusCode::OK, refused).unwrap_err() {
            CallError::Tool(e) => {
                assert_eq!(e.decision, "scope_denied");
                assert_eq!(e.needed_scopes, vec!["mail.send".to_owned()]);
            }
            other => panic!("{other}"),
        }
        assert!(matches!(
            reply_of(
                "/event",
                false,
                http::StatusCode::OK,
                br#"{"ok": false, "no_handler": true}"#
            ),
            Err(CallError::NoHandler(_))
        ));
        let agent = br#"{"ok": false, "error": {"kind": "agent", "reason": "cycle detected"}}"#;
        assert_eq!(
            reply_of("/tool", true, http::StatusCode::OK, agent).unwrap_err(),
            CallError::Agent(AgentCallError {
                reason: "cycle detected".into()
            })
        );
        let Err(CallError::Contract(message)) =
            reply_of("/tool", true, http::StatusCode::OK, br#"{"ok": "yes"}"#)
        else {
            panic!("a reply that breaks the shape is the app's contract error");
        };
        assert!(message.contains("at `ok`"), "{message}");
        let Err(CallError::Failed(message)) = reply_of(
            "/tool",
            true,
            http::StatusCode::INTERNAL_SERVER_ERROR,
            b"boom",
        ) else {
            panic!("a failed answer that is not the protocol's is the app's failure");
        };
        assert!(
            message.contains("500") && message.contains("boom"),
            "{message}"
        );
    }
}
