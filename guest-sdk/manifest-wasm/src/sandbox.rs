//! The host's sandbox rules ([`atrium_manifest::sandbox`]) for the Python and TypeScript SDKs'
//! test clients: what a component's call into the platform is refused with, the test client
//! refuses with the same decision and the same words, because both run this code.
//!
//! `atrium_sandbox(ptr, len) -> u64` takes a [`Request`] as JSON (allocated with
//! `atrium_alloc`, consumed) and answers an [`Outcome`] as JSON, like `atrium_check`.

use std::sync::Mutex;

use atrium_manifest::Manifest;
use atrium_manifest::sandbox::{
    self, AgentRefusal, Capability, ChainContext, ErrorKind, ToolRefusal,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One check, with the manifest and the call's chain.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The manifest's text (YAML or JSON), as the app embeds it; `mock_file` needs none.
    #[serde(default)]
    pub manifest: String,
    /// The call's chain (default: a call the platform starts, depth 1).
    #[serde(default)]
    pub chain: Option<Chain>,
    /// Whether the call serves a public route.
    #[serde(default)]
    pub public_route: bool,
    /// What to check.
    pub check: Check,
}

/// A call chain: depth and visited agents.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    /// The depth.
    pub depth: u32,
    /// The canonical keys of the agents on the chain.
    #[serde(default)]
    pub visited: Vec<String>,
}

/// The checks, one per platform call, named after the functions of the sandbox module.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// `tools.call`'s arguments (JSON text).
    ToolArguments {
        /// The tool.
        tool: String,
        /// The arguments as JSON text.
        args: String,
    },
    /// `tools.call`'s scopes.
    ToolScopes {
        /// The tool.
        tool: String,
        /// The scopes it needs.
        needs: Vec<String>,
        /// The scopes the install holds.
        granted: Vec<String>,
    },
    /// `rooms.post`.
    RoomPost {
        /// The posting agent.
        from_agent: String,
        /// The text.
        content: String,
        /// The metadata as JSON text.
        #[serde(default)]
        metadata: Option<String>,
        /// The scopes the install holds.
        granted: Vec<String>,
    },
    /// `commitments.add`.
    Commitment {
        /// The title.
        title: String,
        /// The details.
        content: String,
        /// The promising agent.
        from_agent: String,
        /// When it is due, ISO-8601.
        #[serde(default)]
        due_at: Option<String>,
    },
    /// `team.delegate`.
    Delegate {
        /// The agent asked.
        target: String,
        /// The agent asking.
        from_agent: String,
    },
    /// `apps.invoke`.
    Invoke {
        /// The other app.
        app: String,
        /// Its agent.
        agent: String,
    },
    /// `apps.fetch`.
    Fetch {
        /// The route's path.
        path: String,
        /// The method.
        method: String,
    },
    /// `events.emit`.
    Emit {
        /// The event.
        name: String,
        /// The payload as JSON text.
        payload: String,
    },
    /// `agent.ask`.
    Ask {
        /// The agent (the default one when absent).
        #[serde(default)]
        agent: Option<String>,
    },
    /// `context.public-callback-url`'s path.
    PublicCallbackPath {
        /// The path.
        path: String,
    },
    /// `secrets.get`'s key.
    SecretKey {
        /// The key.
        key: String,
    },
    /// Outbound HTTP: whether the manifest's `network.egress_hosts` allow `host`.
    Egress {
        /// The host name (or address) of the request.
        host: String,
    },
    /// The developer tool's mock file (`atrium.dev.json`), as `atrium call` and `atrium dev`
    /// read it.
    MockFile {
        /// The file's text.
        text: String,
    },
    /// The refusal a host gives for a capability it does not offer (`rooms.post`,
    /// `agent.ask`, ...): a `tool_refusal` or an `agent_refusal` with decision `not_available`.
    NotAvailable {
        /// The capability's name.
        capability: String,
    },
    /// The canonical keys a room message mentions.
    ExtractMentions {
        /// The message text.
        content: String,
    },
}

/// The answer: exactly one field is set.
#[derive(Debug, Default, Serialize)]
pub struct Outcome {
    /// The checked values, when the call passes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<Value>,
    /// A refused tool call, room post or commitment (`ToolCallError`'s fields).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_refusal: Option<Value>,
    /// A refused agent call (`AgentCallError`'s `reason`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_refusal: Option<Value>,
    /// A refusal that is a sentence (a callback path, a secret key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The request itself was wrong (not the JSON above, or an invalid manifest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn ok(value: Value) -> Outcome {
    Outcome {
        ok: Some(value),
        ..Outcome::default()
    }
}

fn tool(r: ToolRefusal) -> Outcome {
    Outcome {
        tool_refusal: Some(json!({
            "tool_name": r.tool_name, "decision": r.decision.as_str(),
            "message": r.message, "needed_scopes": r.needed_scopes,
        })),
        ..Outcome::default()
    }
}

fn agent(r: AgentRefusal) -> Outcome {
    Outcome {
        agent_refusal: Some(json!({"reason": r.reason})),
        ..Outcome::default()
    }
}

fn chain_json(chain: &ChainContext) -> Value {
    json!({"depth": chain.depth, "visited": chain.visited})
}

/// The last manifest parsed, by its text: a test client asks many checks of one manifest.
static LAST: Mutex<Option<(String, Manifest)>> = Mutex::new(None);

fn with_manifest<T>(text: &str, run: impl FnOnce(&Manifest) -> T) -> Result<T, String> {
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if last.as_ref().is_none_or(|(t, _)| t != text) {
        let manifest = atrium_manifest::parse(text)
            .map_err(|e| format!("the manifest does not validate: {e}"))?;
        *last = Some((text.to_owned(), manifest));
    }
    let (_, manifest) = last.as_ref().ok_or("no manifest")?;
    Ok(run(manifest))
}

/// The entries of a mock file: `{name, scopes, result}` or `{name, scopes, error: {decision,
/// message, needed_scopes}}`, or the parser's refusal naming the entry.
fn mock_file(text: &str) -> Outcome {
    match atrium_manifest::devmock::parse_mock_file(text) {
        Ok(tools) => ok(Value::Array(
            tools
                .into_iter()
                .map(|tool| match tool.answer {
                    Ok(result) => json!({"name": tool.name, "scopes": tool.scopes, "result": result}),
                    Err(f) => json!({"name": tool.name, "scopes": tool.scopes, "error": {
                        "decision": f.decision, "message": f.message, "needed_scopes": f.needed_scopes,
                    }}),
                })
                .collect(),
        )),
        Err(refusal) => Outcome {
            refusal: Some(refusal),
            ..Outcome::default()
        },
    }
}

/// The refusal of a capability the host does not offer, in the capability's error type.
fn not_available(name: &str) -> Outcome {
    let Some(capability) = Capability::parse(name) else {
        let names: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        return Outcome {
            error: Some(format!(
                "`{name}` is not a capability ({})",
                names.join(", ")
            )),
            ..Outcome::default()
        };
    };
    match capability.error_kind() {
        ErrorKind::Tool => tool(ToolRefusal::not_available(capability)),
        ErrorKind::Agent => agent(AgentRefusal::not_available(capability)),
    }
}

/// Runs one request: the function behind `atrium_sandbox`.
pub fn run(request: &[u8]) -> Outcome {
    let request: Request = match serde_json::from_slice(request) {
        Ok(request) => request,
        Err(e) => {
            return Outcome {
                error: Some(format!(
                    "the request to the sandbox checks is not understood: {e}"
                )),
                ..Outcome::default()
            };
        }
    };
    let chain = request
        .chain
        .map_or_else(ChainContext::root, |c| ChainContext {
            depth: c.depth,
            visited: c.visited,
        });
    let public = request.public_route;
    // A mock file and a capability's refusal need no manifest.
    let check = match request.check {
        Check::MockFile { text } => return mock_file(&text),
        Check::NotAvailable { capability } => return not_available(&capability),
        check => check,
    };
    let answer = with_manifest(&request.manifest, |m| match check {
        Check::ToolArguments { tool: name, args } => {
            sandbox::tool_arguments(&name, &args).map_or_else(tool, ok)
        }
        Check::ToolScopes {
            tool: name,
            needs,
            granted,
        } => sandbox::tool_scopes(m, &name, &needs, |s| granted.iter().any(|g| g == s))
            .map_or_else(tool, |()| ok(Value::Null)),
        Check::RoomPost {
            from_agent,
            content,
            metadata,
            granted,
        } => sandbox::room_post(m, &from_agent, &content, metadata.as_deref(), |s| {
            granted.iter().any(|g| g == s)
        })
        .map_or_else(tool, |post| {
            ok(json!({
                "sender_ref": post.sender_ref, "sender_display": post.sender_display,
                "metadata": post.metadata,
            }))
        }),
        Check::Commitment {
            title,
            content,
            from_agent,
            due_at,
        } => sandbox::commitment(m, &title, &content, &from_agent, due_at.as_deref())
            .map_or_else(tool, |()| ok(Value::Null)),
        Check::Delegate { target, from_agent } => {
            sandbox::delegate(m, &chain, public, &target, &from_agent)
                .map_or_else(agent, |next| ok(json!({"chain": chain_json(&next)})))
        }
        Check::Invoke { app, agent: slug } => sandbox::invoke(&chain, public, &app, &slug)
            .map_or_else(agent, |next| ok(json!({"chain": chain_json(&next)}))),
        Check::Fetch { path, method } => sandbox::fetch(&chain, &path, &method)
            .map_or_else(agent, |(method, next)| {
                ok(json!({"method": method.as_str(), "chain": chain_json(&next)}))
            }),
        Check::Emit { name, payload } => sandbox::emit(m, &chain, public, &name, &payload)
            .map_or_else(agent, |(payload, next)| {
                ok(json!({"payload": payload, "chain": chain_json(&next)}))
            }),
        Check::Ask { agent: slug } => sandbox::ask(m, &chain, slug.as_deref())
            .map_or_else(agent, |(slug, next)| {
                ok(json!({"agent": slug, "chain": chain_json(&next)}))
            }),
        Check::PublicCallbackPath { path } => match sandbox::public_callback_path(m, &path) {
            Ok(()) => ok(Value::Null),
            Err(refusal) => Outcome {
                refusal: Some(refusal),
                ..Outcome::default()
            },
        },
        Check::SecretKey { key } => match sandbox::secret_key(&key) {
            Ok(()) => ok(Value::Null),
            Err(refusal) => Outcome {
                refusal: Some(refusal),
                ..Outcome::default()
            },
        },
        Check::Egress { host } => {
            let policy =
                sandbox::EgressPolicy::new(m.network.egress_hosts.iter().map(String::as_str));
            ok(json!(policy.allows(&host)))
        }
        Check::ExtractMentions { content } => ok(json!(sandbox::extract_mentions(&content))),
        Check::MockFile { text } => mock_file(&text),
        Check::NotAvailable { capability } => not_available(&capability),
    });
    answer.unwrap_or_else(|error| Outcome {
        error: Some(error),
        ..Outcome::default()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    const MANIFEST: &str = "apiVersion: platform/v2\napp_id: desk\nversion: 1.0.0\nname: Desk\nruntime:\n  image: a/b:1\nagent:\n  name: Clerk\n  system_prompt: Help.\n";

    fn run(check: serde_json::Value) -> serde_json::Value {
        let request = json!({"manifest": MANIFEST, "check": check});
        serde_json::to_value(super::run(request.to_string().as_bytes())).unwrap()
    }

    #[test]
    fn answers_as_the_sandbox_module_does() {
        let granted = json!(["rooms.write"]);
        let refused = run(
            json!({"kind": "room_post", "from_agent": "", "content": "hi", "granted": granted}),
        );
        assert_eq!(refused["tool_refusal"]["decision"], "invalid_arguments");
        let post = run(
            json!({"kind": "room_post", "from_agent": "default", "content": "hi", "granted": granted}),
        );
        assert_eq!(post["ok"]["sender_ref"], "desk:default");
        let ungranted = run(
            json!({"kind": "room_post", "from_agent": "default", "content": "hi", "granted": []}),
        );
        assert_eq!(ungranted["tool_refusal"]["decision"], "scope_denied");
        assert_eq!(
            ungranted["tool_refusal"]["needed_scopes"],
            json!(["rooms.write"])
        );
        // The SDKs always send the install's scopes: a request without them is not understood.
        let stale = run(json!({"kind": "room_post", "from_agent": "default", "content": "hi"}));
        assert!(
            stale["error"].as_str().unwrap().contains("granted"),
            "{stale}"
        );
        let ask = run(json!({"kind": "ask"}));
        assert_eq!(ask["ok"]["chain"]["depth"], 2);
        let key = run(json!({"kind": "secret_key", "key": "lower"}));
        assert!(key["refusal"].as_str().unwrap().contains("^[A-Z]"));
        let mocks =
            run(json!({"kind": "mock_file", "text": r#"{"a.b": {"ok": true, "result": 1}}"#}));
        assert_eq!(
            mocks["ok"][0],
            json!({"name": "a.b", "scopes": [], "result": 1})
        );
        let broken = run(json!({"kind": "mock_file", "text": r#"{"a.b": {}}"#}));
        assert!(
            broken["refusal"].as_str().unwrap().contains("a.b"),
            "{broken}"
        );
        let room = run(json!({"kind": "not_available", "capability": "rooms.post"}));
        assert_eq!(room["tool_refusal"]["decision"], "not_available");
        assert_eq!(room["tool_refusal"]["tool_name"], "rooms.post");
        let ask = run(json!({"kind": "not_available", "capability": "agent.ask"}));
        assert_eq!(
            ask["agent_refusal"]["reason"],
            "not_available: `agent.ask` is not available on this host"
        );
        let nonsense = run(json!({"kind": "not_available", "capability": "agent.tell"}));
        assert!(nonsense["error"].as_str().unwrap().contains("agent.tell"));
        let bad = serde_json::to_value(super::run(b"{}")).unwrap();
        assert!(bad["error"].as_str().unwrap().contains("not understood"));
    }
}
