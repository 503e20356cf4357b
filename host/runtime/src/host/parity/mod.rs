//! One table of inputs, run through the runtime's host imports and through the Rust SDK's test
//! double: both must refuse the same inputs with the same decision and words, and accept the
//! same inputs. The sandbox rules live once, in `atrium_manifest::sandbox`; this test keeps the
//! two callers honest about using them.

use std::collections::BTreeSet;
use std::sync::Arc;

use atrium_sdk::testing::TestClient;
use atrium_sdk::{App, Ctx, Error, ManifestInfo, RegistrationError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{agent, apps, commitments, context, events, rooms, team, tools};
use crate::bindings::atrium::app::{
    agent::Host as _, apps::Host as _, commitments::Host as _, context::Host as _,
    events::Host as _, rooms::Host as _, team::Host as _, tools::Host as _,
};
use crate::memory::MemoryPlatform;
use crate::state::CallContext;
use crate::{CallInfo, Capability, ChainContext, MAX_CHAIN_DEPTH, MAX_ROOM_MESSAGE_CHARS};
use atrium_manifest::sandbox::{
    MAX_COMMITMENT_CONTENT_CHARS, MAX_COMMITMENT_TITLE_CHARS, MAX_EVENT_PAYLOAD_BYTES,
};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("tests/fixtures/sandbox-parity.yaml");
const MANIFEST_TEXT: &str = include_str!("../../../tests/fixtures/sandbox-parity.yaml");

/// One platform call, as an app makes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Op {
    RoomPost {
        content: String,
        from_agent: String,
        metadata: Option<Value>,
        /// The install lacks `rooms.write` (every other row holds it).
        #[serde(default)]
        ungranted: bool,
    },
    Delegate {
        target: String,
        from_agent: String,
    },
    Invoke {
        app: String,
        agent: String,
    },
    Fetch {
        path: String,
        method: String,
    },
    Emit {
        name: String,
        /// The characters of the payload's `pad` string (the payload is `{"n": 1}` when 0).
        pad: usize,
    },
    Ask {
        agent: Option<String>,
    },
    Commit {
        title: String,
        content: String,
        from_agent: String,
        due_at: Option<String>,
    },
    Tool {
        name: String,
        args: Value,
    },
    PublicUrl {
        path: String,
    },
}

/// What came back, in a form both sides produce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    Ok,
    Tool {
        decision: String,
        message: String,
        needed_scopes: Vec<String>,
    },
    Agent(String),
    Failed(String),
}

fn tool_outcome<T>(r: Result<T, atrium_sdk::ToolCallError>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(e) => Outcome::Tool {
            decision: e.decision,
            message: e.message,
            needed_scopes: e.needed_scopes,
        },
    }
}

fn agent_outcome<T>(r: Result<T, atrium_sdk::AgentCallError>) -> Outcome {
    r.map_or_else(|e| Outcome::Agent(e.reason), |_| Outcome::Ok)
}

fn host_tool<T>(r: Result<T, crate::ToolCallError>) -> Outcome {
    tool_outcome(r.map_err(|e| atrium_sdk::ToolCallError {
        tool_name: e.tool_name,
        decision: e.decision,
        message: e.message,
        needed_scopes: e.needed_scopes,
    }))
}

fn host_agent<T>(r: Result<T, crate::AgentCallError>) -> Outcome {
    r.map_or_else(|e| Outcome::Agent(e.reason), |_| Outcome::Ok)
}

/// The SDK side: a tool handler that makes the call through `ctx`.
fn probe(ctx: &Ctx<'_>, op: Op) -> Result<Value, Error> {
    let outcome = match op {
        Op::RoomPost {
            content,
            from_agent,
            metadata,
            ungranted: _,
        } => tool_outcome(match metadata {
            Some(m) => ctx
                .rooms
                .post_with_metadata("room-1", &content, &from_agent, &m),
            None => ctx.rooms.post("room-1", &content, &from_agent),
        }),
        Op::Delegate { target, from_agent } => {
            agent_outcome(ctx.team.delegate(&target, "hello", &from_agent))
        }
        Op::Invoke { app, agent } => agent_outcome(ctx.apps.invoke(&app, &agent, "hello")),
        Op::Fetch { path, method } => agent_outcome(ctx.apps.fetch("crm", &path, &method, None)),
        Op::Emit { name, pad } => agent_outcome(ctx.events.emit(&name, emit_payload(pad))),
        Op::Ask { agent } => agent_outcome(ctx.agent.ask("hello", agent.as_deref())),
        Op::Commit {
            title,
            content,
            from_agent,
            due_at,
        } => tool_outcome(
            ctx.commitments
                .add(&title, &content, &from_agent, due_at.as_deref()),
        ),
        Op::Tool { name, args } => tool_outcome(ctx.tools.call(&name, args)),
        Op::PublicUrl { path } => match ctx.public_callback_url(&path) {
            Ok(_) => Outcome::Ok,
            Err(Error::Failed(message)) => Outcome::Failed(message),
            Err(other) => Outcome::Failed(format!("{other:?}")),
        },
    };
    serde_json::to_value(outcome).map_err(|e| Error::failed(e.to_string()))
}

fn sdk_app() -> Result<App, RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.tool("probe", probe)?;
    Ok(app)
}

/// The scopes the install holds for `op`: `notes.read`, and `rooms.write` unless the row says
/// otherwise.
fn granted(op: &Op) -> Vec<&'static str> {
    match op {
        Op::RoomPost {
            ungranted: true, ..
        } => vec!["notes.read"],
        _ => vec!["notes.read", "rooms.write"],
    }
}

fn through_sdk(op: &Op, depth: u32, public_route: bool, without: &[Capability]) -> Outcome {
    let mut client = TestClient::new(sdk_app())
        .unwrap()
        .chain_depth(depth)
        .grant(&granted(op))
        .mock_tool_with_scopes("notes.lookup", &["notes.read"], json!({}))
        .mock_tool_with_scopes("crm.export", &["crm.write"], json!({}));
    if public_route {
        client = client.public_route();
    }
    for c in without {
        client = client.without(*c);
    }
    let value = client.call_tool("probe", op).unwrap();
    serde_json::from_value(value).unwrap()
}

async fn through_runtime(
    op: &Op,
    depth: u32,
    public_route: bool,
    without: &[Capability],
) -> Outcome {
    let manifest = atrium_manifest::parse(MANIFEST_TEXT).unwrap();
    let mut platform = MemoryPlatform::new("http://127.0.0.1:8787")
        .with_tool("notes.lookup", &["notes.read"], json!({}))
        .with_tool("crm.export", &["crm.write"], json!({}))
        .with_room("room-1", &["parity-desk:lead", "parity-desk:writer"])
        .with_grant("crm", "helper")
        .with_grant("crm", "__route__");
    for c in without {
        platform = platform.without(*c);
    }
    let chain = ChainContext {
        depth,
        visited: Vec::new(),
    };
    let call = CallContext {
        info: CallInfo {
            tenant_id: "tenant-test".into(),
            app_id: manifest.app_id.clone(),
            app_version: manifest.version.clone(),
            call_id: "call-test".into(),
            chain_depth: chain.depth,
            visited_agents: Vec::new(),
            public_route,
        },
        chain,
        manifest: Arc::new(manifest),
        platform: Arc::new(platform),
    };
    let call = &call;
    let granted_scopes: BTreeSet<String> = granted(op).into_iter().map(str::to_owned).collect();
    let granted_scopes = &granted_scopes;
    match op.clone() {
        Op::RoomPost {
            content,
            from_agent,
            metadata,
            ungranted: _,
        } => host_tool(
            rooms::Rooms {
                call,
                granted_scopes,
            }
            .post(
                "room-1".into(),
                content,
                from_agent,
                metadata.map(|m| m.to_string()),
            )
            .await
            .unwrap(),
        ),
        Op::Delegate { target, from_agent } => host_agent(
            team::Team { call }
                .delegate(target, "hello".into(), from_agent)
                .await
                .unwrap(),
        ),
        Op::Invoke { app, agent: slug } => host_agent(
            apps::Apps { call }
                .invoke(app, slug, "hello".into())
                .await
                .unwrap(),
        ),
        Op::Fetch { path, method } => host_agent(
            apps::Apps { call }
                .fetch("crm".into(), path, method, None)
                .await
                .unwrap(),
        ),
        Op::Emit { name, pad } => host_agent(
            events::Events { call }
                .emit(name, emit_payload(pad).to_string())
                .await
                .unwrap(),
        ),
        Op::Ask { agent: slug } => host_agent(
            agent::Agent { call }
                .ask("hello".into(), slug)
                .await
                .unwrap(),
        ),
        Op::Commit {
            title,
            content,
            from_agent,
            due_at,
        } => host_tool(
            commitments::Commitments { call }
                .add(title, content, from_agent, due_at)
                .await
                .unwrap(),
        ),
        Op::Tool { name, args } => host_tool(
            tools::Tools {
                call,
                granted_scopes,
            }
            .call(name, args.to_string())
            .await
            .unwrap(),
        ),
        Op::PublicUrl { path } => match (context::Context { call })
            .public_callback_url(path)
            .await
            .unwrap()
        {
            Ok(_) => Outcome::Ok,
            Err(message) => Outcome::Failed(message),
        },
    }
}

/// What a row expects; both sides must also agree word for word.
enum Expect {
    Ok,
    Decision(&'static str),
    Reason(&'static str),
    Failed(&'static str),
}

fn post(content: &str, from_agent: &str, metadata: Option<Value>) -> Op {
    Op::RoomPost {
        content: content.into(),
        from_agent: from_agent.into(),
        metadata,
        ungranted: false,
    }
}

/// A post by an install without `rooms.write`.
fn ungranted_post(content: &str, from_agent: &str) -> Op {
    Op::RoomPost {
        content: content.into(),
        from_agent: from_agent.into(),
        metadata: None,
        ungranted: true,
    }
}

fn delegate(target: &str, from_agent: &str) -> Op {
    Op::Delegate {
        target: target.into(),
        from_agent: from_agent.into(),
    }
}

/// An event payload: `{"n": 1}`, or with a `pad` string of `pad` characters.
fn emit_payload(pad: usize) -> Value {
    if pad == 0 {
        json!({"n": 1})
    } else {
        json!({"pad": "x".repeat(pad)})
    }
}

fn commit(title: &str, from_agent: &str, due_at: Option<&str>) -> Op {
    commit_with(title, "details", from_agent, due_at)
}

fn commit_with(title: &str, content: &str, from_agent: &str, due_at: Option<&str>) -> Op {
    Op::Commit {
        title: title.into(),
        content: content.into(),
        from_agent: from_agent.into(),
        due_at: due_at.map(str::to_owned),
    }
}

mod table;

#[tokio::test]
async fn on_a_host_without_a_capability_both_answer_not_available_after_the_same_rules() {
    let everything = Capability::ALL;
    let tool = |name: &str| Op::Tool {
        name: name.into(),
        args: json!({}),
    };
    let not_available = |c: Capability| match c.error_kind() {
        atrium_manifest::sandbox::ErrorKind::Tool => Outcome::Tool {
            decision: "not_available".into(),
            message: format!("`{c}` is not available on this host"),
            needed_scopes: Vec::new(),
        },
        atrium_manifest::sandbox::ErrorKind::Agent => Outcome::Agent(format!(
            "not_available: `{c}` is not available on this host"
        )),
    };
    let rows: Vec<(Op, Option<Capability>)> = vec![
        (post("hello", "lead", None), Some(Capability::RoomsPost)),
        (post("hello", "ghost", None), None),
        (delegate("writer", "lead"), Some(Capability::TeamDelegate)),
        (delegate("lead", "writer"), None),
        (
            Op::Invoke {
                app: "crm".into(),
                agent: "helper".into(),
            },
            Some(Capability::AppsInvoke),
        ),
        (
            Op::Fetch {
                path: "/x".into(),
                method: "GET".into(),
            },
            Some(Capability::AppsFetch),
        ),
        (
            Op::Fetch {
                path: "x".into(),
                method: "GET".into(),
            },
            None,
        ),
        (
            Op::Emit {
                name: "note_saved".into(),
                pad: 0,
            },
            Some(Capability::EventsEmit),
        ),
        (
            Op::Emit {
                name: "undeclared".into(),
                pad: 0,
            },
            None,
        ),
        (Op::Ask { agent: None }, Some(Capability::AgentAsk)),
        (
            commit("Call back", "lead", None),
            Some(Capability::CommitmentsAdd),
        ),
        (commit("Call back", "ghost", None), None),
        (tool("notes.lookup"), Some(Capability::ToolsCall)),
        (tool("crm.export"), None),
    ];
    for (op, unavailable) in rows {
        let host = through_runtime(&op, 1, false, &everything).await;
        let sdk = through_sdk(&op, 1, false, &everything);
        assert_eq!(
            host, sdk,
            "the runtime and the SDK double disagree on {op:?}"
        );
        match unavailable {
            Some(c) => assert_eq!(host, not_available(c), "{op:?}"),
            None => assert!(
                host != Outcome::Ok && !format!("{host:?}").contains("not_available"),
                "a sandbox rule answers {op:?} first: {host:?}"
            ),
        }
    }
}
