//! A guest written against the raw WIT, without the SDK (tests/guests/hostile): its output
//! floods, its registrations and what it leaves in memory for the next call.

use std::time::Duration;

use atrium_runtime::{App, CallError, Invocation, Runtime, RuntimeConfig};
use serde_json::json;

use crate::common::*;

fn hostile_on(runtime: &Runtime, register: &str) -> App {
    load_on(
        runtime,
        atrium_test_artifacts::HOSTILE,
        atrium_test_artifacts::HOSTILE_MANIFEST,
        |m| {
            m.runtime
                .env
                .insert("HOSTILE_REGISTER".into(), register.into());
        },
    )
}

fn call_lines<'l>(lines: &'l [String], call: &str) -> Vec<&'l String> {
    let tag = format!("call={call}");
    lines.iter().filter(|l| l.contains(&tag)).collect()
}

#[tokio::test]
async fn floods_of_empty_lines_records_and_unterminated_output_are_bounded_by_records() {
    let captured = Captured::default();
    let _guard = captured.install();
    // The capture sees the test's thread only: no background lane.
    let runtime = Runtime::new(RuntimeConfig {
        background_threads: 0,
        ..config()
    })
    .unwrap();
    let app = hostile_on(&runtime, "");
    let p = platform();
    let calls = [
        ("newline_flood", json!({"bytes": 128 * 1024})),
        ("record_flood", json!({"count": 128 * 1024})),
        ("stderr_flood", json!({"bytes": 1024 * 1024})),
    ];
    for (tool, args) in calls {
        let mut inv = inv(&p);
        inv.call_id = Some(format!("flood-{tool}"));
        app.call_tool(&inv, tool, &args.to_string()).await.unwrap();
        let lines = captured.lines();
        let lines = call_lines(&lines, &format!("flood-{tool}"));
        let output: Vec<_> = lines
            .iter()
            .filter(|l| l.starts_with("atrium::app") && l.contains(" stream="))
            .collect();
        // 64 KiB at 128 bytes a record at least; stderr without a newline is cut at 4 KiB.
        // Blank lines spend the budget like any record but are not logged: they say nothing.
        let (fewest, most) = match tool {
            "newline_flood" => (0, 0),
            "stderr_flood" => (1, 16),
            _ => (1, 512),
        };
        assert!(
            (fewest..=most).contains(&output.len()),
            "{tool}: {} records",
            output.len()
        );
        let markers: Vec<_> = lines
            .iter()
            .filter(|l| l.contains("log budget exhausted"))
            .collect();
        assert_eq!(markers.len(), 1, "{tool}: {markers:#?}");
        assert!(markers[0].contains("dropped_records="), "{}", markers[0]);
    }
}

#[tokio::test]
async fn a_registration_the_manifest_does_not_declare_fails_the_load_check_and_every_call() {
    let p = platform();
    let cases = [
        (
            "tool:drop_tables",
            "cannot register tool `drop_tables`: it is not in the manifest's tools (declared: noop, ",
        ),
        (
            "tool:noop",
            "cannot register tool `noop` twice: a handler is already registered",
        ),
        (
            "lifecycle:on_install",
            "cannot register on_install: lifecycle.on_install is not true in the manifest",
        ),
        (
            "schedule:nightly",
            "cannot register schedule `nightly`: it is not in lifecycle.schedules (none are declared)",
        ),
        (
            "event:booked",
            "cannot register event handler `booked`: the manifest's subscribes_to has no such event (none are declared)",
        ),
        (
            "route:GET /admin",
            "cannot register route `GET /admin`: it is not in the manifest's http_routes (none are declared)",
        ),
        (
            "room",
            "cannot register on_message: the manifest declares no agent to be mentioned",
        ),
    ];
    for (register, message) in cases {
        let app = hostile_on(runtime(), register);
        let err = app.verify().await.unwrap_err();
        let CallError::Registration(text) = &err else {
            panic!("{register}: {err:?}")
        };
        assert!(text.starts_with(message), "{register}: {text}");
        // The declared tools are refused too: the component failed its load check.
        assert_eq!(
            app.call_tool(&inv(&p), "noop", "{}").await.unwrap_err(),
            err
        );
        assert_eq!(app.health(&inv(&p)).await.unwrap_err(), err);
    }
    // A route the manifest declares, registered by a component that does not export
    // wasi:http/incoming-handler: no request could reach it, so the registration is refused.
    let app = load_on(
        runtime(),
        atrium_test_artifacts::HOSTILE,
        atrium_test_artifacts::HOSTILE_MANIFEST,
        |m| {
            m.runtime
                .env
                .insert("HOSTILE_REGISTER".into(), "route:GET /admin".into());
            m.http_routes.push(atrium_manifest::HttpRoute {
                path: "/admin".into(),
                method: atrium_manifest::Method::Get,
                public: false,
            });
        },
    );
    assert!(!app.has_http());
    let err = app.verify().await.unwrap_err();
    let CallError::Registration(text) = &err else {
        panic!("{err:?}")
    };
    assert!(
        text.starts_with(
            "cannot register route `GET /admin`: the component does not export wasi:http/incoming-handler"
        ),
        "{text}"
    );
    let app = hostile_on(runtime(), "");
    app.verify().await.unwrap();
    assert_eq!(app.call_tool(&inv(&p), "noop", "{}").await.unwrap(), "{}");
}

/// The marker's bytes as the guest takes them: XOR 0xFF, so that the scanning guest never
/// holds the plain marker in its own memory.
fn masked(marker: &[u8]) -> serde_json::Value {
    json!(marker.iter().map(|b| b ^ 0xFF).collect::<Vec<u8>>())
}

#[tokio::test]
async fn nothing_one_tenant_leaves_in_memory_is_found_by_the_next_call_in_the_same_slot() {
    // One instance slot: every call below runs in the same pooled slot, one after another.
    let runtime = Runtime::new(RuntimeConfig {
        max_instances: 1,
        deadline: Duration::from_secs(10),
        ..config()
    })
    .unwrap();
    let hostile = hostile_on(&runtime, "");
    let other = load_on(
        &runtime,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
        |_| {},
    );
    let p = platform();
    let tenant = |id: &str| Invocation::new(id, p.clone());
    let marker = b"tenant-a's secret: 7f3c9a51e2d84b60";
    let args = json!({"masked": masked(marker)}).to_string();
    for round in 0..3 {
        let grown: usize = hostile
            .call_tool(&tenant("tenant-a"), "leave_marker", &args)
            .await
            .unwrap()
            .parse()
            .unwrap();
        assert!(grown >= 4 << 20, "{grown}");
        if round == 1 {
            // Another app's instance in the slot between the two tenants.
            other
                .call_tool(&tenant("tenant-c"), "echo", "{}")
                .await
                .unwrap();
        }
        let seen = json(
            &hostile
                .call_tool(&tenant("tenant-b"), "find_marker", &args)
                .await
                .unwrap(),
        );
        assert_eq!(seen["found"], 0, "round {round}: {seen}");
        assert!(seen["scanned"].as_u64().unwrap() >= 1 << 20, "{seen}");
    }
    // The control: the scan finds the marker when it is there (left by the same call, in
    // static memory, on the heap and at the end of the grown memory).
    let control = json!({"masked": masked(marker), "leave_first": true}).to_string();
    let seen = json(
        &hostile
            .call_tool(&tenant("tenant-a"), "find_marker", &control)
            .await
            .unwrap(),
    );
    assert!(seen["found"].as_u64().unwrap() >= 3, "{seen}");
}
