//! For build scripts: compiles workspace packages to `wasm32-wasip2` components the way
//! wasmtime's test-programs do, with a nested `cargo build --release` into its own target
//! directory (`$CARGO_TARGET_DIR/wasm-guests`), so it never waits on the lock of the build
//! that runs the script.

// A build script reports failure by panicking with a message.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The target the guests are built for.
pub const TARGET: &str = "wasm32-wasip2";

/// Builds `packages` of the workspace at `root` for [`TARGET`] in release mode and returns the
/// directory holding the `.wasm` files. Panics with the reason when the build fails.
pub fn build(root: &Path, packages: &[&str]) -> PathBuf {
    build_for(root, packages, TARGET)
}

/// Builds `packages` of the workspace at `root` for `target` (for example
/// `wasm32-unknown-unknown`, for modules with no imports) in release mode and returns the
/// directory holding the `.wasm` files. Panics with the reason when the build fails.
pub fn build_for(root: &Path, packages: &[&str], target: &str) -> PathBuf {
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    ensure_target(target);
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir).join("wasm-guests"),
        None => root.join("target/wasm-guests"),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .current_dir(root)
        .args(["build", "--release", "--target", target]);
    for package in packages {
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
        "building {packages:?} for {target} failed: {status}"
    );
    target_dir.join(target).join("release")
}

/// The workspace root, two levels above the crate whose build script calls this.
pub fn workspace_root() -> PathBuf {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    manifest_dir
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// rustup installs the targets of rust-toolchain.toml only when it installs the toolchain
/// itself; a toolchain that was already there may lack `target`.
fn ensure_target(target: &str) {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc runs");
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
    if Path::new(&sysroot)
        .join("lib/rustlib")
        .join(target)
        .exists()
    {
        return;
    }
    let status = Command::new("rustup")
        .args(["target", "add", target])
        .status();
    match status {
        Ok(s) if s.success() => {}
        other => panic!(
            "the {target} target is missing and `rustup target add {target}` failed: {other:?}"
        ),
    }
}
