//! Grants over HTTP and `apps.invoke` honouring them: every state of the lifecycle (asked,
//! pending the callee, active, revoked, asked again), each refusal reason of an invoke, the
//! callee's agent run under the callee's install and billed to it, and nothing of it for a
//! user, another tenant or another organization.

use atrium_fake_llm::Reply;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, slug};
use crate::{stores, unique};

fn manifest(app: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace("app_id: probe", &format!("app_id: {app}"))
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
}

/// `apps.invoke` from `caller`'s probe: its `ok` answer or its `err` reason.
async fn invoke(host: &Host, token: &str, caller: &str, callee: &str, agent: &str) -> Value {
    host.probe(
        caller,
        token,
        json!({"op": "invoke", "app": callee, "agent": agent, "prompt": "Please"}),
    )
    .await
}

/// `apps.fetch` of `GET path` from `caller`'s probe.
async fn fetch(host: &Host, token: &str, caller: &str, callee: &str, path: &str) -> Value {
    host.probe(
        caller,
        token,
        json!({"op": "fetch_app", "app": callee, "path": path, "method": "GET"}),
    )
    .await
}

fn reason(result: &Value) -> &str {
    result["err"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("a refusal: {result}"))
}

#[tokio::test]
async fn grants_move_through_their_states_and_gate_apps_invoke() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, _dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let tag = slug("g");
        let (caller, callee) = (format!("caller-{tag}"), format!("callee-{tag}"));
        for app in [&caller, &callee] {
            host.publish(app, &dev, &manifest(app), &component).await;
        }
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let user = host.tenant_token(&acme.secret, "shop", "user").await;
        for app in [&caller, &callee] {
            host.activate(app, &admin, &["tasks.read", "tasks.write"])
                .await;
        }
        let (status, _) = host
            .put(
                "/api/llm-settings",
                &admin,
                Body::Json(json!({"roles": {"specialist": {"provider": "mistral"}}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let model = host.fakes.upstream("mistral");
        let path = format!("/api/grants/{caller}/{callee}");

        // No grant yet; an app the tenant has not installed.
        let (_, listed) = host.get("/api/grants", &admin).await;
        assert_eq!(listed["grants"], json!([]), "{listed}");
        let result = invoke(&host, &user, &caller, &callee, "lead").await;
        assert!(reason(&result).starts_with("no grant: "), "{result}");
        let result = invoke(&host, &user, &caller, "nowhere-app", "lead").await;
        assert!(
            reason(&result).starts_with("callee not installed: "),
            "{result}"
        );

        // The caller side asks: approved on its side, pending the callee.
        let ask = json!({"caller_app": caller, "callee_app": callee, "allowed_agents": ["lead"]});
        let (status, grant) = host
            .post("/api/grants", &admin, Body::Json(ask.clone()))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{grant}");
        assert_eq!(grant["state"], "pending_callee_approval", "{grant}");
        assert!(grant["caller_approved_at"].is_string(), "{grant}");
        assert!(grant["callee_approved_at"].is_null(), "{grant}");
        let result = invoke(&host, &user, &caller, &callee, "lead").await;
        assert!(
            reason(&result).starts_with("pending callee approval: "),
            "{result}"
        );
        let fetched = fetch(&host, &user, &caller, &callee, "/echo/hi").await;
        assert!(
            reason(&fetched).starts_with("pending callee approval: "),
            "{fetched}"
        );
        let (status, again) = host
            .post("/api/grants", &admin, Body::Json(ask.clone()))
            .await;
        assert_eq!(
            status,
            StatusCode::OK,
            "asking twice changes nothing: {again}"
        );
        assert_eq!(again["caller_approved_at"], grant["caller_approved_at"]);

        // The callee side approves, with agents its app declares.
        for agents in [json!(["ghost"]), json!([])] {
            let (status, body) = host
                .post(
                    &format!("{path}/approve"),
                    &admin,
                    Body::Json(json!({"allowed_agents": agents})),
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(body["error"]["param"], "allowed_agents", "{body}");
        }
        let (status, grant) = host
            .post(
                &format!("{path}/approve"),
                &admin,
                Body::Json(json!({"allowed_agents": ["lead", "__route__"]})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{grant}");
        assert_eq!(grant["state"], "active", "{grant}");
        assert!(grant["callee_approved_at"].is_string(), "{grant}");

        // Honoured: the callee's agent runs under the callee's install and bill.
        model.push(Reply::text("Done, from the callee."));
        let result = invoke(&host, &user, &caller, &callee, "lead").await;
        assert_eq!(result["ok"], "Done, from the callee.", "{result}");
        assert_eq!(
            model.last().unwrap().body["messages"][0]["content"],
            "Leads."
        );
        let result = invoke(&host, &user, &caller, &callee, "helper").await;
        assert!(
            reason(&result).starts_with("agent not allowed: `helper`"),
            "{result}"
        );
        // `apps.fetch` reaches a declared route through the floor, the caller named by the host.
        let fetched = fetch(&host, &user, &caller, &callee, "/echo/hi?x=1").await;
        assert_eq!(fetched["ok"]["status"], 200, "{fetched}");
        let echoed: Value = serde_json::from_str(fetched["ok"]["body"].as_str().unwrap()).unwrap();
        assert_eq!(echoed["word"], "hi", "{echoed}");
        assert_eq!(echoed["caller_app"], caller.as_str(), "{echoed}");
        assert_eq!(echoed["tenant"], "shop", "{echoed}");
        assert_eq!(echoed["chain_depth"], 2, "the hop is counted: {echoed}");
        let missing = fetch(&host, &user, &caller, &callee, "/nowhere").await;
        assert!(
            reason(&missing).starts_with("route not found: "),
            "{missing}"
        );
        let (_, usage) = host
            .send(
                "GET",
                "/v1/usage?tenant=shop",
                Some(&acme.secret),
                Body::None,
            )
            .await;
        let billed: Vec<&str> = usage["per_agent"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["app"].as_str().unwrap())
            .collect();
        assert_eq!(billed, [callee.as_str()], "billed to the callee: {usage}");

        // A chain of three hops: the caller's call, the callee's agent, its teammate.
        model.script([
            Reply::tool_call(
                "team-delegate",
                json!({"agent": "helper", "prompt": "Check"}),
            ),
            Reply::text("Checked."),
            Reply::text("Done, with the helper."),
        ]);
        let result = invoke(&host, &user, &caller, &callee, "lead").await;
        assert_eq!(result["ok"], "Done, with the helper.", "{result}");

        // Revoked by either side; asked again, it starts over.
        let (status, grant) = host
            .post(&format!("{path}/revoke"), &admin, Body::None)
            .await;
        assert_eq!(status, StatusCode::OK, "{grant}");
        assert_eq!(grant["state"], "revoked", "{grant}");
        let result = invoke(&host, &user, &caller, &callee, "lead").await;
        assert!(reason(&result).starts_with("grant revoked: "), "{result}");
        let (status, body) = host
            .post(
                &format!("{path}/approve"),
                &admin,
                Body::Json(json!({"allowed_agents": ["lead"]})),
            )
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["error"]["code"], "grant_revoked", "{body}");
        let (status, grant) = host
            .post("/api/grants", &admin, Body::Json(ask.clone()))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{grant}");
        assert_eq!(grant["state"], "pending_callee_approval", "{grant}");
        assert!(grant["revoked_at"].is_null(), "{grant}");
        let (_, listed) = host.get("/api/grants", &admin).await;
        assert_eq!(listed["grants"].as_array().unwrap().len(), 1, "{listed}");

        // Bad requests, named.
        for (body, status, param) in [
            (
                json!({"caller_app": caller, "callee_app": caller, "allowed_agents": ["lead"]}),
                StatusCode::BAD_REQUEST,
                Some("callee_app"),
            ),
            (
                json!({"caller_app": caller, "callee_app": "nowhere-app", "allowed_agents": ["lead"]}),
                StatusCode::NOT_FOUND,
                None,
            ),
            (
                json!({"caller_app": caller, "callee_app": callee}),
                StatusCode::BAD_REQUEST,
                Some("allowed_agents"),
            ),
            // One name for the request's, the approval's and the grant's list.
            (
                json!({"caller_app": caller, "callee_app": callee, "agents": ["lead"]}),
                StatusCode::BAD_REQUEST,
                Some("agents"),
            ),
        ] {
            let (got, answer) = host.post("/api/grants", &admin, Body::Json(body)).await;
            assert_eq!(got, status, "{answer}");
            if let Some(param) = param {
                assert_eq!(answer["error"]["param"], param, "{answer}");
            }
        }

        // The audit log: every invoke, fetch and delegation, how it ended, on which chain.
        let (status, log) = host.get("/api/audit?limit=200", &admin).await;
        assert_eq!(status, StatusCode::OK, "{log}");
        let entries = log["entries"].as_array().unwrap().clone();
        let count = |kind: &str, outcome: &str| {
            entries
                .iter()
                .filter(|e| e["kind"] == kind && e["outcome"] == outcome)
                .count()
        };
        assert_eq!(count("invoke", "ok"), 2, "{log}");
        assert_eq!(count("invoke", "refused"), 5, "{log}");
        assert_eq!(
            (
                count("fetch", "ok"),
                count("fetch", "refused"),
                count("fetch", "failed")
            ),
            (1, 1, 1),
            "{log}"
        );
        assert_eq!(count("delegate", "ok"), 1, "{log}");
        let reasons: Vec<&str> = entries
            .iter()
            .filter(|e| e["kind"] == "invoke" && e["outcome"] == "refused")
            .map(|e| e["reason"].as_str().unwrap().split(':').next().unwrap())
            .collect();
        for reason in [
            "no grant",
            "callee not installed",
            "pending callee approval",
            "agent not allowed",
            "grant revoked",
        ] {
            assert!(reasons.contains(&reason), "{reason}: {reasons:?}");
        }
        let hop = entries.iter().find(|e| e["kind"] == "delegate").unwrap();
        assert_eq!(hop["caller_app"], callee.as_str(), "{hop}");
        assert_eq!(hop["caller_agent"], "lead", "{hop}");
        assert_eq!(hop["target"], "helper", "{hop}");
        assert_eq!(hop["chain_depth"], 3, "{hop}");
        assert_eq!(
            hop["visited_agents"],
            json!([format!("{callee}:lead"), format!("{callee}:helper")]),
            "{hop}"
        );
        let (_, ok) = host
            .get(
                &format!("/api/audit?kind=invoke&outcome=ok&caller_app={caller}"),
                &admin,
            )
            .await;
        let first = &ok["entries"].as_array().unwrap()[1];
        assert_eq!(
            (first["callee_app"].as_str(), first["target"].as_str()),
            (Some(callee.as_str()), Some("lead")),
            "{ok}"
        );
        assert_eq!(first["chain_depth"], 2, "{ok}");
        assert!(first["duration_ms"].as_i64().is_some(), "{ok}");
        let (_, none) = host.get("/api/audit?caller_app=nowhere-app", &admin).await;
        assert_eq!(none["entries"], json!([]), "{none}");
        let (status, body) = host.get("/api/audit?outcome=maybe", &admin).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "outcome", "{body}");
        let (status, _) = host.get("/api/audit", &user).await;
        assert_eq!(status, StatusCode::FORBIDDEN);

        // Only the tenant's admins: not its users, not another tenant or organization.
        let (status, _) = host
            .post("/api/grants", &user, Body::Json(ask.clone()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) = host.get("/api/grants", &user).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let umbrella = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        for stranger in [
            host.tenant_token(&acme.secret, "depot", "admin").await,
            host.tenant_token(&umbrella.secret, "shop", "admin").await,
        ] {
            let (_, listed) = host.get("/api/grants", &stranger).await;
            assert_eq!(listed["grants"], json!([]), "{listed}");
            let (_, log) = host.get("/api/audit", &stranger).await;
            assert_eq!(log["entries"], json!([]), "{log}");
            let (status, _) = host.get(&path, &stranger).await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (status, _) = host
                .post(
                    &format!("{path}/approve"),
                    &stranger,
                    Body::Json(json!({"allowed_agents": ["lead"]})),
                )
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (status, _) = host
                .post(&format!("{path}/revoke"), &stranger, Body::None)
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (status, _) = host
                .post("/api/grants", &stranger, Body::Json(ask.clone()))
                .await;
            assert_eq!(
                status,
                StatusCode::NOT_FOUND,
                "its tenant has not installed the apps"
            );
        }
        let (_, grant) = host.get(&path, &admin).await;
        assert_eq!(
            grant["state"], "pending_callee_approval",
            "untouched: {grant}"
        );
        host.stop().await;
    }
}
