//! The registration rules: which handlers an app may register, checked against its manifest.
//!
//! The Rust SDK applies them one registration at a time, as the app builds itself; the host
//! applies them to the whole registration a component reports at load (`handlers.describe`),
//! so a component written against the raw WIT, without the SDK, is held to the same rules with
//! the same words. What the host cannot see (a tool's `scopes_required` option lives only in
//! the SDK) the host enforces at call time from the manifest instead.

use std::collections::BTreeSet;
use std::fmt;

use super::Declarations;

/// The lifecycle hooks, named as in the manifest.
pub const LIFECYCLE_HOOKS: [&str; 4] =
    ["on_install", "on_uninstall", "on_inbound", "on_user_added"];

/// Whether `hook` is on, given the manifest's flags in the order of [`LIFECYCLE_HOOKS`]; false
/// for a name that is no lifecycle hook.
#[must_use]
pub fn hook_enabled(hook: &str, flags: [bool; 4]) -> bool {
    LIFECYCLE_HOOKS
        .iter()
        .position(|h| *h == hook)
        .is_some_and(|i| flags[i])
}

/// Which registration rule was broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegistrationRule {
    /// A lifecycle handler whose flag in `lifecycle` is not true (or that is no lifecycle hook).
    LifecycleDisabled,
    /// A schedule handler whose name is not in `lifecycle.schedules`.
    UnknownSchedule,
    /// `scopes_required` outside the manifest's `required_scopes`.
    ScopeNotRequired,
    /// A second handler for the same tool, hook, schedule, event or route.
    DoubleRegistration,
    /// A tool handler for a tool the manifest does not declare.
    UnknownTool,
    /// An event handler for an event the manifest does not subscribe to.
    UnknownEvent,
    /// A route handler for a route the manifest does not declare.
    UnknownRoute,
    /// A room handler in an app that declares no agent.
    NoAgent,
    /// A route handler in a component that does not export `wasi:http/incoming-handler`, so
    /// that no request could reach it.
    RouteNotServed,
}

/// A refused registration: the rule and a sentence naming the handler and the manifest field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationRefusal {
    /// Which rule.
    pub rule: RegistrationRule,
    /// The explanation.
    pub message: String,
}

impl fmt::Display for RegistrationRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RegistrationRefusal {}

fn refuse(rule: RegistrationRule, message: String) -> RegistrationRefusal {
    RegistrationRefusal { rule, message }
}

fn listing<S: AsRef<str>>(names: &[S]) -> String {
    if names.is_empty() {
        "none are declared".to_owned()
    } else {
        let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
        format!("declared: {}", names.join(", "))
    }
}

/// A second handler for the same name.
#[must_use]
pub fn double_registration(what: &str, name: &str) -> RegistrationRefusal {
    refuse(
        RegistrationRule::DoubleRegistration,
        format!("cannot register {what} `{name}` twice: a handler is already registered"),
    )
}

/// The refusal of a tool handler for a tool that `tools` does not declare.
#[must_use]
pub fn unknown_tool(app: &impl Declarations, name: &str) -> RegistrationRefusal {
    refuse(
        RegistrationRule::UnknownTool,
        format!(
            "cannot register tool `{name}`: it is not in the manifest's tools ({})",
            listing(&app.tool_names())
        ),
    )
}

/// A tool handler: `name` is in `tools` and `scopes_required` is a subset of
/// `required_scopes`.
pub fn tool(
    app: &impl Declarations,
    name: &str,
    scopes_required: &[&str],
) -> Result<(), RegistrationRefusal> {
    if !app.declares_tool(name) {
        return Err(unknown_tool(app, name));
    }
    if scopes_required.is_empty() {
        return Ok(());
    }
    let required = app.required_scopes();
    let outside: Vec<&str> = scopes_required
        .iter()
        .copied()
        .filter(|s| !required.contains(s))
        .collect();
    if outside.is_empty() {
        return Ok(());
    }
    Err(refuse(
        RegistrationRule::ScopeNotRequired,
        format!(
            "cannot register tool `{name}`: scopes_required {} must be a subset of the manifest's required_scopes ({})",
            outside.join(", "),
            listing(&required)
        ),
    ))
}

/// A lifecycle handler: `hook` is one of [`LIFECYCLE_HOOKS`] and its flag is true.
pub fn lifecycle_hook(app: &impl Declarations, hook: &str) -> Result<(), RegistrationRefusal> {
    if !LIFECYCLE_HOOKS.contains(&hook) {
        return Err(refuse(
            RegistrationRule::LifecycleDisabled,
            format!(
                "cannot register lifecycle hook `{hook}`: the hooks are {}",
                LIFECYCLE_HOOKS.join(", ")
            ),
        ));
    }
    if app.lifecycle_enabled(hook) {
        Ok(())
    } else {
        Err(refuse(
            RegistrationRule::LifecycleDisabled,
            format!("cannot register {hook}: lifecycle.{hook} is not true in the manifest"),
        ))
    }
}

/// A schedule handler: `name` is in `lifecycle.schedules`.
pub fn schedule(app: &impl Declarations, name: &str) -> Result<(), RegistrationRefusal> {
    let schedules = app.schedules();
    if schedules.contains(&name) {
        return Ok(());
    }
    Err(refuse(
        RegistrationRule::UnknownSchedule,
        format!(
            "cannot register schedule `{name}`: it is not in lifecycle.schedules ({})",
            listing(&schedules)
        ),
    ))
}

/// An event handler: `subscribes_to` has an entry with this `event_name`.
pub fn event(app: &impl Declarations, name: &str) -> Result<(), RegistrationRefusal> {
    let events = app.subscribed_events();
    if events.contains(&name) {
        return Ok(());
    }
    Err(refuse(
        RegistrationRule::UnknownEvent,
        format!(
            "cannot register event handler `{name}`: the manifest's subscribes_to has no such event ({})",
            listing(&events)
        ),
    ))
}

/// The room `on_message` handler: the app declares an agent.
pub fn room_handler(app: &impl Declarations) -> Result<(), RegistrationRefusal> {
    if app.agent_ids().is_empty() {
        Err(refuse(
            RegistrationRule::NoAgent,
            "cannot register on_message: the manifest declares no agent to be mentioned".into(),
        ))
    } else {
        Ok(())
    }
}

/// A route handler: the same method (any case) and path are in `http_routes`.
pub fn route(app: &impl Declarations, method: &str, path: &str) -> Result<(), RegistrationRefusal> {
    if app
        .routes()
        .iter()
        .any(|(m, p)| m.eq_ignore_ascii_case(method) && *p == path)
    {
        Ok(())
    } else {
        Err(unknown_route(app, method, path))
    }
}

/// The refusal of a route handler for a route that `http_routes` does not declare.
#[must_use]
pub fn unknown_route(app: &impl Declarations, method: &str, path: &str) -> RegistrationRefusal {
    let declared: Vec<String> = app
        .routes()
        .iter()
        .map(|(m, p)| format!("{m} {p}"))
        .collect();
    refuse(
        RegistrationRule::UnknownRoute,
        format!(
            "cannot register route `{} {path}`: it is not in the manifest's http_routes ({})",
            method.to_ascii_uppercase(),
            listing(&declared)
        ),
    )
}

/// The refusal of a route handler in a component that serves no HTTP: one exported without
/// `wasi:http/incoming-handler` (the Rust SDK's `export!(app, without_http)`).
#[must_use]
pub fn route_not_served(method: &str, path: &str) -> RegistrationRefusal {
    refuse(
        RegistrationRule::RouteNotServed,
        format!(
            "cannot register route `{} {path}`: the component does not export wasi:http/incoming-handler, so no request would reach it (with the Rust SDK, export the app with `atrium_sdk::export!(app)`, not `export!(app, without_http)`)",
            method.to_ascii_uppercase()
        ),
    )
}

/// Everything a component reports it registered (`handlers.describe`, docs/wit.md), in the
/// words of the WIT record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registered<'a> {
    /// Tools with a handler.
    pub tools: &'a [String],
    /// Lifecycle hooks with a handler.
    pub lifecycle: &'a [String],
    /// Schedules with a handler.
    pub schedules: &'a [String],
    /// Event names with a handler.
    pub events: &'a [String],
    /// Whether a room `on_message` handler is registered.
    pub room_messages: bool,
    /// Routes with a handler, as `<METHOD> <path>`.
    pub routes: &'a [String],
    /// Whether the component exports `wasi:http/incoming-handler`, without which no route
    /// handler can be reached.
    pub serves_http: bool,
}

/// Checks a whole registration against the manifest with the rules above, in the order the
/// SDK would meet them; the first broken rule names the registration.
pub fn check(
    app: &impl Declarations,
    registered: &Registered<'_>,
) -> Result<(), RegistrationRefusal> {
    fn once<'n>(
        seen: &mut BTreeSet<&'n str>,
        what: &str,
        name: &'n str,
    ) -> Result<(), RegistrationRefusal> {
        if seen.insert(name) {
            Ok(())
        } else {
            Err(double_registration(what, name))
        }
    }
    let mut seen = BTreeSet::new();
    for name in registered.tools {
        tool(app, name, &[])?;
        once(&mut seen, "tool", name)?;
    }
    let mut seen = BTreeSet::new();
    for hook in registered.lifecycle {
        lifecycle_hook(app, hook)?;
        once(&mut seen, "lifecycle hook", hook)?;
    }
    let mut seen = BTreeSet::new();
    for name in registered.schedules {
        schedule(app, name)?;
        once(&mut seen, "schedule", name)?;
    }
    let mut seen = BTreeSet::new();
    for name in registered.events {
        event(app, name)?;
        once(&mut seen, "event", name)?;
    }
    if registered.room_messages {
        room_handler(app)?;
    }
    let mut seen = BTreeSet::new();
    for entry in registered.routes {
        let Some((method, path)) = entry.split_once(' ') else {
            return Err(refuse(
                RegistrationRule::UnknownRoute,
                format!("cannot register route `{entry}`: a route is written `<METHOD> <path>`"),
            ));
        };
        route(app, method, path)?;
        if !registered.serves_http {
            return Err(route_not_served(method, path));
        }
        once(&mut seen, "route", entry)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(extra: &str) -> crate::Manifest {
        crate::parse(&format!(
            "apiVersion: platform/v2\napp_id: desk\nversion: 1.0.0\nname: Desk\n\
             runtime:\n  image: a/b:1\nrequired_scopes: [desk.read]\n\
             tools:\n  - {{ name: lookup, description: Finds., scopes_required: [] }}\n{extra}"
        ))
        .unwrap()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_registration_within_the_manifest_passes() {
        let m = manifest(
            "lifecycle:\n  on_install: true\n  schedules:\n    - { name: nightly, cron: \"0 3 * * *\" }\n\
             agent:\n  name: Clerk\n  system_prompt: Help.\n\
             subscribes_to:\n  - { emitter_app: ledger, event_name: booked, target_agent: default }\n\
             http_routes:\n  - { path: \"/items/{id}\", method: GET }\n",
        );
        let (tools, hooks, schedules, events, routes) = (
            names(&["lookup"]),
            names(&["on_install"]),
            names(&["nightly"]),
            names(&["booked"]),
            names(&["GET /items/{id}"]),
        );
        let registered = Registered {
            tools: &tools,
            lifecycle: &hooks,
            schedules: &schedules,
            events: &events,
            room_messages: true,
            routes: &routes,
            serves_http: true,
        };
        assert_eq!(check(&m, &registered), Ok(()));
        let err = check(
            &m,
            &Registered {
                serves_http: false,
                ..registered.clone()
            },
        )
        .unwrap_err();
        assert_eq!(err.rule, RegistrationRule::RouteNotServed);
        assert!(
            err.message.starts_with(
                "cannot register route `GET /items/{id}`: the component does not export wasi:http/incoming-handler"
            ),
            "{}",
            err.message
        );
        assert_eq!(tool(&m, "lookup", &["desk.read"]), Ok(()));
        assert_eq!(route(&m, "get", "/items/{id}"), Ok(()));
    }

    #[test]
    fn every_rule_names_the_registration() {
        let m = manifest("");
        let refused = |registered: Registered<'_>| check(&m, &registered).unwrap_err();
        let tools = names(&["lookup", "drop_tables"]);
        let err = refused(Registered {
            tools: &tools,
            ..Registered::default()
        });
        assert_eq!(err.rule, RegistrationRule::UnknownTool);
        assert_eq!(
            err.message,
            "cannot register tool `drop_tables`: it is not in the manifest's tools (declared: lookup)"
        );
        let tools = names(&["lookup", "lookup"]);
        let err = refused(Registered {
            tools: &tools,
            ..Registered::default()
        });
        assert_eq!(err.rule, RegistrationRule::DoubleRegistration);
        assert_eq!(
            err.message,
            "cannot register tool `lookup` twice: a handler is already registered"
        );
        let hooks = names(&["on_install"]);
        let err = refused(Registered {
            lifecycle: &hooks,
            ..Registered::default()
        });
        assert_eq!(
            err.message,
            "cannot register on_install: lifecycle.on_install is not true in the manifest"
        );
        let hooks = names(&["on_reboot"]);
        let err = refused(Registered {
            lifecycle: &hooks,
            ..Registered::default()
        });
        assert_eq!(err.rule, RegistrationRule::LifecycleDisabled);
        assert!(err.message.contains("`on_reboot`"), "{}", err.message);
        let schedules = names(&["hourly"]);
        let err = refused(Registered {
            schedules: &schedules,
            ..Registered::default()
        });
        assert_eq!(
            err.message,
            "cannot register schedule `hourly`: it is not in lifecycle.schedules (none are declared)"
        );
        let events = names(&["booked"]);
        let err = refused(Registered {
            events: &events,
            ..Registered::default()
        });
        assert_eq!(err.rule, RegistrationRule::UnknownEvent);
        let err = refused(Registered {
            room_messages: true,
            ..Registered::default()
        });
        assert_eq!(err.rule, RegistrationRule::NoAgent);
        for entry in ["POST /x", "GET"] {
            let routes = names(&[entry]);
            let err = refused(Registered {
                routes: &routes,
                ..Registered::default()
            });
            assert_eq!(err.rule, RegistrationRule::UnknownRoute, "{entry}");
            assert!(err.message.contains(entry), "{}", err.message);
        }
        let err = tool(&m, "lookup", &["desk.read", "desk.admin"]).unwrap_err();
        assert_eq!(err.rule, RegistrationRule::ScopeNotRequired);
        assert_eq!(
            err.message,
            "cannot register tool `lookup`: scopes_required desk.admin must be a subset of the manifest's required_scopes (declared: desk.read)"
        );
    }
}
