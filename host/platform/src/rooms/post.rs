//! Posting to a room, and routing the post's mentions (docs/platform.md, "Mention routing"):
//!
//! 1. mentions are extracted by [`sandbox::extract_mentions`], Markdown around them ignored;
//! 2. each once, and at most [`MAX_ROUTED_MENTIONS`] routes per message;
//! 3. resolved against the membership of the instant the message is stored (in the posting
//!    transaction); mentions of non-members are dropped silently;
//! 4. the resolved subset is answered as `routed_targets`, and each agent in it gets
//!    `on_message(agent_slug, message)` in its own sandboxed call, after the message is
//!    stored and off the request path; a failure is logged with the message id;
//! 5. no mention is a broadcast: the message is in the timeline and the streams, no handler
//!    runs;
//! 6. an agent's sender ref is built by the host, `<app_id>:<from_agent>` of the calling app.
//!
//! A handler that posts again carries its chain one hop further, so two agents that answer
//! each other stop at the chain depth (8).

use atrium_manifest::sandbox::{
    self, ChainContext, Decision, MAX_ROOM_MESSAGE_CHARS, MAX_ROUTED_MENTIONS, ToolRefusal,
};
use atrium_runtime::{CallError, Caller, RoomPostRequest, SenderType, ToolCallError};
use atrium_store::{InstallStatus, NewRoomMessage, Posted, RoomMessage};
use serde_json::{Map, Value};

use super::{Rooms, not_member, unknown_room};
use crate::Refusal;
use crate::registry::Actor;

/// Who posts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageSender {
    /// A tenant user.
    User {
        /// The user.
        user_id: String,
        /// The name shown.
        display_name: String,
    },
    /// An agent of an app, checked by the sandbox ([`sandbox::room_post`]).
    Agent {
        /// `<app_id>:<from_agent>`.
        sender_ref: String,
        /// The agent's name.
        display_name: String,
    },
}

/// A stored post and where it was routed.
#[derive(Debug, Clone, PartialEq)]
pub struct PostedMessage {
    /// The message.
    pub message: RoomMessage,
    /// The mentioned members, at most [`MAX_ROUTED_MENTIONS`].
    pub routed_targets: Vec<String>,
}

/// A time as ISO-8601 with microseconds (`2026-11-28T21:30:00.123456Z`), as a room's
/// messages show theirs.
#[must_use]
pub fn iso_micros(at: jiff::Timestamp) -> String {
    format!("{at:.6}")
}

/// The content rule every sender meets: 1 to 20,000 characters, not blank.
pub fn check_content(content: &str) -> Result<(), Refusal> {
    let chars = content.chars().count();
    if chars > MAX_ROOM_MESSAGE_CHARS {
        return Err(Refusal::Invalid {
            field: "content".into(),
            message: format!(
                "content has {chars} characters; a room message has at most {MAX_ROOM_MESSAGE_CHARS}"
            ),
        });
    }
    if content.trim().is_empty() {
        return Err(Refusal::Invalid {
            field: "content".into(),
            message: "content must not be empty".into(),
        });
    }
    Ok(())
}

/// The runtime's view of a stored message (what `on_message` receives).
#[must_use]
pub fn runtime_message(tenant_id: &str, m: &RoomMessage) -> atrium_runtime::RoomMessage {
    atrium_runtime::RoomMessage {
        id: m.id.clone(),
        room_id: m.room_id.clone(),
        tenant_id: tenant_id.to_owned(),
        sender_type: match m.sender_type.as_str() {
            "agent" => SenderType::Agent,
            "user" => SenderType::User,
            _ => SenderType::System,
        },
        sender_ref: m.sender_ref.clone(),
        sender_display: m.sender_display.clone(),
        content: m.content.clone(),
        mentions: m.mentions.clone(),
        metadata: Value::Object(m.metadata.clone()).to_string(),
        created_at: iso_micros(m.created_at),
    }
}

impl Rooms {
    /// Posts `content` to room `room` of `tenant` as `sender`, on `chain` (the chain of the
    /// call that posts; a user's post is the first hop). The one path of every post.
    pub async fn post_message(
        &self,
        tenant: &Actor,
        room: &str,
        sender: &MessageSender,
        content: &str,
        metadata: &Map<String, Value>,
        chain: &ChainContext,
    ) -> Result<PostedMessage, Refusal> {
        check_content(content)?;
        let (sender_type, sender_ref, sender_display) = match sender {
            MessageSender::User {
                user_id,
                display_name,
            } => ("user", format!("user:{user_id}"), display_name.as_str()),
            MessageSender::Agent {
                sender_ref,
                display_name,
            } => ("agent", sender_ref.clone(), display_name.as_str()),
        };
        let mentions = sandbox::extract_mentions(content);
        let new = NewRoomMessage {
            sender_type,
            sender_ref: &sender_ref,
            sender_display,
            content,
            mentions: &mentions,
            metadata,
        };
        let hub = self.serving.rooms();
        let posted = self
            .serving
            .registry()
            .store()
            .post_room_message(
                tenant,
                room,
                &new,
                jiff::Timestamp::now(),
                hub.config().notify,
            )
            .await?;
        let (message, members) = match posted {
            Posted::Stored { message, members } => (*message, members),
            Posted::UnknownRoom => {
                return Err(unknown_room(format!("there is no room `{room}`")));
            }
            Posted::NotMember => {
                return Err(not_member(format!(
                    "`{sender_ref}` is not a member of room `{room}`"
                )));
            }
        };
        let routed_targets: Vec<String> = mentions
            .into_iter()
            .filter(|m| members.contains(m))
            .take(MAX_ROUTED_MENTIONS)
            .collect();
        {
            let (hub, message) = (hub.clone(), message.clone());
            tokio::spawn(async move { hub.published(message).await });
        }
        for target in routed_targets.iter().filter(|t| !t.starts_with("user:")) {
            let (serving, tenant, target, message) = (
                self.clone(),
                tenant.clone(),
                target.clone(),
                message.clone(),
            );
            let chain = chain.clone();
            tokio::spawn(async move {
                serving
                    .deliver_message(&tenant, &target, &message, &chain)
                    .await;
            });
        }
        Ok(PostedMessage {
            message,
            routed_targets,
        })
    }

    /// Runs `on_message` of the agent `target` (`<app_id>:<agent_slug>`) for `message`, one
    /// hop after `chain`; logs what went wrong with the message id.
    async fn deliver_message(
        &self,
        tenant: &Actor,
        target: &str,
        message: &RoomMessage,
        chain: &ChainContext,
    ) {
        let Some((app_slug, agent)) = target.split_once(':') else {
            return;
        };
        let fail = |why: &dyn std::fmt::Display| {
            tracing::warn!(
                message_id = %message.id, room = %message.room_id, target, reason = %why,
                "on_message was not delivered"
            );
        };
        let chain = match chain.enter(None) {
            Ok(chain) => chain,
            Err(refusal) => return fail(&refusal.reason),
        };
        let install = match self.serving.active_install(tenant, app_slug).await {
            Ok(install) => install,
            Err(e) => return fail(&e),
        };
        let app = match self.serving.app(app_slug, &install.version).await {
            Ok(app) => app,
            Err(e) => return fail(&e),
        };
        let mut inv = match self
            .serving
            .invocation(tenant, &install, &app, Caller::Platform)
            .await
        {
            Ok(inv) => inv,
            Err(e) => return fail(&e),
        };
        inv.chain = chain;
        match app
            .on_message(&inv, agent, runtime_message(&tenant.tenant_id, message))
            .await
        {
            Ok(()) => {}
            Err(CallError::NoHandler(_)) => tracing::debug!(
                message_id = %message.id, target, "the app registers no on_message handler"
            ),
            Err(e) => fail(&e),
        }
    }

    /// A post of `app_slug`'s agent, checked by the sandbox (`rooms.post` of a component, or
    /// `POST /api/mcp/rooms-post` of a container; [`sandbox::room_post`] also holds the install
    /// to `rooms.write`), on the calling `chain`: the install must still be active.
    pub async fn post_as_agent(
        &self,
        tenant: &Actor,
        app_slug: &str,
        post: RoomPostRequest,
        chain: &ChainContext,
    ) -> Result<PostedMessage, ToolCallError> {
        const TOOL: &str = "rooms.post";
        let refuse = |decision, message: String| {
            ToolCallError::from(ToolRefusal::new(TOOL, decision, message))
        };
        let active = self
            .serving
            .active_install(tenant, app_slug)
            .await
            .is_ok_and(|i| i.status == InstallStatus::Active);
        if !active {
            return Err(refuse(
                Decision::Failed,
                format!("`{app_slug}` is not installed and active for this tenant"),
            ));
        }
        let Value::Object(metadata) = post.metadata else {
            return Err(refuse(
                Decision::InvalidArguments,
                "metadata must be a JSON object".into(),
            ));
        };
        let sender = MessageSender::Agent {
            sender_ref: post.sender_ref,
            display_name: post.sender_display,
        };
        self.post_message(
            tenant,
            &post.room_id,
            &sender,
            &post.content,
            &metadata,
            chain,
        )
        .await
        .map_err(|e| match e {
            Refusal::NotFound { message, .. } => refuse(Decision::UnknownRoom, message),
            Refusal::Forbidden { message, .. } => refuse(Decision::NotMember, message),
            Refusal::Invalid { message, .. } | Refusal::Unknown { message, .. } => {
                refuse(Decision::InvalidArguments, message)
            }
            Refusal::Limit { message, .. }
            | Refusal::Conflict { message, .. }
            | Refusal::NotAvailable { message, .. } => refuse(Decision::Failed, message),
            e @ (Refusal::Store(_) | Refusal::Serve(_)) => {
                tracing::error!(error = %e, app = app_slug, "storing a room post failed");
                refuse(
                    Decision::Failed,
                    "the platform failed to store the post; try again".into(),
                )
            }
        })
    }
}
