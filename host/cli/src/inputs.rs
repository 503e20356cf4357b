//! The build inputs of a Python or TypeScript project: what `atrium build` records in the
//! component it makes ([`atrium_runtime::build_inputs`]) and compares to skip a build whose
//! inputs did not change.
//!
//! The inputs are the SDK's toolchain identity (its version, the digest of the SDK package's
//! own files, the versions of componentize-py or componentize-js and esbuild, as the SDK's
//! build tool reports them with `--print-toolchain`) and every file of the project that can
//! reach the component: everything but hidden entries (`.git`, `.venv`), caches
//! (`__pycache__`), what is built or installed (`build/`, `dist/`, `node_modules/`,
//! `target/`), and what the registry receives and compares apart from the component (`web/`,
//! `app_docs/`, `defaults/`).

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::client::Failure;
use crate::lang::Lang;

/// Top-level directories of a project that are not inputs of its component.
const NOT_INPUTS: &[&str] = &[
    "build",
    "dist",
    "node_modules",
    "target",
    "web",
    "app_docs",
    "defaults",
];

/// The digest of the inputs of the project in `dir`, built by `toolchain` (the SDK build
/// tool's `--print-toolchain` answer).
pub fn digest(dir: &Path, lang: Lang, toolchain: &str) -> Result<String, Failure> {
    digest_with(dir, lang, toolchain, None)
}

/// [`digest`], with one file's content as `with` says (its path relative to `dir`, `/`-
/// separated, and its bytes) rather than as it is on disk: the manifest that `atrium deploy
/// --version` writes only after its checks.
pub fn digest_with(
    dir: &Path,
    lang: Lang,
    toolchain: &str,
    with: Option<(&str, &[u8])>,
) -> Result<String, Failure> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    if let Some((path, bytes)) = with {
        files.retain(|(p, _)| p != path);
        files.push((path.to_owned(), Sha256::digest(bytes).into()));
    }
    files.sort();
    let mut hash = Sha256::new();
    hash.update(b"atrium-build-inputs/1\0");
    hash.update(format!("{lang:?}").as_bytes());
    hash.update(b"\0toolchain\0");
    hash.update(toolchain.trim().as_bytes());
    for (path, digest) in files {
        hash.update(b"\0file\0");
        hash.update(path.as_bytes());
        hash.update(b"\0");
        hash.update(digest);
    }
    Ok(format!("sha256:{}", hex(&hash.finalize())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Adds (path relative to `root` with `/`, digest of the content) for each input under `dir`.
fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, [u8; 32])>) -> Result<(), Failure> {
    let unreadable = |path: &Path, e: std::io::Error| {
        Failure::BadInput(format!("cannot read {}: {e}", path.display()))
    };
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| unreadable(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let top = dir == root;
        if name.starts_with('.') || name == "__pycache__" || (top && NOT_INPUTS.contains(&&*name)) {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| unreadable(&path, e))?;
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        if kind.is_dir() {
            walk(root, &path, files)?;
        } else if kind.is_symlink() {
            // A link counts by where it points (a link out of the project is not followed).
            let target = std::fs::read_link(&path).map_err(|e| unreadable(&path, e))?;
            let mut hash = Sha256::new();
            hash.update(b"link\0");
            hash.update(target.to_string_lossy().as_bytes());
            files.push((rel, hash.finalize().into()));
        } else {
            let bytes = std::fs::read(&path).map_err(|e| unreadable(&path, e))?;
            files.push((rel, Sha256::digest(&bytes).into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest follows the sources and the toolchain, and nothing else.
    #[test]
    fn the_digest_follows_the_inputs_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("app.py"), "print(1)\n").unwrap();
        std::fs::create_dir_all(p.join("pkg/__pycache__")).unwrap();
        std::fs::write(p.join("pkg/mod.py"), "x = 1\n").unwrap();
        let first = digest(p, Lang::Python, "{\"sdk\":\"0.1.0\"}").unwrap();
        assert!(atrium_runtime::build_inputs::is_digest(&first), "{first}");

        // What is not an input changes nothing.
        for (path, text) in [
            ("build/app.wasm", "bytes"),
            ("web/index.html", "<p>"),
            ("app_docs/user.md", "# Docs"),
            ("defaults/templates/note.json", "{}"),
            (".venv/lib/site.py", ""),
            ("pkg/__pycache__/mod.pyc", "cache"),
            ("node_modules/x/index.js", ""),
        ] {
            let path = p.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        assert_eq!(
            digest(p, Lang::Python, "{\"sdk\":\"0.1.0\"}").unwrap(),
            first
        );

        // A source, a new file, the toolchain and the language each do.
        std::fs::write(p.join("pkg/mod.py"), "x = 2\n").unwrap();
        let changed = digest(p, Lang::Python, "{\"sdk\":\"0.1.0\"}").unwrap();
        assert_ne!(changed, first);
        std::fs::write(p.join("pkg/mod.py"), "x = 1\n").unwrap();
        assert_eq!(
            digest(p, Lang::Python, "{\"sdk\":\"0.1.0\"}").unwrap(),
            first
        );
        std::fs::write(p.join("web.py"), "").unwrap();
        assert_ne!(
            digest(p, Lang::Python, "{\"sdk\":\"0.1.0\"}").unwrap(),
            first
        );
        std::fs::remove_file(p.join("web.py")).unwrap();
        assert_ne!(
            digest(p, Lang::Python, "{\"sdk\":\"0.1.1\"}").unwrap(),
            first
        );
        assert_ne!(
            digest(p, Lang::TypeScript, "{\"sdk\":\"0.1.0\"}").unwrap(),
            first
        );

        // A file's content given instead of read: the digest the file will have once written.
        let toolchain = "{\"sdk\":\"0.1.0\"}";
        let new_app: &[u8] = b"print(2)\n";
        let given = digest_with(p, Lang::Python, toolchain, Some(("app.py", new_app))).unwrap();
        assert_ne!(given, first);
        std::fs::write(p.join("app.py"), "print(2)\n").unwrap();
        assert_eq!(digest(p, Lang::Python, toolchain).unwrap(), given);
    }
}
