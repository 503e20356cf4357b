//! The vision loop: an agent's long goal (`agents[].vision`) pursued in cycles of five phases,
//! each an agent-runner call whose output is stored (docs/platform.md, "Visions").
//!
//! | phase | asks the agent | then |
//! |---|---|---|
//! | `assess` | where the project stands against the vision and its criteria | `debate` |
//! | `debate` | the options for the next goal, for and against | `plan` |
//! | `plan` | one plan for the next goal | `supervised`: waits for a user's approval; `full_autonomy`: `execute` |
//! | `execute` | to carry the plan out, with its tools | `review` |
//! | `review` | whether the goal was reached and the criteria are met (`VISION_COMPLETE` when all are) | `done`, or the next cycle after the pause |
//!
//! A vision is created at activation (and whenever an install moves to a version: an upgrade
//! of any kind) only when the tenant selected a project through a `project_picker` setting; a
//! version that no longer declares it stops it ([`retire_undeclared`]), one that declares it
//! again starts it over. Before each phase the budgets are checked: `budget_max_goals`
//! completed cycles, or `budget_max_cost_cents` spent by its phases, stop it with the reason
//! recorded. A heartbeat's `<escalate-to-vision/>` brings a running vision's next phase
//! forward to 30 seconds later. The scheduler's tick runs due phases; a phase is claimed by
//! moving its due time to a lease, so a host that stops mid-phase leaves it due again.

use std::time::Duration;

use atrium_manifest::{AutonomyMode, Manifest, Vision as Declared};
use atrium_store::{InstallKey, NewVisionPhase, TenantKey, Vision, VisionStep};
use jiff::Timestamp;

use crate::registry::{Actor, RegistryError};
use crate::runner::AgentRun;
use crate::serving::{ServeError, Serving};

/// The pause between a review and the next cycle's assessment, by default.
pub const DEFAULT_CYCLE_PAUSE: Duration = Duration::from_secs(60 * 60);
/// The pause before a failed phase is tried again.
pub const RETRY_PAUSE: Duration = Duration::from_secs(5 * 60);
/// The marker a review answers when every criterion is met.
pub const COMPLETE_MARKER: &str = "VISION_COMPLETE";
/// The most visions one tick advances.
const DUE_PER_TICK: i64 = 100;

/// How the visions' phases are run: the heartbeats job runs them, with its own settings.
#[derive(Debug, Clone, Copy)]
pub struct VisionTiming {
    /// When a claimed phase still running counts as lost (its host stopped).
    pub lost_after: Duration,
    /// The time between a vision's cycles ([`DEFAULT_CYCLE_PAUSE`]).
    pub cycle_pause: Duration,
}
/// The longest earlier output quoted to a phase, in characters.
const MAX_QUOTED_CHARS: usize = 6_000;

/// `d` (in whole ms) after `at`; the latest time there is when that is later.
fn later(at: Timestamp, d: Duration) -> Timestamp {
    let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    at.checked_add(jiff::SignedDuration::from_millis(ms))
        .unwrap_or(Timestamp::MAX)
}

/// The vision `agent` declares in `manifest`.
#[must_use]
pub fn declared<'m>(manifest: &'m Manifest, agent: &str) -> Option<&'m Declared> {
    manifest
        .agents
        .iter()
        .find(|a| a.id == agent)?
        .vision
        .as_ref()
}

/// Creates (or keeps) the visions of an activated install: one per agent that declares a
/// vision, when the tenant selected a project through a `project_picker` setting (the first
/// such setting with a value).
pub async fn create_at_activation(
    store: &atrium_store::Store,
    install: &InstallKey,
    manifest: &Manifest,
    settings: &serde_json::Map<String, serde_json::Value>,
) -> atrium_store::Result<Vec<Vision>> {
    let project = manifest
        .install_settings
        .iter()
        .filter(|s| s.kind == atrium_manifest::SettingType::ProjectPicker)
        .find_map(|s| match settings.get(&s.id) {
            Some(serde_json::Value::String(p)) if !p.trim().is_empty() => Some(p.clone()),
            Some(serde_json::Value::Null) | None => None,
            Some(serde_json::Value::String(_)) => None,
            Some(other) => Some(other.to_string()),
        });
    let Some(project) = project else {
        return Ok(Vec::new());
    };
    let mut created = Vec::new();
    for agent in manifest.agents.iter().filter(|a| a.vision.is_some()) {
        let mut vision = store.ensure_vision(install, &agent.id, &project).await?;
        // Retired by an earlier version, declared again by this one: it is pursued again.
        if vision.state == "stopped"
            && vision.stop_reason.as_deref() == Some(RETIRED)
            && store
                .restart_vision(&install.tenant(), &vision.id, RETIRED)
                .await?
        {
            vision = store.vision_of(install, &agent.id).await?.unwrap_or(vision);
        }
        created.push(vision);
    }
    Ok(created)
}

/// The visions follow an install's version (`registry::declared`): created for the agents
/// that declare one, stopped for those that no longer do.
pub(crate) struct FollowVersion;

#[async_trait::async_trait]
impl crate::registry::declared::InstallHook for FollowVersion {
    async fn landed(
        &self,
        registry: &crate::registry::Registry,
        install: &atrium_store::Install,
        manifest: &Manifest,
    ) -> crate::registry::Result<()> {
        let store = registry.store();
        let key = install.key();
        create_at_activation(store, &key, manifest, &install.settings).await?;
        retire_undeclared(store, &key, manifest).await?;
        Ok(())
    }
}

/// Why a vision stopped when its install's version no longer declares it.
pub const RETIRED: &str = "the installed version no longer declares this vision";

/// Stops the visions of `install` that the version of `manifest` no longer declares (its
/// agent has no vision there, or is gone), after the install moved to that version: each
/// running or waiting one is `stopped` with [`RETIRED`] recorded as its stop, its phases kept.
/// A later version that declares it again starts it over ([`create_at_activation`]). Answers
/// how many it stopped.
pub async fn retire_undeclared(
    store: &atrium_store::Store,
    install: &InstallKey,
    manifest: &Manifest,
) -> atrium_store::Result<usize> {
    let tenant = install.tenant();
    let mut stopped = 0;
    for vision in store.visions(&tenant).await? {
        let live = matches!(vision.state.as_str(), "running" | "awaiting_approval");
        if vision.app_slug != install.app_slug
            || !live
            || declared(manifest, &vision.agent).is_some()
        {
            continue;
        }
        let from = (vision.state.as_str(), vision.phase.as_str());
        if store
            .step_vision(&tenant, &vision.id, from, stop(&vision, from.1, RETIRED))
            .await?
        {
            stopped += 1;
        }
    }
    Ok(stopped)
}

/// Why a vision's budget stops it, if one does.
fn spent(declared: &Declared, vision: &Vision) -> Option<String> {
    let goals = i64::from(declared.budget_max_goals);
    if vision.goals_done >= goals {
        return Some(format!(
            "budget_max_goals: {} of {goals} goals done",
            vision.goals_done
        ));
    }
    if let Some(cents) = declared.budget_max_cost_cents {
        let cap = i64::try_from(cents).unwrap_or(i64::MAX / 10_000) * 10_000;
        if vision.cost_micros >= cap {
            return Some(format!(
                "budget_max_cost_cents: spent {:.2} of {cents} cents",
                vision.cost_micros as f64 / 10_000.0
            ));
        }
    }
    None
}

fn quote(text: &str) -> String {
    if text.chars().count() <= MAX_QUOTED_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX_QUOTED_CHARS).collect();
    format!("{cut}\n[cut]")
}

/// What a phase asks, with the vision, the project and what this cycle produced so far.
fn prompt(declared: &Declared, vision: &Vision, earlier: &[atrium_store::VisionPhase]) -> String {
    let mut text = format!(
        "[Vision, cycle {}, phase {}] Project: {}\nVision: {}\n",
        vision.cycle,
        vision.phase.to_uppercase(),
        vision.project,
        declared.text
    );
    if !declared.success_criteria.is_empty() {
        text.push_str("Success criteria:\n");
        for c in &declared.success_criteria {
            text.push_str(&format!("- {c}\n"));
        }
    }
    text.push_str(&format!(
        "Goals done: {} of at most {}.\n",
        vision.goals_done, declared.budget_max_goals
    ));
    for p in earlier {
        text.push_str(&format!(
            "\n## {} ({})\n{}\n",
            p.phase.to_uppercase(),
            p.outcome,
            quote(&p.output)
        ));
    }
    text.push('\n');
    text.push_str(match vision.phase.as_str() {
        "assess" => "ASSESS: say where the project stands against the vision and its criteria.",
        "debate" => "DEBATE: weigh the options for the next goal, for and against each.",
        "plan" => "PLAN: write one concrete plan for the next goal, step by step.",
        "execute" => "EXECUTE: carry out the plan above with your tools, and report what you did.",
        _ => "REVIEW: say whether the goal was reached and which criteria are met. Answer VISION_COMPLETE if every criterion is met.",
    });
    text
}

/// What follows `phase` (state, phase, cycle, goals added, delay before it), for a vision in
/// `mode` whose phase answered `output`.
fn after(
    phase: &str,
    mode: AutonomyMode,
    cycle: i64,
    output: &str,
    pause: Duration,
) -> (&'static str, &'static str, i64, i64, Option<Duration>) {
    match phase {
        "assess" => ("running", "debate", cycle, 0, Some(Duration::ZERO)),
        "debate" => ("running", "plan", cycle, 0, Some(Duration::ZERO)),
        "plan" if mode == AutonomyMode::Supervised => {
            ("awaiting_approval", "execute", cycle, 0, None)
        }
        "plan" => ("running", "execute", cycle, 0, Some(Duration::ZERO)),
        "execute" => ("running", "review", cycle, 0, Some(Duration::ZERO)),
        _ if output.contains(COMPLETE_MARKER) => ("done", "review", cycle, 1, None),
        _ => ("running", "assess", cycle + 1, 1, Some(pause)),
    }
}

/// Runs the visions' phases due at `now`; answers how many ran.
pub async fn run_due(
    serving: &Serving,
    timing: VisionTiming,
    now: Timestamp,
) -> Result<usize, ServeError> {
    let store = serving.registry().store();
    let mut ran = 0;
    for (install, vision) in store.due_visions(now, DUE_PER_TICK).await? {
        let tenant = install.tenant();
        let Some(due) = vision.next_action_at else {
            continue;
        };
        let lease = later(now, timing.lost_after);
        if !store.claim_vision(&tenant, &vision.id, due, lease).await? {
            continue;
        }
        // A claimed phase runs to its end (its cost added, its step stored), whatever becomes
        // of the tick that claimed it.
        let serving = serving.clone();
        crate::cancel::to_the_end(async move {
            if let Err(e) = phase(&serving, timing, &install, &vision, now).await {
                tracing::warn!(install = %install, vision = %vision.id, error = %e, "a vision phase could not run");
            }
        })
        .await;
        ran += 1;
    }
    Ok(ran)
}

/// The step that stops `vision` at `phase` for `reason`.
fn stop<'a>(vision: &Vision, phase: &'a str, reason: &'a str) -> VisionStep<'a> {
    VisionStep {
        record: NewVisionPhase {
            cycle: vision.cycle,
            phase: "stop",
            outcome: "stopped",
            output: reason,
            cost_micros: 0,
            decided_by: None,
        },
        state: "stopped",
        phase,
        cycle: vision.cycle,
        goals_added: 0,
        next_action_at: None,
        stop_reason: Some(reason),
    }
}

/// Runs the current phase of `vision` (claimed) and moves it on.
async fn phase(
    serving: &Serving,
    timing: VisionTiming,
    install: &InstallKey,
    vision: &Vision,
    now: Timestamp,
) -> Result<(), ServeError> {
    let store = serving.registry().store();
    let tenant = install.tenant();
    let from = (vision.state.as_str(), vision.phase.as_str());
    let at = |d: Duration| later(now, d);
    let installed = store
        .install(install)
        .await?
        .ok_or_else(|| RegistryError::NotFound(format!("the install {install} is gone")))?;
    let manifest = serving
        .registry()
        .manifest_of(&install.app_slug, &installed.version)
        .await?;
    let Some(declared) = declared(&manifest, &vision.agent) else {
        store
            .step_vision(&tenant, &vision.id, from, stop(vision, from.1, RETIRED))
            .await?;
        return Ok(());
    };
    if let Some(reason) = spent(declared, vision) {
        store
            .step_vision(&tenant, &vision.id, from, stop(vision, from.1, &reason))
            .await?;
        return Ok(());
    }
    let earlier: Vec<_> = store
        .vision_phases(&tenant, &vision.id)
        .await?
        .into_iter()
        .filter(|p| p.cycle == vision.cycle || (p.cycle + 1 == vision.cycle && p.phase == "review"))
        .collect();
    let mut run = AgentRun::new(
        Actor::host(tenant.clone()),
        &install.app_slug,
        Some(vision.agent.clone()),
        prompt(declared, vision, &earlier),
    );
    run.channel = Some("vision".to_owned());
    let record = |outcome, output, cost| NewVisionPhase {
        cycle: vision.cycle,
        phase: from.1,
        outcome,
        output,
        cost_micros: cost,
        decided_by: None,
    };
    match crate::runner::Runner::of(serving).run_agent(run).await {
        Ok(reply) => {
            let cost = reply.usage.cost_micros;
            let (state, next_phase, cycle, goals, delay) = after(
                from.1,
                declared.autonomy_mode,
                vision.cycle,
                &reply.content,
                timing.cycle_pause,
            );
            let mut step = VisionStep {
                record: record("ok", &reply.content, cost),
                state,
                phase: next_phase,
                cycle,
                goals_added: goals,
                next_action_at: delay.map(at),
                stop_reason: None,
            };
            // The budgets as they stand after this phase: a spent one stops the vision now,
            // with this phase's output kept.
            let after_phase = Vision {
                goals_done: vision.goals_done + goals,
                cost_micros: vision.cost_micros + cost,
                ..vision.clone()
            };
            let reason = spent(declared, &after_phase);
            if let (Some(reason), "running") = (&reason, state) {
                step.state = "stopped";
                step.next_action_at = None;
                step.stop_reason = Some(reason);
            }
            store.step_vision(&tenant, &vision.id, from, step).await?;
        }
        Err(e) => {
            let output = format!("the agent did not answer: {}", e.reason);
            let step = VisionStep {
                record: record("failed", &output, 0),
                state: from.0,
                phase: from.1,
                cycle: vision.cycle,
                goals_added: 0,
                next_action_at: Some(at(RETRY_PAUSE)),
                stop_reason: None,
            };
            store.step_vision(&tenant, &vision.id, from, step).await?;
        }
    }
    Ok(())
}

/// A user's decision on a plan that waits for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Execute it.
    Approve,
    /// Discard it; the next cycle assesses again after the pause.
    Reject,
}

/// The vision does not wait for approval (any more): 409 `vision_not_awaiting_approval`.
fn not_awaiting(message: String) -> crate::Refusal {
    crate::Refusal::conflict("vision_not_awaiting_approval", message)
}

/// Records `user`'s `decision` (with an optional `note`) on `tenant`'s vision `id`, which
/// must be waiting for approval; answers the vision after it.
pub async fn decide(
    store: &atrium_store::Store,
    tenant: &TenantKey,
    id: &str,
    user: &str,
    decision: Decision,
    note: Option<&str>,
    cycle_pause: Duration,
) -> Result<Vision, crate::Refusal> {
    let vision = store
        .vision(tenant, id)
        .await?
        .ok_or_else(|| crate::Refusal::not_found(format!("this tenant has no vision `{id}`")))?;
    if vision.state != "awaiting_approval" {
        return Err(not_awaiting(format!(
            "vision `{id}` is `{}`, not waiting for approval",
            vision.state
        )));
    }
    let now = Timestamp::now();
    let (outcome, phase, cycle, next) = match decision {
        Decision::Approve => ("approved", "execute", vision.cycle, now),
        Decision::Reject => (
            "rejected",
            "assess",
            vision.cycle + 1,
            later(now, cycle_pause),
        ),
    };
    let note = note.unwrap_or_default();
    let step = VisionStep {
        record: NewVisionPhase {
            cycle: vision.cycle,
            phase: "approval",
            outcome,
            output: note,
            cost_micros: 0,
            decided_by: Some(user),
        },
        state: "running",
        phase,
        cycle,
        goals_added: 0,
        next_action_at: Some(next),
        stop_reason: None,
    };
    if !store
        .step_vision(
            tenant,
            id,
            ("awaiting_approval", vision.phase.as_str()),
            step,
        )
        .await?
    {
        return Err(not_awaiting(format!(
            "vision `{id}` was decided by someone else meanwhile"
        )));
    }
    store
        .vision(tenant, id)
        .await?
        .ok_or_else(|| crate::Refusal::not_found(format!("vision `{id}` vanished")))
}
