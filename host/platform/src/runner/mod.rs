//! The agent runner: one agent of an active install, run as a tool-using model loop through
//! the host's own gateway. Every caller goes through [`Runner::run_agent`]: `agent.ask` and
//! `team.delegate` from a component, the model's own `team-delegate` tool, and the
//! conversations, cross-app invokes and heartbeats built on it.
//!
//! A run:
//!
//! 1. finds the install (active) and the agent (the default one when none is named), with the
//!    tenant's edits of it;
//! 2. writes the system prompt: the agent's `system_prompt`, then the workflows that apply
//!    (their `flow` and `specifics`; [`applicable_workflows`]);
//! 3. offers the tools of [`offered`] and calls the model of the tenant's role
//!    ([`crate::llm_roles`]) through the gateway (routing, fallback, the EU data policy), metering
//!    every model step to the tenant with the app and the agent named;
//! 4. runs each tool call the model makes exactly as the app's own call would run (the
//!    install's scopes, `agent_visible`, the sandbox limits), with the run's chain, and hands the
//!    result or the refusal back to the model, until it answers.
//!
//! The loop stops with a [`RunError`] (an `AgentCallError` to an app) at the step limit, when the
//! cost budget is spent, at the deadline (which covers the whole loop, model calls and tools),
//! or when no model can answer.

pub mod offered;
mod prompt;
mod step;
pub mod team;

use std::time::Duration;

use atrium_manifest::sandbox::{self, ChainContext};
use atrium_runtime::{AgentCallError, CallError, Caller, Invocation};
use atrium_store::{AgentLimitsRow, Install, Store, TenantKey};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::llm_roles::{self, Role};
use crate::registry::{Actor, InstalledAgent, merged_agents, merged_workflows};
use crate::serving::{Serving, knowledge_of};
use offered::{Offered, Target};
pub use prompt::{applicable_workflows, system_prompt};
use step::{model_step, report};

/// The most model steps (calls to the model) of one run, unless the tenant set another.
pub const DEFAULT_MAX_STEPS: u32 = 8;
/// The most one run may cost, in micro-dollars ($0.50), unless the tenant set another.
pub const DEFAULT_BUDGET_MICROS: i64 = 500_000;
/// How long one run may take, model calls and tools included, unless the tenant set another.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest tool result handed back to the model, in characters; the rest is cut, and the
/// model is told so.
pub const MAX_TOOL_RESULT_CHARS: usize = 20_000;

/// The model steps a tenant may allow a run: 1 to 50.
pub const MAX_STEPS_RANGE: std::ops::RangeInclusive<i64> = 1..=50;
/// The budget a tenant may give a run, in micro-dollars: $0.001 to $100.
pub const BUDGET_MICROS_RANGE: std::ops::RangeInclusive<i64> = 1_000..=100_000_000;
/// The time a tenant may give a run, in seconds: 5 to 900.
pub const TIMEOUT_SECONDS_RANGE: std::ops::RangeInclusive<i64> = 5..=900;

/// A change of a tenant's agent limits: for each limit, none keeps what is set and `Some(None)`
/// returns it to the platform's default.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimitsChange {
    /// The most model steps of a run, within [`MAX_STEPS_RANGE`].
    pub max_steps: Option<Option<i64>>,
    /// The most a run may cost, in dollars, within [`BUDGET_MICROS_RANGE`] (in
    /// micro-dollars).
    pub budget_usd: Option<Option<f64>>,
    /// How long a run may take, in seconds, within [`TIMEOUT_SECONDS_RANGE`].
    pub timeout_seconds: Option<Option<i64>>,
}

/// The limits `change` sets over what `tenant` set, checked, for [`crate::llm_roles::update`]
/// to store: the field at fault (`agent_limits.<limit>`) and why.
pub async fn changed_limits(
    store: &Store,
    tenant: &TenantKey,
    change: &LimitsChange,
) -> Result<AgentLimitsRow, crate::Refusal> {
    let mut row = store.agent_limits(tenant).await?;
    let out_of = |field: &str, range: String| {
        crate::Refusal::invalid(
            format!("agent_limits.{field}"),
            format!("agent_limits.{field} must be from {range}"),
        )
    };
    if let Some(steps) = change.max_steps {
        if let Some(n) = steps
            && !MAX_STEPS_RANGE.contains(&n)
        {
            let r = &MAX_STEPS_RANGE;
            return Err(out_of("max_steps", format!("{} to {}", r.start(), r.end())));
        }
        row.max_steps = steps;
    }
    if let Some(budget) = change.budget_usd {
        let micros = budget.map(|usd| (usd * 1_000_000.0).round());
        if let Some(m) = micros
            && !(m.is_finite() && BUDGET_MICROS_RANGE.contains(&(m as i64)))
        {
            let r = &BUDGET_MICROS_RANGE;
            return Err(out_of(
                "budget_usd",
                format!("{} to {}", *r.start() as f64 / 1e6, *r.end() as f64 / 1e6),
            ));
        }
        row.budget_micros = micros.map(|m| m as i64);
    }
    if let Some(timeout) = change.timeout_seconds {
        if let Some(n) = timeout
            && !TIMEOUT_SECONDS_RANGE.contains(&n)
        {
            let r = &TIMEOUT_SECONDS_RANGE;
            return Err(out_of(
                "timeout_seconds",
                format!("{} to {}", r.start(), r.end()),
            ));
        }
        row.timeout_ms = timeout.map(|s| s * 1_000);
    }
    Ok(row)
}

/// The limits of `tenant`'s runs: what it set, the defaults for the rest.
pub async fn tenant_limits(
    store: &atrium_store::Store,
    tenant: &atrium_store::TenantKey,
) -> atrium_store::Result<Limits> {
    let set = store.agent_limits(tenant).await?;
    let default = Limits::default();
    Ok(Limits {
        max_steps: set
            .max_steps
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(default.max_steps),
        budget_micros: set.budget_micros.unwrap_or(default.budget_micros),
        timeout: set
            .timeout_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .map_or(default.timeout, Duration::from_millis),
    })
}

/// The limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model steps.
    pub max_steps: u32,
    /// Cost, in micro-dollars.
    pub budget_micros: i64,
    /// Wall time, the whole loop.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: DEFAULT_MAX_STEPS,
            budget_micros: DEFAULT_BUDGET_MICROS,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// One run asked for.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// The tenant (and the user, when a user asks).
    pub tenant: Actor,
    /// The app whose agent runs.
    pub app_slug: String,
    /// The agent; none: the app's default agent.
    pub agent: Option<String>,
    /// What the agent is asked.
    pub prompt: String,
    /// Earlier messages of the conversation (OpenAI's shape), before `prompt`.
    pub history: Vec<Value>,
    /// The chain the run is part of, this agent already entered (as the sandbox's `ask` and
    /// `delegate` answer it); none for a run the platform starts, whose chain begins at this
    /// agent.
    pub chain: Option<ChainContext>,
    /// The model role.
    pub role: Role,
    /// The one workflow the orchestrator chose, if it chose one; otherwise every workflow that
    /// applies is appended.
    pub workflow: Option<String>,
    /// The channel the request came on, for the workflows' `channels`.
    pub channel: Option<String>,
    /// A deadline the run must also keep (a delegating run's).
    pub deadline: Option<Instant>,
    /// The limits; none: the tenant's.
    pub limits: Option<Limits>,
    /// Where to report the run as it goes (the answer's text as the model produces it, each
    /// tool call and its result); none: the model's answers are read whole.
    pub events: Option<tokio::sync::mpsc::UnboundedSender<RunEvent>>,
}

/// What a run reports as it goes, when asked ([`AgentRun::events`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// A piece of the model's text.
    Delta {
        /// The agent speaking.
        agent: String,
        /// The piece.
        text: String,
    },
    /// The model called a tool.
    ToolCall {
        /// The agent.
        agent: String,
        /// The model's id of the call.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments.
        arguments: Value,
    },
    /// A tool answered or was refused.
    ToolResult {
        /// The agent.
        agent: String,
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// Whether it answered.
        ok: bool,
        /// The answer, or `{"error": ...}`.
        result: Value,
    },
}

impl AgentRun {
    /// A run of `agent` (none: the default) of `app_slug` for `tenant`, asked `prompt`, at the
    /// `specialist` role, with no history, started by the platform.
    pub fn new(
        tenant: Actor,
        app_slug: impl Into<String>,
        agent: Option<String>,
        prompt: impl Into<String>,
    ) -> Self {
        AgentRun {
            tenant,
            app_slug: app_slug.into(),
            agent,
            prompt: prompt.into(),
            history: Vec::new(),
            chain: None,
            role: Role::Specialist,
            workflow: None,
            channel: None,
            deadline: None,
            limits: None,
            events: None,
        }
    }
}

/// A tool call the model made, and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    /// The model's id of the call.
    pub id: String,
    /// The tool's name as the model called it.
    pub name: String,
    /// The arguments it sent.
    pub arguments: Value,
    /// Whether the tool answered (otherwise it was refused or failed).
    pub ok: bool,
    /// The answer, or `{"error": ...}`.
    pub result: Value,
}

/// What a run spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunUsage {
    /// Model steps.
    pub steps: u32,
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// Cost, in micro-dollars.
    pub cost_micros: i64,
}

/// A run's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReply {
    /// The app.
    pub app_slug: String,
    /// The agent that answered.
    pub agent: String,
    /// The answer.
    pub content: String,
    /// The messages the run added after the prompt: the model's (with its tool calls) and the
    /// tools' answers, in OpenAI's shape, for a conversation to keep.
    pub messages: Vec<Value>,
    /// Every tool call, in order.
    pub tool_steps: Vec<ToolStep>,
    /// What it spent.
    pub usage: RunUsage,
    /// The chain depth it ran at.
    pub chain_depth: u32,
    /// The last model that answered.
    pub model: String,
    /// Its provider.
    pub provider: String,
}

/// Why a run produced no answer: the `reason` of the `AgentCallError` an app receives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct RunError {
    /// A sentence naming the cause.
    pub reason: String,
}

impl RunError {
    fn new(reason: impl Into<String>) -> Self {
        RunError {
            reason: reason.into(),
        }
    }
}

impl From<RunError> for AgentCallError {
    fn from(error: RunError) -> Self {
        AgentCallError {
            reason: error.reason,
        }
    }
}

impl From<sandbox::AgentRefusal> for RunError {
    fn from(refusal: sandbox::AgentRefusal) -> Self {
        RunError::new(refusal.reason)
    }
}

/// A run's fixed parts, found once.
struct Prepared {
    install: Install,
    app: atrium_runtime::App,
    agent: InstalledAgent,
    offered: Offered,
    messages: Vec<Value>,
    chain: ChainContext,
    selection: atrium_inference::Selection,
    limits: Limits,
    deadline: Instant,
}

fn text_of(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn usd(micros: i64) -> String {
    format!("${:.4}", micros as f64 / 1_000_000.0)
}

/// A tool's answer as the model reads it: the JSON text, cut at [`MAX_TOOL_RESULT_CHARS`].
fn for_the_model(result: &Value) -> String {
    let text = match result {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.chars().count() <= MAX_TOOL_RESULT_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_TOOL_RESULT_CHARS).collect();
    format!("{cut}\n[cut: the answer had more than {MAX_TOOL_RESULT_CHARS} characters]")
}

fn refused(kind: &str, message: impl Into<String>) -> Value {
    json!({"error": {"kind": kind, "message": message.into()}})
}

/// A runtime error of a tool call, as the model reads it: the kind names what went wrong.
fn call_refusal(error: &CallError) -> Value {
    let kind = match error {
        CallError::ScopeDenied { .. } => "scope_denied",
        CallError::NotAgentVisible(_) => "not_agent_visible",
        CallError::NotDeclared(_) => "unknown_tool",
        CallError::InvalidInput(_) => "invalid_arguments",
        CallError::Deadline(_) => "deadline_exceeded",
        CallError::MemoryLimit { .. } => "memory_limit",
        _ => "failed",
    };
    let mut answer = refused(kind, error.to_string());
    if let CallError::ScopeDenied { needed, .. } = error {
        answer["error"]["needed_scopes"] = json!(needed);
    }
    answer
}

/// The agent runner over the serving core: every agent run, whoever asks for it (`agent.ask`,
/// a delegation, a cross-app call, a conversation, a heartbeat, a vision's phase). Cheap to
/// make: it shares the core it is made of.
#[derive(Debug, Clone)]
pub struct Runner {
    serving: Serving,
}

impl Runner {
    /// The runner of the host `serving` serves.
    #[must_use]
    pub fn of(serving: &Serving) -> Runner {
        Runner {
            serving: serving.clone(),
        }
    }

    /// Runs an agent: the model loop of the module's docs. Nested delegations (the model's
    /// `team-delegate`) run through here again with the chain carried.
    pub async fn run_agent(&self, run: AgentRun) -> Result<AgentReply, RunError> {
        Box::pin(self.run_agent_boxed(run)).await
    }

    async fn run_agent_boxed(&self, run: AgentRun) -> Result<AgentReply, RunError> {
        let prepared = self.prepare(&run).await?;
        self.model_loop(&run, prepared).await
    }

    async fn prepare(&self, run: &AgentRun) -> Result<Prepared, RunError> {
        let store = self.serving.registry().store();
        let slug = &run.app_slug;
        let install = self
            .serving
            .active_install(&run.tenant, slug)
            .await
            .map_err(|_| {
                RunError::new(format!(
                    "`{slug}` is not installed and active for this tenant"
                ))
            })?;
        let app = self
            .serving
            .app(slug, &install.version)
            .await
            .map_err(|e| {
                tracing::error!(app = %slug, error = %e, "loading an app for an agent run failed");
                RunError::new(format!("`{slug}` could not be loaded on this host"))
            })?;
        let manifest = app.manifest();
        let agent_id = match &run.agent {
            Some(id) => id.clone(),
            None => manifest
                .default_agent()
                .map(|a| a.id.clone())
                .ok_or_else(|| RunError::new(format!("`{slug}` declares no agent")))?,
        };
        let key = install.key();
        let store_failed = |e: atrium_store::StoreError| {
            tracing::error!(app = %slug, error = %e, "reading an install for an agent run failed");
            RunError::new("the platform failed to read the install; try again")
        };
        let edits = store.agent_edits(&key).await.map_err(store_failed)?;
        let agent = merged_agents(manifest, &edits)
            .into_iter()
            .find(|a| a.id == agent_id)
            .ok_or_else(|| {
                let ids: Vec<&str> = manifest.agents.iter().map(|a| a.id.as_str()).collect();
                RunError::new(format!(
                    "`{agent_id}` is not an agent of `{slug}` ({})",
                    sandbox::declared_names(&ids)
                ))
            })?;
        let overrides = store.workflow_overrides(&key).await.map_err(store_failed)?;
        let workflows = merged_workflows(manifest, &overrides);
        let offered = Offered::for_agent(self.serving.services().tools(), manifest, &agent, |s| {
            install.granted_scopes.iter().any(|g| g == s)
        });
        let names: Vec<&str> = offered
            .specs
            .iter()
            .filter_map(|s| s["function"]["name"].as_str())
            .collect();
        let applicable = applicable_workflows(
            &workflows,
            &names,
            run.channel.as_deref(),
            run.workflow.as_deref(),
        );
        let mut messages =
            vec![json!({"role": "system", "content": system_prompt(&agent, &applicable)})];
        messages.extend(run.history.iter().cloned());
        messages.push(json!({"role": "user", "content": run.prompt}));
        let chain = match &run.chain {
            Some(chain) => chain.clone(),
            None => ChainContext {
                depth: 1,
                visited: vec![format!("{slug}:{}", agent.id)],
            },
        };
        let route = llm_roles::route(store, &run.tenant, run.role)
            .await
            .map_err(store_failed)?;
        let limits = match run.limits {
            Some(limits) => limits,
            None => tenant_limits(store, &run.tenant)
                .await
                .map_err(store_failed)?,
        };
        let own = Instant::now() + limits.timeout;
        let deadline = run.deadline.map_or(own, |d| d.min(own));
        Ok(Prepared {
            install,
            app,
            agent,
            offered,
            messages,
            chain,
            selection: route.selection(false),
            limits,
            deadline,
        })
    }

    async fn model_loop(&self, run: &AgentRun, p: Prepared) -> Result<AgentReply, RunError> {
        let Some(chat) = self.serving.services().chat() else {
            return Err(RunError::new(
                "no model provider is configured on this host",
            ));
        };
        let slug = &run.app_slug;
        let inv = self
            .serving.invocation(&run.tenant, &p.install, &p.app, Caller::Agent)
            .await
            .map_err(|e| {
                tracing::error!(app = %slug, error = %e, "preparing an agent run's tool calls failed");
                RunError::new("the platform failed to prepare the install's calls; try again")
            })?
            .with_chain(p.chain.clone());
        let mut messages = p.messages;
        let first_added = messages.len();
        let mut usage = RunUsage::default();
        let mut tool_steps = Vec::new();
        let timeout = p.limits.timeout;
        loop {
            if usage.steps >= p.limits.max_steps {
                return Err(RunError::new(format!(
                    "step limit reached: the agent still called tools after {} model steps",
                    p.limits.max_steps
                )));
            }
            if usage.cost_micros >= p.limits.budget_micros {
                return Err(RunError::new(format!(
                    "budget exceeded: the run spent {} of its {} budget before answering",
                    usd(usage.cost_micros),
                    usd(p.limits.budget_micros)
                )));
            }
            let last = usage.steps + 1 == p.limits.max_steps;
            let mut params = Map::new();
            if !p.offered.specs.is_empty() {
                params.insert("tools".into(), Value::Array(p.offered.specs.clone()));
                // The last step may only answer.
                params.insert(
                    "tool_choice".into(),
                    json!(if last { "none" } else { "auto" }),
                );
            }
            let request = atrium_inference::providers::ChatRequest {
                messages: messages.clone(),
                params,
            };
            let step = model_step(
                chat,
                &p.selection,
                &request,
                &p.agent.id,
                run.events.as_ref(),
            );
            let completed = match tokio::time::timeout_at(p.deadline, step).await {
                Err(_) => {
                    return Err(RunError::new(format!(
                        "deadline exceeded: the run was stopped after {}s, waiting for the model",
                        timeout.as_secs()
                    )));
                }
                Ok(Err(e)) => return Err(e),
                Ok(Ok(completed)) => completed,
            };
            let cost = chat
                .meter(&run.tenant, &completed, Some(slug), Some(&p.agent.id))
                .await;
            let outcome = &completed.outcome;
            usage.steps += 1;
            usage.prompt_tokens += outcome.prompt_tokens;
            usage.completion_tokens += outcome.completion_tokens;
            usage.cost_micros = usage.cost_micros.saturating_add(cost);
            let message = outcome.message.clone();
            let calls: Vec<Value> = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            messages.push(message.clone());
            if calls.is_empty() {
                return Ok(AgentReply {
                    app_slug: slug.clone(),
                    agent: p.agent.id.clone(),
                    content: text_of(&message),
                    messages: messages.split_off(first_added),
                    tool_steps,
                    usage,
                    chain_depth: inv.chain.depth,
                    model: completed.model.id.clone(),
                    provider: completed.model.provider.as_str().to_owned(),
                });
            }
            if last {
                return Err(RunError::new(format!(
                    "step limit reached: the agent still called tools after {} model steps",
                    p.limits.max_steps
                )));
            }
            for call in calls {
                let id = call["id"].as_str().unwrap_or_default().to_owned();
                let name = call["function"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let text = call["function"]["arguments"].as_str().unwrap_or("{}");
                report(run.events.as_ref(), || RunEvent::ToolCall {
                    agent: p.agent.id.clone(),
                    id: id.clone(),
                    name: name.clone(),
                    arguments: serde_json::from_str(text).unwrap_or(Value::String(text.to_owned())),
                });
                let arguments: Result<Value, _> = if text.trim().is_empty() {
                    Ok(json!({}))
                } else {
                    serde_json::from_str(text)
                };
                let result = match arguments {
                    Err(e) => Err(refused(
                        "invalid_arguments",
                        format!("the arguments are not valid JSON: {e}"),
                    )),
                    Ok(arguments) => {
                        let step = self.tool_call(
                            run, &p.app, &p.agent, &p.offered, &inv, &name, &arguments, p.deadline,
                        );
                        match tokio::time::timeout_at(p.deadline, step).await {
                            Ok(answer) => answer,
                            Err(_) => {
                                return Err(RunError::new(format!(
                                    "deadline exceeded: the run was stopped after {}s, in tool `{name}`",
                                    timeout.as_secs()
                                )));
                            }
                        }
                    }
                };
                let (ok, result) = match result {
                    Ok(v) => (true, v),
                    Err(v) => (false, v),
                };
                messages.push(
                    json!({"role": "tool", "tool_call_id": id, "content": for_the_model(&result)}),
                );
                report(run.events.as_ref(), || RunEvent::ToolResult {
                    agent: p.agent.id.clone(),
                    id: id.clone(),
                    name: name.clone(),
                    ok,
                    result: result.clone(),
                });
                let arguments =
                    serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()));
                tool_steps.push(ToolStep {
                    id,
                    name,
                    arguments,
                    ok,
                    result,
                });
            }
        }
    }

    /// Runs one tool call of the model: the answer, or the refusal to hand back.
    #[allow(clippy::too_many_arguments)]
    async fn tool_call(
        &self,
        run: &AgentRun,
        app: &atrium_runtime::App,
        agent: &InstalledAgent,
        offered: &Offered,
        inv: &Invocation,
        name: &str,
        arguments: &Value,
        deadline: Instant,
    ) -> Result<Value, Value> {
        let manifest = app.manifest();
        let target = offered
            .target(manifest, name)
            .map_err(|message| refused("unknown_tool", message))?;
        if !arguments.is_object() {
            return Err(refused(
                "invalid_arguments",
                "the arguments must be a JSON object",
            ));
        }
        match target {
            Target::App(tool) => match app.call_tool(inv, &tool, &arguments.to_string()).await {
                Ok(text) => Ok(serde_json::from_str(&text).unwrap_or(Value::String(text))),
                Err(e) => Err(call_refusal(&e)),
            },
            Target::Platform(platform_tool) => {
                let tool = platform_tool.name;
                let needs: Vec<String> = platform_tool
                    .scopes
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect();
                if let Err(refusal) =
                    sandbox::tool_scopes(manifest, tool, &needs, |s| inv.granted_scopes.contains(s))
                {
                    let mut answer = refused(refusal.decision.as_str(), refusal.message);
                    answer["error"]["needed_scopes"] = json!(refusal.needed_scopes);
                    return Err(answer);
                }
                let install = self
                    .serving
                    .active_install(&run.tenant, &run.app_slug)
                    .await
                    .map_err(|e| refused("failed", e.to_string()))?;
                let knowledge = knowledge_of(&install, manifest);
                // An agent's memory tools reach its own memory, whatever agent the model names.
                let mut arguments = arguments.clone();
                if let Some(field) = platform_tool.runner_fills_agent {
                    arguments[field] = Value::String(agent.id.clone());
                }
                self.serving
                    .services()
                    .call_tool(&run.tenant, &run.app_slug, &knowledge, tool, arguments)
                    .await
                    .map_err(|e| refused(&e.decision, e.message))
            }
            Target::Delegate => {
                let args: team::DelegateArgs = crate::fields::from_value(arguments.clone())
                    .map_err(|e| refused("invalid_arguments", e.sentence()))?;
                let (target, prompt) = (args.agent.as_str(), args.prompt.as_str());
                if prompt.trim().is_empty() {
                    return Err(refused(
                        "invalid_arguments",
                        "`prompt` must say what to ask",
                    ));
                }
                let delegation = team::Delegation {
                    app: &run.app_slug,
                    from_agent: &agent.id,
                    target,
                    prompt,
                };
                let bounds = team::RunBounds {
                    deadline: Some(deadline),
                    limits: run.limits,
                    channel: run.channel.clone(),
                };
                let chain = team::Chain::caller(&inv.chain);
                let answer =
                    team::delegate(&self.serving, &run.tenant, delegation, chain, bounds).await;
                answer
                    .map(|reply| json!({"agent": reply.agent, "answer": reply.content}))
                    .map_err(|e| match e {
                        team::CallFailure::Refused(reason) => refused("denied", reason),
                        team::CallFailure::Failed(reason) => refused("agent_call_failed", reason),
                    })
            }
        }
    }
}
