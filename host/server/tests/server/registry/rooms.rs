//! Group rooms over HTTP: every endpoint and limit, the timeline's pages across messages
//! posted in the same instant, each mention routing rule, `on_message` of the probe answering
//! with `rooms.post` until the chain depth stops it, `POST /api/mcp/rooms-post` through the
//! same checks, the scopes, and nothing of a room for another tenant or organization. The
//! stream is `room_streams`.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, code, slug};
use crate::{stores, unique};

/// The scopes of the probe without the room scopes.
pub(super) const TASKS: [&str; 2] = ["tasks.read", "tasks.write"];
/// The scopes of the probe with the room scopes.
pub(super) const ROOMS: [&str; 4] = ["tasks.read", "tasks.write", "rooms.read", "rooms.write"];

/// The probe as `app`, asking for the room scopes or not.
pub(super) fn manifest(app: &str, rooms: bool) -> String {
    let scopes = if rooms { &ROOMS[..] } else { &TASKS[..] };
    std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace("app_id: probe", &format!("app_id: {app}"))
        .replace(
            "required_scopes: [probe.read, probe.write]",
            &format!("required_scopes: [{}]", scopes.join(", ")),
        )
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
}

/// Registers and promotes `app` with manifest `text` (at its own version) and `component`.
pub(super) async fn publish_as(host: &Host, dev: &str, app: &str, text: &str, component: &[u8]) {
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("version: "))
        .unwrap()
        .trim()
        .to_owned();
    let (status, body) = host
        .register(
            app,
            dev,
            &[
                ("manifest", None, text.as_bytes()),
                ("component", None, component),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = host
        .post(
            &format!("/api/dev/apps/{app}/versions/{version}/promote"),
            dev,
            Body::None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

pub(super) async fn user_id(host: &Host, token: &str) -> String {
    let (status, me) = host.get("/api/tenant/me", token).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    me["user_id"].as_str().unwrap().to_owned()
}

pub(super) async fn create(
    host: &Host,
    token: &str,
    name: &str,
    members: &[&str],
) -> (StatusCode, Value) {
    host.post(
        "/api/agent-rooms",
        token,
        Body::Json(json!({"name": name, "members": members})),
    )
    .await
}

pub(super) async fn post(
    host: &Host,
    token: &str,
    room: &str,
    content: &str,
) -> (StatusCode, Value) {
    host.post(
        &format!("/api/agent-rooms/{room}/messages"),
        token,
        Body::Json(json!({"content": content})),
    )
    .await
}

/// The whole timeline of `room`, newest first, read `limit` at a time.
async fn timeline(host: &Host, token: &str, room: &str, limit: usize) -> Vec<Value> {
    let mut all = Vec::new();
    let mut path = format!("/api/agent-rooms/{room}/messages?limit={limit}");
    loop {
        let (status, page) = host.get(&path, token).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let messages = page["messages"].as_array().unwrap();
        assert!(messages.len() <= limit, "{page}");
        all.extend(messages.iter().cloned());
        match page["next_before"].as_str() {
            Some(before) => {
                assert_eq!(messages.len(), limit, "a page before the last is full");
                path = format!(
                    "/api/agent-rooms/{room}/messages?limit={limit}&before={}",
                    before.replace('+', "%2B")
                );
            }
            None => return all,
        }
    }
}

/// `rooms.post` from `app`'s probe as `from`.
pub(super) async fn probe_post(
    host: &Host,
    token: &str,
    app: &str,
    room: &str,
    from: &str,
    text: &str,
) -> Value {
    host.probe(
        app,
        token,
        json!({"op": "post", "room": room, "content": text, "from": from}),
    )
    .await
}

/// Waits until `room` holds `count` messages (and, after a pause, still exactly that many).
async fn settles_at(host: &Host, token: &str, room: &str, count: usize) -> Vec<Value> {
    for _ in 0..200 {
        let messages = timeline(host, token, room, 500).await;
        if messages.len() >= count {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let again = timeline(host, token, room, 500).await;
            assert_eq!(again.len(), count, "{again:#?}");
            return again;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("room {room} never held {count} messages");
}

#[tokio::test]
async fn rooms_route_mentions_and_keep_to_their_tenant() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, _dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let tag = slug("r");
        let bot = format!("bot-{tag}");
        let mute = format!("mute-{tag}");
        host.publish(&bot, &dev, &manifest(&bot, true), &component)
            .await;
        host.publish(&mute, &dev, &manifest(&mute, false), &component)
            .await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let alice = host.tenant_token(&acme.secret, "shop", "user").await;
        let bob = host.tenant_token(&acme.secret, "shop", "user").await;
        let carol = host.tenant_token(&acme.secret, "shop", "user").await;
        host.activate(&bot, &admin, &ROOMS).await;
        host.activate(&mute, &admin, &TASKS).await;
        let (alice_id, bob_id) = (user_id(&host, &alice).await, user_id(&host, &bob).await);
        let lead = format!("{bot}:lead");
        let helper = format!("{bot}:helper");
        let bob_key = format!("user:{bob_id}");

        // Create: the creator is a member; every bad member is named.
        let (status, room) = create(&host, &alice, "Launch", &[&lead, &bob_key]).await;
        assert_eq!(status, StatusCode::CREATED, "{room}");
        let id = room["id"].as_str().unwrap().to_owned();
        let keys: Vec<&str> = room["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [format!("user:{alice_id}"), lead.clone(), bob_key.clone()]
        );
        assert_eq!(room["members"][1]["display_name"], "Lead", "{room}");
        assert_eq!(room["members"][1]["type"], "agent", "{room}");
        assert_eq!(room["member_count"], 3, "{room}");
        for (members, status, field) in [
            (json!(["nobody"]), StatusCode::BAD_REQUEST, "members"),
            (json!(["user:42"]), StatusCode::BAD_REQUEST, "members"),
            (
                json!(["user:00000000-0000-4000-8000-000000000000"]),
                StatusCode::UNPROCESSABLE_ENTITY,
                "members",
            ),
            (
                json!([format!("{bot}:ghost")]),
                StatusCode::UNPROCESSABLE_ENTITY,
                "members",
            ),
            (
                json!(["never-installed:lead"]),
                StatusCode::UNPROCESSABLE_ENTITY,
                "members",
            ),
        ] {
            let (got, body) = host
                .post(
                    "/api/agent-rooms/",
                    &alice,
                    Body::Json(json!({"name": "x", "members": members})),
                )
                .await;
            assert_eq!(got, status, "{members}: {body}");
            assert_eq!(body["error"]["param"], field, "{body}");
        }
        let (status, body) = create(&host, &alice, "  ", &[]).await;
        assert_eq!(
            (status, body["error"]["param"].as_str()),
            (StatusCode::BAD_REQUEST, Some("name")),
            "{body}"
        );
        let (status, body) = host
            .post(
                "/api/agent-rooms",
                &alice,
                Body::Json(json!({"name": "x", "colour": "red"})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

        // Members: add (once), remove, the tenant's limit.
        let members = format!("/api/agent-rooms/{id}/members");
        let (status, added) = host
            .post(&members, &bob, Body::Json(json!({"key": helper})))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{added}");
        assert_eq!(added["room"]["member_count"], 4, "{added}");
        let (status, again) = host
            .post(&members, &bob, Body::Json(json!({"key": helper})))
            .await;
        assert_eq!(
            (status, &again["added"]),
            (StatusCode::OK, &json!(false)),
            "{again}"
        );
        let (status, room_after) = host.delete(&format!("{members}/{helper}"), &alice).await;
        assert_eq!(status, StatusCode::OK, "{room_after}");
        assert_eq!(room_after["member_count"], 3, "{room_after}");
        let (status, body) = host.delete(&format!("{members}/{helper}"), &alice).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNPROCESSABLE_ENTITY, "unknown_member")
        );
        let (status, body) = host.delete(&format!("{members}/not-a-key"), &alice).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        // Carol is no member: she may not see, change or post to the room; the admin sees it.
        let (status, body) = host.get(&format!("/api/agent-rooms/{id}"), &carol).await;
        assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "not_member"));
        let (status, _) = host
            .post(&members, &carol, Body::Json(json!({"key": helper})))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = post(&host, &carol, &id, "hello").await;
        assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "not_member"));
        let (status, body) = host.get(&format!("/api/agent-rooms/{id}"), &admin).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, body) = post(&host, &admin, &id, "hello").await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::FORBIDDEN, "not_member"),
            "the admin is no member"
        );
        let (status, listed) = host.get("/api/agent-rooms", &carol).await;
        assert_eq!(
            (status, listed["rooms"].as_array().unwrap().len()),
            (StatusCode::OK, 0),
            "{listed}"
        );
        let (status, listed) = host.get("/api/agent-rooms/", &bob).await;
        assert_eq!(
            (status, listed["rooms"][0]["id"].as_str()),
            (StatusCode::OK, Some(id.as_str())),
            "{listed}"
        );
        // The limit: only the admin sets it, 1 to 1,000; a full room refuses a member.
        let (status, _) = host
            .put(
                "/api/tenant/settings",
                &alice,
                Body::Json(json!({"room_member_limit": 3})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        for bad in [0, 1001] {
            let (status, body) = host
                .put(
                    "/api/tenant/settings",
                    &admin,
                    Body::Json(json!({"room_member_limit": bad})),
                )
                .await;
            assert_eq!(
                (status, body["error"]["param"].as_str()),
                (StatusCode::BAD_REQUEST, Some("room_member_limit")),
                "{body}"
            );
        }
        let (status, settings) = host
            .put(
                "/api/tenant/settings",
                &admin,
                Body::Json(json!({"room_member_limit": 3})),
            )
            .await;
        assert_eq!(
            (status, &settings["room_member_limit"]),
            (StatusCode::OK, &json!(3)),
            "{settings}"
        );
        let (status, body) = host
            .post(&members, &bob, Body::Json(json!({"key": helper})))
            .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::CONFLICT, "room_full"),
            "{body}"
        );
        let (status, body) = create(&host, &alice, "Crowd", &[&lead, &helper, &bob_key]).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::CONFLICT, "room_full"),
            "{body}"
        );
        let (status, settings) = host
            .put("/api/tenant/settings", &admin, Body::Json(json!({})))
            .await;
        assert_eq!(
            (status, &settings["room_member_limit"]),
            (StatusCode::OK, &json!(50)),
            "{settings}"
        );
        // The time zone: an IANA name, read by every user, set by the admin; a PUT that
        // leaves it out resets it.
        for bad in ["Mars/Olympus", "", "user", "+02:00"] {
            let (status, body) = host
                .put(
                    "/api/tenant/settings",
                    &admin,
                    Body::Json(json!({"time_zone": bad})),
                )
                .await;
            assert_eq!(
                (status, body["error"]["param"].as_str()),
                (StatusCode::BAD_REQUEST, Some("time_zone")),
                "{bad}: {body}"
            );
        }
        let (status, body) = host
            .put(
                "/api/tenant/settings",
                &admin,
                Body::Json(json!({"time_zone": 2})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("time_zone"),
            "{body}"
        );
        let (status, settings) = host
            .put(
                "/api/tenant/settings",
                &admin,
                Body::Json(json!({"time_zone": "America/New_York", "room_member_limit": 30})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{settings}");
        let (status, settings) = host.get("/api/tenant/settings", &bob).await;
        assert_eq!(
            (
                status,
                &settings["time_zone"],
                &settings["room_member_limit"]
            ),
            (StatusCode::OK, &json!("America/New_York"), &json!(30)),
            "{settings}"
        );
        let (status, settings) = host
            .put("/api/tenant/settings", &admin, Body::Json(json!({})))
            .await;
        assert_eq!(
            (status, &settings["time_zone"]),
            (StatusCode::OK, &Value::Null),
            "{settings}"
        );

        // Routing: members mentioned through Markdown, each once; non-members dropped; users
        // routed too; the agent's on_message answers in the room.
        let text = format!(
            "**@{lead}** and _@{lead}_, `@{helper}`, [@user:{bob_id}](x), @ghost:x and @user:{alice_id}."
        );
        let (status, posted) = post(&host, &alice, &id, &text).await;
        assert_eq!(status, StatusCode::CREATED, "{posted}");
        assert_eq!(
            posted["routed_targets"],
            json!([lead, bob_key, format!("user:{alice_id}")]),
            "{posted}"
        );
        assert_eq!(
            posted["message"]["mentions"],
            json!([lead, helper, bob_key, "ghost:x", format!("user:{alice_id}")]),
            "{posted}"
        );
        assert_eq!(posted["message"]["sender_ref"], format!("user:{alice_id}"));
        assert_eq!(posted["message"]["sender_type"], "user");
        assert_eq!(posted["message"]["seq"], 1);
        // The probe's on_message posts `lead got: <content>`, which mentions the lead again:
        // each answer is one hop further, and the hop that would be the ninth is not run.
        let messages = settles_at(&host, &alice, &id, 8).await;
        let answers: Vec<&Value> = messages
            .iter()
            .filter(|m| m["sender_type"] == "agent")
            .collect();
        assert_eq!(answers.len(), 7, "hops 2 to 8 answer");
        assert!(answers.iter().all(|m| m["sender_ref"] == lead.as_str()));
        assert!(
            answers[0]["content"]
                .as_str()
                .unwrap()
                .starts_with("lead got: lead got: "),
            "{}",
            answers[0]
        );
        // A broadcast (no mention) runs no handler.
        let (status, posted) = post(&host, &bob, &id, "nobody in particular").await;
        assert_eq!(
            (status, &posted["routed_targets"]),
            (StatusCode::CREATED, &json!([])),
            "{posted}"
        );
        settles_at(&host, &alice, &id, 9).await;

        // At most 20 routes: 22 members mentioned.
        let (status, _) = host
            .put(
                "/api/tenant/settings",
                &admin,
                Body::Json(json!({"room_member_limit": 30, "time_zone": "Asia/Tokyo"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let mut crowd = Vec::new();
        for _ in 0..22 {
            let token = host.tenant_token(&acme.secret, "shop", "user").await;
            crowd.push(format!("user:{}", user_id(&host, &token).await));
        }
        let crowd_refs: Vec<&str> = crowd.iter().map(String::as_str).collect();
        let (status, big) = create(&host, &alice, "Crowd", &crowd_refs).await;
        assert_eq!(status, StatusCode::CREATED, "{big}");
        let big_id = big["id"].as_str().unwrap();
        let all = crowd
            .iter()
            .map(|k| format!("@{k}"))
            .collect::<Vec<_>>()
            .join(" ");
        let (status, posted) = post(&host, &alice, big_id, &all).await;
        assert_eq!(status, StatusCode::CREATED, "{posted}");
        assert_eq!(posted["routed_targets"], json!(crowd[..20]), "{posted}");
        assert_eq!(posted["message"]["mentions"].as_array().unwrap().len(), 22);

        // Content: 20,000 characters, not 20,001, not blank; metadata kept.
        let (status, posted) = host
            .post(
                &format!("/api/agent-rooms/{big_id}/messages"),
                &alice,
                Body::Json(json!({"content": "x".repeat(20_000), "metadata": {"thread": "t1"}})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(posted["message"]["metadata"], json!({"thread": "t1"}));
        for content in ["y".repeat(20_001), " \n ".into()] {
            let (status, body) = post(&host, &alice, big_id, &content).await;
            assert_eq!(
                (status, body["error"]["param"].as_str()),
                (StatusCode::BAD_REQUEST, Some("content")),
                "{body}"
            );
        }

        // The timeline: 250 posts at once (many in the same instant) read 100 at a time,
        // newest first, each once.
        let (_, paged) = create(&host, &alice, "Paged", &[]).await;
        let paged_id = paged["id"].as_str().unwrap().to_owned();
        let posts = (0..250).map(|i| {
            let (host, alice, paged_id) = (&host, &alice, &paged_id);
            // A host this busy may shed a post (503 `overloaded`, docs/api.md): the client
            // sends it again, as a client of a busy host does.
            async move {
                let mut answer = post(host, alice, paged_id, &format!("m{i}")).await;
                for _ in 0..20 {
                    if answer.0 != StatusCode::SERVICE_UNAVAILABLE {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    answer = post(host, alice, paged_id, &format!("m{i}")).await;
                }
                answer
            }
        });
        let answers = futures::stream::iter(posts)
            .buffer_unordered(16)
            .collect::<Vec<_>>()
            .await;
        let refused: Vec<&(StatusCode, Value)> = answers
            .iter()
            .filter(|(status, _)| *status != StatusCode::CREATED)
            .collect();
        assert!(
            refused.is_empty(),
            "{} of 250 refused: {refused:?}",
            refused.len()
        );
        let all = timeline(&host, &alice, &paged_id, 100).await;
        let seqs: Vec<i64> = all.iter().map(|m| m["seq"].as_i64().unwrap()).collect();
        assert_eq!(seqs, (1..=250).rev().collect::<Vec<_>>());
        let times: Vec<&str> = all
            .iter()
            .map(|m| m["created_at"].as_str().unwrap())
            .collect();
        assert!(
            times.windows(2).all(|w| w[0] > w[1]),
            "strictly decreasing times"
        );
        for query in [
            "limit=0",
            "limit=501",
            "limit=ten",
            "before=yesterday",
            "colour=red",
        ] {
            let (status, body) = host
                .get(
                    &format!("/api/agent-rooms/{paged_id}/messages?{query}"),
                    &alice,
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        }
        let (status, page) = host
            .get(&format!("/api/agent-rooms/{paged_id}/messages"), &alice)
            .await;
        assert_eq!(
            (status, page["messages"].as_array().unwrap().len()),
            (StatusCode::OK, 100)
        );

        // rooms.post of a component: a member agent posts; the checks answer typed refusals.
        let ok = probe_post(
            &host,
            &admin,
            &bot,
            &id,
            "lead",
            &format!("hi @user:{bob_id}"),
        )
        .await;
        assert_eq!(ok["ok"]["routed_targets"], json!([bob_key]), "{ok}");
        assert_eq!(ok["ok"]["message"]["sender_ref"], lead.as_str(), "{ok}");
        for (room, from, decision) in [
            (id.as_str(), "helper", "not_member"),
            (
                "00000000-0000-4000-8000-000000000000",
                "lead",
                "unknown_room",
            ),
            (id.as_str(), "ghost", "unknown_agent"),
            (id.as_str(), "", "invalid_arguments"),
        ] {
            let refused = probe_post(&host, &admin, &bot, room, from, "hi").await;
            assert_eq!(refused["err"]["decision"], decision, "{refused}");
        }
        // Without rooms.write the post is refused, without rooms.read the timeline tool.
        let (status, _) = host
            .post(
                &members,
                &alice,
                Body::Json(json!({"key": format!("{mute}:lead")})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
        let refused = probe_post(&host, &admin, &mute, &id, "lead", "hi").await;
        assert_eq!(refused["err"]["decision"], "scope_denied", "{refused}");
        assert_eq!(
            refused["err"]["needed_scopes"],
            json!(["rooms.write"]),
            "{refused}"
        );
        let read = |app: String| {
            let body = json!({"op": "tool", "name": "rooms.messages", "args": {"room_id": id, "from_agent": "lead", "limit": 2}});
            let host = &host;
            let admin = &admin;
            async move { host.probe(&app, admin, body).await }
        };
        let read_ok = read(bot.clone()).await;
        assert_eq!(
            read_ok["ok"]["messages"].as_array().unwrap().len(),
            2,
            "{read_ok}"
        );
        let read_refused = read(mute.clone()).await;
        assert_eq!(
            read_refused["err"]["decision"], "scope_denied",
            "{read_refused}"
        );

        // POST /api/mcp/rooms-post: the same path for a container's APP_MCP_TOKEN.
        let app_token = |org: &str, tenant: &str, app: &str| {
            host.issuer
                .issue_app_token(
                    &atrium_platform::identity::app_token::AppToken {
                        org_id: org.to_owned(),
                        tenant_id: tenant.to_owned(),
                        user_id: None,
                        app_slug: app.to_owned(),
                        version: "1.0.0".into(),
                        call_id: "call-rooms".into(),
                        chain_depth: 1,
                        visited_agents: Vec::new(),
                    },
                    atrium_platform::identity::app_token::APP_TOKEN_TTL,
                )
                .unwrap()
        };
        let shop_bot = app_token(&acme.org_id, "shop", &bot);
        let mcp = |token: String, body: Value| {
            let host = &host;
            async move {
                host.post("/api/mcp/rooms-post", &token, Body::Json(body))
                    .await
            }
        };
        let (status, body) = mcp(shop_bot.clone(), json!({"room_id": id, "content": format!("@{bob_key} from outside"), "from_agent": "lead", "metadata": {"via": "shim"}})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["routed_targets"], json!([bob_key]), "{body}");
        assert_eq!(body["message"]["sender_ref"], lead.as_str(), "{body}");
        assert_eq!(
            body["message"]["metadata"],
            json!({"via": "shim"}),
            "{body}"
        );
        // Each refusal of a field names it in `param`.
        let oversized = "x".repeat(20_001);
        for (body, status, error, param) in [
            (
                json!({"room_id": id, "content": "x", "from_agent": "helper"}),
                StatusCode::FORBIDDEN,
                "not_member",
                Value::Null,
            ),
            (
                json!({"room_id": "nope", "content": "x", "from_agent": "lead"}),
                StatusCode::NOT_FOUND,
                "unknown_room",
                Value::Null,
            ),
            (
                json!({"room_id": id, "content": "x"}),
                StatusCode::BAD_REQUEST,
                "invalid_request",
                json!("from_agent"),
            ),
            (
                json!({"room_id": id, "content": "x", "from_agent": "ghost"}),
                StatusCode::BAD_REQUEST,
                "invalid_request",
                json!("from_agent"),
            ),
            (
                json!({"room_id": id, "content": "", "from_agent": "lead"}),
                StatusCode::BAD_REQUEST,
                "invalid_request",
                json!("content"),
            ),
            (
                json!({"room_id": id, "content": oversized, "from_agent": "lead"}),
                StatusCode::BAD_REQUEST,
                "invalid_request",
                json!("content"),
            ),
        ] {
            let (got, answer) = mcp(shop_bot.clone(), body.clone()).await;
            assert_eq!(
                (got, code(&answer), &answer["error"]["param"]),
                (status, error, &param),
                "{answer}"
            );
        }
        let (status, body) = mcp(
            app_token(&acme.org_id, "shop", &mute),
            json!({"room_id": id, "content": "x", "from_agent": "lead"}),
        )
        .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNPROCESSABLE_ENTITY, "scope_denied"),
            "{body}"
        );

        // Another tenant and another organization learn of nothing.
        let other = host.tenant_token(&acme.secret, "other", "admin").await;
        let globex = store.create_key(&unique("globex"), "ops").await.unwrap();
        let stranger = host.tenant_token(&globex.secret, "shop", "admin").await;
        for token in [&other, &stranger] {
            // The shop's member limit (30 now) and time zone (Tokyo) are its own.
            let (status, settings) = host.get("/api/tenant/settings", token).await;
            assert_eq!(status, StatusCode::OK, "{settings}");
            assert_eq!(
                (
                    &settings["room_member_limit"],
                    &settings["room_member_limit_is_default"],
                    &settings["time_zone"]
                ),
                (&json!(50), &json!(true), &Value::Null),
                "{settings}"
            );
            let (status, listed) = host.get("/api/agent-rooms", token).await;
            assert_eq!(
                (status, listed["rooms"].as_array().unwrap().len()),
                (StatusCode::OK, 0)
            );
            for (method, path, body) in [
                ("GET", format!("/api/agent-rooms/{id}"), Body::None),
                ("GET", format!("/api/agent-rooms/{id}/messages"), Body::None),
                ("GET", format!("/api/agent-rooms/{id}/stream"), Body::None),
                (
                    "POST",
                    format!("/api/agent-rooms/{id}/messages"),
                    Body::Json(json!({"content": "hi"})),
                ),
                (
                    "POST",
                    format!("/api/agent-rooms/{id}/members"),
                    Body::Json(json!({"key": bob_key})),
                ),
                (
                    "DELETE",
                    format!("/api/agent-rooms/{id}/members/{bob_key}"),
                    Body::None,
                ),
            ] {
                let (status, body) = host.send(method, &path, Some(token), body).await;
                assert_eq!(
                    (status, code(&body)),
                    (StatusCode::NOT_FOUND, "unknown_room"),
                    "{method} {path}"
                );
            }
        }
        for token in [
            app_token(&acme.org_id, "other", &bot),
            app_token(&globex.org_id, "shop", &bot),
        ] {
            let (status, body) = mcp(
                token,
                json!({"room_id": id, "content": "x", "from_agent": "lead"}),
            )
            .await;
            assert_ne!(status, StatusCode::CREATED, "{body}");
        }
        let (status, _) = host.get("/api/agent-rooms", &shop_bot).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "an app token is no tenant token"
        );
        host.stop().await;
    }
}
