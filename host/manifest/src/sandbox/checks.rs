//! The checks, one function per platform call an app can make.
//!
//! Each takes what the caller sent as text (as it crosses the WIT boundary) and answers the
//! values to hand to the platform, or the refusal. The order of the checks is part of the
//! contract: the first failing rule names the problem.

use serde_json::{Map, Value};

use super::{AgentRefusal, Capability, ChainContext, Decision, Declarations, ToolRefusal};
use crate::{Method, match_route, rules};

/// Longest room message, in characters (docs/runtime.md, "Limits").
pub const MAX_ROOM_MESSAGE_CHARS: usize = 20_000;
/// Longest commitment title, in characters (docs/runtime.md, "Limits").
pub const MAX_COMMITMENT_TITLE_CHARS: usize = 200;
/// Longest commitment content, in characters (docs/runtime.md, "Limits").
pub const MAX_COMMITMENT_CONTENT_CHARS: usize = 10_000;

/// The most bytes of an event payload (its JSON text): 64 KiB. Every subscriber gets a copy,
/// so the bound keeps one emit's fan-out small; larger data goes in a record the payload names.
pub const MAX_EVENT_PAYLOAD_BYTES: usize = 64 * 1024;

const ROOMS_POST: &str = Capability::RoomsPost.as_str();
const COMMITMENTS_ADD: &str = Capability::CommitmentsAdd.as_str();

/// Parses a JSON text sent by an app.
fn parse_json(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON: {e}"))
}

/// The names a manifest declares, for an error message: `a, b` or `it declares none`.
pub fn declared_names(names: &[&str]) -> String {
    if names.is_empty() {
        "it declares none".to_owned()
    } else {
        names.join(", ")
    }
}

fn declared_agents(app: &impl Declarations) -> String {
    let names = app.agent_ids();
    if names.is_empty() {
        "the manifest declares no agent".to_owned()
    } else {
        format!("declared agents: {}", names.join(", "))
    }
}

fn agent_key(app: &impl Declarations, slug: &str) -> String {
    format!("{}:{slug}", app.app_id())
}

/// `tools.call`: the arguments must be a JSON object.
pub fn tool_arguments(tool: &str, args: &str) -> Result<Value, ToolRefusal> {
    match parse_json("the arguments", args) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(ToolRefusal::new(
            tool,
            Decision::InvalidArguments,
            "the arguments must be a JSON object",
        )),
        Err(message) => Err(ToolRefusal::new(tool, Decision::InvalidArguments, message)),
    }
}

/// `tools.call`: the install must hold every scope the tool needs. The message says whether
/// the tenant has not granted them or the manifest does not even ask for them.
pub fn tool_scopes(
    app: &impl Declarations,
    tool: &str,
    needs: &[String],
    granted: impl Fn(&str) -> bool,
) -> Result<(), ToolRefusal> {
    let needed: Vec<String> = needs.iter().filter(|s| !granted(s)).cloned().collect();
    if needed.is_empty() {
        return Ok(());
    }
    let required = app.required_scopes();
    let undeclared: Vec<&str> = needed
        .iter()
        .map(String::as_str)
        .filter(|s| !required.contains(s))
        .collect();
    let hint = if undeclared.is_empty() {
        "the tenant has not granted them".to_owned()
    } else {
        format!(
            "add {} to required_scopes so the tenant can grant them",
            undeclared.join(", ")
        )
    };
    Err(ToolRefusal {
        tool_name: tool.to_owned(),
        decision: Decision::ScopeDenied,
        message: format!("tool `{tool}` needs scopes {}: {hint}", needed.join(", ")),
        needed_scopes: needed,
        argument: None,
    })
}

/// A room post that passed the checks.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedPost {
    /// The sender's canonical key, `<app_id>:<from_agent>`.
    pub sender_ref: String,
    /// The sending agent's display name from the manifest.
    pub sender_display: String,
    /// The metadata object (empty when none was sent).
    pub metadata: Value,
}

/// The scope an install must hold to post to rooms as its agents.
pub const ROOMS_WRITE_SCOPE: &str = "rooms.write";

/// `rooms.post`: the sender is a declared agent, the content is 1 to
/// [`MAX_ROOM_MESSAGE_CHARS`] characters and not blank, the metadata a JSON object, and the
/// install holds [`ROOMS_WRITE_SCOPE`] (`granted` answers for the install's scopes).
pub fn room_post(
    app: &impl Declarations,
    from_agent: &str,
    content: &str,
    metadata: Option<&str>,
    granted: impl Fn(&str) -> bool,
) -> Result<CheckedPost, ToolRefusal> {
    let refuse = |argument, decision, message: String| {
        Err(ToolRefusal::new(ROOMS_POST, decision, message).at(argument))
    };
    if from_agent.is_empty() {
        return refuse(
            "from_agent",
            Decision::InvalidArguments,
            "from_agent is required: the agent of this app that posts".into(),
        );
    }
    let Some(sender_display) = app.agent_name(from_agent) else {
        return refuse(
            "from_agent",
            Decision::UnknownAgent,
            format!(
                "`{from_agent}` is not an agent of this app ({})",
                declared_agents(app)
            ),
        );
    };
    let chars = content.chars().count();
    if chars > MAX_ROOM_MESSAGE_CHARS {
        return refuse(
            "content",
            Decision::InvalidArguments,
            format!(
                "content has {chars} characters; a room message has at most {MAX_ROOM_MESSAGE_CHARS}"
            ),
        );
    }
    if content.trim().is_empty() {
        return refuse(
            "content",
            Decision::InvalidArguments,
            "content must not be empty".into(),
        );
    }
    let metadata = match metadata.map(|m| parse_json("metadata", m)) {
        None => Value::Object(Map::new()),
        Some(Ok(v)) if v.is_object() => v,
        Some(Ok(_)) => {
            return refuse(
                "metadata",
                Decision::InvalidArguments,
                "metadata must be a JSON object".into(),
            );
        }
        Some(Err(message)) => return refuse("metadata", Decision::InvalidArguments, message),
    };
    tool_scopes(app, ROOMS_POST, &[ROOMS_WRITE_SCOPE.to_owned()], granted)?;
    Ok(CheckedPost {
        sender_ref: agent_key(app, from_agent),
        sender_display: sender_display.to_owned(),
        metadata,
    })
}

/// `commitments.add`: the committing agent is declared, the title is not blank, title and
/// content are within their lengths and `due_at`, when given, is an ISO-8601 time with an
/// offset.
pub fn commitment(
    app: &impl Declarations,
    title: &str,
    content: &str,
    from_agent: &str,
    due_at: Option<&str>,
) -> Result<(), ToolRefusal> {
    let refuse = |argument, decision, message: String| {
        Err(ToolRefusal::new(COMMITMENTS_ADD, decision, message).at(argument))
    };
    if from_agent.is_empty() {
        return refuse(
            "from_agent",
            Decision::InvalidArguments,
            "from_agent is required".into(),
        );
    }
    if app.agent_name(from_agent).is_none() {
        return refuse(
            "from_agent",
            Decision::UnknownAgent,
            format!(
                "`{from_agent}` is not an agent of this app ({})",
                declared_agents(app)
            ),
        );
    }
    if title.trim().is_empty() {
        return refuse(
            "title",
            Decision::InvalidArguments,
            "title must not be empty".into(),
        );
    }
    let title_chars = title.chars().count();
    if title_chars > MAX_COMMITMENT_TITLE_CHARS {
        return refuse(
            "title",
            Decision::InvalidArguments,
            format!(
                "title has {title_chars} characters; a commitment title has at most {MAX_COMMITMENT_TITLE_CHARS}"
            ),
        );
    }
    let content_chars = content.chars().count();
    if content_chars > MAX_COMMITMENT_CONTENT_CHARS {
        return refuse(
            "content",
            Decision::InvalidArguments,
            format!(
                "content has {content_chars} characters; a commitment has at most {MAX_COMMITMENT_CONTENT_CHARS}"
            ),
        );
    }
    if let Some(due) = due_at
        && due.parse::<jiff::Timestamp>().is_err()
    {
        return refuse(
            "due_at",
            Decision::InvalidArguments,
            format!(
                "due_at `{due}` is not an ISO-8601 time with an offset (for example 2026-05-01T09:00:00Z)"
            ),
        );
    }
    Ok(())
}

fn refuse_on_public_route(chain_public: bool, what: &str) -> Result<(), AgentRefusal> {
    if chain_public {
        return Err(AgentRefusal::new(format!(
            "{what} is not available on a public route: there is no caller agent identity and no tenant principal"
        )));
    }
    Ok(())
}

fn check_own_agent(app: &impl Declarations, slug: &str, role: &str) -> Result<(), AgentRefusal> {
    if slug.is_empty() {
        return Err(AgentRefusal::new(format!("{role} is required")));
    }
    if app.agent_name(slug).is_none() {
        return Err(AgentRefusal::new(format!(
            "{role} `{slug}` is not an agent of this app ({})",
            declared_agents(app)
        )));
    }
    Ok(())
}

/// `team.delegate`: not on a public route; `from_agent` is declared; the target is in its
/// `team` (a delegation to itself needs no team); then the chain advances to the target.
pub fn delegate(
    app: &impl Declarations,
    chain: &ChainContext,
    public_route: bool,
    target: &str,
    from_agent: &str,
) -> Result<ChainContext, AgentRefusal> {
    refuse_on_public_route(public_route, "team delegation")?;
    check_own_agent(app, from_agent, "from_agent")?;
    if target != from_agent {
        let team = app.agent_team(from_agent);
        if team.is_empty() {
            return Err(AgentRefusal::new(format!(
                "team delegation denied: agent `{from_agent}` has no team"
            )));
        }
        if !team.contains(&target) {
            return Err(AgentRefusal::new(format!(
                "team delegation denied: `{target}` is not in the team of `{from_agent}` ({})",
                team.join(", ")
            )));
        }
    }
    chain.enter(Some(&agent_key(app, target)))
}

/// `apps.invoke`: not on a public route; an app and an agent are named; the chain advances to
/// `<app>:<agent>`. The grant is the platform's to check.
pub fn invoke(
    chain: &ChainContext,
    public_route: bool,
    app: &str,
    agent: &str,
) -> Result<ChainContext, AgentRefusal> {
    refuse_on_public_route(public_route, "apps.invoke")?;
    if app.is_empty() || agent.is_empty() {
        return Err(AgentRefusal::new("apps.invoke needs an app and an agent"));
    }
    chain.enter(Some(&format!("{app}:{agent}")))
}

/// `apps.fetch`: a known method and an absolute path; the chain advances (no agent is
/// reached). Answers the normalised method.
pub fn fetch(
    chain: &ChainContext,
    path: &str,
    method: &str,
) -> Result<(Method, ChainContext), AgentRefusal> {
    let Some(parsed) = Method::parse(method) else {
        return Err(AgentRefusal::new(format!(
            "apps.fetch: `{method}` is not one of GET, POST, PUT, DELETE, PATCH"
        )));
    };
    if !path.starts_with('/') {
        return Err(AgentRefusal::new(format!(
            "apps.fetch: the path `{path}` must start with /"
        )));
    }
    Ok((parsed, chain.enter(None)?))
}

/// `events.emit`: not on a public route; the event is declared in `emits`; the payload is
/// JSON of at most [`MAX_EVENT_PAYLOAD_BYTES`]; the chain advances.
pub fn emit(
    app: &impl Declarations,
    chain: &ChainContext,
    public_route: bool,
    name: &str,
    payload: &str,
) -> Result<(Value, ChainContext), AgentRefusal> {
    refuse_on_public_route(public_route, "events.emit")?;
    let emits = app.emits();
    if !emits.contains(&name) {
        return Err(AgentRefusal::new(format!(
            "event `{name}` is not declared in the manifest's emits ({})",
            declared_names(&emits)
        )));
    }
    if payload.len() > MAX_EVENT_PAYLOAD_BYTES {
        return Err(AgentRefusal::new(format!(
            "the event payload has {} bytes; an event payload has at most {MAX_EVENT_PAYLOAD_BYTES} (put larger data in a record and send its id)",
            payload.len()
        )));
    }
    let payload = parse_json("the event payload", payload).map_err(AgentRefusal::new)?;
    Ok((payload, chain.enter(None)?))
}

/// `agent.ask`: the named agent is declared, or the app has a default agent; the chain
/// advances to it. Answers the agent's slug.
pub fn ask(
    app: &impl Declarations,
    chain: &ChainContext,
    agent: Option<&str>,
) -> Result<(String, ChainContext), AgentRefusal> {
    let slug = match agent {
        Some(slug) => {
            check_own_agent(app, slug, "agent")?;
            slug.to_owned()
        }
        None => match app.default_agent() {
            Some(slug) => slug.to_owned(),
            None => return Err(AgentRefusal::new("agent.ask: this app declares no agent")),
        },
    };
    let chain = chain.enter(Some(&agent_key(app, &slug)))?;
    Ok((slug, chain))
}

/// `context.public-callback-url`: the path matches a route declared `public: true`.
pub fn public_callback_path(app: &impl Declarations, path: &str) -> Result<(), String> {
    let public = app.public_routes();
    if public.iter().any(|p| match_route(p, path).is_some()) {
        return Ok(());
    }
    Err(format!(
        "`{path}` matches no public route of this app ({})",
        if public.is_empty() {
            "it declares none".to_owned()
        } else {
            format!("public routes: {}", public.join(", "))
        }
    ))
}

/// `secrets.get`: the key must match `^[A-Z][A-Z0-9_]{0,63}$`. A malformed key reads as unset
/// (`get` never fails); the answer is the warning to log for the developer.
pub fn secret_key(key: &str) -> Result<(), String> {
    if rules::is_secret_key(key) {
        return Ok(());
    }
    Err(format!(
        "secrets.get(`{key}`): a secret key must match ^[A-Z][A-Z0-9_]{{0,63}}$; returning none"
    ))
}
