//! An app outside the runtime (the container shim's kind): held to the same manifest checks,
//! deadline and result cap as a component before and after its backend, and its calls back to
//! the platform ([`Imports`]) answering exactly what a component's imports answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{
    AgentCallError, App, CallError, Caller, External, HandlerCall, HandlerReply, Imports,
    Invocation, RouteResponse, Runtime, RuntimeConfig, ToolCallError,
};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::common::*;

/// What the backend does with a call.
#[derive(Clone)]
enum Behaviour {
    /// Answers `{"tool": name, "args": ...}` (and an empty object to an event).
    Echo,
    /// Never answers.
    Hang,
    /// Answers a JSON string of this many bytes.
    Huge(usize),
    /// Answers text that is not JSON.
    NotJson,
}

struct Backend {
    behaviour: Mutex<Behaviour>,
    ready: Mutex<Result<(), CallError>>,
    seen: Mutex<Vec<String>>,
}

impl Backend {
    fn new() -> Arc<Backend> {
        Arc::new(Backend {
            behaviour: Mutex::new(Behaviour::Echo),
            ready: Mutex::new(Ok(())),
            seen: Mutex::default(),
        })
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl External for Backend {
    async fn ready(&self) -> Result<(), CallError> {
        self.ready.lock().unwrap().clone()
    }

    async fn handle(
        &self,
        inv: &Invocation,
        call: HandlerCall,
        _max_bytes: usize,
    ) -> Result<HandlerReply, CallError> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{} {call:?}", inv.tenant_id));
        let behaviour = self.behaviour.lock().unwrap().clone();
        match behaviour {
            Behaviour::Hang => std::future::pending().await,
            Behaviour::Huge(n) => Ok(HandlerReply::Json(format!("\"{}\"", "x".repeat(n)))),
            Behaviour::NotJson => Ok(HandlerReply::Json("not json".into())),
            Behaviour::Echo => Ok(match call {
                HandlerCall::Tool { name, args } => HandlerReply::Json(
                    json!({"tool": name, "args": serde_json::from_str::<Value>(&args).unwrap()})
                        .to_string(),
                ),
                HandlerCall::Event(_) => HandlerReply::Json("{}".into()),
                _ => HandlerReply::Unit,
            }),
        }
    }

    async fn route(
        &self,
        inv: &Invocation,
        request: http::Request<Bytes>,
        _max_bytes: usize,
    ) -> Result<RouteResponse, CallError> {
        self.seen.lock().unwrap().push(format!(
            "{} {} {} public={}",
            inv.tenant_id,
            request.method(),
            request.uri().path(),
            inv.public_route
        ));
        Ok(http::Response::new(Bytes::from_static(b"routed")))
    }
}

fn external(runtime: &Runtime, backend: &Arc<Backend>) -> App {
    App::external(
        runtime,
        Arc::new(manifest(atrium_test_artifacts::PROBE_MANIFEST)),
        backend.clone(),
    )
}

fn get(path: &str) -> http::Request<Bytes> {
    http::Request::get(path).body(Bytes::new()).unwrap()
}

#[tokio::test]
async fn an_external_app_is_held_to_its_manifest_before_its_backend_sees_a_call() {
    let backend = Backend::new();
    let app = external(runtime(), &backend);
    assert!(app.is_external() && app.has_handlers() && app.has_http());
    assert!(!app.loaded_from_cache() && !app.preinitialized());
    let p = platform();

    let undeclared = app.call_tool(&inv(&p), "nope", "{}").await.unwrap_err();
    assert!(
        matches!(undeclared, CallError::NotDeclared(_)),
        "{undeclared}"
    );
    let denied = app.call_tool(&inv(&p), "guarded", "{}").await.unwrap_err();
    assert_eq!(
        denied,
        CallError::ScopeDenied {
            tool: "guarded".into(),
            needed: vec!["probe.read".into(), "probe.write".into()],
        }
    );
    let hidden = app
        .call_tool(&inv(&p).with_caller(Caller::Agent), "internal", "{}")
        .await
        .unwrap_err();
    assert_eq!(hidden, CallError::NotAgentVisible("internal".into()));
    let not_object = app.call_tool(&inv(&p), "echo", "[1]").await.unwrap_err();
    assert!(
        matches!(not_object, CallError::InvalidInput(_)),
        "{not_object}"
    );
    let schedule = app.on_schedule(&inv(&p), "never").await.unwrap_err();
    assert!(matches!(schedule, CallError::NotDeclared(_)), "{schedule}");
    let route = app
        .handle_http(&inv(&p), get("/nowhere"))
        .await
        .unwrap_err();
    assert!(matches!(route, CallError::NotDeclared(_)), "{route}");
    let private = app
        .handle_http(&inv(&p).on_public_route(), get("/echo/hi"))
        .await
        .unwrap_err();
    assert!(private.to_string().contains("is not public"), "{private}");
    assert!(
        backend.seen().is_empty(),
        "nothing refused reached the backend"
    );

    let answer = app
        .call_tool(&inv(&p), "echo", r#"{"word": "hi"}"#)
        .await
        .unwrap();
    assert_eq!(
        json(&answer),
        json!({"tool": "echo", "args": {"word": "hi"}})
    );
    app.on_schedule(&inv(&p), "tick").await.unwrap();
    app.on_install(&inv(&p)).await.unwrap();
    let routed = app
        .handle_http(&inv(&p).on_public_route(), get("/open"))
        .await
        .unwrap();
    assert_eq!(routed.body().as_ref(), b"routed");
    assert_eq!(
        backend.seen(),
        vec![
            r#"tenant-a Tool { name: "echo", args: "{\"word\": \"hi\"}" }"#.to_owned(),
            r#"tenant-a Schedule("tick")"#.to_owned(),
            "tenant-a Install".to_owned(),
            "tenant-a GET /open public=true".to_owned(),
        ]
    );

    // Its answers are held to the contract and the result cap like a component's.
    *backend.behaviour.lock().unwrap() = Behaviour::NotJson;
    let broken = app.call_tool(&inv(&p), "echo", "{}").await.unwrap_err();
    assert!(matches!(broken, CallError::Contract(_)), "{broken}");
    *backend.behaviour.lock().unwrap() = Behaviour::Huge(2 << 20);
    let huge = app.call_tool(&inv(&p), "echo", "{}").await.unwrap_err();
    assert!(
        matches!(huge, CallError::TooLarge { what: "result", .. }),
        "{huge}"
    );
}

#[tokio::test]
async fn an_external_app_that_hangs_is_stopped_at_the_deadline_and_one_not_ready_says_why() {
    let runtime = Runtime::new(RuntimeConfig {
        deadline: Duration::from_millis(300),
        max_instances: 4,
        ..config()
    })
    .unwrap();
    let backend = Backend::new();
    let app = external(&runtime, &backend);
    let p = platform();
    *backend.behaviour.lock().unwrap() = Behaviour::Hang;
    let hung = app.call_tool(&inv(&p), "echo", "{}").await.unwrap_err();
    assert_eq!(hung, CallError::Deadline(Duration::from_millis(300)));

    let down = CallError::Unavailable("the container does not answer /health".into());
    *backend.ready.lock().unwrap() = Err(down.clone());
    assert_eq!(
        app.call_tool(&inv(&p), "echo", "{}").await.unwrap_err(),
        down
    );
    assert_eq!(app.health(&inv(&p)).await.unwrap_err(), down);
    assert_eq!(
        app.handle_http(&inv(&p), get("/echo/hi"))
            .await
            .unwrap_err(),
        down
    );
    // Ready again: the next call goes through.
    *backend.ready.lock().unwrap() = Ok(());
    *backend.behaviour.lock().unwrap() = Behaviour::Echo;
    assert!(app.call_tool(&inv(&p), "echo", "{}").await.is_ok());
    assert_eq!(app.health(&inv(&p)).await.unwrap(), None);
}

fn tool_error(e: &ToolCallError) -> Value {
    json!({"tool_name": e.tool_name, "decision": e.decision, "message": e.message, "needed_scopes": e.needed_scopes})
}

fn agent_error(e: &AgentCallError) -> Value {
    json!({"reason": e.reason})
}

fn outcome<T>(result: Result<T, Value>, ok: impl FnOnce(T) -> Value) -> Value {
    match result {
        Ok(v) => json!({"ok": ok(v)}),
        Err(e) => json!({"err": e}),
    }
}

/// One platform call through `Imports`, answered in the probe's shape.
async fn through_imports(imports: &Imports, a: &Value) -> Value {
    let text = |key: &str| a[key].as_str().unwrap_or("").to_owned();
    match a["op"].as_str().unwrap() {
        "tool" => outcome(
            imports
                .tools_call(
                    &text("name"),
                    &a.get("args").cloned().unwrap_or(json!({})).to_string(),
                )
                .await
                .map_err(|e| tool_error(&e)),
            |v| json(&v),
        ),
        "secret" => json!({"ok": imports.secret(&text("key")).await}),
        // JSON text, as the SDK's `config.get` parses it.
        "config" => json!({"ok": imports.config(&text("key")).await.map(|t| json(&t))}),
        "post" => outcome(
            imports
                .rooms_post(&text("room"), &text("content"), &text("from"), None)
                .await
                .map_err(|e| tool_error(&e)),
            |p| json!(p.message.content),
        ),
        "delegate" => outcome(
            imports
                .team_delegate(&text("target"), &text("prompt"), &text("from"))
                .await
                .map_err(|e| agent_error(&e)),
            |s| json!(s),
        ),
        "invoke" => outcome(
            imports
                .apps_invoke(&text("app"), &text("agent"), &text("prompt"))
                .await
                .map_err(|e| agent_error(&e)),
            |s| json!(s),
        ),
        "emit" => outcome(
            imports
                .events_emit(
                    &text("name"),
                    &a.get("payload").cloned().unwrap_or(json!({})).to_string(),
                )
                .await
                .map_err(|e| agent_error(&e)),
            |r| json!(r.wire_count),
        ),
        "ask" => outcome(
            imports
                .agent_ask(&text("prompt"), a["agent"].as_str())
                .await
                .map_err(|e| agent_error(&e)),
            |s| json!(s),
        ),
        "commit" => outcome(
            imports
                .commitments_add(
                    &text("title"),
                    &text("content"),
                    &text("from"),
                    a["due_at"].as_str(),
                )
                .await
                .map_err(|e| tool_error(&e)),
            |_| json!("added"),
        ),
        "public_url" => outcome(
            imports
                .public_callback_url(&text("path"))
                .await
                .map_err(|e| json!(e)),
            |s| json!(s),
        ),
        other => panic!("no such op {other}"),
    }
}

/// The probe's answer in the shape [`through_imports`] gives.
fn comparable(op: &str, answer: Value) -> Value {
    let Some(ok) = answer.get("ok") else {
        let mut err = answer["err"].clone();
        if let Some(e) = err.as_object_mut() {
            // The SDK's error types carry the fields of the runtime's.
            e.retain(|k, _| {
                [
                    "tool_name",
                    "decision",
                    "message",
                    "needed_scopes",
                    "reason",
                ]
                .contains(&k.as_str())
            });
        }
        return json!({"err": err});
    };
    json!({"ok": match op {
        "post" => ok["message"]["content"].clone(),
        "emit" => ok["wire_count"].clone(),
        "commit" => json!("added"),
        _ => ok.clone(),
    }})
}

#[tokio::test]
async fn imports_answer_what_a_components_imports_answer() {
    let platform = || {
        Arc::new(
            MemoryPlatform::new("https://atrium.example")
                .with_tool("probe.stats", &["probe.read"], json!({"count": 3}))
                .with_secret("API_KEY", "k-1")
                .with_room("room-1", &["probe:lead"])
                .with_wire("probe_event", 2)
                .with_grant("ledger", "clerk"),
        )
    };
    let ops = [
        json!({"op": "tool", "name": "nope"}),
        json!({"op": "tool", "name": "probe.stats"}),
        json!({"op": "tool", "name": "probe.stats", "args": {"x": 1}, "scopes": true}),
        json!({"op": "secret", "key": "API_KEY"}),
        json!({"op": "secret", "key": "bad key!"}),
        json!({"op": "config", "key": "region"}),
        json!({"op": "post", "room": "room-1", "content": "hello", "from": "lead"}),
        json!({"op": "post", "room": "room-1", "content": "hello", "from": "stranger"}),
        json!({"op": "post", "room": "room-1", "content": "", "from": "lead"}),
        json!({"op": "delegate", "target": "helper", "prompt": "p", "from": "lead"}),
        json!({"op": "delegate", "target": "lead", "prompt": "p", "from": "helper"}),
        json!({"op": "delegate", "target": "helper", "prompt": "p", "from": "lead", "public": true}),
        json!({"op": "invoke", "app": "ledger", "agent": "clerk", "prompt": "p"}),
        json!({"op": "invoke", "app": "ledger", "agent": "boss", "prompt": "p"}),
        json!({"op": "invoke", "app": "ledger", "agent": "clerk", "prompt": "p", "public": true}),
        json!({"op": "emit", "name": "probe_event", "payload": {"n": 1}}),
        json!({"op": "emit", "name": "undeclared_event"}),
        json!({"op": "ask", "prompt": "p"}),
        json!({"op": "ask", "prompt": "p", "agent": "nobody"}),
        json!({"op": "commit", "title": "t", "content": "c", "from": "lead"}),
        json!({"op": "commit", "title": "", "content": "c", "from": "lead"}),
        json!({"op": "commit", "title": "t", "content": "c", "from": "lead", "due_at": "tomorrow"}),
        json!({"op": "public_url", "path": "/open"}),
        json!({"op": "public_url", "path": "/echo/x"}),
    ];
    let manifest = Arc::new(manifest(atrium_test_artifacts::PROBE_MANIFEST));
    for a in ops {
        let call = |p: &Arc<MemoryPlatform>| {
            let mut inv = inv(p);
            inv.settings.insert("region".into(), json!("eu"));
            if a.get("scopes").is_some() {
                inv = inv.with_scopes(["probe.read"]);
            }
            if a.get("public").is_some() {
                inv = inv.on_public_route();
            }
            inv
        };
        let component = platform();
        let answer = op(&probe(), &call(&component), a.clone()).await;
        let outside = platform();
        let imports = Imports::new(manifest.clone(), &call(&outside));
        let through = through_imports(&imports, &a).await;
        let op = a["op"].as_str().unwrap();
        assert_eq!(comparable(op, answer), through, "{a}");
        assert_eq!(component.posts().len(), outside.posts().len(), "{a}");
        assert_eq!(component.emitted(), outside.emitted(), "{a}");
        assert_eq!(
            component.agent_calls().len(),
            outside.agent_calls().len(),
            "{a}"
        );
        assert_eq!(component.commitments(), outside.commitments(), "{a}");
    }
}
