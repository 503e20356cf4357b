//! The rooms tool an agent reads its room with: `rooms.messages`, a page of the timeline of a
//! room the agent is a member of (docs/platform.md, "Platform tools").

use atrium_manifest::sandbox::Decision;
use atrium_store::TenantKey;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::scopes::Risk;
use crate::tools::{Fault, Moment, Name, PlatformTool, Tool, ToolContext, Whole};

/// The rooms tools, for the catalogue.
pub(crate) const TOOLS: &[PlatformTool] = &[PlatformTool::of::<Messages>()];

/// The most messages `rooms.messages` answers at once.
const MAX_ROOM_READ: i64 = 100;

/// `rooms.messages`.
pub(crate) struct Messages;

/// The arguments of `rooms.messages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MessagesArgs {
    /// The room's id.
    room_id: Name,
    /// The app's agent that reads it (a member of the room).
    from_agent: Name,
    /// At most this many messages (default 20).
    limit: Option<Whole<1, MAX_ROOM_READ>>,
    /// Only messages stored before this time: the `created_at` of a message, for the next page.
    before: Option<Moment>,
}

/// One message of the timeline.
#[derive(Debug, Serialize)]
pub(crate) struct Message {
    id: String,
    seq: i64,
    sender_type: String,
    sender_ref: String,
    sender_display: String,
    content: String,
    mentions: Vec<String>,
    metadata: Map<String, Value>,
    /// ISO-8601, to the microsecond.
    created_at: String,
}

/// `{messages}`, newest first.
#[derive(Debug, Serialize)]
pub(crate) struct Timeline {
    messages: Vec<Message>,
}

impl Tool for Messages {
    const NAME: &'static str = "rooms.messages";
    const SCOPES: &'static [&'static str] = &["rooms.read"];
    const DESCRIPTION: &'static str = "The timeline of room `room_id` that the app's agent `from_agent` is a member of, newest first: at most `limit` messages (1 to 100, default 20) stored before `before` (the `created_at` of a message, for the next page). Answers `{messages: [{id, seq, sender_type, sender_ref, sender_display, content, mentions, metadata, created_at}]}`.";
    const RISK: Risk = Risk::Low;
    type Args = MessagesArgs;
    type Answer = Timeline;

    async fn run(cx: &ToolContext<'_>, args: MessagesArgs) -> Result<Timeline, Fault> {
        let install = cx.install();
        let tenant = TenantKey::new(&install.org_id, &install.tenant_id);
        let room = args.room_id.as_str();
        let key = format!("{}:{}", install.app_slug, args.from_agent.as_str());
        let store = cx.store();
        let found = store
            .room(&tenant, room)
            .await
            .map_err(|e| Fault::failed(&e))?;
        let Some(found) = found else {
            return Err(Fault::new(
                Decision::UnknownRoom,
                format!("there is no room `{room}`"),
            ));
        };
        if !found.members.iter().any(|m| m.key == key) {
            return Err(Fault::new(
                Decision::NotMember,
                format!("`{key}` is not a member of room `{room}`"),
            ));
        }
        let limit = args.limit.map_or(20, |l| l.0);
        let messages = store
            .room_messages_before(&tenant, room, args.before.map(|b| b.0), limit)
            .await
            .map_err(|e| Fault::failed(&e))?;
        let messages = messages
            .into_iter()
            .map(|m| Message {
                created_at: super::iso_micros(m.created_at),
                id: m.id,
                seq: m.seq,
                sender_type: m.sender_type,
                sender_ref: m.sender_ref,
                sender_display: m.sender_display,
                content: m.content,
                mentions: m.mentions,
                metadata: m.metadata,
            })
            .collect();
        Ok(Timeline { messages })
    }
}
