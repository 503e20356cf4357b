use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use atrium_manifest::Manifest;
use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{App, Invocation, Runtime, RuntimeConfig};
use serde_json::Value;

/// Compiled components are cached here across test runs, as a host would across restarts.
pub fn cache_dir() -> std::path::PathBuf {
    let base = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target")
        });
    base.join("atrium-test-cache")
}

pub fn config() -> RuntimeConfig {
    RuntimeConfig {
        cache_dir: Some(cache_dir()),
        deadline: Duration::from_secs(10),
        // The tests of the tenant's share set it themselves; the others measure an install
        // alone, at its own `cpu_cores`.
        max_cpu_cores_per_tenant: None,
        ..RuntimeConfig::default()
    }
}

/// One runtime shared by the tests that need no special configuration.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new(config()).expect("the runtime starts"))
}

pub fn manifest(path: &str) -> Manifest {
    atrium_manifest::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn load_on(
    runtime: &Runtime,
    component: &str,
    manifest_path: &str,
    edit: impl FnOnce(&mut Manifest),
) -> App {
    let mut m = manifest(manifest_path);
    edit(&mut m);
    runtime
        .load_file(std::path::Path::new(component), m)
        .expect("the component loads")
}

pub fn probe() -> App {
    static PROBE: OnceLock<App> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            load_on(
                runtime(),
                atrium_test_artifacts::PROBE,
                atrium_test_artifacts::PROBE_MANIFEST,
                |_| {},
            )
        })
        .clone()
}

pub fn platform() -> Arc<MemoryPlatform> {
    Arc::new(MemoryPlatform::new("https://atrium.example"))
}

pub fn inv(platform: &Arc<MemoryPlatform>) -> Invocation {
    Invocation::new("tenant-a", platform.clone())
}

pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Calls the probe's `platform` tool with one operation and returns the outcome.
pub async fn op(app: &App, inv: &Invocation, args: Value) -> Value {
    json(
        &app.call_tool(inv, "platform", &args.to_string())
            .await
            .unwrap(),
    )
}

/// A tracing subscriber that records every event as `target level message key=value...`.
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<String>>>);

impl Captured {
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(self.clone());
        tracing::subscriber::set_default(subscriber)
    }
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={}", field.name(), value));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = Fields(format!(
            "{} {}",
            event.metadata().target(),
            event.metadata().level()
        ));
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
}
