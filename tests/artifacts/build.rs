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
    let guest = container_guest(&root);
    code.push_str(&format!(
        "/// The container test guest (`tests/guests/container`): a static binary for this machine that speaks the container protocol.\npub const CONTAINER_GUEST: &str = {:?};\n/// Its manifest.\npub const CONTAINER_GUEST_MANIFEST: &str = {:?};\n",
        guest.display().to_string(),
        root.join("tests/guests/container/atrium.app.yaml")
            .display()
            .to_string()
    ));
    std::fs::write(out.join("artifacts.rs"), code).expect("OUT_DIR is writable");
}

/// Builds the container test guest for this machine, statically linked (`crt-static`), so
/// that an image holds it and nothing else.
fn container_guest(root: &std::path::Path) -> PathBuf {
    let target = std::env::var("HOST").expect("cargo sets HOST");
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir).join("container-guests"),
        None => root.join("target/container-guests"),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--release",
            "-p",
            "atrium-container-guest",
            "--target",
        ])
        .arg(&target)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "building the container guest failed: {status}"
    );
    let binary = target_dir
        .join(target)
        .join("release")
        .join("atrium-container-guest");
    assert!(binary.exists(), "no {}", binary.display());
    binary
}
