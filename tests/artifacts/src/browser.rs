//! A real browser for the tests of web pages: Debian's Chromium, driven by `playwright-core`
//! from npm (which never downloads a browser of its own).
//!
//! [`chromium`] installs the `chromium` package with apt when it is missing (the tests run as
//! root on Debian); [`playwright`] installs `playwright-core` into the build cache on first
//! use; [`run_script`] runs a Node.js script with both at hand.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The version of `playwright-core` the tests drive Chromium with.
const PLAYWRIGHT_VERSION: &str = "1.65.1";

fn cache_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    )
}

/// Debian's Chromium, installed with apt when missing.
///
/// # Panics
///
/// When it is missing and apt cannot install it.
#[allow(clippy::panic)]
pub fn chromium() -> PathBuf {
    let path = PathBuf::from("/usr/bin/chromium");
    if path.exists() {
        return path;
    }
    crate::debian(&[("/usr/bin/chromium", "chromium")]);
    assert!(
        path.exists(),
        "apt installed chromium, but not at {}",
        path.display()
    );
    path
}

/// The `node_modules` directory holding `playwright-core`, installed by npm on first use.
///
/// # Panics
///
/// When npm cannot run or the install fails.
#[allow(clippy::panic)]
pub fn playwright() -> PathBuf {
    let dir = cache_dir().join(format!("node-playwright-{PLAYWRIGHT_VERSION}"));
    let modules = dir.join("node_modules");
    if modules.join("playwright-core/package.json").exists() {
        return modules;
    }
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let status = Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg(format!("playwright-core@{PLAYWRIGHT_VERSION}"))
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .status()
        .unwrap_or_else(|e| panic!("npm cannot run ({e}); the test needs Node.js with npm"));
    assert!(status.success(), "npm install playwright-core failed");
    modules
}

/// Runs the Node.js `script` (CommonJS) with `PLAYWRIGHT` (the `playwright-core` module's
/// path), `CHROMIUM` (the browser) and `env` set, in `dir`.
///
/// # Panics
///
/// When node cannot run.
#[allow(clippy::panic)]
pub fn run_script(dir: &Path, script: &str, env: &[(&str, &str)]) -> Output {
    let chromium = chromium();
    let modules = playwright();
    let file = dir.join("browser-check.cjs");
    std::fs::write(&file, script)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    Command::new("node")
        .arg(&file)
        .current_dir(dir)
        .env("PLAYWRIGHT", modules.join("playwright-core"))
        .env("CHROMIUM", chromium)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("node cannot run ({e}); the test needs Node.js"))
}
