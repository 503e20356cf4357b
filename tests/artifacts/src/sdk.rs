//! The Python and TypeScript guest SDKs for the tests and benchmarks: their toolchains
//! (componentize-py and the `wasmtime` package from PyPI; esbuild and componentize-js from npm),
//! installed into the build cache on first use, and their builds of app projects into
//! components, cached by the hash of everything that goes into them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use aws_lc_rs::digest;

/// The Python packages of a Python app's build and tests.
pub const PYTHON_PACKAGES: &[&str] = &[
    "componentize-py==0.25.1",
    "wasmtime==50.0.1",
    "pytest==9.2.0",
];

/// The npm packages of a TypeScript app's build (the TypeScript SDK's dependencies).
/// componentize-js imports `preview2-shim` without declaring it: named here, it is installed
/// where componentize-js finds it.
pub const NPM_PACKAGES: &[&str] = &[
    "esbuild@0.28.2",
    "@bytecodealliance/componentize-js@0.23.0",
    "@bytecodealliance/preview2-shim@0.26.1",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cache_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// The Python SDK's source directory.
pub fn python_sdk() -> PathBuf {
    root().join("guest-sdk/python")
}

/// The TypeScript SDK's source directory.
pub fn typescript_sdk() -> PathBuf {
    root().join("guest-sdk/typescript")
}

/// An exclusive lock on `<cache>/<name>.lock`, held until the file is dropped: one installer
/// or builder at a time across the test processes of one run.
///
/// # Panics
///
/// When the lock file cannot be opened or locked.
#[allow(clippy::panic)]
pub fn lock(name: &str) -> std::fs::File {
    let dir = cache_dir();
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    file
}

/// The directory holding [`PYTHON_PACKAGES`], for `PYTHONPATH`.
pub fn python_packages() -> PathBuf {
    let _lock = lock("python-sdk");
    crate::python::packages("sdk-python", "wasmtime/__init__.py", PYTHON_PACKAGES)
}

/// The `node_modules` directory holding [`NPM_PACKAGES`].
///
/// # Panics
///
/// When npm cannot run or the install fails.
#[allow(clippy::panic)]
pub fn node_modules() -> PathBuf {
    let _lock = lock("node-sdk");
    let dir = cache_dir().join("node-sdk");
    let modules = dir.join("node_modules");
    let marker = dir.join(format!(
        "installed-{}",
        hex(digest::digest(&digest::SHA256, NPM_PACKAGES.join(" ").as_bytes()).as_ref())
    ));
    if marker.exists() {
        return modules;
    }
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let status = Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .args(NPM_PACKAGES)
        .status()
        .unwrap_or_else(|e| panic!("npm cannot run ({e}); the test needs Node.js 20 with npm"));
    assert!(status.success(), "npm install {NPM_PACKAGES:?} failed");
    std::fs::write(&marker, b"")
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", marker.display()));
    modules
}

/// The environment of the Python SDK's build and tests: `PYTHONPATH` (the packages and the
/// SDK) and `ATRIUM_MANIFEST_VALIDATOR`.
pub fn python_env() -> Vec<(&'static str, OsString)> {
    let path = std::env::join_paths([python_packages(), python_sdk()])
        .unwrap_or_else(|_| OsString::from(""));
    vec![
        ("PYTHONPATH", path),
        (
            "ATRIUM_MANIFEST_VALIDATOR",
            OsString::from(crate::MANIFEST_VALIDATOR),
        ),
        ("PYTHONDONTWRITEBYTECODE", OsString::from("1")),
    ]
}

/// The environment of the TypeScript SDK's build and tests: `ATRIUM_NODE_MODULES` and
/// `ATRIUM_MANIFEST_VALIDATOR`.
pub fn node_env() -> Vec<(&'static str, OsString)> {
    vec![
        ("ATRIUM_NODE_MODULES", node_modules().into_os_string()),
        (
            "ATRIUM_MANIFEST_VALIDATOR",
            OsString::from(crate::MANIFEST_VALIDATOR),
        ),
    ]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Feeds every file under `dir` (sorted, by relative path and content) into `context`, leaving
/// out build output, caches and dependencies.
fn hash_tree(context: &mut digest::Context, dir: &Path) {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(path) = todo.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let Ok(entries) = std::fs::read_dir(&path) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !name.starts_with('.')
                    && !matches!(
                        name.as_str(),
                        "build" | "node_modules" | "__pycache__" | "target"
                            // Copies of the WIT and the validator that packing an SDK leaves;
                            // the originals are hashed.
                            | "wit" | "validator.wasm"
                    )
                {
                    todo.push(entry.path());
                }
            }
        } else if meta.is_file() {
            files.push(path);
        }
    }
    files.sort();
    for file in files {
        let relative = file.strip_prefix(dir).unwrap_or(&file);
        context.update(relative.to_string_lossy().as_bytes());
        context.update(&[0]);
        context.update(&std::fs::read(&file).unwrap_or_default());
        context.update(&[0]);
    }
}

/// Builds the app project `project` (relative to the workspace root) with `command`, once per
/// content: the component is kept under `<cache>/sdk-components/` by the hash of the project,
/// the SDK, the WIT, the validator and `toolchain`.
#[allow(clippy::panic)]
fn cached_build(
    project: &str,
    sdk: &Path,
    toolchain: &[&str],
    build: impl FnOnce(&Path, &Path) -> std::process::Output,
) -> PathBuf {
    let source = root().join(project);
    let mut context = digest::Context::new(&digest::SHA256);
    for tree in [source.as_path(), sdk, &root().join("wit")] {
        hash_tree(&mut context, tree);
    }
    context.update(&std::fs::read(crate::MANIFEST_VALIDATOR).unwrap_or_default());
    context.update(toolchain.join(" ").as_bytes());
    let stem = project.replace('/', "-");
    let dir = cache_dir().join("sdk-components");
    let out = dir.join(format!(
        "{stem}-{}.wasm",
        &hex(context.finish().as_ref())[..16]
    ));
    if out.exists() {
        return out;
    }
    let _lock = lock(&format!("sdk-build-{stem}"));
    if out.exists() {
        return out;
    }
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let partial = dir.join(format!("{stem}.partial.wasm"));
    let output = build(&source, &partial);
    assert!(
        output.status.success() && partial.is_file(),
        "building {project} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::rename(&partial, &out)
        .unwrap_or_else(|e| panic!("cannot move the component to {}: {e}", out.display()));
    out
}

/// The component of the Python app project `project` (relative to the workspace root), built
/// with `python3 -m atrium_sdk build`.
///
/// # Panics
///
/// When the build fails.
#[allow(clippy::panic)]
pub fn python_component(project: &str) -> PathBuf {
    let env = python_env();
    cached_build(project, &python_sdk(), PYTHON_PACKAGES, |source, out| {
        Command::new("python3")
            .args(["-m", "atrium_sdk", "build", "--project"])
            .arg(source)
            .arg("--out")
            .arg(out)
            .envs(env)
            .output()
            .unwrap_or_else(|e| panic!("python3 cannot run ({e})"))
    })
}

/// The component of the TypeScript app project `project` (relative to the workspace root),
/// built with the TypeScript SDK's `atrium-sdk-build`.
///
/// # Panics
///
/// When the build fails.
#[allow(clippy::panic)]
pub fn typescript_component(project: &str) -> PathBuf {
    let env = node_env();
    let bin = typescript_sdk().join("bin/atrium-sdk-build.mjs");
    cached_build(project, &typescript_sdk(), NPM_PACKAGES, |source, out| {
        Command::new("node")
            .arg(&bin)
            .arg("--project")
            .arg(source)
            .arg("--out")
            .arg(out)
            .envs(env)
            .output()
            .unwrap_or_else(|e| panic!("node cannot run ({e})"))
    })
}
