//! Compiles the example apps (`examples/`) to wasm32-wasip2 components with atrium-wasm-build,
//! for the demo `atrium serve` sets up on first start (src/demo.rs embeds them). The nested
//! build shares its target directory (`$CARGO_TARGET_DIR/wasm-guests`) with the build scripts
//! of `host/retrieval` and `tests/artifacts`, so the tests reuse what it compiled.

// A build script reports failure by panicking with a message.
#![allow(clippy::expect_used)]

use std::path::PathBuf;

/// (package, the file stem of its component).
const EXAMPLES: &[(&str, &str)] = &[
    ("hello-minimal", "hello_minimal"),
    ("invoice-desk", "invoice_desk"),
    ("room-bot", "room_bot"),
    ("ledger", "ledger"),
];

fn main() {
    let root = atrium_wasm_build::workspace_root();
    for path in [
        "examples",
        "guest-sdk",
        "wit",
        "host/manifest/src",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    let packages: Vec<&str> = EXAMPLES.iter().map(|(package, _)| *package).collect();
    let wasm_dir = atrium_wasm_build::build(&root, &packages);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("examples");
    std::fs::create_dir_all(&out).expect("OUT_DIR is writable");
    for (package, stem) in EXAMPLES {
        let wasm = wasm_dir.join(format!("{stem}.wasm"));
        assert!(
            wasm.exists(),
            "{package} did not produce {}",
            wasm.display()
        );
        std::fs::copy(&wasm, out.join(format!("{stem}.wasm"))).expect("OUT_DIR is writable");
    }
}
