//! The probe: a test app whose tools exercise every import of the `atrium:app` world and every
//! way a guest can misbehave (memory bomb, endless loop, deep recursion, huge output, log
//! flood, egress to an undeclared host, trap, panic, filesystem and socket access).

use std::sync::atomic::{AtomicU32, Ordering};

use atrium_sdk::http::{Request, Response};
use atrium_sdk::{
    App, AppEvent, Ctx, Error, InboundEnvelope, ManifestInfo, RegistrationError, RoomMessage,
    UserAdded,
};
use serde_json::{Value, json};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn text(args: &Value, key: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn opt(args: &Value, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn outcome<T: serde::Serialize, E: serde::Serialize>(result: Result<T, E>) -> Value {
    match result {
        Ok(v) => json!({"ok": v}),
        Err(e) => json!({"err": e}),
    }
}

/// Calls the import named by `op` and reports its outcome as data.
fn platform(ctx: &Ctx<'_>, a: Value) -> Result<Value, Error> {
    Ok(match text(&a, "op").as_str() {
        "info" => json!({
            "tenant_id": ctx.tenant_id(), "app_id": ctx.app_id(), "app_version": ctx.app_version(),
            "call_id": ctx.call_id(), "chain_depth": ctx.chain_depth(), "public_route": ctx.is_public_route(),
        }),
        "tool" => outcome(ctx.tools.call(
            &text(&a, "name"),
            a.get("args").cloned().unwrap_or(json!({})),
        )),
        "tool_raw" => outcome(ctx.tools.call(
            &text(&a, "name"),
            a.get("args").cloned().unwrap_or(Value::Null),
        )),
        "secret" => json!({"ok": ctx.secrets.get(&text(&a, "key"))}),
        "config" => json!({"ok": ctx.config.get(&text(&a, "key"))}),
        "config_all" => json!({"ok": ctx.config.all()}),
        "post" => outcome(ctx.rooms.post(
            &text(&a, "room"),
            &text(&a, "content"),
            &text(&a, "from"),
        )),
        "delegate" => outcome(ctx.team.delegate(
            &text(&a, "target"),
            &text(&a, "prompt"),
            &text(&a, "from"),
        )),
        "invoke" => outcome(ctx.apps.invoke(
            &text(&a, "app"),
            &text(&a, "agent"),
            &text(&a, "prompt"),
        )),
        "fetch_app" => outcome(
            ctx.apps
                .fetch(
                    &text(&a, "app"),
                    &text(&a, "path"),
                    &text(&a, "method"),
                    None,
                )
                .map(|r| json!({"status": r.status, "body": String::from_utf8_lossy(&r.body)})),
        ),
        "emit" => outcome(ctx.events.emit(
            &text(&a, "name"),
            a.get("payload").cloned().unwrap_or(json!({})),
        )),
        "ask" => outcome(
            ctx.agent
                .ask(&text(&a, "prompt"), opt(&a, "agent").as_deref()),
        ),
        "commit" => outcome(ctx.commitments.add(
            &text(&a, "title"),
            &text(&a, "content"),
            &text(&a, "from"),
            opt(&a, "due_at").as_deref(),
        )),
        "log" => {
            let message = text(&a, "message");
            match text(&a, "level").as_str() {
                "error" => ctx.logger.error(&message),
                "warn" => ctx.logger.warn(&message),
                "debug" => ctx.logger.debug(&message),
                _ => ctx.logger.info(&message),
            }
            json!({"ok": null})
        }
        "public_url" => outcome(
            ctx.public_callback_url(&text(&a, "path"))
                .map_err(|e| e.to_string()),
        ),
        other => return Err(Error::invalid_input(format!("unknown op `{other}`"))),
    })
}

fn memory_bomb(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(vec![1u8; 1 << 20]);
        std::hint::black_box(&hoard);
    }
}

fn spin(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {
    let mut x = 0u64;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

fn sleep(_: &Ctx<'_>, a: Value) -> Result<Value, Error> {
    let millis = a.get("millis").and_then(Value::as_u64).unwrap_or(0);
    std::thread::sleep(std::time::Duration::from_millis(millis));
    Ok(json!(millis))
}

fn burn(_: &Ctx<'_>, a: Value) -> Result<Value, Error> {
    let iterations = a.get("iterations").and_then(Value::as_u64).unwrap_or(1);
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = std::hint::black_box(x);
    }
    Ok(json!(x))
}

/// Recursion through a function pointer, so it is neither inlined nor turned into a loop; the
/// frames live on the wasm stack, which the host bounds.
fn depth(n: u64) -> u64 {
    let next: fn(u64) -> u64 = std::hint::black_box(depth);
    if n == u64::MAX {
        0
    } else {
        next(n + 1).wrapping_add(1)
    }
}

fn recurse(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {
    Ok(json!(depth(0)))
}

fn huge_output(_: &Ctx<'_>, a: Value) -> Result<Value, Error> {
    let bytes = a.get("bytes").and_then(Value::as_u64).unwrap_or(0);
    Ok(json!("x".repeat(usize::try_from(bytes).unwrap_or(0))))
}

fn log_flood(_: &Ctx<'_>, a: Value) -> Result<Value, Error> {
    let lines = a.get("lines").and_then(Value::as_u64).unwrap_or(0);
    for i in 0..lines {
        println!("flood line {i} ........................................................");
    }
    eprintln!("flood done");
    Ok(json!(lines))
}

fn fetch(ctx: &Ctx<'_>, a: Value) -> Result<Value, Error> {
    let response = ctx.http.get(&text(&a, "url"))?;
    Ok(json!({"status": response.status, "body": String::from_utf8_lossy(&response.body)}))
}

fn trap(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_arch = "wasm32"))]
    std::process::abort();
}

fn panic(_: &Ctx<'_>, a: Value) -> Result<Value, Error> {
    panic!("{}", text(&a, "message"));
}

fn counter(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {
    Ok(json!(COUNTER.fetch_add(1, Ordering::SeqCst) + 1))
}

fn env(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {
    Ok(json!(std::env::vars().collect::<Vec<_>>()))
}

fn filesystem(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {
    let read = std::fs::read_dir("/")
        .map(|d| d.count())
        .map_err(|e| e.to_string());
    let write = std::fs::write("probe.txt", b"x").map_err(|e| e.to_string());
    Ok(json!({"read_dir": outcome(read), "write": outcome(write)}))
}

fn socket(_: &Ctx<'_>, a: Value) -> Result<Value, Error> {
    let address = text(&a, "address");
    Ok(outcome(
        std::net::TcpStream::connect(address.as_str())
            .map(|_| "connected")
            .map_err(|e| e.to_string()),
    ))
}

/// Echoes the event; a payload's `behave` object, keyed by app id, makes one subscriber of a
/// fan-out misbehave: `fail`, `trap`, `sleep:<ms>`, `relay` (emit the same event again, as
/// an event loop does), or `record:<id>` (store a `delivery` record `<id>`, so a test counts
/// the deliveries that ran).
fn on_event(ctx: &Ctx<'_>, event: AppEvent) -> Result<Value, Error> {
    let echo = json!({
        "event": event.event_name, "from": event.emitter_app_id, "payload": event.payload,
        "tenant": ctx.tenant_id(), "agent": event.target_agent_slug, "chain_depth": ctx.chain_depth(),
    });
    let payload: Value = serde_json::from_str(&event.payload).unwrap_or_default();
    let behaviour = payload["behave"][ctx.app_id()].as_str().unwrap_or("");
    match behaviour.split_once(':').unwrap_or((behaviour, "")) {
        ("fail", _) => Err(Error::failed("told to fail")),
        ("trap", _) => trap(ctx, Value::Null),
        ("sleep", millis) => {
            std::thread::sleep(std::time::Duration::from_millis(
                millis.parse().unwrap_or(0),
            ));
            Ok(echo)
        }
        ("record", id) => {
            ctx.tools.call(
                "records.put",
                json!({"record_type": "delivery", "record": {"id": id}}),
            )?;
            Ok(echo)
        }
        ("relay", _) => Ok(json!({
            "echo": echo,
            "relayed": outcome(ctx.events.emit(&event.event_name, payload.clone())),
        })),
        _ => Ok(echo),
    }
}

fn echo_route(ctx: &Ctx<'_>, request: Request) -> Result<Response, Error> {
    Ok(Response::json(&json!({
        "word": request.param("word"),
        "query": request.query,
        "tenant": ctx.tenant_id(),
        "public": ctx.is_public_route(),
        "caller_app": request.header("x-atrium-caller-app"),
        "chain_depth": ctx.chain_depth(),
    })))
}

fn submit_route(_: &Ctx<'_>, request: Request) -> Result<Response, Error> {
    Ok(Response {
        status: 201,
        headers: vec![("x-length".into(), request.body.len().to_string())],
        body: request.body,
    })
}

/// Answers with the status and headers the request body asks for (`{status, headers: [[name,
/// value]]}`), and shows the request headers the app was given, so that the host's floor on
/// both can be tested.
fn raw_route(_: &Ctx<'_>, request: Request) -> Result<Response, Error> {
    let asked: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let status = asked["status"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(200);
    let mut headers: Vec<(String, String)> = asked["headers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| Some((pair[0].as_str()?.to_owned(), pair[1].as_str()?.to_owned())))
        .collect();
    headers.push(("content-type".into(), "application/json".into()));
    let body = json!({"request_headers": request.headers});
    Ok(Response {
        status,
        headers,
        body: body.to_string().into_bytes(),
    })
}

fn open_route(ctx: &Ctx<'_>, _: Request) -> Result<Response, Error> {
    let emitted = ctx.events.emit("probe_event", json!({}));
    Ok(Response::json(
        &json!({"public": ctx.is_public_route(), "emit": outcome(emitted)}),
    ))
}

fn logged(ctx: &Ctx<'_>, what: String) -> Result<(), Error> {
    ctx.logger.info(&what);
    Ok(())
}

/// Builds the probe.
pub fn app() -> Result<App, RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.tool("echo", |_, args: Value| Ok(args))?
        .tool("guarded", |_, _: Value| Ok("guarded ok"))?
        .tool("internal", |_, _: Value| Ok("internal ok"))?
        .tool("platform", platform)?
        .tool("memory_bomb", memory_bomb)?
        .tool("spin", spin)?
        .tool("sleep", sleep)?
        .tool("burn", burn)?
        .tool("recurse", recurse)?
        .tool("huge_output", huge_output)?
        .tool("log_flood", log_flood)?
        .tool("fetch", fetch)?
        .tool("trap", trap)?
        .tool("panic", panic)?
        .tool("counter", counter)?
        .tool("env", env)?
        .tool("filesystem", filesystem)?
        .tool("socket", socket)?
        .on_install(|ctx| logged(ctx, "installed".into()))?
        .on_uninstall(|ctx| logged(ctx, "uninstalled".into()))?
        .on_inbound(|ctx, envelope: InboundEnvelope| {
            logged(
                ctx,
                format!("inbound {} from {}", envelope.message_id, envelope.from),
            )
        })?
        .on_user_added(|_, user: UserAdded| {
            Err(Error::failed(format!("refusing user {}", user.user_id)))
        })?
        .on_schedule("tick", |ctx| logged(ctx, "tick".into()))?
        .on_event("entry_booked", on_event)?
        .on_message(|ctx, agent: &str, message: RoomMessage| {
            ctx.rooms.post(
                &message.room_id,
                &format!("{agent} got: {}", message.content),
                agent,
            )?;
            Ok(())
        })?
        .route("GET", "/echo/{word}", echo_route)?
        .route("POST", "/submit", submit_route)?
        .route("POST", "/raw", raw_route)?
        .route("GET", "/open", open_route)?;
    Ok(app)
}

atrium_sdk::export!(app);
