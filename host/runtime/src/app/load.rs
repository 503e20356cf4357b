//! Loading: a component's bytes and its manifest become an [`App`], compiled (or taken from
//! the cache), pre-initialised when it can be, and checked to target the `atrium:app` world.

use std::sync::Arc;

use atrium_manifest::Manifest;
use wasmtime_wasi_http::p2::bindings::exports::wasi::http::incoming_handler::GuestIndices as HttpIndices;

use super::{App, AppInner, Code, Component};
use crate::EgressPolicy;
use crate::bindings::exports::atrium::app::handlers::GuestIndices as HandlerIndices;
use crate::engine::MAX_MEMORY_MB;
use crate::state::VersionParts;
use crate::{LoadError, Runtime};

impl Runtime {
    /// Loads an app from the bytes of its component and its manifest: compiles it (or loads the
    /// cached compilation), pre-initialised when it exports `wizer-initialize`, checks that it
    /// targets the `atrium:app` world, and prepares it for instantiation.
    pub fn load(&self, bytes: &[u8], manifest: Manifest) -> Result<App, LoadError> {
        let inner = &self.inner;
        if is_core_module(bytes) {
            return Err(LoadError::NotAComponent(
                "this is a core WebAssembly module; build the app as a component (target wasm32-wasip2)".into(),
            ));
        }
        if !bytes.starts_with(b"\0asm") {
            return Err(LoadError::NotAComponent(
                "the file does not start with the WebAssembly magic bytes".into(),
            ));
        }
        let memory_mb = u64::from(manifest.runtime.resources.memory_mb);
        if memory_mb > MAX_MEMORY_MB {
            return Err(LoadError::Manifest(format!(
                "runtime.resources.memory_mb is {memory_mb}; this host allows at most {MAX_MEMORY_MB}"
            )));
        }
        let manifest = Arc::new(manifest);
        let egress = Arc::new(EgressPolicy::new(
            manifest.network.egress_hosts.iter().map(String::as_str),
        ));
        let env: Vec<(String, String)> = manifest
            .runtime
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let version = VersionParts {
            manifest: &manifest,
            egress: &egress,
            env: &env,
        };
        let compiled = crate::preinit::compile(inner, bytes, &version)
            .map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        let pre = inner
            .linker
            .instantiate_pre(&compiled.component)
            .map_err(|e| LoadError::WrongWorld(format!("{e:#}")))?;
        let handlers = HandlerIndices::new(&pre).ok();
        let http = HttpIndices::new(&pre).ok();
        if handlers.is_none() && http.is_none() {
            return Err(LoadError::WrongWorld(
                "it exports neither atrium:app/handlers@0.1.0 nor wasi:http/incoming-handler@0.2"
                    .into(),
            ));
        }
        Ok(App {
            inner: Arc::new(AppInner {
                runtime: inner.clone(),
                manifest,
                code: Code::Component(Box::new(Component {
                    pre,
                    handlers,
                    http,
                    egress,
                    env,
                    cache: compiled.outcome,
                    preinitialized: compiled.preinitialized,
                })),
                verified: tokio::sync::OnceCell::new(),
            }),
        })
    }

    /// Loads an app from a component file.
    pub fn load_file(&self, path: &std::path::Path, manifest: Manifest) -> Result<App, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        self.load(&bytes, manifest)
    }
}

/// A core module's header: magic then version 1; a component's layer field is 1.
fn is_core_module(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes.starts_with(b"\0asm") && bytes[4..8] == [1, 0, 0, 0]
}
