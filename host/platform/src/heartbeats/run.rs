//! One heartbeat run (Appendix A, rules 2 to 7): the pre-filter, then, when it found records
//! or `invoke_always` is set, the agent in the agent runner with the records as context, at
//! the role of `model_tier`, in the conversation mode asked; then what the reply asks for
//! ([`super::reply`]): suppressed, or kept (stored in the thread or the conversation, written
//! to the agent's memory, a commitment-inference pass, the vision brought forward on an
//! escalation). The run's end is recorded on its row: a success resets the failures, a
//! failure counts towards disabling it.

use atrium_manifest::{ConversationMode, Heartbeat, Manifest, ModelTier};
use atrium_store::{
    Conversation, DueHeartbeat, HeartbeatClaim, HeartbeatEnd, HeartbeatRef, Install, InstallKey,
    InstallStatus, NewMessage, TenantKey,
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::reply::{self, Verdict};
use super::{Scheduler, find, prefilter};
use crate::Refusal;
use crate::llm_roles::Role;
use crate::registry::Actor;
use crate::runner::AgentRun;
use crate::serving::{ServeError, Serving};

/// The longest reply written to the agent's memory, in characters.
pub const MAX_MEMORY_CHARS: usize = 8_000;
/// The memory kind of what a substantive tick wrote.
pub const MEMORY_KIND: &str = "heartbeat";

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Its schedule.
    Schedule,
    /// An event's wire (`target_heartbeat`).
    Wake,
    /// A tenant admin's `run-now`.
    RunNow,
}

impl Trigger {
    /// The name stored with the run.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Schedule => "schedule",
            Trigger::Wake => "wake",
            Trigger::RunNow => "run_now",
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The install.
    pub install: InstallKey,
    /// The agent.
    pub agent: String,
    /// The heartbeat.
    pub slug: String,
    /// When it was due: the run's key.
    pub due_at: jiff::Timestamp,
    /// What started it.
    pub trigger: Trigger,
    /// `ok`, `suppressed`, `idle` (the pre-filter found nothing) or `failed`.
    pub outcome: String,
    /// Records the pre-filter found.
    pub records: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
    /// The reply, when kept.
    pub reply: Option<String>,
    /// Whether it escalated to the vision loop.
    pub escalated: bool,
    /// The commitments the inference pass added.
    pub commitments: Vec<String>,
    /// What its model calls cost, in micro-dollars.
    pub cost_micros: i64,
    /// The row's state after the run (`disabled` after the fifth failure in a row).
    pub state: Option<String>,
    /// Failures in a row after the run.
    pub consecutive_failures: Option<i64>,
}

/// What an attempt produced.
#[derive(Debug, Default)]
struct Attempt {
    outcome: &'static str,
    records: Option<i64>,
    reply: Option<String>,
    escalated: bool,
    commitments: Vec<String>,
    cost_micros: i64,
}

/// A failed attempt: why, and what it had spent.
struct Failure {
    reason: String,
    records: Option<i64>,
    cost_micros: i64,
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Failure {
            reason,
            records: None,
            cost_micros: 0,
        }
    }
}

/// Runs the claimed run `due_at` of `due`'s heartbeat at `now` (the clock of the tick that
/// claimed it) and records its end.
pub(super) async fn run(
    serving: &Serving,
    due: &DueHeartbeat,
    manifest: &Manifest,
    (due_at, now): (jiff::Timestamp, jiff::Timestamp),
    trigger: Trigger,
) -> RunSummary {
    let agent = &due.row.agent;
    let slug = &due.row.slug;
    let attempt = match find(manifest, agent, slug) {
        Some(heartbeat) => attempt(serving, &due.install, agent, heartbeat, now).await,
        None => Err(Failure::from(format!(
            "the installed version no longer declares heartbeat `{slug}` of agent `{agent}`"
        ))),
    };
    let (attempt, error) = match attempt {
        Ok(a) => (a, None),
        Err(f) => (
            Attempt {
                outcome: "failed",
                records: f.records,
                cost_micros: f.cost_micros,
                ..Attempt::default()
            },
            Some(f.reason),
        ),
    };
    let heartbeat = HeartbeatRef {
        install: &due.install,
        agent,
        slug,
    };
    let end = HeartbeatEnd {
        outcome: attempt.outcome,
        error: error.as_deref(),
        records: attempt.records,
        reply: attempt.reply.as_deref(),
        escalated: attempt.escalated,
        cost_micros: attempt.cost_micros,
    };
    let row = match serving
        .registry()
        .store()
        .finish_heartbeat_run(heartbeat, due_at, end)
        .await
    {
        Ok(row) => row,
        Err(e) => {
            tracing::error!(install = %due.install, %agent, heartbeat = %slug, error = %e, "recording a heartbeat run's end failed");
            None
        }
    };
    if let Some(reason) = &error {
        tracing::info!(install = %due.install, %agent, heartbeat = %slug, %reason, "a heartbeat run failed");
    }
    RunSummary {
        install: due.install.clone(),
        agent: agent.clone(),
        slug: slug.clone(),
        due_at,
        trigger,
        outcome: attempt.outcome.to_owned(),
        records: attempt.records,
        error,
        reply: attempt.reply,
        escalated: attempt.escalated,
        commitments: attempt.commitments,
        cost_micros: attempt.cost_micros,
        state: row.as_ref().map(|r| r.state.clone()),
        consecutive_failures: row.as_ref().map(|r| r.consecutive_failures),
    }
}

/// The role of a heartbeat's `model_tier`.
fn role_of(tier: ModelTier) -> Role {
    let name = match tier {
        ModelTier::Cheap => "cheap",
        ModelTier::Standard => "standard",
        ModelTier::Premium => "premium",
    };
    Role::for_model_tier(name).unwrap_or(Role::Fast)
}

/// What the agent is asked: the heartbeat's prompt (or a default), what the platform expects
/// of a reply, and the records the pre-filter found.
fn compose(heartbeat: &Heartbeat, found: &prefilter::Found) -> String {
    let instruction = heartbeat
        .prompt
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or("Review the records below and act on what needs attention.");
    let mut prompt = format!(
        "[Heartbeat `{}`] {instruction}\n\n(If nothing needs attention, answer `{}`. Add `{}` to bring your vision forward.)",
        heartbeat.slug,
        reply::OK_TOKEN,
        reply::ESCALATE_MARKER
    );
    if found.count > 0 {
        prompt.push_str(&format!(
            "\n\nThe pre-filter (`{}`.`{}`) found {}:\n{}",
            heartbeat.skill,
            heartbeat.tool,
            found.count,
            found.context_text()
        ));
    } else {
        prompt.push_str("\n\nThe pre-filter found nothing this time.");
    }
    prompt
}

/// The id of `agent`'s dedicated heartbeat thread: one per (tenant, app, agent).
fn thread_id(install: &InstallKey, agent: &str) -> String {
    conversation_id(install, agent, "heartbeat-thread")
}

/// The id of the user-facing conversation a `main` heartbeat of `agent` opens when the agent
/// has none yet: one per (tenant, app, agent), so that a run that fails, is cut off or is
/// suppressed before it writes into it leaves no second empty one behind.
fn opened_main_id(install: &InstallKey, agent: &str) -> String {
    conversation_id(install, agent, "heartbeat-main")
}

/// A conversation id fixed by the install, the agent and what the conversation is for.
fn conversation_id(install: &InstallKey, agent: &str, purpose: &str) -> String {
    let mut hash = Sha256::new();
    for part in [
        install.org_id.as_str(),
        &install.tenant_id,
        purpose,
        &install.app_slug,
        agent,
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let hex: String = hash
        .finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("cnv_{hex}")
}

/// The conversation a run of `mode` reads and writes: none for `isolated`; the agent's own
/// thread for `dedicated`; for `main`, the user-facing conversation that is with the agent and
/// was written to last, or a new one of the user who activated the install.
async fn conversation_for(
    serving: &Serving,
    install: &Install,
    agent: &str,
    mode: ConversationMode,
) -> Result<Option<Conversation>, String> {
    let store = serving.registry().store();
    let tenant = install.tenant();
    let failed =
        |e: atrium_store::StoreError| format!("the platform failed to read the conversation: {e}");
    match mode {
        ConversationMode::Isolated => Ok(None),
        ConversationMode::Dedicated => store
            .ensure_conversation(
                &tenant,
                &thread_id(&install.key(), agent),
                &format!("agent:{}/{agent}", install.app_slug),
                "heartbeat",
                Some(&format!("Heartbeats of {agent}")),
            )
            .await
            .map(Some)
            .map_err(failed),
        ConversationMode::Main => {
            if let Some(found) = store
                .latest_conversation_with(&tenant, &install.app_slug, agent)
                .await
                .map_err(failed)?
            {
                return Ok(Some(found));
            }
            let Some(user) = install.activated_by.as_deref() else {
                return Err(format!(
                    "conversation_mode `main` posts into a user's conversation with `{agent}`, and there is none: no user has talked with it and no user activated the install"
                ));
            };
            store
                .ensure_conversation(
                    &tenant,
                    &opened_main_id(&install.key(), agent),
                    user,
                    "web",
                    Some(agent),
                )
                .await
                .map(Some)
                .map_err(failed)
        }
    }
}

fn data(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

async fn attempt(
    serving: &Serving,
    key: &InstallKey,
    agent: &str,
    heartbeat: &Heartbeat,
    now: jiff::Timestamp,
) -> Result<Attempt, Failure> {
    let store = serving.registry().store();
    let install = store
        .install(key)
        .await
        .map_err(|e| format!("the platform failed to read the install: {e}"))?
        .filter(|i| i.status == InstallStatus::Active)
        .ok_or_else(|| "the install is not active".to_owned())?;
    let tenant = Actor::host(install.tenant());
    let found = prefilter::run(serving, &tenant, &install, agent, heartbeat).await?;
    let records = Some(found.count);
    if found.count == 0 && !heartbeat.invoke_always {
        return Ok(Attempt {
            outcome: "idle",
            records,
            ..Attempt::default()
        });
    }
    let fail = |reason: String, cost_micros: i64| Failure {
        reason,
        records,
        cost_micros,
    };
    let prompt = compose(heartbeat, &found);
    let conversation = conversation_for(serving, &install, agent, heartbeat.conversation_mode)
        .await
        .map_err(|e| fail(e, 0))?;
    let mut run = AgentRun::new(
        tenant.clone(),
        &install.app_slug,
        Some(agent.to_owned()),
        &prompt,
    );
    run.role = role_of(heartbeat.model_tier);
    run.channel = Some("heartbeat".to_owned());
    if let Some(c) = &conversation {
        run.history =
            crate::conversations::history(store, &tenant.tenant, &c.id, &["user", "heartbeat"])
                .await
                .map_err(|e| fail(format!("the platform failed to read the history: {e}"), 0))?;
    }
    let answer = crate::runner::Runner::of(serving)
        .run_agent(run)
        .await
        .map_err(|e| fail(format!("the agent did not answer: {}", e.reason), 0))?;
    let mut cost = answer.usage.cost_micros;
    let escalate = match reply::verdict(&answer.content) {
        Verdict::Suppressed => {
            return Ok(Attempt {
                outcome: "suppressed",
                records,
                cost_micros: cost,
                ..Attempt::default()
            });
        }
        Verdict::Kept { escalate } => escalate,
    };
    if let Some(c) = &conversation {
        let messages = [
            NewMessage {
                kind: "heartbeat",
                content: prompt.clone(),
                app_slug: Some(install.app_slug.clone()),
                agent: Some(agent.to_owned()),
                data: data(json!({"heartbeat": heartbeat.slug, "records": found.count})),
            },
            NewMessage {
                kind: "assistant",
                content: answer.content.clone(),
                app_slug: Some(install.app_slug.clone()),
                agent: Some(agent.to_owned()),
                data: data(json!({
                    "heartbeat": heartbeat.slug,
                    "model": answer.model, "provider": answer.provider,
                    "tool_calls": answer.tool_steps.iter().map(|t| json!({
                        "id": t.id, "name": t.name, "arguments": t.arguments, "ok": t.ok, "result": t.result,
                    })).collect::<Vec<_>>(),
                })),
            },
        ];
        store
            .append_messages(
                &tenant.tenant,
                &c.id,
                &messages,
                Some((&install.app_slug, agent)),
            )
            .await
            .map_err(|e| fail(format!("the platform failed to store the reply: {e}"), cost))?;
    }
    let remembered: String = answer.content.chars().take(MAX_MEMORY_CHARS).collect();
    store
        .put_memory(
            &install.key(),
            agent,
            MEMORY_KIND,
            &remembered,
            &data(json!({"heartbeat": heartbeat.slug, "records": found.count})),
        )
        .await
        .map_err(|e| {
            fail(
                format!("the platform failed to write the memory: {e}"),
                cost,
            )
        })?;
    let inferred =
        super::infer::commitments(serving, &tenant, &install.app_slug, agent, &answer.content)
            .await;
    cost += inferred.cost_micros;
    if escalate {
        let at = now + jiff::SignedDuration::from_secs(reply::ESCALATION_DELAY_SECONDS);
        match store.hasten_vision(&install.key(), agent, at).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(install = %install.key(), %agent, "an escalation found no running vision to bring forward")
            }
            Err(e) => {
                tracing::warn!(install = %install.key(), %agent, error = %e, "bringing a vision forward failed")
            }
        }
    }
    Ok(Attempt {
        outcome: "ok",
        records,
        reply: Some(answer.content),
        escalated: escalate,
        commitments: inferred.ids,
        cost_micros: cost,
    })
}

/// `run-now`: claims a run due now (`run_now`) and runs it, whatever the schedule, active
/// hours and cooldown say.
pub(super) async fn run_now(
    scheduler: &Scheduler,
    tenant: &TenantKey,
    feed_id: &str,
) -> Result<RunSummary, Refusal> {
    let serving = &scheduler.serving;
    let store = serving.registry().store();
    let Some((app_slug, row)) = store
        .heartbeat_by_id(tenant, feed_id)
        .await
        .map_err(|e| Refusal::from(ServeError::from(e)))?
    else {
        return Err(Refusal::not_found(format!(
            "this tenant has no heartbeat `{feed_id}`"
        )));
    };
    match row.state.as_str() {
        "disabled" => {
            return Err(Refusal::Conflict {
                code: "heartbeat_disabled",
                message: format!(
                    "heartbeat `{feed_id}` ({}/{}) is disabled after {} consecutive failures; enable it first (POST /api/admin/data-feeds/{feed_id}/enable)",
                    row.agent, row.slug, row.consecutive_failures
                ),
            });
        }
        "retired" => {
            return Err(Refusal::Conflict {
                code: "heartbeat_retired",
                message: format!(
                    "heartbeat `{feed_id}` ({}/{}) is retired: the installed version no longer declares it",
                    row.agent, row.slug
                ),
            });
        }
        _ => {}
    }
    let key = tenant.install(&app_slug);
    let install = store
        .install(&key)
        .await
        .map_err(|e| Refusal::from(ServeError::from(e)))?
        .filter(|i| i.status == InstallStatus::Active)
        .ok_or_else(|| Refusal::Conflict {
            code: "install_inactive",
            message: format!("the install of `{app_slug}` is not active"),
        })?;
    let manifest = serving
        .registry()
        .manifest_of(&app_slug, &install.version)
        .await
        .map_err(|e| Refusal::from(ServeError::from(e)))?;
    let due = DueHeartbeat {
        install: key,
        version: install.version.clone(),
        row,
    };
    let now = jiff::Timestamp::now();
    // The claim and the run it wins go to their end together in a task of their own, whether
    // or not the caller still waits: a claim committed under a caller that was cut off would
    // otherwise stay `running` until the reaper finds it.
    let (serving, host, feed_id) = (
        serving.clone(),
        scheduler.host().to_owned(),
        feed_id.to_owned(),
    );
    crate::cancel::to_the_end(async move {
        let store = serving.registry().store();
        let heartbeat = HeartbeatRef {
            install: &due.install,
            agent: &due.row.agent,
            slug: &due.row.slug,
        };
        // Two run-nows in one millisecond: the second takes the next free one.
        let due_times = (now.as_millisecond()..)
            .take(100)
            .filter_map(|ms| jiff::Timestamp::from_millisecond(ms).ok());
        for due_at in due_times {
            let claimed = store
                .claim_heartbeat_run(HeartbeatClaim {
                    heartbeat,
                    due_at,
                    trigger: Trigger::RunNow.as_str(),
                    host: &host,
                    at: due_at,
                    advance: None,
                })
                .await
                .map_err(|e| Refusal::from(ServeError::from(e)))?;
            if claimed {
                return Ok(run(&serving, &due, &manifest, (due_at, now), Trigger::RunNow).await);
            }
        }
        Err(Refusal::Conflict {
            code: "heartbeat_busy",
            message: format!("heartbeat `{feed_id}` could not be claimed; try again"),
        })
    })
    .await
}
