//! Visions: one per agent of an install, due at once when created; a due phase claimed once
//! for a lease; each step appended and applied only from the state and phase it was read in;
//! a stopped vision restarted only for the reason it stopped; nothing seen across tenants.

use atrium_store::{InstallKey, NewVisionPhase, Store, TenantKey, Vision, VisionStep};
use jiff::Timestamp;

use super::{Tenants, activate_app, ms, next_millisecond, register_app, stores, tenants};

async fn setup(store: &Store) -> (Tenants, InstallKey) {
    let t = tenants(store).await;
    let slug = register_app(store, "growth").await;
    let install = activate_app(store, &t.tenant, &slug, &[]).await;
    (t, install)
}

/// The vision of `agent` of `install`, for project `p`.
async fn ensure(store: &Store, install: &InstallKey, agent: &str) -> Vision {
    store.ensure_vision(install, agent, "p").await.unwrap()
}

/// The step that records `phase` of cycle 1 as `ok` (its output the phase's name) and moves
/// the running vision on to `then` of cycle 1, due at `next`.
fn ran<'a>(
    phase: &'a str,
    cost_micros: i64,
    then: &'a str,
    next: Option<Timestamp>,
) -> VisionStep<'a> {
    VisionStep {
        record: NewVisionPhase {
            cycle: 1,
            phase,
            outcome: "ok",
            output: phase,
            cost_micros,
            decided_by: None,
        },
        state: "running",
        phase: then,
        cycle: 1,
        goals_added: 0,
        next_action_at: next,
        stop_reason: None,
    }
}

async fn steps(
    store: &Store,
    tenant: &TenantKey,
    id: &str,
    from: (&str, &str),
    step: VisionStep<'_>,
) -> bool {
    store.step_vision(tenant, id, from, step).await.unwrap()
}

/// The agents of `install` whose visions are due at `now`.
async fn due(store: &Store, install: &InstallKey, now: Timestamp) -> Vec<String> {
    let due = store.due_visions(now, i64::MAX).await.unwrap();
    due.into_iter()
        .filter(|(key, _)| key == install)
        .map(|(_, vision)| vision.agent)
        .collect()
}

async fn vision(store: &Store, t: &Tenants, id: &str) -> Vision {
    store.vision(&t.tenant, id).await.unwrap().unwrap()
}

#[tokio::test]
async fn a_vision_is_created_once_per_agent_and_due_at_once() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let v = ensure(&store, &install, "strategist").await;
        assert!(v.id.starts_with("vis_"), "{}", v.id);
        let expected = Vision {
            id: v.id.clone(),
            app_slug: install.app_slug.clone(),
            agent: "strategist".into(),
            project: "p".into(),
            state: "running".into(),
            phase: "assess".into(),
            cycle: 1,
            goals_done: 0,
            cost_micros: 0,
            next_action_at: Some(v.created_at),
            stop_reason: None,
            created_at: v.created_at,
            updated_at: v.created_at,
        };
        assert_eq!(v, expected);
        let of = store.vision_of(&install, "strategist").await.unwrap();
        assert_eq!(of, Some(v.clone()));
        assert_eq!(vision(&store, &t, &v.id).await, v);

        next_millisecond().await;
        let again = ensure(&store, &install, "strategist").await;
        assert_eq!(again, v, "ensuring it again changes nothing");
        let moved = store.ensure_vision(&install, "strategist", "q").await;
        let moved = moved.unwrap();
        assert_eq!(moved.project, "q");
        assert!(moved.updated_at > v.updated_at);
        let unchanged = Vision {
            project: v.project.clone(),
            updated_at: v.updated_at,
            ..moved
        };
        assert_eq!(unchanged, v, "only the project and the time change");

        assert_ne!(ensure(&store, &install, "scout").await.id, v.id);
        let all = store.visions(&t.tenant).await.unwrap();
        let agents: Vec<&str> = all.iter().map(|v| v.agent.as_str()).collect();
        assert_eq!(agents, ["scout", "strategist"], "by app and agent");
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn visions_stay_in_their_tenant() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let v = ensure(&store, &install, "strategist").await;
        let at = v.next_action_at.unwrap();
        let assess = ran("assess", 10, "debate", None);
        for other in t.others() {
            let theirs = other.install(&install.app_slug);
            assert_eq!(store.vision(other, &v.id).await.unwrap(), None);
            assert!(store.visions(other).await.unwrap().is_empty());
            assert_eq!(store.vision_of(&theirs, "strategist").await.unwrap(), None);
            let claimed = store.claim_vision(other, &v.id, at, at + ms(60_000)).await;
            assert!(!claimed.unwrap());
            assert!(!steps(&store, other, &v.id, ("running", "assess"), assess).await);
            assert!(!store.restart_vision(other, &v.id, "r").await.unwrap());
            let hastened = store.hasten_vision(&theirs, "strategist", at - ms(1_000));
            assert!(!hastened.await.unwrap());
            assert!(store.vision_phases(other, &v.id).await.unwrap().is_empty());
        }
        assert_eq!(vision(&store, &t, &v.id).await, v, "untouched");
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn a_due_vision_is_claimed_once_for_its_lease() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let v = ensure(&store, &install, "strategist").await;
        let at = v.next_action_at.unwrap();
        assert_eq!(due(&store, &install, at).await, ["strategist"]);
        assert!(due(&store, &install, at - ms(1)).await.is_empty());

        let lease = at + ms(60_000);
        let claim = async |until| store.claim_vision(&t.tenant, &v.id, at, until).await;
        assert!(claim(lease).await.unwrap());
        assert!(!claim(lease + ms(1)).await.unwrap(), "claimed once");
        assert_eq!(vision(&store, &t, &v.id).await.next_action_at, Some(lease));
        assert!(due(&store, &install, at + ms(1)).await.is_empty(), "leased");
        assert_eq!(
            due(&store, &install, lease).await,
            ["strategist"],
            "lease over"
        );

        store.deactivate(&install).await.unwrap();
        let inactive = due(&store, &install, lease).await;
        assert!(
            inactive.is_empty(),
            "an inactive install's vision is not due"
        );
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn a_step_appends_a_phase_and_moves_the_vision_only_from_where_it_stands() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let v = ensure(&store, &install, "strategist").await;
        let (id, at) = (v.id.as_str(), v.created_at);
        let go = async |from, step| steps(&store, &t.tenant, id, from, step).await;
        let assess = ran("assess", 1_500, "debate", Some(at + ms(10)));
        assert!(go(("running", "assess"), assess).await);
        assert!(
            !go(("running", "assess"), assess).await,
            "it moved on already"
        );
        assert_eq!(store.vision_phases(&t.tenant, id).await.unwrap().len(), 1);
        assert!(
            go(
                ("running", "debate"),
                ran("debate", 700, "plan", Some(at + ms(20)))
            )
            .await
        );
        // A supervised plan waits for a user, who approves it.
        let plan = VisionStep {
            state: "awaiting_approval",
            ..ran("plan", 300, "plan", None)
        };
        assert!(go(("running", "plan"), plan).await);
        let execute = ran("approval", 0, "execute", Some(at + ms(30)));
        let approve = VisionStep {
            record: NewVisionPhase {
                outcome: "approved",
                output: "Go ahead.",
                decided_by: Some("user-7"),
                ..execute.record
            },
            ..execute
        };
        assert!(go(("awaiting_approval", "plan"), approve).await);
        assert!(
            go(
                ("running", "execute"),
                ran("execute", 2_000, "review", None)
            )
            .await
        );
        let review = VisionStep {
            goals_added: 1,
            cycle: 2,
            ..ran("review", 500, "assess", Some(at + ms(50)))
        };
        assert!(go(("running", "review"), review).await);

        let after = vision(&store, &t, id).await;
        let place = (after.state.as_str(), after.phase.as_str(), after.cycle);
        assert_eq!(place, ("running", "assess", 2));
        assert_eq!((after.goals_done, after.cost_micros), (1, 5_000));
        assert_eq!(after.next_action_at, Some(at + ms(50)));
        let phases = store.vision_phases(&t.tenant, id).await.unwrap();
        let seen: Vec<(i64, &str, &str)> = phases
            .iter()
            .map(|p| (p.seq, p.phase.as_str(), p.outcome.as_str()))
            .collect();
        let expected = [
            (1, "assess", "ok"),
            (2, "debate", "ok"),
            (3, "plan", "ok"),
            (4, "approval", "approved"),
            (5, "execute", "ok"),
            (6, "review", "ok"),
        ];
        assert_eq!(seen, expected);
        let first = &phases[0];
        let kept = (first.cycle, first.output.as_str(), first.cost_micros);
        assert_eq!(
            (kept, first.decided_by.as_deref()),
            ((1, "assess", 1_500), None)
        );
        let decided = &phases[3];
        let kept = (decided.output.as_str(), decided.decided_by.as_deref());
        assert_eq!(kept, ("Go ahead.", Some("user-7")));
        assert!(
            phases
                .windows(2)
                .all(|w| w[0].created_at <= w[1].created_at)
        );
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn a_stopped_vision_restarts_only_for_the_reason_it_stopped() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let v = ensure(&store, &install, "strategist").await;
        let reason = "the installed version no longer declares this vision";
        let base = ran("stop", 0, "assess", None);
        let stop = VisionStep {
            record: NewVisionPhase {
                outcome: "stopped",
                output: reason,
                ..base.record
            },
            state: "stopped",
            stop_reason: Some(reason),
            ..base
        };
        assert!(steps(&store, &t.tenant, &v.id, ("running", "assess"), stop).await);
        let stopped = vision(&store, &t, &v.id).await;
        assert_eq!(stopped.state, "stopped");
        let why = (stopped.stop_reason.as_deref(), stopped.next_action_at);
        assert_eq!(why, (Some(reason), None));
        assert!(due(&store, &install, Timestamp::MAX).await.is_empty());
        let ensured = ensure(&store, &install, "strategist").await;
        assert_eq!(ensured.state, "stopped", "ensuring it does not restart it");

        let restart = async |why| store.restart_vision(&t.tenant, &v.id, why).await.unwrap();
        assert!(!restart("budget_max_goals: 3 of 3 goals done").await);
        assert!(restart(reason).await);
        let restarted = vision(&store, &t, &v.id).await;
        let place = (restarted.state.as_str(), restarted.phase.as_str());
        assert_eq!((place, restarted.cycle), (("running", "assess"), 2));
        assert_eq!(restarted.stop_reason, None);
        assert!(restarted.next_action_at.is_some(), "due at once");
        let phases = store.vision_phases(&t.tenant, &v.id).await.unwrap();
        assert_eq!(phases.len(), 1, "its phases are kept");
        assert!(!restart(reason).await, "running: nothing to restart");
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn hastening_only_brings_a_running_visions_next_action_sooner() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let v = ensure(&store, &install, "strategist").await;
        let at = v.next_action_at.unwrap();
        let hasten = async |agent, to| store.hasten_vision(&install, agent, to).await.unwrap();
        assert!(!hasten("strategist", at + ms(10_000)).await, "later");
        assert!(!hasten("strategist", at).await, "not sooner");
        assert!(hasten("strategist", at - ms(5_000)).await);
        let hastened = vision(&store, &t, &v.id).await;
        assert_eq!(hastened.next_action_at, Some(at - ms(5_000)));
        assert!(!hasten("scout", at - ms(10_000)).await, "no vision");

        let wait = VisionStep {
            state: "awaiting_approval",
            ..ran("plan", 0, "plan", None)
        };
        assert!(steps(&store, &t.tenant, &v.id, ("running", "assess"), wait).await);
        assert!(
            !hasten("strategist", at - ms(10_000)).await,
            "waits for a user"
        );
        assert_eq!(vision(&store, &t, &v.id).await.next_action_at, None);
        store.remove_install(&install).await.unwrap();
    }
}
