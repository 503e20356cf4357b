//! The platform's scope catalogue: every scope an app may list in `required_scopes`, what it
//! lets the app do, and how much a tenant should think before granting it.
//!
//! A tenant grants an app's scopes on install; a scope outside this catalogue could never be
//! granted, so preflight and version registration refuse it. The table is documented in
//! docs/platform.md and served at `GET /api/scopes`. Scopes are only ever added, never renamed.

use serde::Serialize;

/// How much a scope exposes, shown on the install page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads data of the tenant that is rarely sensitive.
    Low,
    /// Reads sensitive data, or writes data that can be restored.
    Medium,
    /// Acts in the tenant's name outside the platform, or changes data for good.
    High,
}

/// One scope of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Scope {
    /// The name apps list in `required_scopes`.
    pub name: &'static str,
    /// What granting it allows, in the install page's words.
    pub description: &'static str,
    /// How much it exposes.
    pub risk: Risk,
}

const fn scope(name: &'static str, risk: Risk, description: &'static str) -> Scope {
    Scope {
        name,
        description,
        risk,
    }
}

/// Every scope, by name.
pub const CATALOGUE: &[Scope] = &[
    scope(
        "calendar.read",
        Risk::Medium,
        "Read the tenant's calendars and events.",
    ),
    scope(
        "calendar.write",
        Risk::High,
        "Create, change and cancel events in the tenant's calendars.",
    ),
    scope(
        "contacts.read",
        Risk::Medium,
        "Read the tenant's contacts and companies.",
    ),
    scope(
        "contacts.write",
        Risk::Medium,
        "Create and change the tenant's contacts and companies.",
    ),
    scope(
        "documents.read",
        Risk::Medium,
        "Read the tenant's documents and document templates.",
    ),
    scope(
        "documents.write",
        Risk::Medium,
        "Create and change the tenant's documents; clone template defaults.",
    ),
    scope(
        "invoices.read",
        Risk::Medium,
        "Read the tenant's invoices, bills and payment status.",
    ),
    scope(
        "invoices.write",
        Risk::High,
        "Create, approve and change the tenant's invoices and bills.",
    ),
    scope(
        "knowledge.read",
        Risk::Low,
        "Query the knowledge collections bound to the app's rag slots.",
    ),
    scope(
        "knowledge.write",
        Risk::Medium,
        "Add and remove documents in knowledge collections bound read-write.",
    ),
    scope(
        "mail.read",
        Risk::High,
        "Read the tenant's mailboxes connected to the platform.",
    ),
    scope("mail.send", Risk::High, "Send email in the tenant's name."),
    scope(
        "memory.read",
        Risk::Low,
        "Read the memory entries of the app's own agents.",
    ),
    scope(
        "memory.write",
        Risk::Medium,
        "Write memory entries of the app's own agents.",
    ),
    scope(
        "rooms.read",
        Risk::Low,
        "Read the timelines of the group rooms the app's agents are members of.",
    ),
    scope(
        "rooms.write",
        Risk::Low,
        "Post into the group rooms the app's agents are members of.",
    ),
    scope(
        "tasks.read",
        Risk::Low,
        "Read the tenant's tasks and commitments.",
    ),
    scope(
        "tasks.write",
        Risk::Medium,
        "Create and complete the tenant's tasks and commitments.",
    ),
    scope(
        "users.read",
        Risk::Low,
        "Read the names, emails and roles of the tenant's users.",
    ),
];

/// The scope called `name`, if the platform knows it.
#[must_use]
pub fn find(name: &str) -> Option<&'static Scope> {
    CATALOGUE.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_is_sorted_unique_and_well_formed() {
        let names: Vec<&str> = CATALOGUE.iter().map(|s| s.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            names, sorted,
            "keep the catalogue sorted and without duplicates"
        );
        for s in CATALOGUE {
            assert!(atrium_manifest::rules::is_scope_name(s.name), "{}", s.name);
            assert!(s.description.ends_with('.'), "{}", s.name);
        }
        assert!(find("mail.send").is_some());
        assert!(find("mail.sendx").is_none());
    }
}
