//! A running host for the tests that go over HTTP: [`Host`] serves a [`HostState`] on a free
//! port of the loopback interface with `atrium_server::serve` (so the background work and the
//! graceful shutdown are the real ones), and sends requests to it with reqwest.

use std::time::Duration;

use atrium_server::HostState;
use reqwest::StatusCode;
use serde_json::Value;

/// A host serving on a free port until [`Host::stop`].
pub(crate) struct Host {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

/// A request body.
pub(crate) enum Body {
    None,
    Json(Value),
    /// A content type and the bytes.
    Raw(String, Vec<u8>),
}

impl Host {
    /// The host's address, `http://127.0.0.1:<port>`.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Serves `state` on a free port.
    pub(crate) async fn start(state: HostState) -> Host {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            atrium_server::serve(listener, state, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Host {
            base,
            stop: Some(stop),
            task,
        }
    }

    /// Shuts the host down and waits (at most 10 seconds) for it to finish.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut self.task).await;
    }

    /// Sends a request; the status and the JSON body (or the text as a JSON string).
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Body,
    ) -> (StatusCode, Value) {
        let client = reqwest::Client::new();
        let mut request = client.request(method.parse().unwrap(), format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request = match body {
            Body::None => request,
            Body::Json(value) => request.json(&value),
            Body::Raw(content_type, bytes) => {
                request.header("content-type", content_type).body(bytes)
            }
        };
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Reads the paged list at `path` (no query of its own) `limit` items at a time, following
    /// `next_cursor` to the end: the pages' lists under `key`. Every page but the last is full
    /// and has a cursor; the last has none.
    pub(crate) async fn pages(
        &self,
        path: &str,
        token: &str,
        key: &str,
        limit: usize,
    ) -> Vec<Vec<Value>> {
        let mut pages = Vec::new();
        let mut next = format!("{path}?limit={limit}");
        loop {
            let (status, page) = self.get(&next, token).await;
            assert_eq!(status, StatusCode::OK, "{next}: {page}");
            let items = page[key]
                .as_array()
                .unwrap_or_else(|| panic!("{page}"))
                .clone();
            assert!(items.len() <= limit, "{page}");
            pages.push(items.clone());
            match page["next_cursor"].as_str() {
                Some(cursor) => {
                    assert_eq!(items.len(), limit, "a page before the last is full: {page}");
                    next = format!("{path}?limit={limit}&cursor={cursor}");
                }
                None => {
                    assert!(page["next_cursor"].is_null(), "{page}");
                    return pages;
                }
            }
        }
    }

    pub(crate) async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.send("GET", path, Some(token), Body::None).await
    }

    pub(crate) async fn post(&self, path: &str, token: &str, body: Body) -> (StatusCode, Value) {
        self.send("POST", path, Some(token), body).await
    }

    /// One operation of the probe app `app` (its `platform` tool, tests/guests/probe), called
    /// with `token`: the tool's result (`{"ok": ...}` or `{"err": ...}`).
    pub(crate) async fn probe(&self, app: &str, token: &str, op: Value) -> Value {
        let (status, body) = self
            .post(
                &format!("/api/apps/{app}/tools/platform"),
                token,
                Body::Json(op),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["result"].clone()
    }

    pub(crate) async fn put(&self, path: &str, token: &str, body: Body) -> (StatusCode, Value) {
        self.send("PUT", path, Some(token), body).await
    }

    pub(crate) async fn delete(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.send("DELETE", path, Some(token), Body::None).await
    }

    /// A new token of `tenant` (organization key `key`) with `role` (`admin` or `user`).
    pub(crate) async fn tenant_token(&self, key: &str, tenant: &str, role: &str) -> String {
        let (status, body) = self
            .post(
                &format!("/api/tenants/{tenant}/tokens"),
                key,
                Body::Json(serde_json::json!({ "role": role })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["token"].as_str().unwrap().to_owned()
    }
}

/// The code of an error body.
pub(crate) fn code(body: &Value) -> &str {
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code in {body}"))
}

/// The message of an error body.
pub(crate) fn message(body: &Value) -> &str {
    body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message in {body}"))
}
