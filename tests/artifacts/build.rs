//! Compiles the guests (the examples and the test guests) to `wasm32-wasip2` components, and
//! the manifest validator to a `wasm32-unknown-unknown` module, with atrium-wasm-build. Tests
//! get the paths from generated constants.

// A build script reports failure by panicking with a message.
#![allow(clippy::expect_used)]

use std::path::PathBuf;

/// (constant name, package, crate file stem, manifest path relative to the workspace root).
const GUESTS: &[(&str, &str, &str, &str)] = &[
    (
        "MINIMAL",
        "hello-minimal",
        "hello_minimal",
        "examples/minimal/atrium.app.yaml",
    ),
    (
        "INVOICES",
        "invoice-desk",
        "invoice_desk",
        "examples/invoices/atrium.app.yaml",
    ),
    (
        "ROOM_BOT",
        "room-bot",
        "room_bot",
        "examples/room-bot/atrium.app.yaml",
    ),
    (
        "PROBE",
        "atrium-probe-guest",
        "atrium_probe_guest",
        "tests/guests/probe/atrium.app.yaml",
    ),
    (
        "PLAIN_HTTP",
        "atrium-plain-http-guest",
        "atrium_plain_http_guest",
        "tests/guests/plain-http/atrium.app.yaml",
    ),
    (
        "HANDLERS_ONLY",
        "atrium-handlers-only-guest",
        "atrium_handlers_only_guest",
        "tests/guests/handlers-only/atrium.app.yaml",
    ),
    (
        "ECHO",
        "atrium-echo-guest",
        "atrium_echo_guest",
        "tests/guests/echo/atrium.app.yaml",
    ),
    (
        "HOSTILE",
        "atrium-hostile-guest",
        "atrium_hostile_guest",
        "tests/guests/hostile/atrium.app.yaml",
    ),
];

fn main() {
    let root = atrium_wasm_build::workspace_root();
    for dir in [
        "examples",
        "tests/guests",
        "guest-sdk",
        "wit",
        "host/manifest/src",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    let packages: Vec<&str> = GUESTS.iter().map(|(_, package, _, _)| *package).collect();
    let wasm_dir = atrium_wasm_build::build(&root, &packages);

    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut code = String::new();
    for (name, package, stem, manifest) in GUESTS {
        let wasm = wasm_dir.join(format!("{stem}.wasm"));
        assert!(
            wasm.exists(),
            "{package} did not produce {}",
            wasm.display()
        );
        code.push_str(&format!(
            "/// The `{package}` component.\npub const {name}: &str = {:?};\n/// The manifest of `{package}`.\npub const {name}_MANIFEST: &str = {:?};\n",
            wasm.display().to_string(),
            root.join(manifest).display().to_string()
        ));
    }
    // The manifest validator as a module with no imports, for the Python and TypeScript SDKs.
    let module_dir =
        atrium_wasm_build::build_for(&root, &["atrium-manifest-wasm"], "wasm32-unknown-unknown");
    let validator = module_dir.join("atrium_manifest_wasm.wasm");
    assert!(validator.exists(), "no {}", validator.display());
    code.push_str(&format!(
        "/// The manifest validator module (`guest-sdk/manifest-wasm`, wasm32-unknown-unknown).\npub const MANIFEST_VALIDATOR: &str = {:?};\n",
        validator.display().to_string()
    ));
    std::fs::write(out.join("artifacts.rs"), code).expect("OUT_DIR is writable");
}
