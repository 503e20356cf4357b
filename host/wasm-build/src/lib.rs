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
///
/// The guests are built with the outer build's toolchain, unless `ATRIUM_GUEST_TOOLCHAIN`
/// names another (`tools/fuzz` sets it to the workspace's pinned one while the host's fuzz
/// targets build with nightly): then through rustup's `cargo` with that toolchain.
pub fn build_for(root: &Path, packages: &[&str], target: &str) -> PathBuf {
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    println!("cargo:rerun-if-env-changed=ATRIUM_GUEST_TOOLCHAIN");
    let toolchain = std::env::var("ATRIUM_GUEST_TOOLCHAIN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    ensure_target(target, toolchain.as_deref());
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir).join("wasm-guests"),
        None => root.join("target/wasm-guests"),
    };
    let mut command = tool("cargo", "CARGO", toolchain.as_deref());
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
fn ensure_target(target: &str, toolchain: Option<&str>) {
    let sysroot = tool("rustc", "RUSTC", toolchain)
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
    let mut rustup = Command::new("rustup");
    rustup.args(["target", "add", target]);
    if let Some(toolchain) = toolchain {
        rustup.args(["--toolchain", toolchain]);
    }
    let status = rustup.status();
    match status {
        Ok(s) if s.success() => {}
        other => panic!(
            "the {target} target is missing and `rustup target add {target}` failed: {other:?}"
        ),
    }
}

/// `program` of `toolchain` through rustup's proxy, with the outer build's tools unset; without
/// a toolchain, the one the outer build names in `env_var` (Cargo sets `CARGO` and `RUSTC` for
/// build scripts), else `program` from the path.
fn tool(program: &str, env_var: &str, toolchain: Option<&str>) -> Command {
    match toolchain {
        Some(toolchain) => {
            let mut command = Command::new(program);
            command
                .env("RUSTUP_TOOLCHAIN", toolchain)
                .env_remove("RUSTC")
                .env_remove("RUSTDOC")
                .env_remove("RUSTC_WRAPPER")
                .env_remove("RUSTC_WORKSPACE_WRAPPER");
            command
        }
        None => Command::new(std::env::var(env_var).unwrap_or_else(|_| program.into())),
    }
}
