//! The skills a host provides: the one list that the validator checks a heartbeat's `skill`
//! and `tool` against (`atrium lint`, preflight, registration) and that the host runs them by
//! (a heartbeat's pre-filter; its platform tool catalogue, `atrium_platform::composition::platform_tools`,
//! holds exactly these tools, which a test of the platform checks).
//!
//! A heartbeat's pre-filter reads one of two sources:
//!
//! - a **sentinel** ([`SENTINEL_SKILLS`], tool `query`): the app's records or the agent's
//!   memory;
//! - a **platform skill**: a family of [`PLATFORM_TOOLS`] (`records` for `records.query`),
//!   with one of its tools. Whether the tool is LOW-risk and the install holds its scopes is
//!   the platform's to check at run time (the scope catalogue is the platform's).
//!
//! ```
//! use atrium_manifest::skills;
//! assert_eq!(skills::platform_tool("records", "query"), Some("records.query"));
//! assert_eq!(skills::platform_tool("invoices", "search"), None);
//! assert!(skills::platform_skills().contains(&"knowledge"));
//! ```

/// The sentinels, which read the platform's own data; their tool must be `query`.
pub const SENTINEL_SKILLS: [&str; 2] = ["_internal_app_records", "_internal_agent_memory"];

/// The tool every sentinel is read with.
pub const SENTINEL_TOOL: &str = "query";

/// Every platform tool the host provides, `<skill>.<tool>`, by skill then tool: what
/// `tools.call` reaches, what the agent runner offers, and what a heartbeat's pre-filter may
/// name (as its `skill` and `tool`).
pub const PLATFORM_TOOLS: &[&str] = &[
    "chat.complete",
    "knowledge.add",
    "knowledge.query",
    "memory.query",
    "memory.write",
    "records.delete",
    "records.get",
    "records.put",
    "records.query",
    "records.update",
    "rooms.messages",
];

/// Whether `skill` is a sentinel.
#[must_use]
pub fn is_sentinel(skill: &str) -> bool {
    SENTINEL_SKILLS.contains(&skill)
}

/// The platform skills: the families of [`PLATFORM_TOOLS`], each once, in order.
#[must_use]
pub fn platform_skills() -> Vec<&'static str> {
    let mut skills: Vec<&'static str> = Vec::new();
    for name in PLATFORM_TOOLS.iter().copied() {
        let skill = name.split_once('.').map_or(name, |(s, _)| s);
        if !skills.contains(&skill) {
            skills.push(skill);
        }
    }
    skills
}

/// The tools of platform skill `skill` (`query` for `records`), in order; none for a skill the
/// host does not provide.
#[must_use]
pub fn tools_of(skill: &str) -> Vec<&'static str> {
    PLATFORM_TOOLS
        .iter()
        .copied()
        .filter_map(|name| match name.split_once('.') {
            Some((s, tool)) if s == skill => Some(tool),
            _ => None,
        })
        .collect()
}

/// The platform tool that `skill` and `tool` name (`records`, `query`: `records.query`), when
/// the host provides it.
#[must_use]
pub fn platform_tool(skill: &str, tool: &str) -> Option<&'static str> {
    PLATFORM_TOOLS
        .iter()
        .copied()
        .find(|name| name.split_once('.') == Some((skill, tool)))
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a heartbeat's `skill` and `tool` name no pre-filter source this host runs; `None` when
/// they name a sentinel (whose tool rule is checked on its own) or a platform tool.
#[must_use]
pub fn unknown_source(skill: &str, tool: &str) -> Option<UnknownSource> {
    if is_sentinel(skill) || platform_tool(skill, tool).is_some() {
        return None;
    }
    let skills = platform_skills();
    if skills.contains(&skill) {
        return Some(UnknownSource::Tool(format!(
            "skill `{skill}` has no tool `{tool}`; its tools are {}",
            quoted(&tools_of(skill))
        )));
    }
    // `invoices.search` or `records.query` as the skill: a tool's whole name in one field.
    let hint = match skill.split_once('.') {
        Some((family, name)) if platform_tool(family, name).is_some() => {
            format!("; write the platform tool `{skill}` as skill `{family}` and tool `{name}`")
        }
        _ => String::new(),
    };
    Some(UnknownSource::Skill(format!(
        "`{skill}` is not a skill this host provides: a heartbeat's pre-filter reads a sentinel ({}, tool `{SENTINEL_TOOL}`) or a platform skill ({}){hint}",
        quoted(&SENTINEL_SKILLS),
        quoted(&skills)
    )))
}

/// What is wrong with a heartbeat's pre-filter source, and the message that says so (naming
/// the skills, or the skill's tools, that the host provides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownSource {
    /// The skill is neither a sentinel nor a platform skill.
    Skill(String),
    /// The skill is a platform skill without that tool.
    Tool(String),
}

impl UnknownSource {
    /// The message.
    #[must_use]
    pub fn message(&self) -> &str {
        match self {
            UnknownSource::Skill(m) | UnknownSource::Tool(m) => m,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_the_families_of_the_platform_tools() {
        assert_eq!(
            platform_skills(),
            ["chat", "knowledge", "memory", "records", "rooms"]
        );
        assert_eq!(tools_of("memory"), ["query", "write"]);
        assert!(tools_of("invoices").is_empty());
        assert_eq!(platform_tool("rooms", "messages"), Some("rooms.messages"));
        assert_eq!(platform_tool("rooms", "post"), None);
        let mut sorted = PLATFORM_TOOLS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, PLATFORM_TOOLS, "sorted, each once");
    }

    #[test]
    fn an_unknown_source_names_what_the_host_provides() {
        assert_eq!(unknown_source("_internal_app_records", "query"), None);
        assert_eq!(unknown_source("records", "query"), None);
        let Some(UnknownSource::Skill(message)) = unknown_source("invoices.search", "search")
        else {
            panic!("an unknown skill");
        };
        for skill in ["`records`", "`knowledge`", "`_internal_app_records`"] {
            assert!(message.contains(skill), "{message}");
        }
        let Some(UnknownSource::Skill(message)) = unknown_source("records.query", "query") else {
            panic!("a whole tool name as the skill");
        };
        assert!(
            message.contains("as skill `records` and tool `query`"),
            "{message}"
        );
        assert_eq!(
            unknown_source("records", "search"),
            Some(UnknownSource::Tool(
                "skill `records` has no tool `search`; its tools are `delete`, `get`, `put`, `query`, `update`".into()
            ))
        );
    }
}
