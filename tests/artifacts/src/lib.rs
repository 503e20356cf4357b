//! Paths of the guest components built for the tests, and of their manifests.
//!
//! The build script compiles the examples and the test guests to `wasm32-wasip2`; each
//! constant names a component file, each `*_MANIFEST` its manifest. [`pdf`] writes PDF
//! fixtures; [`python`] installs the Python packages some tests run; [`sdk`] builds Python and
//! TypeScript apps with their SDKs; [`oidc`] runs a fake
//! OpenID Connect provider; [`s3`] runs a real S3 server; [`browser`] drives a real Chromium.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

pub mod browser;
pub mod containers;
pub mod oidc;
pub mod s3;
pub mod sdk;

/// Python packages from PyPI, for the tests that run a real client or server written in Python.
pub mod python {
    use std::path::PathBuf;
    use std::process::Command;

    /// A directory for `PYTHONPATH` holding `requirements`, installed there by `pip` on first
    /// use: `<build cache>/python-<name>`, complete once `marker` (a path inside it) exists.
    ///
    /// # Panics
    ///
    /// When `python3 -m pip` cannot run or the install fails: the test cannot go on without it.
    #[allow(clippy::panic)]
    pub fn packages(name: &str, marker: &str, requirements: &[&str]) -> PathBuf {
        let base = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
            PathBuf::from,
        );
        let dir = base.join(format!("python-{name}"));
        if !dir.join(marker).exists() {
            let status = Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-warn-conflicts",
                    "--root-user-action=ignore",
                    "--target",
                ])
                .arg(&dir)
                .args(requirements)
                .status()
                .unwrap_or_else(|e| {
                    panic!("python3 -m pip cannot run ({e}); the test needs CPython 3 with pip")
                });
            assert!(
                status.success(),
                "installing {requirements:?} from PyPI failed"
            );
        }
        dir
    }
}

/// Test fixtures written with a PDF writer (lopdf).
pub mod pdf {
    use lopdf::content::{Content, Operation};
    use lopdf::{
        Document, EncryptionState, EncryptionVersion, Object, Permissions, Stream, dictionary,
    };

    /// A PDF with one page per entry of `pages`, each line of a page drawn in Helvetica, one
    /// under the other.
    pub fn with_pages(pages: &[&[&str]]) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica", "Encoding" => "WinAnsiEncoding",
        });
        let resources_id = doc.add_object(dictionary! {"Font" => dictionary! {"F1" => font_id}});
        let mut kids: Vec<Object> = Vec::new();
        for lines in pages {
            let mut operations = vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 11.into()]),
                Operation::new("TL", vec![14.into()]),
                Operation::new("Td", vec![50.into(), 790.into()]),
            ];
            for line in *lines {
                operations.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
                operations.push(Operation::new("T*", vec![]));
            }
            operations.push(Operation::new("ET", vec![]));
            let content = Content { operations }.encode().unwrap_or_default();
            let content_id = doc.add_object(Stream::new(dictionary! {}, content));
            let page_id = doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
            });
            kids.push(page_id.into());
        }
        let count = i64::try_from(kids.len()).unwrap_or(i64::MAX);
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources_id,
                "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            }),
        );
        let catalog_id = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
        doc.trailer.set("Root", catalog_id);
        doc.compress();
        let mut bytes = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = doc.save_to(&mut bytes);
        bytes
    }

    /// A one-page PDF with one line of text.
    pub fn with_text(text: &str) -> Vec<u8> {
        with_pages(&[&[text]])
    }

    /// A one-page PDF with one line of text, encrypted with RC4 and a 128-bit key: opened by
    /// `user_password` (empty: by anyone, as PDFs that only restrict printing or copying are).
    pub fn encrypted(text: &str, user_password: &str) -> Vec<u8> {
        let Ok(mut doc) = Document::load_mem(&with_text(text)) else {
            return Vec::new();
        };
        let id = Object::string_literal(&b"atrium-fixture-1"[..]);
        doc.trailer.set("ID", vec![id.clone(), id]);
        let state = EncryptionState::try_from(EncryptionVersion::V2 {
            document: &doc,
            owner_password: "owner secret",
            user_password,
            key_length: 128,
            permissions: Permissions::all(),
        });
        let mut bytes = Vec::new();
        if let Ok(state) = state
            && doc.encrypt(&state).is_ok()
        {
            // Writing to a Vec cannot fail.
            let _ = doc.save_to(&mut bytes);
        }
        bytes
    }
}

/// Installs each Debian package whose binary is missing, one installer at a time across the
/// test processes of one run.
///
/// # Panics
///
/// When a package is missing and apt cannot install it.
#[allow(clippy::panic)]
pub fn debian(packages: &[(&str, &str)]) {
    let missing = |packages: &[(&str, &str)]| -> Vec<String> {
        packages
            .iter()
            .filter(|(binary, _)| !std::path::Path::new(binary).exists())
            .map(|(_, package)| (*package).to_owned())
            .collect()
    };
    if missing(packages).is_empty() {
        return;
    }
    let _lock = crate::sdk::lock("apt");
    let wanted = missing(packages);
    if wanted.is_empty() {
        return;
    }
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend(wanted.iter().map(String::as_str));
    for args in [&["update", "-qq"][..], &install[..]] {
        let status = std::process::Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .unwrap_or_else(|e| panic!("apt-get cannot run ({e}); the test needs {wanted:?}"));
        assert!(status.success(), "apt-get {args:?} failed");
    }
    let still = missing(packages);
    assert!(
        still.is_empty(),
        "apt installed, but {still:?} are still missing"
    );
}
