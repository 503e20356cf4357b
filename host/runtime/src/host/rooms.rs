//! `rooms`: posting to group rooms as one of the app's agents.

use crate::bindings::atrium::app::rooms;
use crate::platform::RoomPostRequest;
use crate::state::CallState;
use crate::{RoomPost, ToolCallError};

/// Longest room message, in characters (spec section 8).
pub const MAX_ROOM_MESSAGE_CHARS: usize = 20_000;

fn refusal(decision: &str, message: String) -> ToolCallError {
    ToolCallError {
        tool_name: "rooms.post".into(),
        decision: decision.into(),
        message,
        needed_scopes: Vec::new(),
    }
}

impl rooms::Host for CallState {
    async fn post(
        &mut self,
        room_id: String,
        content: String,
        from_agent: String,
        metadata: Option<String>,
    ) -> wasmtime::Result<Result<RoomPost, ToolCallError>> {
        if from_agent.is_empty() {
            return Ok(Err(refusal(
                "invalid_arguments",
                "from_agent is required: the agent of this app that posts".into(),
            )));
        }
        let Some(agent) = self.agent(&from_agent) else {
            let agents = self.declared_agents();
            return Ok(Err(refusal(
                "unknown_agent",
                format!("`{from_agent}` is not an agent of this app ({agents})"),
            )));
        };
        let sender_display = agent.name.clone();
        let chars = content.chars().count();
        if chars > MAX_ROOM_MESSAGE_CHARS {
            return Ok(Err(refusal(
                "invalid_arguments",
                format!(
                    "content has {chars} characters; a room message has at most {MAX_ROOM_MESSAGE_CHARS}"
                ),
            )));
        }
        if content.trim().is_empty() {
            return Ok(Err(refusal(
                "invalid_arguments",
                "content must not be empty".into(),
            )));
        }
        let metadata = match metadata
            .as_deref()
            .map(|m| super::parse_json("metadata", m))
        {
            None => serde_json::Value::Object(Default::default()),
            Some(Ok(v)) if v.is_object() => v,
            Some(Ok(_)) => {
                return Ok(Err(refusal(
                    "invalid_arguments",
                    "metadata must be a JSON object".into(),
                )));
            }
            Some(Err(message)) => return Ok(Err(refusal("invalid_arguments", message))),
        };
        let request = RoomPostRequest {
            room_id,
            content,
            sender_ref: self.agent_key(&from_agent),
            sender_display,
            metadata,
        };
        Ok(self.platform.post_to_room(&self.call, request).await)
    }
}
