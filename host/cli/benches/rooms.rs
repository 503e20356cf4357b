//! Group rooms measured from outside: `atrium serve` runs as its own process.
//!
//! `cargo bench -p atrium-cli --bench rooms` (release). One tenant, one room, rate limits off:
//!
//! 1. **post to delivery, one host** (SQLite): `ATRIUM_BENCH_STREAMS` streams (default 1,000)
//!    open on the room; `ATRIUM_BENCH_RUNS` posts (default 200), one every 10 ms; a sample is
//!    the time from sending a post to one stream reading it, for every post and stream.
//! 2. **posts per second**: 8 posters for 5 seconds with the streams open.
//! 3. **memory per idle stream**: the host's RSS before and after opening
//!    `ATRIUM_BENCH_IDLE_STREAMS` (default 10,000) streams on the room.
//! 4. With `ATRIUM_TEST_DATABASE_URL` (PostgreSQL): two hosts on it, the streams on the second,
//!    the posts on the first (the `LISTEN`/`NOTIFY` path); then the commit rate of posts with
//!    the notification on and off (`ATRIUM_ROOM_NOTIFY=0`), 8 posters for 5 seconds each.
//!
//! The load tool runs on the same two cores as the host: the reader tasks of 1,000 streams
//! compete with the host for them. `ATRIUM_BENCH_HOST_NICE` and `ATRIUM_BENCH_HOST_CPUS`
//! place the host as in the other load tools.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

#[path = "support/publish.rs"]
#[allow(dead_code)]
mod publish;
#[allow(dead_code)]
mod support;
use publish::{LOG, report, timed};
use support::HostProcess;

/// What every stream read: (seq, when) pairs.
type Seen = Arc<Mutex<Vec<(i64, Instant)>>>;

/// Opens a stream of `room` on `base` and records each message's seq and arrival in `seen`.
async fn open_stream(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    room: &str,
    seen: Option<Seen>,
) -> tokio::task::JoinHandle<()> {
    let response = client
        .get(format!("{base}/api/agent-rooms/{room}/stream"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    tokio::spawn(async move {
        let mut body = response.bytes_stream();
        let mut buffer = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            let now = Instant::now();
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                if let (Some(seen), Some(id)) =
                    (&seen, block.lines().find_map(|l| l.strip_prefix("id: ")))
                {
                    seen.lock().unwrap().push((id.parse().unwrap(), now));
                }
            }
        }
    })
}

/// Posts `content` to `room` as `token`: the stored message's seq.
async fn post(client: &reqwest::Client, base: &str, token: &str, room: &str, content: &str) -> i64 {
    let (_, posted) = timed(
        client
            .post(format!("{base}/api/agent-rooms/{room}/messages"))
            .bearer_auth(token)
            .json(&json!({"content": content})),
        "post",
    )
    .await;
    posted["message"]["seq"].as_i64().unwrap()
}

/// A tenant admin token of organization key `org` and a room it created.
async fn tenant_and_room(client: &reqwest::Client, base: &str, org: &str) -> (String, String) {
    let (_, token) = timed(
        client
            .post(format!("{base}/api/tenants/shop/tokens"))
            .bearer_auth(org)
            .json(&json!({"role": "admin"})),
        "token",
    )
    .await;
    let admin = token["token"].as_str().unwrap().to_owned();
    let (_, room) = timed(
        client
            .post(format!("{base}/api/agent-rooms"))
            .bearer_auth(&admin)
            .json(&json!({"name": "bench"})),
        "room",
    )
    .await;
    (admin, room["id"].as_str().unwrap().to_owned())
}

/// Post-to-delivery latency: `runs` posts to `post_base`, read by `streams` streams on
/// `stream_base`.
async fn latency(
    client: &reqwest::Client,
    post_base: &str,
    stream_base: &str,
    (admin, room): (&str, &str),
    (streams, runs): (usize, usize),
    label: &str,
) {
    let seen: Seen = Arc::default();
    let mut readers = Vec::with_capacity(streams);
    for _ in 0..streams {
        readers.push(open_stream(client, stream_base, admin, room, Some(seen.clone())).await);
    }
    let mut sent: HashMap<i64, Instant> = HashMap::new();
    for i in 0..runs {
        let at = Instant::now();
        let seq = post(client, post_base, admin, room, &format!("m{i}")).await;
        sent.insert(seq, at);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut samples: Vec<Duration> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(seq, at)| sent.get(seq).map(|s| at.saturating_duration_since(*s)))
        .collect();
    println!(
        "{label}: {} deliveries of {} expected",
        samples.len(),
        runs * streams
    );
    report(label, &mut samples);
    for reader in readers {
        reader.abort();
    }
}

/// Posts per second that `posters` concurrent clients sustain for `secs` seconds.
async fn throughput(client: &reqwest::Client, base: &str, admin: &str, room: &str, label: &str) {
    let (posters, secs) = (8, 5);
    let until = Instant::now() + Duration::from_secs(secs);
    let tasks: Vec<_> = (0..posters)
        .map(|_| {
            let (client, base, admin, room) = (
                client.clone(),
                base.to_owned(),
                admin.to_owned(),
                room.to_owned(),
            );
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < until {
                    post(&client, &base, &admin, &room, "throughput").await;
                    n += 1;
                }
                n
            })
        })
        .collect();
    let total: u64 = support::join_all(tasks).await.into_iter().sum();
    println!(
        "{label}: {total} posts in {secs} s by {posters} posters = {:.0} posts/s",
        total as f64 / secs as f64
    );
}

fn main() {
    let runs = support::env_number::<usize>("ATRIUM_BENCH_RUNS", 200);
    let streams = support::env_number::<usize>("ATRIUM_BENCH_STREAMS", 1_000);
    let idle = support::env_number::<usize>("ATRIUM_BENCH_IDLE_STREAMS", 10_000);
    let placement = support::Placement::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let open = [
        ("ATRIUM_KEY_RATE", "0"),
        ("ATRIUM_TENANT_RATE", "0"),
        ("ATRIUM_MAX_IN_FLIGHT", "100000"),
    ];
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .unwrap();
        let data = tempfile::tempdir().unwrap();
        let _ = LOG.set(data.path().join("host.log"));
        let (_, org) = publish::developer_and_org(data.path()).await;
        let host = HostProcess::start(data.path(), &open, &placement).await;
        let base = host.base.clone();
        let (admin, room) = tenant_and_room(&client, &base, &org.secret).await;
        println!("atrium serve ({}), SQLite", placement.describe());
        latency(
            &client,
            &base,
            &base,
            (&admin, &room),
            (streams, runs),
            &format!("post to delivery, {streams} streams, one host"),
        )
        .await;
        throughput(&client, &base, &admin, &room, "posts per second, SQLite").await;
        let (before, _) = host.rss();
        let mut idle_readers = Vec::with_capacity(idle);
        for _ in 0..idle {
            idle_readers.push(open_stream(&client, &base, &admin, &room, None).await);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (after, _) = host.rss();
        println!(
            "{idle} idle streams: RSS {} MiB before, {} MiB after, {:.1} KiB per stream",
            before / 1024,
            after / 1024,
            (after.saturating_sub(before)) as f64 / idle as f64
        );
        for reader in idle_readers {
            reader.abort();
        }
        host.stop();

        let Ok(url) = std::env::var("ATRIUM_TEST_DATABASE_URL") else {
            println!("ATRIUM_TEST_DATABASE_URL is not set: the two-host runs are skipped");
            return;
        };
        let store = atrium_store::Store::open_url(&url).await.unwrap();
        let org = store
            .create_key(&format!("bench-rooms-{}", std::process::id()), "bench")
            .await
            .unwrap();
        store.close().await;
        for notify in ["1", "0"] {
            let env: Vec<(&str, &str)> = open
                .iter()
                .copied()
                .chain([
                    ("ATRIUM_DATABASE_URL", url.as_str()),
                    ("ATRIUM_ROOM_NOTIFY", notify),
                ])
                .collect();
            let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let a = HostProcess::start(a_dir.path(), &env, &placement).await;
            let b = HostProcess::start(b_dir.path(), &env, &placement).await;
            let (admin, room) = tenant_and_room(&client, &a.base, &org.secret).await;
            if notify == "1" {
                latency(
                    &client,
                    &a.base,
                    &b.base,
                    (&admin, &room),
                    (streams, runs),
                    &format!("post to delivery, {streams} streams, across two hosts"),
                )
                .await;
            }
            throughput(
                &client,
                &a.base,
                &admin,
                &room,
                &format!("posts per second, PostgreSQL, notify={notify}"),
            )
            .await;
            a.stop();
            b.stop();
        }
    });
}
