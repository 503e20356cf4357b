//! Compiles the guests (the examples and the test guests) to `wasm32-wasip2` components, the
//! way wasmtime's test-programs do: a nested `cargo build` into its own target directory, so it
//! never waits on the lock of the build that runs this script. Tests get the paths from
//! generated constants.

// A build script reports failure by panicking with a message.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

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
];

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists");
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
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");

    ensure_target();

    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir).join("wasm-guests"),
        None => root.join("target/wasm-guests"),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .current_dir(&root)
        .args(["build", "--release", "--target", TARGET]);
    for (_, package, _, _) in GUESTS {
        command.args(["-p", package]);
    }
    // The outer build's flags are for the host, not for wasm.
    command
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS");
    let status = command.status().expect("cargo runs");
    assert!(
        status.success(),
        "building the guests for {TARGET} failed: {status}"
    );

    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut code = String::new();
    for (name, package, stem, manifest) in GUESTS {
        let wasm = target_dir
            .join(TARGET)
            .join("release")
            .join(format!("{stem}.wasm"));
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
    std::fs::write(out.join("artifacts.rs"), code).expect("OUT_DIR is writable");
}

/// rustup installs the targets of rust-toolchain.toml only when it installs the toolchain
/// itself; a toolchain that was already there may lack wasm32-wasip2.
fn ensure_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc runs");
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
    if Path::new(&sysroot)
        .join("lib/rustlib")
        .join(TARGET)
        .exists()
    {
        return;
    }
    let status = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status();
    match status {
        Ok(s) if s.success() => {}
        other => panic!(
            "the {TARGET} target is missing and `rustup target add {TARGET}` failed: {other:?}"
        ),
    }
}
