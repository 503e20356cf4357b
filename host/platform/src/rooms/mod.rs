//! Group rooms (docs/platform.md, "Group rooms"): tenant users and installed apps' agents in
//! persistent rooms, a message's mentions routed to the mentioned agents' `on_message`, and
//! live streams on every host.
//!
//! The rules are here once, for every caller: who may see, change and post to a room
//! ([`Participant`]), what a member key names and whether the tenant has it, the limits
//! (members per room, configurable per tenant; 20,000 characters per message) and the six
//! routing rules ([`post`]). A user's post (`POST /api/agent-rooms/{id}/messages`), a
//! component's `rooms.post` and a container's `POST /api/mcp/rooms-post` all end in
//! [`Rooms::post_message`]. The stream's side is [`hub`]; the PostgreSQL listener that
//! carries posts between hosts is [`RoomListener`].

pub(crate) mod post;
mod tools;

use atrium_store::{MemberAdded, MemberKind, NewRoomMember, Room, TenantKey};

pub use crate::room_streams::{
    Delivery, HubStats, Next, RoomHub, RoomListener, RoomsConfig, Subscription, hub,
};
pub use post::{MessageSender, PostedMessage, check_content, iso_micros, runtime_message};
pub(crate) use tools::TOOLS;

use crate::Refusal;
use crate::registry::Actor;
use crate::serving::Serving;

/// The most members of a room, unless the tenant's admin set another limit.
pub const DEFAULT_MEMBER_LIMIT: i64 = 50;
/// The highest limit of members a tenant may set.
pub const MAX_MEMBER_LIMIT: i64 = 1_000;
/// The longest room name, in characters.
pub const MAX_ROOM_NAME_CHARS: usize = 200;

/// Who acts on a room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Participant {
    /// A tenant user; an admin sees and manages every room of the tenant.
    User {
        /// The user.
        user_id: String,
        /// The name shown.
        display_name: String,
        /// Whether the token is an admin's.
        admin: bool,
    },
    /// An agent of an installed app.
    Agent {
        /// The app.
        app_id: String,
        /// The agent.
        agent_slug: String,
    },
}

impl Participant {
    /// The canonical key.
    #[must_use]
    pub fn key(&self) -> String {
        match self {
            Participant::User { user_id, .. } => format!("user:{user_id}"),
            Participant::Agent { app_id, agent_slug } => format!("{app_id}:{agent_slug}"),
        }
    }

    fn is_admin(&self) -> bool {
        matches!(self, Participant::User { admin: true, .. })
    }
}

/// The tenant has no such room (or it is another tenant's): 404 `unknown_room`.
pub(crate) fn unknown_room(message: String) -> Refusal {
    Refusal::NotFound {
        code: "unknown_room",
        message,
    }
}

/// The caller (or the sender) is not a member of the room: 403 `not_member`.
pub(crate) fn not_member(message: String) -> Refusal {
    Refusal::Forbidden {
        code: "not_member",
        message,
    }
}

/// Parses a canonical member key: `user:<uuid>` or `<app_id>:<agent_slug>`.
pub fn parse_member_key(field: &'static str, key: &str) -> Result<MemberKind, Refusal> {
    let invalid = |why: &str| Refusal::Invalid {
        field: field.into(),
        message: format!(
            "`{key}` is not a member key: {why} (`user:<uuid>` for a user, `<app_id>:<agent_slug>` for an agent)"
        ),
    };
    let Some((left, right)) = key.split_once(':') else {
        return Err(invalid("it has no `:`"));
    };
    if left == "user" {
        let user_id = atrium_store::check_user_id(right).map_err(|e| invalid(&e.to_string()))?;
        return Ok(MemberKind::User { user_id });
    }
    let slug = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    };
    if !slug(left) || !slug(right) {
        return Err(invalid(
            "an app id and an agent slug are lower-case letters, digits, `-` and `_`",
        ));
    }
    Ok(MemberKind::Agent {
        app_id: left.to_owned(),
        agent_slug: right.to_owned(),
    })
}

/// Checks a room name: 1 to [`MAX_ROOM_NAME_CHARS`] characters, not blank.
fn check_name(name: &str) -> Result<(), Refusal> {
    if name.trim().is_empty() || name.chars().count() > MAX_ROOM_NAME_CHARS {
        return Err(Refusal::Invalid {
            field: "name".into(),
            message: format!("name must be 1 to {MAX_ROOM_NAME_CHARS} characters, not blank"),
        });
    }
    Ok(())
}

/// Group rooms over the serving core: membership, posting and mention routing, the one path
/// of every caller (an HTTP handler, a component's `rooms.post`, `/api/mcp/rooms-post`).
/// Cheap to make: it shares the core it is made of.
#[derive(Debug, Clone)]
pub struct Rooms {
    serving: Serving,
}

impl Rooms {
    /// The rooms of the host `serving` serves.
    #[must_use]
    pub fn of(serving: &Serving) -> Rooms {
        Rooms {
            serving: serving.clone(),
        }
    }

    /// The tenant's limit of members per room.
    pub async fn room_member_limit(&self, tenant: &TenantKey) -> Result<i64, Refusal> {
        Ok(self
            .serving
            .registry()
            .store()
            .tenant_settings(tenant)
            .await?
            .room_member_limit
            .unwrap_or(DEFAULT_MEMBER_LIMIT))
    }

    /// The member `key` names, as the tenant has it now: a user of the tenant, or an agent
    /// that an active install of the tenant declares.
    pub async fn resolve_member(
        &self,
        tenant: &Actor,
        field: &'static str,
        key: &str,
    ) -> Result<NewRoomMember, Refusal> {
        let kind = parse_member_key(field, key)?;
        let unknown = |message: String| Refusal::Unknown {
            code: "unknown_member",
            field: field.into(),
            message,
        };
        let display_name = match &kind {
            MemberKind::User { user_id } => self
                .serving
                .registry()
                .store()
                .tenant_user_name(tenant, user_id)
                .await?
                .ok_or_else(|| unknown(format!("`{key}`: the tenant has no user `{user_id}`")))?,
            MemberKind::Agent { app_id, agent_slug } => {
                let install = self
                    .serving
                    .active_install(tenant, app_id)
                    .await
                    .map_err(|_| {
                        unknown(format!(
                            "`{key}`: the tenant has no active install of `{app_id}`"
                        ))
                    })?;
                let manifest = self
                    .serving
                    .registry()
                    .manifest_of(app_id, &install.version)
                    .await
                    .map_err(|e| unknown(format!("`{key}`: {e}")))?;
                manifest
                    .agents
                    .iter()
                    .find(|a| &a.id == agent_slug)
                    .map(|a| a.name.clone())
                    .ok_or_else(|| {
                        unknown(format!(
                            "`{key}`: `{app_id}` {} declares no agent `{agent_slug}`",
                            install.version
                        ))
                    })?
            }
        };
        Ok(NewRoomMember { kind, display_name })
    }

    /// Creates a room named `name` with the members `keys` and, for a user, the creator.
    pub async fn create_room(
        &self,
        tenant: &Actor,
        creator: &Participant,
        name: &str,
        keys: &[String],
    ) -> Result<Room, Refusal> {
        check_name(name)?;
        let mut members: Vec<NewRoomMember> = Vec::with_capacity(keys.len() + 1);
        if let Participant::User {
            user_id,
            display_name,
            ..
        } = creator
        {
            members.push(NewRoomMember {
                kind: MemberKind::User {
                    user_id: user_id.clone(),
                },
                display_name: display_name.clone(),
            });
        }
        for key in keys {
            let member = self.resolve_member(tenant, "members", key).await?;
            if !members.iter().any(|m| m.kind == member.kind) {
                members.push(member);
            }
        }
        let limit = self.room_member_limit(tenant).await?;
        if i64::try_from(members.len()).unwrap_or(i64::MAX) > limit {
            return Err(Refusal::Limit {
                code: "room_full",
                limit,
                message: format!(
                    "members: a room has at most {limit} members, and this one would have {}",
                    members.len()
                ),
            });
        }
        Ok(self
            .serving
            .registry()
            .store()
            .create_room(tenant, name, &creator.key(), &members)
            .await?)
    }

    /// Room `id` of the tenant, as `who` may see it: an admin sees every room, anyone else
    /// only the rooms they are a member of.
    pub async fn room_for(
        &self,
        tenant: &TenantKey,
        who: &Participant,
        id: &str,
    ) -> Result<Room, Refusal> {
        let room = self
            .serving
            .registry()
            .store()
            .room(tenant, id)
            .await?
            .ok_or_else(|| unknown_room(format!("there is no room `{id}`")))?;
        let key = who.key();
        if who.is_admin() || room.members.iter().any(|m| m.key == key) {
            Ok(room)
        } else {
            Err(not_member(format!(
                "`{key}` is not a member of room `{id}`"
            )))
        }
    }

    /// Adds the member `key` to room `id` on behalf of `who` (a member or an admin): whether
    /// it was added (false: it was a member already), and the room after.
    pub async fn add_room_member(
        &self,
        tenant: &Actor,
        who: &Participant,
        id: &str,
        key: &str,
    ) -> Result<(bool, Room), Refusal> {
        self.room_for(tenant, who, id).await?;
        let member = self.resolve_member(tenant, "key", key).await?;
        let limit = self.room_member_limit(tenant).await?;
        let store = self.serving.registry().store();
        let added = match store
            .add_room_member(tenant, id, &member, &who.key(), limit)
            .await?
        {
            MemberAdded::Added(added) => added,
            MemberAdded::Full { limit } => {
                return Err(Refusal::Limit {
                    code: "room_full",
                    limit,
                    message: format!(
                        "room `{id}` has {limit} members, the most this tenant allows per room"
                    ),
                });
            }
            MemberAdded::UnknownRoom => {
                return Err(unknown_room(format!("there is no room `{id}`")));
            }
        };
        let room = self.room_for(tenant, &Participant::admin(), id).await?;
        Ok((added, room))
    }

    /// Removes the member `key` from room `id` on behalf of `who` (a member or an admin);
    /// answers the room after.
    pub async fn remove_room_member(
        &self,
        tenant: &Actor,
        who: &Participant,
        id: &str,
        key: &str,
    ) -> Result<Room, Refusal> {
        self.room_for(tenant, who, id).await?;
        parse_member_key("key", key)?;
        match self
            .serving
            .registry()
            .store()
            .remove_room_member(tenant, id, key)
            .await?
        {
            None => Err(unknown_room(format!("there is no room `{id}`"))),
            Some(false) => Err(Refusal::Unknown {
                code: "unknown_member",
                field: "key".into(),
                message: format!("`{key}` is not a member of room `{id}`"),
            }),
            Some(true) => {
                // This host's streams of the room check their reader now; the other hosts'
                // hear of it by notification.
                self.serving.rooms().members_changed(id);
                self.room_for(tenant, &Participant::admin(), id).await
            }
        }
    }
}

impl Participant {
    /// The host reading on its own behalf (sees every room of the tenant).
    fn admin() -> Participant {
        Participant::User {
            user_id: String::new(),
            display_name: String::new(),
            admin: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_keys_parse_or_name_what_is_wrong() {
        assert_eq!(
            parse_member_key("key", "user:3F2B9C1E-0D4A-4E8B-9A61-5C7D2E0F1A3B").unwrap(),
            MemberKind::User {
                user_id: "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b".into()
            }
        );
        assert_eq!(
            parse_member_key("key", "room-bot:concierge").unwrap(),
            MemberKind::Agent {
                app_id: "room-bot".into(),
                agent_slug: "concierge".into()
            }
        );
        for bad in ["nobody", "user:42", "Room:x", "a:", ":b", "a:b c"] {
            let e = parse_member_key("key", bad).unwrap_err();
            assert!(
                matches!(&e, Refusal::Invalid { field, message } if field == "key" && message.contains(bad)),
                "{bad}: {e}"
            );
        }
    }
}
