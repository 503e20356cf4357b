//! The crate builds for `wasm32-wasip2`, so the guest SDK can embed the same rules.

use std::path::PathBuf;
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

/// Installs the target through rustup when it is missing (a toolchain installed before the
/// pin was added lacks it, and rustup adds pinned targets only to new installs).
fn ensure_target() {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    if let Ok(out) = installed
        && !String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.trim() == TARGET)
    {
        let status = Command::new("rustup")
            .args(["target", "add", TARGET])
            .status()
            .expect("run rustup");
        assert!(status.success(), "rustup target add {TARGET} failed");
    }
}

#[test]
fn builds_for_wasm32_wasip2() {
    ensure_target();
    // A target directory of its own beside the running one, so this build never waits on the
    // lock held by the `cargo test` that runs it.
    let exe = std::env::current_exe().expect("test executable");
    let target_dir: PathBuf = exe
        .ancestors()
        .nth(3)
        .expect("target dir")
        .join("wasm-check");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "atrium-manifest",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "cargo build --target {TARGET} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
