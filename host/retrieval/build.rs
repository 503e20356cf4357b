//! Compiles the PDF text extractor (`pdf-guest`, package atrium-pdf-text) to a wasm32-wasip2
//! component that the crate embeds and runs in a sandbox.
//!
//! `protoc-bin-vendored` is a build dependency only so that cargo downloads and unpacks it
//! before any build script runs: `tools/protoc` (PROTOC, set in .cargo/config.toml) runs the
//! protoc it ships for the .proto files of lancedb's dependencies.

// A build script reports failure by panicking with a message.
#![allow(clippy::expect_used)]

use std::path::PathBuf;

fn main() {
    let root = atrium_wasm_build::workspace_root();
    for path in ["host/retrieval/pdf-guest", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    let wasm_dir = atrium_wasm_build::build(&root, &["atrium-pdf-text"]);
    let wasm = wasm_dir.join("atrium-pdf-text.wasm");
    assert!(
        wasm.exists(),
        "atrium-pdf-text did not produce {}",
        wasm.display()
    );
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::copy(&wasm, out.join("pdf-text.wasm")).expect("OUT_DIR is writable");
    // The protoc crate is here for tools/protoc; naming its path keeps the dependency honest.
    let _ = protoc_bin_vendored::protoc_bin_path();
}
