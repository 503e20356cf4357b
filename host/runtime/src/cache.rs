//! The on-disk cache of compiled components.
//!
//! A compiled artifact is stored as `<sha256 of the component>-<hash of the engine's compile
//! settings>.cwasm` (`...-init.cwasm` for its pre-initialised form, docs/runtime.md), so a restart of the host loads it instead of compiling again, and a host
//! with other engine settings (or another wasmtime) never loads an artifact it cannot run.
//! Files are written to a temporary name and renamed into place, so a crash never leaves a
//! half-written artifact under a real name; an artifact that fails to load is compiled again
//! and replaced.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// A directory of compiled components.
#[derive(Debug, Clone)]
pub(crate) struct DiskCache {
    dir: PathBuf,
    engine_hash: String,
}

/// Feeds `Hash` output into SHA-256, for a hash that is stable across processes.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Compiled now (no cache, or nothing cached for it).
    Compiled,
    /// Loaded from the on-disk cache.
    Loaded,
}

/// The name of a component in the cache: the SHA-256 of its bytes as published, in hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheKey(String);

impl CacheKey {
    pub fn of(bytes: &[u8]) -> Self {
        CacheKey(hex(&Sha256::digest(bytes)))
    }
}

/// Which form of a component an artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// The component as published.
    Plain,
    /// The component after `wizer-initialize` ran and its state was snapshotted.
    Preinitialized,
}

impl DiskCache {
    pub fn new(dir: PathBuf, engine: &Engine) -> std::io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        let mut hasher = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_hash = hex(&hasher.0.finalize()[..8]);
        Ok(DiskCache { dir, engine_hash })
    }

    fn path_for(&self, key: &CacheKey, variant: Variant) -> PathBuf {
        let suffix = match variant {
            Variant::Plain => "",
            Variant::Preinitialized => "-init",
        };
        self.dir
            .join(format!("{}-{}{suffix}.cwasm", key.0, self.engine_hash))
    }

    /// Loads the compiled form of the component `key` names if it is cached.
    pub fn load(&self, engine: &Engine, key: &CacheKey, variant: Variant) -> Option<Component> {
        let path = self.path_for(key, variant);
        if !path.exists() {
            return None;
        }
        match deserialize(engine, &path) {
            Ok(component) => Some(component),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cached component does not load; compiling again");
                None
            }
        }
    }

    /// Compiles `wasm` (the component as published, or what was made of it) and stores the
    /// artifact under `key`, the name of the component as published.
    pub fn compile_and_store(
        &self,
        engine: &Engine,
        key: &CacheKey,
        variant: Variant,
        wasm: &[u8],
    ) -> wasmtime::Result<Component> {
        let path = self.path_for(key, variant);
        let compiled = engine.precompile_component(wasm)?;
        if let Err(error) = self.store(&path, &compiled) {
            tracing::warn!(path = %path.display(), %error, "could not write the compiled component to the cache");
        }
        // Load what was just compiled the same way a restart will: one code path.
        deserialize_bytes(engine, &compiled)
    }

    /// Loads the compiled form of `bytes` (named `key`), compiling and storing it when needed.
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        key: &CacheKey,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        if let Some(component) = self.load(engine, key, Variant::Plain) {
            return Ok((component, CacheOutcome::Loaded));
        }
        let component = self.compile_and_store(engine, key, Variant::Plain, bytes)?;
        Ok((component, CacheOutcome::Compiled))
    }

    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        let tmp = self
            .dir
            .join(format!(".{}-{}.tmp", std::process::id(), unique_suffix()));
        std::fs::write(&tmp, compiled)?;
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

fn unique_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Loads a compiled component from a file in the cache directory. The file is read into
/// memory rather than mapped, so that whatever later happens to the file cannot fault a
/// running host.
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    let bytes = std::fs::read(path)?;
    deserialize_bytes(engine, &bytes)
}

#[allow(unsafe_code)]
fn deserialize_bytes(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: wasmtime requires bytes produced by `precompile_component` of a compatible
    // engine. They come either from this engine a moment ago or from the cache directory,
    // which belongs to the host: only `DiskCache::store` writes to it, by atomic rename of a
    // complete file under a name that includes the engine's compatibility hash, and wasmtime
    // checks the header and the engine settings recorded in the artifact before using it.
    unsafe { Component::deserialize(engine, bytes) }
}
