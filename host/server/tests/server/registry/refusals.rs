//! Every refusal of a body names the right thing, on a running host: each typed field of each
//! JSON endpoint is sent a value of the wrong type in turn, and the 400 names the field by its
//! path (`roles.fast.tier`, `members[0]`), never the value sent. A body that is not a JSON
//! object is refused; the one rule for `Content-Type` holds on every JSON endpoint (tool calls,
//! conversations, rooms, grants alike); a method a path does not answer is a JSON 405 naming
//! the methods it does; a malformed chain header is a 400 naming the header.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Host, slug};
use crate::{stores, unique};

/// Who sends a request.
#[derive(Clone, Copy, Debug)]
enum Who {
    Admin,
    User,
    Developer,
    Org,
    App,
}

/// A JSON endpoint: its method and path, who may call it, a body of the documented shape, and
/// the fields whose values are open JSON (settings, metadata: only their own type is checked).
struct Endpoint {
    method: &'static str,
    path: String,
    who: Who,
    body: Value,
    open: &'static [&'static str],
}

fn endpoint(method: &'static str, path: &str, who: Who, body: Value) -> Endpoint {
    Endpoint {
        method,
        path: path.to_owned(),
        who,
        body,
        open: &[],
    }
}

/// A value of another JSON type than `value`'s.
fn wrong(value: &Value) -> Value {
    match value {
        Value::String(_) | Value::Null => json!(5),
        Value::Number(_) => json!("10"),
        Value::Bool(_) => json!("true"),
        Value::Array(_) | Value::Object(_) => json!("not this"),
    }
}

/// Every field of `body` with its path as `param` shows it, outermost first; open fields are
/// listed but not entered.
fn fields(body: &Value, open: &[&str]) -> Vec<String> {
    fn walk(value: &Value, path: String, open: &[&str], out: &mut Vec<String>) {
        if !path.is_empty() {
            out.push(path.clone());
        }
        if open.contains(&path.as_str()) {
            return;
        }
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    let next = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    walk(inner, next, open, out);
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    walk(inner, format!("{path}[{i}]"), open, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, String::new(), open, &mut out);
    out
}

/// `body` with the field at `path` (as [`fields`] names it) replaced by a wrong value.
fn with_wrong(body: &Value, path: &str) -> Value {
    let mut body = body.clone();
    let mut at = &mut body;
    let mut rest = path;
    while !rest.is_empty() {
        let (segment, tail) = match rest.find(['.', '[']) {
            Some(0) if rest.starts_with('[') => {
                let end = rest.find(']').unwrap();
                let index: usize = rest[1..end].parse().unwrap();
                at = &mut at[index];
                rest = rest[end + 1..].trim_start_matches('.');
                continue;
            }
            Some(i) => (&rest[..i], rest[i..].trim_start_matches('.')),
            None => (rest, ""),
        };
        at = &mut at[segment];
        rest = tail;
    }
    *at = wrong(at);
    body
}

#[tokio::test]
async fn a_refused_body_names_the_field_on_every_json_endpoint() {
    let (store, _dir) = stores().await.into_iter().next().unwrap();
    let host = Host::start(&store).await;
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    let (_, dev) = host.sign_up("ada", true).await;
    let app = slug("fields");
    host.publish(&app, &dev, &super::rooms::manifest(&app, true), &component)
        .await;
    let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
    let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
    let user = host.tenant_token(&acme.secret, "shop", "user").await;
    host.activate(&app, &admin, &super::rooms::ROOMS).await;
    let app_token = host.app_token(&acme.org_id, "shop", &app);
    let token = |who: Who| -> String {
        match who {
            Who::Admin => admin.clone(),
            Who::User => user.clone(),
            Who::Developer => dev.clone(),
            Who::Org => acme.secret.clone(),
            Who::App => app_token.clone(),
        }
    };

    use Who::*;
    let endpoints = vec![
        Endpoint {
            open: &["settings", "rag_bindings"],
            ..endpoint(
                "POST",
                &format!("/api/installs/{app}/activate"),
                Admin,
                json!({"granted_scopes": ["tasks.read"], "settings": {}, "rag_bindings": {}, "upgrade_policy": "auto", "version": "1.0.0"}),
            )
        },
        Endpoint {
            open: &["settings"],
            ..endpoint(
                "PATCH",
                &format!("/api/installs/{app}"),
                Admin,
                json!({"settings": {}}),
            )
        },
        Endpoint {
            open: &["settings"],
            ..endpoint(
                "POST",
                &format!("/api/installs/{app}/upgrade"),
                Admin,
                json!({"granted_scopes": ["tasks.read"], "settings": {}, "version": "2.0.0"}),
            )
        },
        endpoint(
            "PUT",
            &format!("/api/installs/{app}/secrets/api_key"),
            Admin,
            json!({"value": "v"}),
        ),
        endpoint(
            "PATCH",
            &format!("/api/installs/{app}/workflows/triage"),
            Admin,
            json!({"name": "n", "intent": "i", "flow": ["a"], "triggers": ["t"], "non_triggers": ["n"], "specifics": "s"}),
        ),
        endpoint(
            "PATCH",
            &format!("/api/installs/{app}/agents/lead"),
            Admin,
            json!({"display_name": "d", "system_prompt": "s", "allowed_skills": ["x"], "tools_allowed": ["y"], "routing_hints": "h"}),
        ),
        Endpoint {
            open: &["config"],
            ..endpoint(
                "PUT",
                "/api/integrations/gmail",
                Admin,
                json!({"config": {}}),
            )
        },
        Endpoint {
            open: &["metadata"],
            ..endpoint(
                "POST",
                "/api/inbound/email",
                Admin,
                json!({"message_id": "m", "from": "a@example.com", "body": "b", "subject": "s", "received_at": "2026-01-01T00:00:00Z", "attachment_ids": ["x"], "metadata": {}}),
            )
        },
        endpoint(
            "PUT",
            "/api/llm-settings",
            Admin,
            json!({"roles": {"fast": {"tier": "cheap", "provider": "mistral", "model": "m"}}, "agent_limits": {"max_steps": 5, "budget_usd": 1.5, "timeout_seconds": 30}}),
        ),
        endpoint(
            "PUT",
            "/api/tenant/settings",
            Admin,
            json!({"room_member_limit": 10, "time_zone": "Europe/Berlin"}),
        ),
        endpoint(
            "POST",
            "/api/tenants/shop/tokens",
            Org,
            json!({"role": "user", "user_id": "u", "display_name": "d"}),
        ),
        endpoint(
            "POST",
            "/api/conversations",
            User,
            json!({"channel": "web", "title": "t"}),
        ),
        endpoint(
            "POST",
            "/api/conversations/cnv_none/messages",
            User,
            json!({"content": "c"}),
        ),
        endpoint(
            "POST",
            "/api/agent-rooms",
            User,
            json!({"name": "n", "members": ["k"]}),
        ),
        endpoint(
            "POST",
            "/api/agent-rooms/room_none/members",
            User,
            json!({"key": "k"}),
        ),
        Endpoint {
            open: &["metadata"],
            ..endpoint(
                "POST",
                "/api/agent-rooms/room_none/messages",
                User,
                json!({"content": "c", "metadata": {}}),
            )
        },
        endpoint(
            "POST",
            "/api/grants",
            Admin,
            json!({"caller_app": "a", "callee_app": "b", "allowed_agents": ["lead"]}),
        ),
        endpoint(
            "POST",
            "/api/grants/a/b/approve",
            Admin,
            json!({"allowed_agents": ["lead"]}),
        ),
        endpoint(
            "POST",
            "/api/wires",
            Admin,
            json!({"emitter_app": "a", "event_name": "e", "subscriber_app": "s", "target_agent": "lead", "target_heartbeat": "lead:x"}),
        ),
        endpoint(
            "PATCH",
            "/api/commitments/cmt_none",
            Admin,
            json!({"status": "done"}),
        ),
        endpoint(
            "POST",
            "/api/visions/vis_none/approve",
            Admin,
            json!({"note": "n"}),
        ),
        endpoint(
            "POST",
            "/api/visions/vis_none/reject",
            Admin,
            json!({"note": "n"}),
        ),
        endpoint(
            "POST",
            "/api/mcp/agent-invoke",
            App,
            json!({"agent": "lead", "prompt": "p", "from_agent": "lead"}),
        ),
        Endpoint {
            open: &["metadata"],
            ..endpoint(
                "POST",
                "/api/mcp/rooms-post",
                App,
                json!({"room_id": "r", "content": "c", "from_agent": "lead", "metadata": {}}),
            )
        },
        endpoint(
            "POST",
            "/api/dev/preflight",
            Developer,
            json!({"manifest": "x", "manifest_file": "f", "files": [{"path": "p", "content": "c", "content_base64": "Yw=="}]}),
        ),
        endpoint(
            "POST",
            &format!("/api/dev/apps/{app}/upgrade"),
            Developer,
            json!({"target_version": "1.0.0", "organization": "o", "tenant": "t", "force_grant_new_scopes": true}),
        ),
        Endpoint {
            open: &["settings"],
            ..endpoint(
                "PATCH",
                &format!("/api/dev/apps/{app}/settings"),
                Developer,
                json!({"settings": {}}),
            )
        },
        endpoint(
            "PUT",
            &format!("/api/dev/apps/{app}/secrets/api_key"),
            Developer,
            json!({"value": "v", "description": "d"}),
        ),
        endpoint(
            "POST",
            "/v1/tenants",
            Org,
            json!({"id": "t", "name": "n", "external_id": "e"}),
        ),
    ];
    let mut wrong_answers = Vec::new();
    for e in &endpoints {
        for path in fields(&e.body, e.open) {
            let body = with_wrong(&e.body, &path);
            let (status, answer) = host
                .send(
                    e.method,
                    &e.path,
                    Some(&token(e.who)),
                    super::Body::Json(body.clone()),
                )
                .await;
            let param = &answer["error"]["param"];
            if status != StatusCode::BAD_REQUEST || param != &json!(path) {
                wrong_answers.push(format!(
                    "{} {} with {body}: {status} param {param} ({})",
                    e.method, e.path, answer["error"]["message"]
                ));
            }
        }
    }
    assert!(
        wrong_answers.is_empty(),
        "refusals naming the wrong thing:\n{}",
        wrong_answers.join("\n")
    );

    // A body that is not an object, on every endpoint: nothing is stored.
    for e in &endpoints {
        for body in [json!(["name"]), json!("name"), json!(5), Value::Null] {
            let (status, answer) = host
                .send(
                    e.method,
                    &e.path,
                    Some(&token(e.who)),
                    super::Body::Json(body.clone()),
                )
                .await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{} {} {body}: {answer}",
                e.method,
                e.path
            );
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains("must be a JSON object"), "{message}");
        }
    }
    let (status, rooms) = host.get("/api/agent-rooms", &user).await;
    assert_eq!(status, StatusCode::OK, "{rooms}");
    assert_eq!(rooms["rooms"], json!([]), "a refused body stored a room");

    content_types(&host, &app, &admin, &user).await;
    methods(&host, &admin).await;
    chain_headers(&host, &app_token).await;
    host.stop().await;
}

/// One rule for every JSON endpoint: no `Content-Type`, JSON, or what `curl -d` sends are read
/// as JSON; a body that says it is something else is a 415 naming the header.
async fn content_types(host: &Host, app: &str, admin: &str, user: &str) {
    let send = |path: String, token: String, content_type: Option<&'static str>, body: Value| async move {
        let mut request = reqwest::Client::new()
            .post(format!("{}{path}", host.base()))
            .bearer_auth(token)
            .body(body.to_string());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        (status, response.json::<Value>().await.unwrap())
    };
    let calls = [
        (
            format!("/api/apps/{app}/tools/echo"),
            user.to_owned(),
            json!({"word": "hi"}),
            StatusCode::OK,
        ),
        (
            "/api/conversations".to_owned(),
            user.to_owned(),
            json!({"title": "t"}),
            StatusCode::CREATED,
        ),
        (
            "/api/agent-rooms".to_owned(),
            user.to_owned(),
            json!({"name": "typed"}),
            StatusCode::CREATED,
        ),
        (
            "/api/grants".to_owned(),
            admin.to_owned(),
            json!({"caller_app": app, "callee_app": app, "allowed_agents": ["lead"]}),
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (path, token, body, expected) in &calls {
        for content_type in [
            None,
            Some("application/json"),
            Some("application/json; charset=utf-8"),
            Some("application/x-www-form-urlencoded"),
        ] {
            let (status, answer) =
                send(path.clone(), token.clone(), content_type, body.clone()).await;
            assert_eq!(status, *expected, "{path} as {content_type:?}: {answer}");
            if *expected == StatusCode::BAD_REQUEST {
                // Read as JSON, refused by the rule of the grant (an app calls itself freely).
                assert_eq!(answer["error"]["param"], "callee_app", "{answer}");
            }
        }
        for content_type in ["text/html", "multipart/form-data; boundary=x"] {
            let (status, answer) = send(
                path.clone(),
                token.clone(),
                Some(content_type),
                body.clone(),
            )
            .await;
            assert_eq!(
                status,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{path} as {content_type}: {answer}"
            );
            assert_eq!(answer["error"]["param"], "Content-Type");
            assert_eq!(answer["error"]["code"], "unsupported_media_type");
        }
    }
}

/// A method a path does not answer: a JSON 405 whose message and `Allow` header name the
/// methods it answers.
async fn methods(host: &Host, admin: &str) {
    for (method, path) in [
        ("DELETE", "/api/conversations"),
        ("PUT", "/api/agent-rooms"),
        ("GET", "/api/mcp/agent-invoke"),
        ("POST", "/v1/usage"),
    ] {
        let response = reqwest::Client::new()
            .request(method.parse().unwrap(), format!("{}{path}", host.base()))
            .bearer_auth(admin)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
        let allow = response.headers()["allow"].to_str().unwrap().to_owned();
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        for allowed in allow.split(',') {
            assert!(message.contains(allowed.trim()), "{message} / {allow}");
        }
    }
}

/// A chain header that is not a number is the caller's mistake, named; a depth past the limit
/// is the team check's refusal.
async fn chain_headers(host: &Host, app_token: &str) {
    for (depth, status, code, param) in [
        (
            "x",
            StatusCode::BAD_REQUEST,
            "invalid_request",
            json!("X-Service-Chain-Depth"),
        ),
        (
            "-1",
            StatusCode::BAD_REQUEST,
            "invalid_request",
            json!("X-Service-Chain-Depth"),
        ),
        (
            "9",
            StatusCode::FORBIDDEN,
            "agent_call_refused",
            Value::Null,
        ),
    ] {
        let response = reqwest::Client::new()
            .post(format!("{}/api/mcp/agent-invoke", host.base()))
            .bearer_auth(app_token)
            .header("X-Service-Chain-Depth", depth)
            .json(&json!({"agent": "helper", "prompt": "p", "from_agent": "lead"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "depth {depth}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{body}");
        assert_eq!(body["error"]["param"], param, "{body}");
    }
}
