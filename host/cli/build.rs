//! Compiles the example apps (`examples/`) to wasm32-wasip2 components with atrium-wasm-build,
//! for the demo `atrium serve` sets up on first start (src/demo.rs embeds them), and the
//! manifest validator (`guest-sdk/manifest-wasm`) to a wasm32-unknown-unknown module, which
//! the Python and TypeScript SDK packages that `atrium init` writes carry (src/sdk.rs embeds
//! their files, listed here). The nested builds share their target directory
//! (`$CARGO_TARGET_DIR/wasm-guests`) with the build scripts of `host/retrieval` and
//! `tests/artifacts`, so the tests reuse what they compiled.

// A build script reports failure by panicking with a message.
#![allow(clippy::expect_used)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
    sdk_files(
        &root,
        &PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")),
    );
}

/// Writes `sdk_files.rs`: the files of the Python and TypeScript SDK packages as
/// `(path in the package, bytes)` lists, the WIT, and the validator module.
fn sdk_files(root: &Path, out: &Path) {
    let module_dir =
        atrium_wasm_build::build_for(root, &["atrium-manifest-wasm"], "wasm32-unknown-unknown");
    let validator = module_dir.join("atrium_manifest_wasm.wasm");
    assert!(validator.exists(), "no {}", validator.display());
    let mut code = String::new();
    let python = root.join("guest-sdk/python");
    let typescript = root.join("guest-sdk/typescript");
    let mut list = |name: &str, base: &Path, entries: &[&str]| {
        let mut files = Vec::new();
        for entry in entries {
            collect(base, &base.join(entry), &mut files);
        }
        files.sort();
        writeln!(code, "pub const {name}: &[(&str, &[u8])] = &[").expect("a String takes writes");
        for (rel, path) in files {
            writeln!(
                code,
                "    ({rel:?}, include_bytes!({:?})),",
                path.display().to_string()
            )
            .expect("a String takes writes");
        }
        code.push_str("];\n");
    };
    // The Python package (its `wit` link to the source tree's WIT is left out: WIT is added
    // apart), pyproject.toml and README.md for the wheel's metadata.
    list(
        "PYTHON",
        &python,
        &["atrium_sdk", "pyproject.toml", "README.md"],
    );
    // What package.json's `files` names, and package.json itself.
    list(
        "TYPESCRIPT",
        &typescript,
        &["bin", "register.mjs", "src", "README.md", "package.json"],
    );
    list("WIT", &root.join("wit"), &["."]);
    writeln!(
        code,
        "pub const VALIDATOR: &[u8] = include_bytes!({:?});",
        validator.display().to_string()
    )
    .expect("a String takes writes");
    std::fs::write(out.join("sdk_files.rs"), code).expect("OUT_DIR is writable");
}

/// The regular files under `path` (a file or a directory), as (path relative to `base` with
/// `/`, absolute path); hidden entries, caches and symbolic links are left out.
fn collect(base: &Path, path: &Path, files: &mut Vec<(String, PathBuf)>) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if (name.starts_with('.') && name != ".") || name == "__pycache__" || name == "node_modules" {
        return;
    }
    let meta = std::fs::symlink_metadata(path).expect("the SDK's files are readable");
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).expect("the SDK's directories are readable") {
            collect(
                base,
                &entry.expect("the SDK's directories are readable").path(),
                files,
            );
        }
    } else if meta.is_file() {
        let rel = path
            .strip_prefix(base)
            .expect("under the base")
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(part) => part.to_str(),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/");
        let absolute = std::fs::canonicalize(path).expect("the SDK's files are readable");
        files.push((rel, absolute));
    }
}
