//! The agent runner on a running host, driven through the probe app's own calls (`agent.ask`,
//! `team.delegate`) against the fake model upstream: a multi-step tool loop, refusals inside
//! the loop handed back to the model, the step limit, the budget, the deadline, a model outage,
//! delegation from the model and from the app with each team check, a cycle that crosses runs,
//! and the usage of each agent.

use atrium_fake_llm::{Reply, ToolCall};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, slug};
use crate::{stores, unique};

/// The probe's manifest under `app`, with scopes of the catalogue (no knowledge scope).
fn manifest(app: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace("app_id: probe", &format!("app_id: {app}"))
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
}

/// A running host with the probe published as an app (named from `name`) and activated for a
/// tenant whose agents call Mistral (the fake).
struct Agents {
    host: Host,
    app: String,
    acme: atrium_store::CreatedKey,
    admin: String,
    user: String,
}

impl Agents {
    async fn start(store: &atrium_store::Store, component: &[u8], name: &str) -> Agents {
        let host = Host::start(store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let app = slug(name);
        host.publish(&app, &dev, &manifest(&app), component).await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let user = host.tenant_token(&acme.secret, "shop", "user").await;
        host.activate(&app, &admin, &["tasks.read", "tasks.write"])
            .await;
        let (status, body) = host
            .put(
                "/api/llm-settings",
                &admin,
                Body::Json(json!({"roles": {"specialist": {"provider": "mistral"}}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        Agents {
            host,
            app,
            acme,
            admin,
            user,
        }
    }
}

/// The result of the probe's `platform` tool: `{"ok": ...}` or `{"err": ...}`.
async fn platform(host: &Host, app: &str, token: &str, op: Value) -> Value {
    host.probe(app, token, op).await
}

fn ask(agent: &str, prompt: &str) -> Value {
    json!({"op": "ask", "agent": agent, "prompt": prompt})
}

/// The names of the tools a model request offered.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The tool messages of a model request, as JSON.
fn tool_answers(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let text = m["content"].as_str().unwrap();
            serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()))
        })
        .collect()
}

#[tokio::test]
async fn agents_run_a_tool_loop_within_their_limits_and_their_team() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, _dir) in stores().await {
        let Agents {
            host,
            app,
            acme,
            admin,
            user,
        } = Agents::start(&store, &component, "agents").await;
        let model = host.fakes.upstream("mistral");
        let limits = |limits: Value| {
            let (host, admin) = (&host, &admin);
            async move {
                let (status, body) = host
                    .put(
                        "/api/llm-settings",
                        admin,
                        Body::Json(json!({"agent_limits": limits})),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{body}");
                body
            }
        };

        // A loop of several steps: the app's tool, a platform tool, then the answer.
        model.forget_requests();
        model.script([
            Reply::tool_call("echo", json!({"word": "hi"})),
            Reply::tool_calls([ToolCall::new(
                "call_2",
                "records-put",
                json!({"record_type": "note", "record": {"title": "from the agent"}}),
            )]),
            Reply::text("Done: hi"),
        ]);
        let result = platform(&host, &app, &user, ask("lead", "Say hi")).await;
        assert_eq!(result["ok"], "Done: hi", "{result}");
        let requests = model.requests();
        assert_eq!(requests.len(), 3);
        let first = &requests[0].body;
        assert_eq!(first["messages"][0]["role"], "system");
        assert_eq!(first["messages"][0]["content"], "Leads.");
        assert_eq!(first["messages"][1]["content"], "Say hi");
        assert_eq!(first["tool_choice"], "auto");
        let tools = offered(first);
        for name in [
            "echo",
            "guarded",
            "records-put",
            "records-query",
            "team-delegate",
        ] {
            assert!(
                tools.contains(&name.to_owned()),
                "{name} offered: {tools:?}"
            );
        }
        for name in ["internal", "knowledge-query", "chat-complete"] {
            assert!(
                !tools.contains(&name.to_owned()),
                "{name} not offered: {tools:?}"
            );
        }
        assert_eq!(tool_answers(&requests[1].body), [json!({"word": "hi"})]);
        let put = &tool_answers(&requests[2].body)[1];
        let id = put["id"].as_str().unwrap_or_else(|| panic!("{put}"));
        let record = platform(
            &host,
            &app,
            &user,
            json!({"op": "tool", "name": "records.get", "args": {"id": id}}),
        )
        .await;
        assert_eq!(
            record["ok"]["title"], "from the agent",
            "the install's own records: {record}"
        );

        // Refusals go back to the model, which recovers: a tool that is not agent-visible, a
        // platform tool the install has no scope for, one the model made up, bad arguments.
        model.forget_requests();
        model.script([
            Reply::tool_calls([
                ToolCall::new("c1", "internal", json!({})),
                ToolCall::new(
                    "c2",
                    "knowledge-query",
                    json!({"slot": "handbook", "query": "x"}),
                ),
                ToolCall::new("c3", "teleport", json!({})),
                ToolCall::new("c4", "echo", json!([1])),
            ]),
            Reply::text("Recovered"),
        ]);
        let result = platform(&host, &app, &user, ask("lead", "Try")).await;
        assert_eq!(result["ok"], "Recovered", "{result}");
        let answers = tool_answers(&model.last().unwrap().body);
        let kinds: Vec<&str> = answers
            .iter()
            .map(|a| a["error"]["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "not_agent_visible",
                "scope_denied",
                "unknown_tool",
                "invalid_arguments"
            ],
            "{answers:?}"
        );
        assert_eq!(
            answers[1]["error"]["needed_scopes"],
            json!(["knowledge.read"])
        );

        // Delegation by the model to its team; the teammate's own loop runs with the chain,
        // so when it asks the lead back, the cycle is caught though it crosses two runs.
        model.forget_requests();
        model.script([
            Reply::tool_call(
                "team-delegate",
                json!({"agent": "helper", "prompt": "Check it"}),
            ),
            Reply::tool_call(
                "platform",
                json!({"op": "ask", "agent": "lead", "prompt": "loop"}),
            ),
            Reply::text("Checked"),
            Reply::text("The helper checked it"),
        ]);
        let result = platform(&host, &app, &user, ask("lead", "Delegate")).await;
        assert_eq!(result["ok"], "The helper checked it", "{result}");
        let requests = model.requests();
        assert_eq!(requests.len(), 4);
        assert_eq!(requests[1].body["messages"][0]["content"], "Helps.");
        assert!(
            !offered(&requests[1].body).contains(&"team-delegate".to_owned()),
            "the helper has no team"
        );
        let looped = &tool_answers(&requests[2].body)[0];
        assert!(
            looped["err"]["reason"]
                .as_str()
                .unwrap()
                .starts_with("cycle detected: agent"),
            "{looped}"
        );
        assert_eq!(
            tool_answers(&requests[3].body)[0],
            json!({"agent": "helper", "answer": "Checked"})
        );

        // Delegation by the app itself, through each team check.
        model.script([Reply::text("helper here"), Reply::text("lead again")]);
        let delegate = |from: &str, target: &str| json!({"op": "delegate", "target": target, "prompt": "p", "from": from});
        let result = platform(&host, &app, &user, delegate("lead", "helper")).await;
        assert_eq!(result["ok"], "helper here", "{result}");
        let result = platform(&host, &app, &user, delegate("lead", "lead")).await;
        assert_eq!(
            result["ok"], "lead again",
            "itself: no team needed: {result}"
        );
        for (from, target, reason) in [
            (
                "helper",
                "lead",
                "team delegation denied: agent `helper` has no team",
            ),
            (
                "lead",
                "ghost",
                "team delegation denied: `ghost` is not in the team of `lead`",
            ),
        ] {
            let result = platform(&host, &app, &user, delegate(from, target)).await;
            let got = result["err"]["reason"]
                .as_str()
                .unwrap_or_else(|| panic!("{result}"));
            assert!(got.starts_with(reason), "{got}");
        }
        // Every delegation is in the audit log, those the team checks refused too.
        let (status, log) = host
            .get(
                &format!("/api/audit?kind=delegate&caller_app={app}&limit=200"),
                &admin,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{log}");
        let mut delegations: Vec<(String, String, String)> = log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["caller_agent"].as_str().unwrap_or("").to_owned(),
                    e["target"].as_str().unwrap().to_owned(),
                    e["outcome"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        delegations.sort();
        let own = |from: &str, to: &str, outcome: &str| {
            (from.to_owned(), to.to_owned(), outcome.to_owned())
        };
        for entry in [
            own("helper", "lead", "refused"),
            own("lead", "ghost", "refused"),
            own("lead", "helper", "ok"),
            own("lead", "lead", "ok"),
        ] {
            assert!(delegations.contains(&entry), "{entry:?} in {log}");
        }
        let result = platform(&host, &app, &user, ask("ghost", "p")).await;
        assert!(
            result["err"]["reason"]
                .as_str()
                .unwrap()
                .contains("`ghost`"),
            "{result}"
        );

        // The step limit: the last step may only answer.
        let body = limits(json!({"max_steps": 2})).await;
        assert_eq!(body["agent_limits"]["max_steps"], 2, "{body}");
        assert_eq!(body["agent_limits"]["set"], json!(["max_steps"]), "{body}");
        model.forget_requests();
        model.script([
            Reply::tool_call("echo", json!({})),
            Reply::tool_call("echo", json!({})),
        ]);
        let result = platform(&host, &app, &user, ask("lead", "Loop")).await;
        assert_eq!(
            result["err"]["reason"],
            "step limit reached: the agent still called tools after 2 model steps",
            "{result}"
        );
        assert_eq!(model.last().unwrap().body["tool_choice"], "none");

        // The budget: a step that spends it ends the run before the next.
        limits(json!({"max_steps": null, "budget_usd": 0.001})).await;
        model.usage(1_000_000, 1_000_000);
        model.script([Reply::tool_call("echo", json!({}))]);
        let result = platform(&host, &app, &user, ask("lead", "Spend")).await;
        let reason = result["err"]["reason"]
            .as_str()
            .unwrap_or_else(|| panic!("{result}"));
        assert!(
            reason.starts_with("budget exceeded: the run spent $"),
            "{reason}"
        );
        assert!(
            reason.ends_with("of its $0.0010 budget before answering"),
            "{reason}"
        );
        model.usage(10, 5);

        // A model outage, and a model that never answers: a clear reason, never a hang.
        limits(json!({"budget_usd": null, "timeout_seconds": 5})).await;
        model.fail(503);
        let result = platform(&host, &app, &user, ask("lead", "Anyone?")).await;
        let reason = result["err"]["reason"]
            .as_str()
            .unwrap_or_else(|| panic!("{result}"));
        assert!(
            reason.starts_with("the model is unavailable: no backend could answer"),
            "{reason}"
        );
        model.recover();
        model.script([Reply::hang()]);
        let started = std::time::Instant::now();
        let result = platform(&host, &app, &user, ask("lead", "Hello?")).await;
        assert_eq!(
            result["err"]["reason"],
            "deadline exceeded: the run was stopped after 5s, waiting for the model",
            "{result}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        let body = limits(json!({"timeout_seconds": null})).await;
        assert_eq!(body["agent_limits"]["set"], json!([]), "{body}");
        assert_eq!(body["agent_limits"]["timeout_seconds"], 120, "{body}");

        // Limits out of range are refused, naming the field; nothing changes.
        for (limits, param) in [
            (json!({"max_steps": 0}), "agent_limits.max_steps"),
            (json!({"budget_usd": 1000}), "agent_limits.budget_usd"),
            (
                json!({"timeout_seconds": 1}),
                "agent_limits.timeout_seconds",
            ),
        ] {
            let (status, body) = host
                .put(
                    "/api/llm-settings",
                    &admin,
                    Body::Json(json!({"agent_limits": limits})),
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(body["error"]["param"], param, "{body}");
        }
        let (status, body) = host
            .put(
                "/api/llm-settings",
                &user,
                Body::Json(json!({"agent_limits": {"max_steps": 3}})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        let (_, body) = host.get("/api/llm-settings", &user).await;
        assert_eq!(body["agent_limits"]["max_steps"], 8, "{body}");
        let other = host.tenant_token(&acme.secret, "depot", "admin").await;
        limits(json!({"max_steps": 20})).await;
        let (_, body) = host.get("/api/llm-settings", &other).await;
        assert_eq!(
            body["agent_limits"]["max_steps"], 8,
            "another tenant's own: {body}"
        );

        // Every model step is metered to the tenant, split by app and agent.
        let (status, usage) = host
            .send(
                "GET",
                "/v1/usage?tenant=shop",
                Some(&acme.secret),
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{usage}");
        let per_agent = usage["per_agent"]
            .as_array()
            .unwrap_or_else(|| panic!("{usage}"));
        let calls = |agent: &str| {
            per_agent
                .iter()
                .find(|a| a["app"] == app.as_str() && a["agent"] == agent)
                .map(|a| a["calls"].as_i64().unwrap())
        };
        // lead: 3 + 2 + 2 + 1 + 2 + 1 steps answered; helper: 2 + 1.
        assert_eq!(calls("lead"), Some(11), "{usage}");
        assert_eq!(calls("helper"), Some(3), "{usage}");

        mcp_agent_invoke(&host, &app, &acme.org_id, &store).await;
        host.stop().await;
    }
}

/// A platform tool's refusal is the same whichever entry point meets the fault: a component's
/// `tools.call` and a model's tool call in the agent runner get the same decision and the same
/// message naming the field, and the model is shown the schema the arguments are read with.
#[tokio::test]
async fn a_platform_tool_refuses_a_component_and_a_model_alike() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, _dir) in stores().await {
        let Agents {
            host, app, user, ..
        } = Agents::start(&store, &component, "entry").await;
        let model = host.fakes.upstream("mistral");
        let faults = [
            ("records.get", json!({"id": 5})),
            ("records.get", json!({"id": "rec_1", "colour": "red"})),
            ("records.get", json!({})),
            (
                "records.put",
                json!({"record_type": "note", "record": {"id": 5}}),
            ),
            ("records.update", json!({"id": "rec_none", "fields": {}})),
        ];
        for (tool, args) in faults {
            let by_component = platform(
                &host,
                &app,
                &user,
                json!({"op": "tool", "name": tool, "args": args}),
            )
            .await;
            let refused = &by_component["err"];
            assert_eq!(refused["decision"], "invalid_arguments", "{by_component}");
            let message = refused["message"].as_str().unwrap_or_default();
            assert!(!message.is_empty(), "{by_component}");

            model.forget_requests();
            model.script([
                Reply::tool_calls([ToolCall::new("c1", tool.replace('.', "-"), args.clone())]),
                Reply::text("Noted"),
            ]);
            let result = platform(&host, &app, &user, ask("lead", "Try")).await;
            assert_eq!(result["ok"], "Noted", "{result}");
            let answer = &tool_answers(&model.last().unwrap().body)[0];
            assert_eq!(
                answer["error"]["kind"], "invalid_arguments",
                "{tool} {args}: {answer}"
            );
            assert_eq!(
                answer["error"]["message"], message,
                "{tool} {args}: {answer}"
            );
        }
        // What the model is shown is the schema the arguments are read with.
        let shown = model.requests()[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["function"]["name"] == "records-get")
            .map(|t| t["function"]["parameters"].clone())
            .unwrap();
        assert_eq!(shown["required"], json!(["id"]), "{shown}");
        assert_eq!(shown["additionalProperties"], false, "{shown}");
        assert_eq!(shown["properties"]["id"]["maxLength"], 200, "{shown}");
    }
}

/// A delegation's refusal is the same whichever entry point meets the fault: the app's own
/// `team.delegate`, the model's `team-delegate` tool and `/api/mcp/agent-invoke` reach one
/// function, whose team check gives each the same reason, and each try is one `refused` entry
/// in the audit log. The model's arguments are read as a platform tool's are.
#[tokio::test]
async fn a_delegation_is_refused_alike_through_every_entry_point() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, _dir) in stores().await {
        let Agents {
            host,
            app,
            acme,
            admin,
            user,
        } = Agents::start(&store, &component, "delegates").await;
        let model = host.fakes.upstream("mistral");
        let reason = "team delegation denied: `ghost` is not in the team of `lead`";

        let by_app = platform(
            &host,
            &app,
            &user,
            json!({"op": "delegate", "target": "ghost", "prompt": "p", "from": "lead"}),
        )
        .await;
        let app_reason = by_app["err"]["reason"]
            .as_str()
            .unwrap_or_else(|| panic!("{by_app}"));
        assert!(app_reason.starts_with(reason), "{app_reason}");

        model.forget_requests();
        model.script([
            Reply::tool_calls([
                ToolCall::new(
                    "c1",
                    "team-delegate",
                    json!({"agent": "ghost", "prompt": "p"}),
                ),
                ToolCall::new("c2", "team-delegate", json!({"agent": 7, "prompt": "p"})),
                ToolCall::new(
                    "c3",
                    "team-delegate",
                    json!({"agent": "helper", "prompt": "p", "urgent": true}),
                ),
            ]),
            Reply::text("Noted"),
        ]);
        let result = platform(&host, &app, &user, ask("lead", "Delegate")).await;
        assert_eq!(result["ok"], "Noted", "{result}");
        let answers = tool_answers(&model.last().unwrap().body);
        assert_eq!(answers[0]["error"]["kind"], "denied", "{answers:?}");
        assert_eq!(answers[0]["error"]["message"], app_reason, "{answers:?}");
        assert_eq!(answers[1]["error"]["kind"], "invalid_arguments");
        assert_eq!(
            answers[1]["error"]["message"],
            "`agent`: must be a string of 1 to 200 characters"
        );
        assert_eq!(answers[2]["error"]["kind"], "invalid_arguments");
        let unknown = answers[2]["error"]["message"].as_str().unwrap();
        assert!(unknown.contains("urgent"), "{unknown}");
        let shown = model.requests()[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["function"]["name"] == "team-delegate")
            .map(|t| t["function"]["parameters"].clone())
            .unwrap();
        assert_eq!(shown["properties"]["agent"]["enum"], json!(["helper"]));
        assert_eq!(shown["additionalProperties"], false, "{shown}");

        let token = host.app_token(&acme.org_id, "shop", &app);
        let response = reqwest::Client::new()
            .post(format!("{}/api/mcp/agent-invoke", host.base()))
            .bearer_auth(token)
            .json(&json!({"agent": "ghost", "prompt": "p", "from_agent": "lead"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "agent_call_refused", "{body}");
        assert_eq!(body["error"]["message"], app_reason, "{body}");

        let (status, log) = host
            .get(
                &format!("/api/audit?kind=delegate&caller_app={app}&limit=200"),
                &admin,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{log}");
        let refused = log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["target"] == "ghost" && e["outcome"] == "refused")
            .count();
        assert_eq!(refused, 3, "one entry per entry point: {log}");
        host.stop().await;
    }
}

/// `POST /api/mcp/agent-invoke` with the app tokens the host issues to calls outside the
/// runtime: the team checks, the depth limit at hop 9, the chain the token carries as a floor,
/// and another tenant or organization.
async fn mcp_agent_invoke(host: &Host, app: &str, org_id: &str, store: &atrium_store::Store) {
    use atrium_platform::identity::app_token::APP_TOKEN_TTL;
    let token = |org: &str, tenant: &str, depth: u32, visited: &[&str]| {
        host.app_token_on(org, tenant, app, depth, visited)
    };
    let invoke = |token: String, headers: Vec<(&'static str, String)>, body: Value| async move {
        let mut request = reqwest::Client::new()
            .post(format!("{}/api/mcp/agent-invoke", host.base()))
            .bearer_auth(token)
            .json(&body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        (status, response.json::<Value>().await.unwrap())
    };
    let delegate = |from: &str, target: &str| json!({"agent": target, "prompt": "From outside", "from_agent": from});
    let model = host.fakes.upstream("mistral");
    let shop = token(org_id, "shop", 1, &[]);

    model.script([Reply::text("helper, via the shim")]);
    let (status, body) = invoke(shop.clone(), vec![], delegate("lead", "helper")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["answer"], "helper, via the shim", "{body}");
    assert_eq!(body["agent"], "helper", "{body}");
    assert_eq!(body["chain_depth"], 2, "{body}");
    assert_eq!(body["usage"]["steps"], 1, "{body}");

    let helper = format!("{app}:helper");
    for (token, headers, body, reason) in [
        (
            shop.clone(),
            vec![],
            delegate("helper", "lead"),
            "team delegation denied: agent `helper` has no team".to_owned(),
        ),
        (
            shop.clone(),
            vec![],
            delegate("lead", "ghost"),
            "team delegation denied: `ghost` is not in the team of `lead`".to_owned(),
        ),
        (
            shop.clone(),
            vec![],
            delegate("ghost", "lead"),
            "from_agent `ghost` is not an agent of this app".to_owned(),
        ),
        (
            shop.clone(),
            vec![("X-Service-Chain-Depth", "8".to_owned())],
            delegate("lead", "helper"),
            "chain depth exceeded: this call would be hop 9, the limit is 8".to_owned(),
        ),
        (
            shop.clone(),
            vec![("X-Service-Chain-Depth", "9".to_owned())],
            delegate("lead", "helper"),
            "chain depth exceeded: 9 is above the limit of 8".to_owned(),
        ),
        (
            shop.clone(),
            vec![("X-Service-Visited-Agents", helper.clone())],
            delegate("lead", "helper"),
            format!("cycle detected: agent `{helper}` is already on this call chain"),
        ),
        // The token's chain is a floor the headers cannot lower.
        (
            token(org_id, "shop", 8, &[]),
            vec![("X-Service-Chain-Depth", "1".to_owned())],
            delegate("lead", "helper"),
            "chain depth exceeded: this call would be hop 9".to_owned(),
        ),
        (
            token(org_id, "shop", 2, &[&helper]),
            vec![("X-Service-Visited-Agents", String::new())],
            delegate("lead", "helper"),
            format!("cycle detected: agent `{helper}`"),
        ),
    ] {
        let (status, answer) = invoke(token, headers, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
        assert_eq!(answer["error"]["code"], "agent_call_refused", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&reason), "{message} / {reason}");
    }

    // A run that ends without an answer; a malformed body; no token, a developer's token.
    model.fail(503);
    let (status, answer) = invoke(shop.clone(), vec![], delegate("lead", "helper")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["code"], "agent_call_failed", "{answer}");
    model.recover();
    let (status, answer) = invoke(
        shop.clone(),
        vec![],
        json!({"agent": "helper", "prompt": "x", "from_agent": "lead", "colour": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let developer = host
        .issuer
        .issue("dev_x", "x@example.com", APP_TOKEN_TTL)
        .unwrap();
    for credential in [String::new(), developer, "att_nonsense".to_owned()] {
        let (status, answer) = invoke(credential, vec![], delegate("lead", "helper")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
    }

    // Another tenant of the organization, another organization: no install of the app there.
    let other_org = store
        .create_key(&unique("umbrella"), "ops")
        .await
        .unwrap()
        .org_id;
    for token in [
        token(org_id, "depot", 1, &[]),
        token(&other_org, "shop", 1, &[]),
    ] {
        let (status, answer) = invoke(token, vec![], delegate("lead", "helper")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    }
}
