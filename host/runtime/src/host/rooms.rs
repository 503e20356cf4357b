//! `rooms`: posting to group rooms as one of the app's agents.

use std::collections::BTreeSet;

use atrium_manifest::sandbox;

use crate::bindings::atrium::app::rooms;
use crate::platform::RoomPostRequest;
use crate::state::CallContext;
use crate::{RoomPost, ToolCallError};

/// The `rooms` capability's view of a call.
pub(crate) struct Rooms<'a> {
    pub call: &'a CallContext,
    pub granted_scopes: &'a BTreeSet<String>,
}

super::capability!(crate::bindings::atrium::app::rooms, Rooms);

impl rooms::Host for Rooms<'_> {
    async fn post(
        &mut self,
        room_id: String,
        content: String,
        from_agent: String,
        metadata: Option<String>,
    ) -> wasmtime::Result<Result<RoomPost, ToolCallError>> {
        let checked = match sandbox::room_post(
            &*self.call.manifest,
            &from_agent,
            &content,
            metadata.as_deref(),
            |s| self.granted_scopes.contains(s),
        ) {
            Ok(checked) => checked,
            Err(refusal) => return Ok(Err(refusal.into())),
        };
        let request = RoomPostRequest {
            room_id,
            content,
            sender_ref: checked.sender_ref,
            sender_display: checked.sender_display,
            metadata: checked.metadata,
        };
        Ok(self
            .call
            .platform
            .post_to_room(&self.call.info, request)
            .await)
    }
}
