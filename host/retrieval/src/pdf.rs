//! PDF text, extracted in a wasm sandbox.
//!
//! The extractor (`pdf-guest`, built from pdf-extract and lopdf) is compiled to a WASI
//! component at build time and embedded here. Each PDF gets a fresh instance with:
//!
//! - a memory cap ([`PdfLimits::memory_bytes`], default 512 MiB): a PDF that makes the parser
//!   allocate more ends that one run;
//! - an instruction budget ([`PdfLimits::fuel`], wasmtime fuel, default 20 billion, about
//!   ten seconds here): a PDF that makes the parser loop ends that one run;
//! - an output cap ([`PdfLimits::max_text_bytes`]);
//! - no files, no network, no environment, no clock beyond what WASI gives every command.
//!
//! A parser panic traps inside the sandbox. Every failure becomes a [`PdfError`] that says
//! what was wrong; the host carries on.

use std::sync::{Arc, OnceLock};

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// The extractor component.
static COMPONENT_BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pdf-text.wasm"));

/// Limits of one extraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdfLimits {
    /// Linear memory the parser may use.
    pub memory_bytes: usize,
    /// Wasm instructions (fuel) the parser may run.
    pub fuel: u64,
    /// Bytes of text it may return.
    pub max_text_bytes: usize,
}

impl Default for PdfLimits {
    fn default() -> Self {
        PdfLimits {
            memory_bytes: 512 << 20,
            fuel: 20_000_000_000,
            max_text_bytes: 16 << 20,
        }
    }
}

/// Why a PDF gave no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfError {
    /// The PDF needs a password.
    #[error("the PDF is encrypted: {0}")]
    Encrypted(String),
    /// Not a PDF the parser can read.
    #[error("the PDF cannot be read: {0}")]
    Unreadable(String),
    /// The parser hit the memory cap.
    #[error("the PDF needs more than {0} MiB of memory to read")]
    TooMuchMemory(usize),
    /// The parser ran out of its instruction budget.
    #[error("reading the PDF took too long (more than {0} billion instructions)")]
    TooSlow(u64),
    /// More text than the limit.
    #[error("the PDF's text is longer than {0} bytes")]
    TooLong(usize),
    /// The text is not UTF-8 (a parser fault).
    #[error("the PDF's text is not valid UTF-8")]
    NotUtf8,
    /// The sandbox itself failed (a host fault, not the file's).
    #[error("the PDF sandbox failed: {0}")]
    Sandbox(String),
}

impl PdfError {
    /// Whether the fault is the file's (a 4xx) rather than the host's.
    pub fn is_client_error(&self) -> bool {
        !matches!(self, PdfError::Sandbox(_))
    }
}

struct Sandbox {
    engine: Engine,
    component: Component,
    linker: Linker<RunState>,
}

struct RunState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl WasiView for RunState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

fn sandbox() -> Result<Arc<Sandbox>, PdfError> {
    static SANDBOX: OnceLock<Result<Arc<Sandbox>, String>> = OnceLock::new();
    SANDBOX
        .get_or_init(|| {
            let mut config = Config::new();
            config.consume_fuel(true);
            config.max_wasm_stack(1 << 20);
            let engine = Engine::new(&config).map_err(|e| e.to_string())?;
            let component =
                Component::new(&engine, COMPONENT_BYTES).map_err(|e| format!("compiling: {e}"))?;
            let mut linker = Linker::new(&engine);
            wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(|e| e.to_string())?;
            Ok(Arc::new(Sandbox {
                engine,
                component,
                linker,
            }))
        })
        .clone()
        .map_err(PdfError::Sandbox)
}

/// Compiles the extractor now rather than on the first PDF (a second or two).
pub fn warm_up() -> Result<(), PdfError> {
    sandbox().map(|_| ())
}

/// The text of `pdf`, extracted in the sandbox. Blocking: call it from a blocking thread.
pub fn extract_text(pdf: &[u8], limits: PdfLimits) -> Result<String, PdfError> {
    let sandbox = sandbox()?;
    let stdout = MemoryOutputPipe::new(limits.max_text_bytes);
    let stderr = MemoryOutputPipe::new(8 << 10);
    let wasi = WasiCtxBuilder::new()
        .stdin(MemoryInputPipe::new(pdf.to_vec()))
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_ip_name_lookup(false)
        .allow_tcp(false)
        .allow_udp(false)
        .build();
    let mut store = Store::new(
        &sandbox.engine,
        RunState {
            wasi,
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(limits.memory_bytes)
                .instances(4)
                .tables(16)
                .memories(4)
                .build(),
        },
    );
    store.limiter(|state| &mut state.limits);
    store
        .set_fuel(limits.fuel)
        .map_err(|e| PdfError::Sandbox(e.to_string()))?;
    let outcome = Command::instantiate(&mut store, &sandbox.component, &sandbox.linker)
        .map_err(|e| PdfError::Sandbox(format!("instantiating: {e}")))
        .map(|command| command.wasi_cli_run().call_run(&mut store));
    let reason = String::from_utf8_lossy(&stderr.contents())
        .trim()
        .to_owned();
    match outcome? {
        Ok(Ok(())) => String::from_utf8(stdout.contents().to_vec()).map_err(|_| PdfError::NotUtf8),
        Ok(Err(())) => Err(reported(&reason, limits)),
        Err(trap) => {
            if let Some(exit) = trap.downcast_ref::<wasmtime_wasi::I32Exit>() {
                return if exit.0 == 0 {
                    String::from_utf8(stdout.contents().to_vec()).map_err(|_| PdfError::NotUtf8)
                } else {
                    Err(reported(&reason, limits))
                };
            }
            if matches!(
                trap.downcast_ref::<wasmtime::Trap>(),
                Some(wasmtime::Trap::OutOfFuel)
            ) {
                return Err(PdfError::TooSlow(limits.fuel / 1_000_000_000));
            }
            let text = format!("{trap:?}");
            if text.contains("memory") && (text.contains("limit") || text.contains("grow")) {
                return Err(PdfError::TooMuchMemory(limits.memory_bytes >> 20));
            }
            if reason.contains("memory allocation") {
                return Err(PdfError::TooMuchMemory(limits.memory_bytes >> 20));
            }
            let panic = reason
                .lines()
                .find(|l| l.contains("panicked"))
                .unwrap_or("the parser stopped");
            Err(PdfError::Unreadable(format!("the parser failed ({panic})")))
        }
    }
}

/// The error the extractor reported on stderr (`kind: message`).
fn reported(reason: &str, limits: PdfLimits) -> PdfError {
    let first = reason.lines().next().unwrap_or("no reason given");
    if let Some(message) = first.strip_prefix("encrypted: ") {
        PdfError::Encrypted(message.to_owned())
    } else if first.starts_with("too-long: ") {
        PdfError::TooLong(limits.max_text_bytes)
    } else if let Some(message) = first.strip_prefix("unreadable: ") {
        PdfError::Unreadable(message.to_owned())
    } else if reason.contains("memory allocation") {
        PdfError::TooMuchMemory(limits.memory_bytes >> 20)
    } else {
        PdfError::Unreadable(first.to_owned())
    }
}
