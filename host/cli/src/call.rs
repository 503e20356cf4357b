//! `atrium call`: runs one call into a component through the real runtime, against the
//! in-memory platform, and prints the result. For developers and for debugging.
//!
//! Exit codes: 0 the call succeeded; 1 bad input (a flag, a JSON argument, an invalid manifest,
//! a mock file); 2 the component could not be loaded or the call failed (an app error, a trap,
//! a limit).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{
    App, AppEvent, CallError, Caller, InboundEnvelope, Invocation, Runtime, RuntimeConfig,
    SenderType, ToolCallError, UserAdded,
};
use serde_json::{Map, Value};

/// `atrium call` arguments.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  atrium call --component app.wasm --manifest atrium.app.yaml list_invoices '{}'
  atrium call --component app.wasm --event entry_booked '{\"invoice_id\": \"inv-1\"}'
  atrium call --component app.wasm --route GET /invoices
  atrium call --component app.wasm --lifecycle on_install --setting company_name='\"Acme\"'
  atrium call --component app.wasm --schedule nightly_reconcile --secret BANK_API_KEY=k
  atrium call --component app.wasm --message concierge --room r1 --member app:concierge 'hello'
  atrium call --component app.wasm --health")]
pub struct Args {
    /// The component (.wasm) to run.
    #[arg(long, value_name = "FILE")]
    component: PathBuf,
    /// The app's manifest.
    #[arg(long, value_name = "FILE", default_value = "atrium.app.yaml")]
    manifest: PathBuf,

    /// Deliver event NAME; INPUT is its JSON payload (default {}).
    #[arg(long, value_name = "NAME", group = "kind")]
    event: Option<String>,
    /// The emitter of the event (default: the first subscription to that event).
    #[arg(long, value_name = "APP", requires = "event")]
    emitter: Option<String>,
    /// Serve an HTTP request on one of the app's routes.
    #[arg(long, num_args = 2, value_names = ["METHOD", "PATH"], group = "kind")]
    route: Option<Vec<String>>,
    /// The request body of --route.
    #[arg(long, value_name = "TEXT", requires = "route")]
    body: Option<String>,
    /// Call the route as a public route (no tenant principal).
    #[arg(long, requires = "route")]
    public: bool,
    /// Run a lifecycle hook: on_install, on_uninstall, on_inbound or on_user_added (INPUT is
    /// the envelope or the user as JSON).
    #[arg(long, value_name = "HOOK", group = "kind")]
    lifecycle: Option<String>,
    /// Run the named schedule.
    #[arg(long, value_name = "NAME", group = "kind")]
    schedule: Option<String>,
    /// Deliver a room message mentioning AGENT; INPUT is the message text.
    #[arg(long, value_name = "AGENT", group = "kind")]
    message: Option<String>,
    /// The room of --message (and a room the app may post to).
    #[arg(long, value_name = "ID")]
    room: Option<String>,
    /// A member of --room, as a canonical key (`app:agent`, `user:id`); repeatable.
    #[arg(long = "member", value_name = "KEY")]
    members: Vec<String>,
    /// Run the health check: start an instance and print what the app registered.
    #[arg(long, group = "kind")]
    health: bool,

    /// The tenant the call is for.
    #[arg(long, value_name = "ID", default_value = "local-tenant")]
    tenant: String,
    /// A scope the install grants; repeatable. Without any, every scope in required_scopes.
    #[arg(long = "grant", value_name = "SCOPE")]
    grants: Vec<String>,
    /// An install setting as KEY=JSON; repeatable.
    #[arg(long = "setting", value_name = "KEY=JSON")]
    settings: Vec<String>,
    /// A secret as KEY=VALUE; repeatable.
    #[arg(long = "secret", value_name = "KEY=VALUE")]
    secrets: Vec<String>,
    /// A mock file for platform tools: {"tool": {"ok": true, "result": ..., "scopes": [...]}
    /// or {"ok": false, "error": {"decision", "message", "neededScopes"}}}.
    #[arg(long, value_name = "FILE")]
    mocks: Option<PathBuf>,
    /// Call tools as an agent planner would (tools with agent_visible: false are refused).
    #[arg(long)]
    as_agent: bool,
    /// The call's deadline in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    deadline: f64,
    /// Where compiled components are cached (default: the user's cache directory).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,

    /// The tool to call (and then its JSON arguments), or the input of --event, --lifecycle or
    /// --message.
    #[arg(value_name = "TOOL|INPUT")]
    inputs: Vec<String>,
}

/// Bad input: exit 1.
fn bad(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(1)
}

/// The call could not run or failed: exit 2.
fn failed(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn parse_json(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON: {e}"))
}

fn key_value<'a>(flag: &str, text: &'a str) -> Result<(&'a str, &'a str), String> {
    text.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("--{flag} takes KEY=VALUE, got `{text}`"))
}

pub(crate) fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("atrium/components"))
}

/// Runs `atrium call`.
pub fn run(args: &Args) -> ExitCode {
    crate::init_logging("atrium=info");
    let text = match std::fs::read_to_string(&args.manifest) {
        Ok(text) => text,
        Err(e) => {
            return bad(format!(
                "cannot read the manifest {}: {e}",
                args.manifest.display()
            ));
        }
    };
    let manifest = match atrium_manifest::parse(&text) {
        Ok(m) => m,
        Err(e) => {
            return bad(format!(
                "{} is not a valid manifest: {e} (run `atrium lint` for details)",
                args.manifest.display()
            ));
        }
    };
    let platform = match build_platform(args) {
        Ok(p) => Arc::new(p),
        Err(message) => return bad(message),
    };
    let mut inv = Invocation::new(args.tenant.clone(), platform.clone());
    inv.granted_scopes = if args.grants.is_empty() {
        manifest.required_scopes.iter().cloned().collect()
    } else {
        args.grants.iter().cloned().collect()
    };
    match settings(args) {
        Ok(s) => inv.settings = s,
        Err(message) => return bad(message),
    }
    if args.as_agent {
        inv.caller = Caller::Agent;
    }
    if args.public {
        inv.public_route = true;
    }
    if !(args.deadline > 0.0 && args.deadline <= 3600.0) {
        return bad("--deadline must be between 0 and 3600 seconds");
    }
    let config = RuntimeConfig {
        cache_dir: args.cache_dir.clone().or_else(default_cache_dir),
        deadline: Duration::from_secs_f64(args.deadline),
        max_instances: 16,
        // One developer's app: it runs at its manifest's `cpu_cores`.
        max_cpu_cores_per_tenant: None,
        ..RuntimeConfig::default()
    };
    let tokio = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(t) => t,
        Err(e) => return failed(format!("cannot start the async runtime: {e}")),
    };
    tokio.block_on(async {
        let runtime = match Runtime::new(config) {
            Ok(r) => r,
            Err(e) => return failed(e),
        };
        let app = match runtime.load_file(&args.component, manifest) {
            Ok(app) => app,
            Err(e) => return failed(e),
        };
        let code = match dispatch(args, &app, &inv).await {
            Ok(output) => {
                println!("{output}");
                ExitCode::SUCCESS
            }
            Err(Failure::Input(message)) => bad(message),
            Err(Failure::Call(e)) => failed(describe(&e)),
        };
        report(&platform);
        code
    })
}

enum Failure {
    Input(String),
    Call(CallError),
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Self {
        Failure::Call(e)
    }
}

fn describe(error: &CallError) -> String {
    match error {
        CallError::Tool(e) if !e.needed_scopes.is_empty() => {
            format!(
                "{error} (needed scopes: {}; grant them with --grant)",
                e.needed_scopes.join(", ")
            )
        }
        CallError::ScopeDenied { .. } => format!("{error} (grant them with --grant)"),
        _ => error.to_string(),
    }
}

fn input_json(args: &Args, index: usize, what: &str) -> Result<Value, Failure> {
    match args.inputs.get(index) {
        None => Ok(Value::Object(Map::new())),
        Some(text) => parse_json(what, text).map_err(Failure::Input),
    }
}

fn pretty(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| text.to_owned())
}

async fn dispatch(args: &Args, app: &App, inv: &Invocation) -> Result<String, Failure> {
    if args.health {
        return Ok(match app.health(inv).await? {
            Some(r) => format!(
                "healthy: tools [{}], lifecycle [{}], schedules [{}], events [{}], routes [{}], room messages: {}",
                r.tools.join(", "),
                r.lifecycle.join(", "),
                r.schedules.join(", "),
                r.events.join(", "),
                r.routes.join(", "),
                if r.room_messages { "yes" } else { "no" }
            ),
            None => "healthy: an HTTP-only component (no atrium:app/handlers export)".to_owned(),
        });
    }
    if let Some(name) = &args.event {
        let payload = input_json(args, 0, "the event payload")?;
        // The emitter's own subscription (its `target_agent`), else the first of the event's.
        let subscription = app.manifest().subscribes_to.iter().find(|s| {
            &s.event_name == name && args.emitter.as_ref().is_none_or(|e| &s.emitter_app == e)
        });
        let emitter = args
            .emitter
            .clone()
            .or_else(|| subscription.map(|s| s.emitter_app.clone()))
            .unwrap_or_default();
        let target_agent_slug = match subscription.map(|s| &s.target) {
            Some(atrium_manifest::SubscriptionTarget::Agent(a)) => Some(a.clone()),
            _ => None,
        };
        let event = AppEvent {
            event_name: name.clone(),
            emitter_app_id: emitter,
            payload: payload.to_string(),
            target_agent_slug,
        };
        return Ok(pretty(&app.on_event(inv, event).await?));
    }
    if let Some(route) = &args.route {
        let [method, path] = route.as_slice() else {
            return Err(Failure::Input("--route takes METHOD and PATH".into()));
        };
        let method = http::Method::from_bytes(method.to_ascii_uppercase().as_bytes())
            .map_err(|_| Failure::Input(format!("`{method}` is not an HTTP method")))?;
        let body = bytes::Bytes::from(args.body.clone().unwrap_or_default());
        let request = http::Request::builder()
            .method(method)
            .uri(path.as_str())
            .body(body)
            .map_err(|e| Failure::Input(format!("invalid request: {e}")))?;
        let response = app.handle_http(inv, request).await?;
        let mut out = format!("{}\n", response.status());
        for (name, value) in response.headers() {
            out.push_str(&format!(
                "{name}: {}\n",
                value.to_str().unwrap_or("<binary>")
            ));
        }
        out.push('\n');
        out.push_str(&String::from_utf8_lossy(response.body()));
        return Ok(out);
    }
    if let Some(hook) = &args.lifecycle {
        match hook.as_str() {
            "on_install" => app.on_install(inv).await?,
            "on_uninstall" => app.on_uninstall(inv).await?,
            "on_inbound" => {
                let envelope: InboundEnvelope =
                    inbound(input_json(args, 0, "the envelope")?).map_err(Failure::Input)?;
                app.on_inbound(inv, envelope).await?;
            }
            "on_user_added" => {
                let user = input_json(args, 0, "the user")?;
                let field = |k: &str| user.get(k).and_then(Value::as_str).map(str::to_owned);
                let user = UserAdded {
                    user_id: field("user_id")
                        .ok_or_else(|| Failure::Input("the user needs `user_id`".into()))?,
                    display_name: field("display_name").unwrap_or_default(),
                    email: field("email"),
                };
                app.on_user_added(inv, user).await?;
            }
            other => {
                return Err(Failure::Input(format!(
                    "--lifecycle takes on_install, on_uninstall, on_inbound or on_user_added, not `{other}`"
                )));
            }
        }
        return Ok(format!("{hook}: ok"));
    }
    if let Some(name) = &args.schedule {
        app.on_schedule(inv, name).await?;
        return Ok(format!("schedule {name}: ok"));
    }
    if let Some(agent) = &args.message {
        let room = args
            .room
            .clone()
            .ok_or_else(|| Failure::Input("--message needs --room".into()))?;
        let content = args.inputs.join(" ");
        let message = atrium_runtime::RoomMessage {
            id: "00000000-0000-4000-8000-000000000000".into(),
            room_id: room,
            tenant_id: inv.tenant_id.clone(),
            sender_type: SenderType::User,
            sender_ref: "user:00000000-0000-4000-8000-000000000001".into(),
            sender_display: "Local User".into(),
            mentions: atrium_manifest::sandbox::extract_mentions(&content),
            content,
            metadata: "{}".into(),
            created_at: jiff::Timestamp::now().to_string(),
        };
        app.on_message(inv, agent, message).await?;
        return Ok(format!("on_message for {agent}: ok"));
    }
    let Some(tool) = args.inputs.first() else {
        return Err(Failure::Input(
            "name a tool to call, or one of --event, --route, --lifecycle, --schedule, --message, --health".into(),
        ));
    };
    if args.inputs.len() > 2 {
        return Err(Failure::Input(
            "a tool call takes the tool name and one JSON argument object".into(),
        ));
    }
    let arguments = input_json(args, 1, "the tool argument object")?;
    Ok(pretty(
        &app.call_tool(inv, tool, &arguments.to_string()).await?,
    ))
}

fn inbound(value: Value) -> Result<InboundEnvelope, String> {
    let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(InboundEnvelope {
        message_id: text("message_id").unwrap_or_else(|| "local-message".into()),
        channel: text("channel").unwrap_or_else(|| "email".into()),
        from: text("from").ok_or("the envelope needs `from`")?,
        body: text("body").unwrap_or_default(),
        subject: text("subject"),
        received_at: text("received_at").unwrap_or_else(|| jiff::Timestamp::now().to_string()),
        attachment_ids: value
            .get("attachment_ids")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        metadata: value
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()))
            .to_string(),
    })
}

fn settings(args: &Args) -> Result<Map<String, Value>, String> {
    let mut map = Map::new();
    for entry in &args.settings {
        let (key, value) = key_value("setting", entry)?;
        map.insert(
            key.to_owned(),
            parse_json(&format!("setting `{key}`"), value)?,
        );
    }
    Ok(map)
}

fn build_platform(args: &Args) -> Result<MemoryPlatform, String> {
    let mut platform = MemoryPlatform::new("http://127.0.0.1:8787");
    for entry in &args.secrets {
        let (key, value) = key_value("secret", entry)?;
        platform = platform.with_secret(key, value);
    }
    if let Some(room) = &args.room {
        let members: Vec<&str> = args.members.iter().map(String::as_str).collect();
        platform = platform.with_room(room, &members);
    }
    if let Some(path) = &args.mocks {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the mock file {}: {e}", path.display()))?;
        platform = with_mocks(platform, &text, path)?;
    }
    Ok(platform)
}

/// `platform` answering the platform tools of a mock file (`text`, read from `path`), and
/// every tool the file does not mock with decision `unmocked`: `atrium call --mocks` and
/// `atrium dev`.
pub(crate) fn with_mocks(
    platform: MemoryPlatform,
    text: &str,
    path: &std::path::Path,
) -> Result<MemoryPlatform, String> {
    let mut platform = platform.answering_unmocked();
    let tools = atrium_manifest::devmock::parse_mock_file(text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    for tool in tools {
        let scopes: Vec<&str> = tool.scopes.iter().map(String::as_str).collect();
        platform = match tool.answer {
            Ok(result) => platform.with_tool(&tool.name, &scopes, result),
            Err(f) => {
                let failure = ToolCallError {
                    tool_name: tool.name.clone(),
                    decision: f.decision,
                    message: f.message,
                    needed_scopes: f.needed_scopes,
                };
                platform.with_failing_tool(&tool.name, &scopes, failure)
            }
        };
    }
    Ok(platform)
}

/// What the app did on the platform, for the developer (on stderr).
fn report(platform: &MemoryPlatform) {
    for (tool, args) in platform.tool_calls() {
        eprintln!("platform: tool {tool} {args}");
    }
    for post in platform.posts() {
        eprintln!(
            "platform: {} posted to room {}: {} (routed to: {})",
            post.message.sender_ref,
            post.message.room_id,
            post.message.content,
            post.routed_targets.join(", ")
        );
    }
    for (name, payload) in platform.emitted() {
        eprintln!("platform: event {name} {payload}");
    }
    for call in platform.agent_calls() {
        eprintln!(
            "platform: {} {} (chain depth {}): {}",
            call.kind, call.target, call.chain.depth, call.prompt
        );
    }
    for c in platform.commitments() {
        eprintln!(
            "platform: commitment by {}: {} {}",
            c.from_agent, c.title, c.content
        );
    }
}
