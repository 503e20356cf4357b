//! The room stream over HTTP: the room-bot examples (Rust and Python) answering a mention
//! with `rooms.post` as a stream sees it, keepalive, replay with `Last-Event-ID` (also from a
//! host started after the posts), a slow subscriber that overflows its buffer and loses
//! nothing, 1,000 connect/disconnect cycles that leave no subscriber behind, a member removed
//! from the room whose stream ends before the next message, and, with two hosts on PostgreSQL,
//! a post (and a removal) on one host reaching streams on the other, also after the listening
//! connections were killed.

use std::time::Duration;

use atrium_platform::rooms::RoomsConfig;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::rooms::{ROOMS, create, manifest, post, probe_post, publish_as, user_id};
use super::{Body, Host, slug};
use crate::{stores, unique};

/// One block of a server-sent event stream.
#[derive(Debug, Default)]
struct Block {
    event: Option<String>,
    id: Option<String>,
    data: Option<String>,
    comment: Option<String>,
}

/// A room stream as a client reads it.
struct Stream {
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Vec<u8>>> + Send>>,
    buffer: String,
}

impl Stream {
    /// Opens the stream of `room` (after `last` when given), asserting it is one.
    async fn open(base: &str, token: &str, room: &str, last: Option<i64>) -> Stream {
        let mut request = reqwest::Client::new()
            .get(format!("{base}/api/agent-rooms/{room}/stream"))
            .bearer_auth(token);
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Stream {
            body: Box::pin(
                response
                    .bytes_stream()
                    .map(|chunk| chunk.map(|b| b.to_vec())),
            ),
            buffer: String::new(),
        }
    }

    /// The next block, within `wait`.
    async fn block(&mut self, wait: Duration) -> Option<Block> {
        let until = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let text: String = self.buffer.drain(..end + 2).collect();
                let mut block = Block::default();
                for line in text.lines().filter(|l| !l.is_empty()) {
                    let (name, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
                    match name {
                        "" => block.comment = Some(value),
                        "event" => block.event = Some(value),
                        "id" => block.id = Some(value),
                        "data" => block.data = Some(value),
                        _ => {}
                    }
                }
                return Some(block);
            }
            let chunk = tokio::time::timeout_at(until, self.body.next())
                .await
                .ok()??;
            self.buffer
                .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
    }

    /// The next message (keepalives skipped), its event id checked against its seq.
    async fn message(&mut self) -> Value {
        loop {
            let block = self
                .block(Duration::from_secs(20))
                .await
                .expect("a message within 20 seconds");
            if block.comment.is_some() {
                continue;
            }
            assert_eq!(block.event.as_deref(), Some("message"), "{block:?}");
            let message: Value = serde_json::from_str(block.data.as_deref().unwrap()).unwrap();
            assert_eq!(block.id, Some(message["seq"].to_string()), "{block:?}");
            return message;
        }
    }

    /// The `closed` event that ends the stream (keepalives skipped), then the end: its data.
    async fn closed(&mut self) -> Value {
        let block = loop {
            let block = self
                .block(Duration::from_secs(20))
                .await
                .expect("an event within 20 seconds");
            if block.comment.is_none() {
                break block;
            }
        };
        assert_eq!(block.event.as_deref(), Some("closed"), "{block:?}");
        assert_eq!(block.id, None, "{block:?}");
        let rest = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(chunk) = self.body.next().await {
                self.buffer
                    .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
            }
        })
        .await;
        assert!(rest.is_ok(), "the stream ends after `closed`");
        assert!(
            self.buffer
                .lines()
                .all(|l| l.is_empty() || l.starts_with(':')),
            "nothing but keepalives after `closed`: {}",
            self.buffer
        );
        serde_json::from_str(block.data.as_deref().unwrap()).unwrap()
    }

    /// The next `n` messages' seqs.
    async fn seqs(&mut self, n: usize) -> Vec<i64> {
        let mut seqs = Vec::with_capacity(n);
        for _ in 0..n {
            seqs.push(self.message().await["seq"].as_i64().unwrap());
        }
        seqs
    }
}

/// Waits until the host's hub holds no subscriber.
async fn no_subscriber_left(host: &Host) {
    for _ in 0..200 {
        let stats = host.serving.rooms().stats();
        if stats.subscribers == 0 && stats.rooms == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "subscribers left behind: {:?}",
        host.serving.rooms().stats()
    );
}

#[tokio::test]
async fn streams_keep_alive_replay_absorb_a_slow_reader_and_leave_nothing_behind() {
    let (store, dir) = stores().await.remove(0);
    let config = RoomsConfig {
        keepalive: Duration::from_millis(200),
        buffer: 4,
        notify: true,
    };
    let host = Host::start_configured(&store, None, config.clone()).await;
    let (_, dev) = host.sign_up("ada", true).await;
    let tag = slug("s");
    // The room bots, Rust and Python, each under an app id of its own.
    let rust = format!("rb-{tag}");
    let python = format!("rbpy-{tag}");
    for (app, manifest, component) in [
        (
            &rust,
            std::fs::read_to_string(atrium_test_artifacts::ROOM_BOT_MANIFEST)
                .unwrap()
                .replace("app_id: room-bot", &format!("app_id: {rust}")),
            std::fs::read(atrium_test_artifacts::ROOM_BOT).unwrap(),
        ),
        (
            &python,
            std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../examples/room-bot-py/atrium.app.yaml"
            ))
            .unwrap()
            .replace("app_id: room-bot-py", &format!("app_id: {python}")),
            std::fs::read(atrium_test_artifacts::sdk::python_component(
                "examples/room-bot-py",
            ))
            .unwrap(),
        ),
    ] {
        publish_as(&host, &dev, app, &manifest, &component).await;
    }
    let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
    let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
    let alice = host.tenant_token(&acme.secret, "shop", "user").await;
    let alice_id = user_id(&host, &alice).await;
    host.activate(&rust, &admin, &["rooms.write"]).await;
    host.activate(&python, &admin, &["rooms.write"]).await;
    let (rust_key, python_key) = (format!("{rust}:concierge"), format!("{python}:concierge"));
    let (status, room) = create(&host, &alice, "Bots", &[&rust_key, &python_key]).await;
    assert_eq!(status, StatusCode::CREATED, "{room}");
    let id = room["id"].as_str().unwrap().to_owned();

    // A stream sees the post, then each mentioned bot's answer, posted with rooms.post.
    let mut live = Stream::open(host.base(), &alice, &id, None).await;
    let (status, _) = post(
        &host,
        &alice,
        &id,
        &format!("@{rust_key} and **@{python_key}** is the build green?"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let first = live.message().await;
    assert_eq!(
        (first["seq"].as_i64(), first["sender_ref"].as_str()),
        (Some(1), Some(format!("user:{alice_id}").as_str()))
    );
    let mut answers = [live.message().await, live.message().await];
    answers.sort_by_key(|m| m["sender_ref"].as_str().unwrap().to_owned());
    let expected = format!("@user:{alice_id} thanks, concierge read: and is the build green?");
    for (answer, key) in answers.iter().zip([&rust_key, &python_key]) {
        assert_eq!(answer["sender_ref"], key.as_str(), "{answer}");
        assert_eq!(answer["sender_type"], "agent");
        assert_eq!(answer["content"], expected.as_str(), "{answer}");
        assert_eq!(answer["mentions"], json!([format!("user:{alice_id}")]));
    }
    // Idle: a keepalive comment at the configured interval.
    let block = live.block(Duration::from_secs(5)).await.unwrap();
    assert_eq!(block.comment.as_deref(), Some("keepalive"), "{block:?}");

    // Reconnecting with Last-Event-ID replays what was missed, then goes on live.
    let mut again = Stream::open(host.base(), &alice, &id, Some(1)).await;
    assert_eq!(again.seqs(2).await, [2, 3]);
    post(&host, &alice, &id, "four").await;
    assert_eq!(again.seqs(1).await, [4]);
    assert_eq!(live.seqs(1).await, [4]);
    let bad = reqwest::Client::new()
        .get(format!("{}/api/agent-rooms/{id}/stream", host.base()))
        .bearer_auth(&alice)
        .header("Last-Event-ID", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);

    // A reader that stops reading: 400 posts of 20,000 characters overflow its buffer of 4
    // (and the sockets' buffers); the posts and the live reader do not wait for it, and
    // when it reads again it gets every message, in order, from the timeline.
    let mut slow = Stream::open(host.base(), &alice, &id, None).await;
    let reader = tokio::spawn(async move {
        let seqs = live.seqs(400).await;
        (live, seqs)
    });
    let big = "z".repeat(20_000);
    for _ in 0..400 {
        let (status, _) = post(&host, &alice, &id, &big).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (live, live_seqs) = reader.await.unwrap();
    assert_eq!(live_seqs, (5..=404).collect::<Vec<_>>());
    assert!(
        host.serving.rooms().stats().overflowed > 0,
        "{:?}",
        host.serving.rooms().stats()
    );
    assert_eq!(slow.seqs(400).await, (5..=404).collect::<Vec<_>>());
    drop((live, again, slow));

    // 1,000 streams opened and dropped leave no subscriber behind.
    for i in 0..1000 {
        let stream = Stream::open(host.base(), &alice, &id, (i % 2 == 0).then_some(400)).await;
        drop(stream);
    }
    no_subscriber_left(&host).await;

    // Members leave. When an agent leaves, the readers are still members and their streams go
    // on; when a reader is removed, its stream ends with `closed` before the next message, and
    // it cannot open the stream again.
    let bob = host.tenant_token(&acme.secret, "shop", "user").await;
    let bob_key = format!("user:{}", user_id(&host, &bob).await);
    let members = format!("/api/agent-rooms/{id}/members");
    let (status, body) = host
        .post(&members, &alice, Body::Json(json!({"key": bob_key})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mut bobs = Stream::open(host.base(), &bob, &id, None).await;
    let mut alices = Stream::open(host.base(), &alice, &id, None).await;
    let (status, body) = host
        .send(
            "DELETE",
            &format!("{members}/{python_key}"),
            Some(&admin),
            Body::None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    post(&host, &alice, &id, "an agent left").await;
    assert_eq!(
        (bobs.seqs(1).await, alices.seqs(1).await),
        (vec![405], vec![405])
    );
    let (status, body) = host
        .send(
            "DELETE",
            &format!("{members}/{bob_key}"),
            Some(&alice),
            Body::None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    post(&host, &alice, &id, "bob left").await;
    let closed = bobs.closed().await;
    assert_eq!(closed["code"], "not_member", "{closed}");
    assert!(
        closed["message"].as_str().unwrap().contains(&bob_key),
        "{closed}"
    );
    assert_eq!(alices.seqs(1).await, [406]);
    let (status, body) = host
        .get(&format!("/api/agent-rooms/{id}/stream"), &bob)
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("not_member")),
        "{body}"
    );
    drop((bobs, alices));
    no_subscriber_left(&host).await;

    // After a restart, a new host replays the timeline to a reconnecting client.
    let data = host.data().to_owned();
    host.stop().await;
    let reopened = crate::reopen(&store, dir.as_ref()).await;
    let second = Host::start_with(
        &reopened,
        Some(atrium_platform::artifacts::Artifacts::local(&data.join("artifacts")).unwrap()),
    )
    .await;
    let mut resumed = Stream::open(second.base(), &alice, &id, Some(402)).await;
    assert_eq!(resumed.seqs(2).await, [403, 404]);
    drop(resumed);
    second.stop().await;
}

#[tokio::test]
async fn a_post_reaches_streams_on_every_host_and_survives_a_lost_listener() {
    let Some((store, _)) = stores().await.into_iter().nth(1) else {
        return; // PostgreSQL only: one host on SQLite.
    };
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    let first = Host::start(&store).await;
    let second_store = crate::reopen(&store, None).await;
    let second = Host::start_with(
        &second_store,
        Some(
            atrium_platform::artifacts::Artifacts::local(&first.data().join("artifacts")).unwrap(),
        ),
    )
    .await;
    let (_, dev) = first.sign_up("ada", true).await;
    let tag = slug("x");
    let bot = format!("bot-{tag}");
    first
        .publish(&bot, &dev, &manifest(&bot, true), &component)
        .await;
    let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
    let admin = first.tenant_token(&acme.secret, "shop", "admin").await;
    let alice = first.tenant_token(&acme.secret, "shop", "user").await;
    first.activate(&bot, &admin, &ROOMS).await;
    let (status, room) = create(&first, &alice, "Everywhere", &[&format!("{bot}:lead")]).await;
    assert_eq!(status, StatusCode::CREATED, "{room}");
    let id = room["id"].as_str().unwrap().to_owned();

    // Streams on both hosts; posts taken by either host reach both.
    let mut here = Stream::open(first.base(), &alice, &id, None).await;
    let mut there = Stream::open(second.base(), &alice, &id, None).await;
    post(&first, &alice, &id, "from the first host").await;
    post(&second, &alice, &id, "from the second host").await;
    assert_eq!(here.seqs(2).await, [1, 2]);
    assert_eq!(there.seqs(2).await, [1, 2]);
    // An agent's post made in an app call on the first host too.
    let answer = probe_post(&first, &admin, &bot, &id, "lead", "from an app").await;
    assert_eq!(
        answer["ok"]["message"]["sender_ref"],
        format!("{bot}:lead"),
        "{answer}"
    );
    assert_eq!(there.message().await["content"], "from an app");

    // The listening connections are killed: posts made meanwhile still reach the streams,
    // read from the timeline once the listener listens again.
    assert!(kill_listeners().await > 0, "the hosts listen");
    for i in 0..5 {
        post(&first, &alice, &id, &format!("after the loss {i}")).await;
    }
    assert_eq!(there.seqs(5).await, [4, 5, 6, 7, 8]);
    assert_eq!(here.seqs(6).await, [3, 4, 5, 6, 7, 8]);

    // A member removed on the first host: the stream on the second host ends before the
    // next message (the removal is notified like a post).
    let bob = first.tenant_token(&acme.secret, "shop", "user").await;
    let bob_key = format!("user:{}", user_id(&first, &bob).await);
    let members = format!("/api/agent-rooms/{id}/members");
    let (status, body) = first
        .post(&members, &alice, Body::Json(json!({"key": bob_key})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mut bobs = Stream::open(second.base(), &bob, &id, None).await;
    let (status, body) = first
        .send(
            "DELETE",
            &format!("{members}/{bob_key}"),
            Some(&admin),
            Body::None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    post(&first, &alice, &id, "bob left").await;
    assert_eq!(bobs.closed().await["code"], "not_member");
    assert_eq!(there.seqs(1).await, [9]);
    drop((here, there, bobs));
    no_subscriber_left(&first).await;
    no_subscriber_left(&second).await;
    second.stop().await;
    first.stop().await;
}

/// Ends every connection listening for room notifications; answers how many there were.
async fn kill_listeners() -> i64 {
    let url = std::env::var("ATRIUM_TEST_DATABASE_URL").unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let killed: i64 = sqlx::query_scalar(
        "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE query ILIKE 'LISTEN%atrium_rooms%' AND pid <> pg_backend_pid()",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    killed
}
