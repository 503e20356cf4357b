//! The official `openai` Python package as a real client of the host: chat, streaming and
//! models. The package is installed from PyPI into the build cache on first use.

use atrium_store::TenantKey;
use std::process::Command;

use serde_json::Value;

use crate::chat::{gateway, start_fakes};
use crate::{stores, unique};

const SCRIPT: &str = r#"
import json, sys
from openai import OpenAI

client = OpenAI(base_url=sys.argv[1], api_key=sys.argv[2])
out = {}
chat = client.chat.completions.create(
    model="mistral-small-latest",
    messages=[{"role": "user", "content": "hello"}],
    extra_headers={"X-Service-Tenant": "py-tenant"},
)
out["chat"] = {"content": chat.choices[0].message.content, "model": chat.model,
               "total_tokens": chat.usage.total_tokens, "provider": chat.model_extra.get("provider")}
stream = client.chat.completions.create(
    model="eu-sovereign", messages=[{"role": "user", "content": "hello"}], stream=True,
    stream_options={"include_usage": True},
)
pieces, usage = [], None
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
    if chunk.usage:
        usage = chunk.usage.total_tokens
out["stream"] = {"text": "".join(pieces), "total_tokens": usage}
out["models"] = [m.id for m in client.models.list()]
emb = client.embeddings.create(model="atrium-local-lexical", input=["invoice overdue", "croissant"])
out["embeddings"] = {"count": len(emb.data), "dims": len(emb.data[0].embedding),
                     "norm": sum(x * x for x in emb.data[0].embedding) ** 0.5}
try:
    client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "x"}],
                                   extra_body={"contains_pii": True})
    out["policy"] = "allowed"
except Exception as e:
    out["policy"] = {"status": getattr(e, "status_code", None), "code": getattr(e, "code", None)}
# A host with no provider configured: its 503 lasts until the operator acts, and says so
# (X-Should-Retry: false), so the client does not retry it. The client logs each retry.
import logging
retries = []
class Retries(logging.Handler):
    def emit(self, record):
        if "Retrying request" in record.getMessage():
            retries.append(record.getMessage())
logger = logging.getLogger("openai")
logger.setLevel(logging.DEBUG)
logger.addHandler(Retries())
bare = OpenAI(base_url=sys.argv[3], api_key=sys.argv[2], max_retries=3)
try:
    bare.chat.completions.create(model="mistral-small-latest",
                                 messages=[{"role": "user", "content": "x"}])
    out["no_backend"] = "answered"
except Exception as e:
    out["no_backend"] = {"status": getattr(e, "status_code", None),
                         "code": getattr(e, "code", None), "retries": len(retries)}
print(json.dumps(out))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_openai_python_client_works_unchanged() {
    let path = atrium_test_artifacts::python::packages(
        "openai",
        "openai/__init__.py",
        &["openai>=1.50,<4"],
    );
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let metering = state.metering.clone();
    tokio::spawn(atrium_server::serve(
        listener,
        state,
        std::future::pending(),
    ));

    // A host of the same store without any provider.
    let bare = crate::state(&store, vec![]);
    let bare_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bare_base = format!("http://{}/v1", bare_listener.local_addr().unwrap());
    tokio::spawn(atrium_server::serve(
        bare_listener,
        bare,
        std::future::pending(),
    ));

    let base = format!("http://{addr}/v1");
    let secret = key.secret.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg("-c")
            .arg(SCRIPT)
            .arg(&base)
            .arg(&secret)
            .arg(&bare_base)
            .env("PYTHONPATH", &path)
            .output()
    })
    .await
    .unwrap()
    .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{}",
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(out["chat"]["content"], "mistral says hi");
    assert_eq!(out["chat"]["model"], "mistral-small-latest");
    assert_eq!(out["chat"]["total_tokens"], 15);
    assert_eq!(out["chat"]["provider"], "mistral");
    assert_eq!(out["stream"]["text"], "ovh says hi");
    assert_eq!(out["stream"]["total_tokens"], 15);
    assert!(
        out["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "claude-sonnet-4-5")
    );
    assert_eq!(
        (
            out["embeddings"]["count"].as_u64(),
            out["embeddings"]["dims"].as_u64()
        ),
        (Some(2), Some(1024))
    );
    assert!(
        (out["embeddings"]["norm"].as_f64().unwrap() - 1.0).abs() < 1e-4,
        "{out}"
    );
    assert_eq!(out["policy"]["status"], 403);
    assert_eq!(out["policy"]["code"], "policy_violation");
    assert_eq!(
        out["no_backend"],
        serde_json::json!({"status": 503, "code": "no_backend", "retries": 0}),
        "{out}"
    );
    metering.flush().await.unwrap();
    let usage = store
        .tenant_usage(&TenantKey::new(&key.org_id, "py-tenant"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(usage.calls, 1);
}
