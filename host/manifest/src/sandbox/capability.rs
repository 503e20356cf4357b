//! The platform capabilities an app reaches through its imports, by the names the WIT contract
//! and the container shim's callbacks give them, and the one answer a host gives for a
//! capability it does not offer: decision `not_available`, naming the capability.
//!
//! A host answers `not_available` for the whole capability, never for one input: the checks
//! of [`super::checks`] run first, so a call that breaks a sandbox rule is refused for that
//! rule whether or not the host offers the capability, and a well-formed call learns only that
//! this host cannot serve it (not that a room or an agent does not exist).

use std::fmt;

use super::{AgentRefusal, Decision, ToolRefusal};

/// A capability of the platform, as an app calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// `tools.call`: platform tools.
    ToolsCall,
    /// `rooms.post`: posting to a group room.
    RoomsPost,
    /// `commitments.add`: recording a commitment.
    CommitmentsAdd,
    /// `team.delegate`: delegating to another agent of the same app.
    TeamDelegate,
    /// `apps.invoke`: invoking another app's agent.
    AppsInvoke,
    /// `apps.fetch`: calling another app's route.
    AppsFetch,
    /// `events.emit`: emitting an event to subscribed apps.
    EventsEmit,
    /// `agent.ask`: asking one of the app's own agents.
    AgentAsk,
}

/// Whether a capability's failures are `ToolCallError`s or `AgentCallError`s (docs/wit.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `ToolCallError`: `tool_name`, `decision`, `message`, `needed_scopes`.
    Tool,
    /// `AgentCallError`: `reason`.
    Agent,
}

impl Capability {
    /// Every capability, in declaration order.
    pub const ALL: [Capability; 8] = [
        Capability::ToolsCall,
        Capability::RoomsPost,
        Capability::CommitmentsAdd,
        Capability::TeamDelegate,
        Capability::AppsInvoke,
        Capability::AppsFetch,
        Capability::EventsEmit,
        Capability::AgentAsk,
    ];

    /// The name, `<interface>.<function>` as in the WIT contract.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Capability::ToolsCall => "tools.call",
            Capability::RoomsPost => "rooms.post",
            Capability::CommitmentsAdd => "commitments.add",
            Capability::TeamDelegate => "team.delegate",
            Capability::AppsInvoke => "apps.invoke",
            Capability::AppsFetch => "apps.fetch",
            Capability::EventsEmit => "events.emit",
            Capability::AgentAsk => "agent.ask",
        }
    }

    /// The capability of this name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Which error type the capability fails with.
    #[must_use]
    pub fn error_kind(self) -> ErrorKind {
        match self {
            Capability::ToolsCall | Capability::RoomsPost | Capability::CommitmentsAdd => {
                ErrorKind::Tool
            }
            Capability::TeamDelegate
            | Capability::AppsInvoke
            | Capability::AppsFetch
            | Capability::EventsEmit
            | Capability::AgentAsk => ErrorKind::Agent,
        }
    }

    fn sentence(self) -> String {
        format!("`{self}` is not available on this host")
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The prefix of an [`AgentRefusal`]'s reason that carries a decision, as in
/// `not_available: ...`: `AgentCallError` has only a `reason` (docs/wit.md).
fn decision_prefix(decision: Decision) -> String {
    format!("{}: ", decision.as_str())
}

impl ToolRefusal {
    /// The host does not offer `capability`: decision `not_available`, the capability as
    /// `tool_name`.
    #[must_use]
    pub fn not_available(capability: Capability) -> Self {
        ToolRefusal::new(
            capability.as_str(),
            Decision::NotAvailable,
            capability.sentence(),
        )
    }
}

impl AgentRefusal {
    /// The host does not offer `capability`: the reason is
    /// ``not_available: `<capability>` is not available on this host``.
    #[must_use]
    pub fn not_available(capability: Capability) -> Self {
        AgentRefusal::new(format!(
            "{}{}",
            decision_prefix(Decision::NotAvailable),
            capability.sentence()
        ))
    }

    /// The decision the reason carries, when it starts with one (`not_available: ...`).
    #[must_use]
    pub fn decision(&self) -> Option<Decision> {
        reason_decision(&self.reason)
    }
}

/// The decision an `AgentCallError`'s reason carries, when it starts with one: the SDKs read
/// `not_available` this way.
#[must_use]
pub fn reason_decision(reason: &str) -> Option<Decision> {
    let (name, _) = reason.split_once(": ")?;
    Decision::parse(name).filter(|d| reason.starts_with(&decision_prefix(*d)))
}

/// Which capability a `not_available` refusal names, if it is one: from a `ToolCallError`'s
/// `tool_name` or an `AgentCallError`'s reason.
#[must_use]
pub fn unavailable_capability(tool_name_or_reason: &str) -> Option<Capability> {
    if let Some(c) = Capability::parse(tool_name_or_reason) {
        return Some(c);
    }
    let rest = tool_name_or_reason.strip_prefix(&decision_prefix(Decision::NotAvailable))?;
    let name = rest.strip_prefix('`')?.split('`').next()?;
    Capability::parse(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        for c in Capability::ALL {
            assert_eq!(Capability::parse(c.as_str()), Some(c));
        }
        assert_eq!(Capability::parse("agent.tell"), None);
    }

    #[test]
    fn not_available_names_the_capability_in_both_error_types() {
        let t = ToolRefusal::not_available(Capability::RoomsPost);
        assert_eq!(t.tool_name, "rooms.post");
        assert_eq!(t.decision, Decision::NotAvailable);
        assert_eq!(t.message, "`rooms.post` is not available on this host");
        assert!(t.needed_scopes.is_empty());

        let a = AgentRefusal::not_available(Capability::AgentAsk);
        assert_eq!(
            a.reason,
            "not_available: `agent.ask` is not available on this host"
        );
        assert_eq!(a.decision(), Some(Decision::NotAvailable));
        assert_eq!(
            unavailable_capability(&a.reason),
            Some(Capability::AgentAsk)
        );
    }

    #[test]
    fn other_reasons_carry_no_decision() {
        for reason in [
            "chain depth exceeded: 9 > 8",
            "no grant: no active grant names agent `x` of app `y`",
            "team delegation denied: agent `a` has no team",
            "not_available",
            "",
        ] {
            assert_eq!(reason_decision(reason), None, "{reason}");
            assert_eq!(unavailable_capability(reason), None, "{reason}");
        }
    }
}
