//! Hostile guests: each limit ends only its own call, with a typed error.

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{CallError, Invocation, Runtime, RuntimeConfig};

fn runtime_with(deadline: Duration, edit: impl FnOnce(&mut RuntimeConfig)) -> Runtime {
    let mut config = RuntimeConfig {
        deadline,
        ..config()
    };
    edit(&mut config);
    Runtime::new(config).unwrap()
}

#[tokio::test]
async fn memory_growth_beyond_the_cap_fails_the_call_and_names_the_cap() {
    let p = platform();
    let app = probe();
    let err = app
        .call_tool(&inv(&p), "memory_bomb", "{}")
        .await
        .unwrap_err();
    assert_eq!(err, CallError::MemoryLimit { limit_mb: 64 });
    assert!(
        err.to_string()
            .contains("at most 64 MiB (runtime.resources.memory_mb)")
    );
    // The host carries on.
    assert_eq!(
        app.call_tool(&inv(&p), "echo", r#"{"a":1}"#).await.unwrap(),
        r#"{"a":1}"#
    );
}

#[tokio::test]
async fn the_cap_comes_from_the_manifest() {
    let rt = runtime();
    let app = load_on(
        rt,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |m| {
            m.runtime.resources.memory_mb = 128;
        },
    );
    let err = app
        .call_tool(&inv(&platform()), "memory_bomb", "{}")
        .await
        .unwrap_err();
    assert_eq!(err, CallError::MemoryLimit { limit_mb: 128 });
}

#[tokio::test]
async fn an_endless_loop_ends_at_the_deadline_and_never_stalls_other_calls() {
    // A current-thread runtime: the looping guest and the other calls share one thread, so the
    // other calls finish only because the loop yields at every epoch tick.
    let rt = runtime_with(Duration::from_millis(600), |_| {});
    let app = load_on(
        &rt,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |_| {},
    );
    let p = platform();
    let spinning = {
        let (app, i) = (app.clone(), inv(&p));
        tokio::spawn(async move { app.call_tool(&i, "spin", "{}").await })
    };
    let mut echoes = 0;
    while !spinning.is_finished() {
        assert_eq!(app.call_tool(&inv(&p), "echo", "{}").await.unwrap(), "{}");
        echoes += 1;
    }
    assert_eq!(
        spinning.await.unwrap().unwrap_err(),
        CallError::Deadline(Duration::from_millis(600))
    );
    assert!(echoes > 0);
}

#[tokio::test]
async fn a_guest_waiting_on_the_host_is_stopped_at_the_deadline_too() {
    let rt = runtime_with(Duration::from_millis(400), |_| {});
    let app = load_on(
        &rt,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |_| {},
    );
    let p = platform();
    assert_eq!(
        app.call_tool(&inv(&p), "sleep", r#"{"millis": 10}"#)
            .await
            .unwrap(),
        "10"
    );
    let err = app
        .call_tool(&inv(&p), "sleep", r#"{"millis": 60000}"#)
        .await
        .unwrap_err();
    assert_eq!(err, CallError::Deadline(Duration::from_millis(400)));
}

#[tokio::test]
async fn deep_recursion_is_a_stack_overflow() {
    let err = probe()
        .call_tool(&inv(&platform()), "recurse", "{}")
        .await
        .unwrap_err();
    assert_eq!(err, CallError::StackOverflow);
}

#[tokio::test]
async fn a_result_over_the_cap_is_refused() {
    let p = platform();
    let err = probe()
        .call_tool(&inv(&p), "huge_output", r#"{"bytes": 2000000}"#)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CallError::TooLarge {
            what: "result",
            limit: 1024 * 1024
        }
    );
    assert!(
        probe()
            .call_tool(&inv(&p), "huge_output", r#"{"bytes": 1000}"#)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn output_beyond_the_log_budget_is_dropped_and_reported() {
    let captured = Captured::default();
    let _guard = captured.install();
    // The capture sees the test's thread only: no background lane.
    let rt = runtime_with(Duration::from_secs(10), |c| {
        c.max_log_bytes = 10_000;
        c.background_threads = 0;
    });
    let app = load_on(
        &rt,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |_| {},
    );
    assert_eq!(
        app.call_tool(&inv(&platform()), "log_flood", r#"{"lines": 2000}"#)
            .await
            .unwrap(),
        "2000"
    );
    let lines = captured.lines();
    let kept = lines.iter().filter(|l| l.contains("flood line")).count();
    assert!(kept > 0 && kept < 200, "{kept} lines kept");
    assert!(
        lines.iter().any(|l| l.contains("log budget exhausted")),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn a_trap_is_a_typed_error() {
    let err = probe()
        .call_tool(&inv(&platform()), "trap", "{}")
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Trap("wasm `unreachable` instruction executed".into())
    );
}

#[tokio::test]
async fn a_panic_names_its_message() {
    let err = probe()
        .call_tool(
            &inv(&platform()),
            "panic",
            r#"{"message": "invoice 7 is corrupt"}"#,
        )
        .await
        .unwrap_err();
    let CallError::Panic(message) = &err else {
        panic!("{err:?}")
    };
    assert!(
        message.starts_with("invoice 7 is corrupt (at "),
        "{message}"
    );
}

#[tokio::test]
async fn cpu_cores_below_one_is_a_share_of_a_core() {
    // The same work passes with a full core and runs out of time at a tenth of one: the
    // throttled call may hold a worker thread for at most 0.1 × its elapsed time.
    let rt = runtime_with(Duration::from_secs(3), |_| {});
    let full = load_on(
        &rt,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |m| {
            m.runtime.resources.cpu_cores = 1.0;
        },
    );
    let tenth = load_on(
        &rt,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |m| {
            m.runtime.resources.cpu_cores = 0.1;
        },
    );
    let p = platform();
    let work = r#"{"iterations": 300000000}"#;
    full.call_tool(&inv(&p), "burn", work)
        .await
        .expect("a full core finishes the work");
    assert_eq!(
        tenth.call_tool(&inv(&p), "burn", work).await.unwrap_err(),
        CallError::Deadline(Duration::from_secs(3))
    );
}

/// The work of the CPU-share tests: 100 million iterations of the probe's `burn`.
const BURN: &str = r#"{"iterations": 100000000}"#;

/// How long [`BURN`] takes at a full core on this machine now: the tests' deadlines are set
/// from it.
async fn burn_at_a_full_core(p: &Arc<MemoryPlatform>) -> Duration {
    let calibrating = runtime_with(Duration::from_secs(30), |_| {});
    let full = load_on(
        &calibrating,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |m| m.runtime.resources.cpu_cores = 4.0,
    );
    let started = std::time::Instant::now();
    full.call_tool(&inv(p), "burn", BURN)
        .await
        .expect("the work finishes at a full core");
    let once = started.elapsed();
    eprintln!("the work took {once:?} at a full core");
    once
}

/// How many of `crowd` ran out of time at `deadline`; any other failure fails the test.
async fn out_of_time(
    crowd: Vec<tokio::task::JoinHandle<Result<String, CallError>>>,
    deadline: Duration,
) -> usize {
    let mut out_of_time = 0;
    for call in crowd {
        match call.await.unwrap() {
            Ok(_) => {}
            Err(CallError::Deadline(d)) if d == deadline => out_of_time += 1,
            Err(e) => panic!("a call of the crowd failed otherwise: {e}"),
        }
    }
    out_of_time
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_s_calls_share_its_cpu_cores_and_another_tenant_has_its_own() {
    let work = BURN;
    let p = platform();
    let once = burn_at_a_full_core(&p).await;

    // At a quarter of a core a call alone takes four times `once`, and the deadline leaves it
    // twice that. Four calls of the install at once need four times the CPU, but together they
    // earn a quarter of a core over the deadline, twice `once`: some of them run out of time.
    // Counted per call, as the share was before, each would have had its quarter and all would
    // have finished, even on the one thread of the background lane (four times `once`).
    let deadline = once * 8;
    let rt = runtime_with(deadline, |_| {});
    let app = load_on(
        &rt,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |m| m.runtime.resources.cpu_cores = 0.25,
    );
    app.call_tool(&inv(&p), "burn", work)
        .await
        .expect("a call alone at a quarter of a core finishes");
    let crowd = (0..4).map(|_| {
        let (app, inv) = (app.clone(), inv(&p));
        tokio::spawn(async move { app.call_tool(&inv, "burn", work).await })
    });
    let crowd: Vec<_> = crowd.collect();
    // Another tenant's install of the same app has a share of its own.
    let other = app
        .call_tool(&Invocation::new("tenant-b", p.clone()), "burn", work)
        .await;
    let out_of_time = out_of_time(crowd, deadline).await;
    assert!(
        out_of_time >= 1,
        "four calls of one install at a quarter of a core all finished within twice their work ({once:?} each)"
    );
    other.expect("another tenant's call finishes beside the crowd");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_s_installs_share_its_cpu_cap_and_another_tenant_has_its_own() {
    let work = BURN;
    let p = platform();
    let once = burn_at_a_full_core(&p).await;

    // Two apps of one tenant, each asking for four cores, under a tenant cap of a quarter of
    // a core. A call alone takes four times `once`, and the deadline leaves it twice that. Four
    // calls, two of each app, need four times the CPU, but the tenant earns a quarter of a core
    // over the deadline, twice `once`: some of them run out of time. Without the cap each
    // install would have its four cores, and all four calls would finish within the deadline
    // even on the one thread of the background lane.
    let deadline = once * 8;
    let rt = runtime_with(deadline, |c| c.max_cpu_cores_per_tenant = Some(0.25));
    let install = |app_id: &str| {
        load_on(
            &rt,
            atrium_test_artifacts::PROBE,
            atrium_test_artifacts::PROBE_MANIFEST,
            |m| {
                m.runtime.resources.cpu_cores = 4.0;
                m.app_id = app_id.to_owned();
            },
        )
    };
    let (first, second) = (install("probe"), install("probe-two"));
    first
        .call_tool(&inv(&p), "burn", work)
        .await
        .expect("a call alone at the tenant's quarter of a core finishes");
    let crowd: Vec<_> = [&first, &second, &first, &second]
        .into_iter()
        .map(|app| {
            let (app, inv) = (app.clone(), inv(&p));
            tokio::spawn(async move { app.call_tool(&inv, "burn", work).await })
        })
        .collect();
    // Another tenant has a cap of its own.
    let other = second
        .call_tool(&Invocation::new("tenant-b", p.clone()), "burn", work)
        .await;
    let out_of_time = out_of_time(crowd, deadline).await;
    assert!(
        out_of_time >= 1,
        "four calls of one tenant's two apps under a cap of a quarter of a core all finished within twice their work ({once:?} each)"
    );
    other.expect("another tenant's call finishes beside the crowd");
}

#[tokio::test]
async fn a_full_instance_pool_is_a_capacity_error() {
    let rt = runtime_with(Duration::from_millis(800), |c| c.max_instances = 1);
    let app = load_on(
        &rt,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |_| {},
    );
    let p = platform();
    let spinning = {
        let (app, i) = (app.clone(), inv(&p));
        tokio::spawn(async move { app.call_tool(&i, "spin", "{}").await })
    };
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = app.call_tool(&inv(&p), "echo", "{}").await.unwrap_err();
    assert!(
        matches!(&err, CallError::Capacity(m) if m.contains("concurrent")),
        "{err:?}"
    );
    assert!(spinning.await.unwrap().is_err());
    // The slot is free again.
    assert!(app.call_tool(&inv(&p), "echo", "{}").await.is_ok());
}
