//! Publishing the probe test component to a host that runs as a child process, for the load
//! tools that need installed apps: the developer and the organization key made where the host
//! keeps them, the probe's manifest under a slug, the multipart body of a registration.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// The host's log, shown when a request fails.
pub static LOG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

pub fn multipart(parts: &[(&str, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "atrium-bench-boundary-77c1";
    let mut body = Vec::new();
    for (name, bytes) in parts {
        write!(
            body,
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
        )
        .unwrap();
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    write!(body, "--{boundary}--\r\n").unwrap();
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The probe's manifest as app `slug` at `version`, with scopes of the catalogue and its
/// every-minute schedule moved to once a year (which would turn "idle" into a call a minute
/// per install); the component registers a handler for each, so they stay declared.
pub fn manifest(slug: &str, version: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace(r#"cron: "* * * * *""#, r#"cron: "0 0 1 1 *""#)
        .replace("app_id: probe", &format!("app_id: {slug}"))
        .replace("version: 1.0.0", &format!("version: {version}"))
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
}

pub async fn expect(response: reqwest::Response, what: &str) -> Value {
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let log = LOG.get().and_then(|p| std::fs::read_to_string(p).ok());
        let tail: Vec<&str> = log
            .as_deref()
            .unwrap_or("")
            .lines()
            .rev()
            .take(20)
            .collect();
        panic!(
            "{what}: {status} {body}\nthe host's log ends:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    body
}

/// A developer allowed to publish (its token) and an organization key (`atr_...`), made in the
/// SQLite store under `data` where the host keeps its data.
pub async fn developer_and_org(data: &Path) -> (String, atrium_store::CreatedKey) {
    let store = atrium_store::Store::open_sqlite(data).await.unwrap();
    let developer = store
        .create_developer(&atrium_store::NewDeveloper {
            email: "bench@example.com",
            login: "bench",
            publish_allowed: true,
            dev_tenant: None,
        })
        .await
        .unwrap();
    let org = store.create_key("bench-org", "bench").await.unwrap();
    drop(store);
    let issuer = atrium_platform::identity::TokenIssuer::load_or_create(data, None).unwrap();
    let dev = issuer
        .issue(
            &developer.id,
            &developer.email,
            Duration::from_secs(6 * 3600),
        )
        .unwrap();
    (dev, org)
}

/// Registers the probe component as `slug` at `version` and promotes it, with developer token
/// `dev`.
pub async fn publish(client: &reqwest::Client, base: &str, dev: &str, slug: &str, version: &str) {
    publish_manifest(client, base, dev, slug, version, &manifest(slug, version)).await;
}

/// Registers the probe component as `slug` at `version` with manifest `text`, and promotes it.
pub async fn publish_manifest(
    client: &reqwest::Client,
    base: &str,
    dev: &str,
    slug: &str,
    version: &str,
    text: &str,
) {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    let (content_type, body) =
        multipart(&[("manifest", text.as_bytes()), ("component", &component)]);
    let r = client
        .post(format!("{base}/api/dev/apps/{slug}/versions"))
        .bearer_auth(dev)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    expect(r, "register").await;
    let r = client
        .post(format!(
            "{base}/api/dev/apps/{slug}/versions/{version}/promote"
        ))
        .bearer_auth(dev)
        .send()
        .await
        .unwrap();
    expect(r, "promote").await;
}

/// Sends `request` and answers how long it took and the body (a failure panics with the host's
/// log).
pub async fn timed(request: reqwest::RequestBuilder, what: &str) -> (Duration, Value) {
    let started = std::time::Instant::now();
    let response = request.send().await.unwrap();
    let body = expect(response, what).await;
    (started.elapsed(), body)
}

/// Prints the p50, p90 and p99 of `samples` under `label`, and answers them in ms.
pub fn report(label: &str, samples: &mut [Duration]) -> [f64; 3] {
    samples.sort();
    let q = [0.5, 0.9, 0.99].map(|q| super::support::quantile_ms(samples, q));
    println!(
        "{label:<20} p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms over {} runs",
        q[0],
        q[1],
        q[2],
        samples.len()
    );
    q
}
