//! The Python and TypeScript SDK packages this `atrium` carries: a wheel and an npm tarball,
//! each with the WIT and the manifest validator module inside, made byte for byte the same
//! from the same files (sorted entries, fixed times and modes), so that a project that
//! vendors one builds from exactly what it names.
//!
//! The files are embedded by the build script (`sdk_files.rs`); nothing is read from the
//! source tree at run time, so a new project needs no Rust build and no Atrium checkout.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use base64::Engine as _;
use sha2::{Digest, Sha256};

mod files {
    include!(concat!(env!("OUT_DIR"), "/sdk_files.rs"));
}

/// The time of every entry of both packages: the zip format's earliest (1980-01-01), and for
/// the tarball npm's own fixed time (1985-10-26T08:15:00Z), as `npm pack` writes.
const TAR_MTIME: u64 = 499_162_500;

/// A package: its file name and bytes.
pub struct Package {
    /// The file name (`atrium_sdk-0.1.0-py3-none-any.whl`, `atrium-sdk-0.1.0.tgz`).
    pub file_name: String,
    /// The version.
    pub version: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

fn file<'a>(list: &'a [(&str, &[u8])], path: &str) -> &'a [u8] {
    list.iter()
        .find(|(p, _)| *p == path)
        .map_or(&[][..], |(_, bytes)| *bytes)
}

/// The TypeScript SDK's version (package.json's `version`).
pub fn typescript_version() -> String {
    package_json()
        .get("version")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("0.0.0")
        .to_owned()
}

fn pyproject() -> toml::Table {
    std::str::from_utf8(file(files::PYTHON, "pyproject.toml"))
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .unwrap_or_default()
}

fn package_json() -> serde_json::Map<String, serde_json::Value> {
    serde_json::from_slice(file(files::TYPESCRIPT, "package.json")).unwrap_or_default()
}

/// The Python SDK as a wheel (`py3-none-any`): the `atrium_sdk` package with `wit/` and
/// `validator.wasm`, and the metadata of its pyproject.toml.
pub fn python_wheel() -> Result<Package, String> {
    let project = pyproject();
    let project = project
        .get("project")
        .and_then(toml::Value::as_table)
        .ok_or("the Python SDK's pyproject.toml has no [project]")?;
    let text = |key: &str| project.get(key).and_then(toml::Value::as_str).unwrap_or("");
    let name = text("name");
    let version = text("version");
    let dist = name.replace('-', "_");
    let info = format!("{dist}-{version}.dist-info");

    let mut metadata = format!(
        "Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {}\n",
        text("description")
    );
    if let Some(license) = project
        .get("license")
        .and_then(|l| l.get("text"))
        .and_then(toml::Value::as_str)
    {
        metadata.push_str(&format!("License: {license}\n"));
    }
    metadata.push_str(&format!("Requires-Python: {}\n", text("requires-python")));
    let strings = |value: Option<&toml::Value>| -> Vec<String> {
        value
            .and_then(toml::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    for requirement in strings(project.get("dependencies")) {
        metadata.push_str(&format!("Requires-Dist: {requirement}\n"));
    }
    if let Some(extras) = project
        .get("optional-dependencies")
        .and_then(toml::Value::as_table)
    {
        for (extra, requirements) in extras {
            metadata.push_str(&format!("Provides-Extra: {extra}\n"));
            for requirement in strings(Some(requirements)) {
                metadata.push_str(&format!(
                    "Requires-Dist: {requirement}; extra == \"{extra}\"\n"
                ));
            }
        }
    }
    metadata.push_str("Description-Content-Type: text/markdown\n\n");
    metadata.push_str(&String::from_utf8_lossy(file(files::PYTHON, "README.md")));

    let mut entries: Vec<(String, Vec<u8>)> = files::PYTHON
        .iter()
        .filter(|(path, _)| path.starts_with("atrium_sdk/"))
        .map(|(path, bytes)| ((*path).to_owned(), bytes.to_vec()))
        .collect();
    entries.extend(
        files::WIT
            .iter()
            .map(|(path, bytes)| (format!("atrium_sdk/wit/{path}"), bytes.to_vec())),
    );
    entries.push((
        "atrium_sdk/validator.wasm".to_owned(),
        files::VALIDATOR.to_vec(),
    ));
    entries.sort();
    entries.push((format!("{info}/METADATA"), metadata.into_bytes()));
    entries.push((
        format!("{info}/WHEEL"),
        format!(
            "Wheel-Version: 1.0\nGenerator: atrium {}\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            env!("CARGO_PKG_VERSION")
        )
        .into_bytes(),
    ));
    let mut record = String::new();
    for (path, bytes) in &entries {
        let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(bytes));
        record.push_str(&format!("{path},sha256={hash},{}\n", bytes.len()));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    entries.push((format!("{info}/RECORD"), record.into_bytes()));

    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644);
    for (path, bytes) in &entries {
        zip.start_file(path.as_str(), options)
            .and_then(|()| zip.write_all(bytes).map_err(Into::into))
            .map_err(|e| format!("cannot write the wheel: {e}"))?;
    }
    let bytes = zip
        .finish()
        .map_err(|e| format!("cannot write the wheel: {e}"))?
        .into_inner();
    Ok(Package {
        file_name: format!("{dist}-{version}-py3-none-any.whl"),
        version: version.to_owned(),
        bytes,
    })
}

/// The TypeScript SDK as an npm tarball (`package/...`, as `npm pack` makes it): the files its
/// package.json names, `wit/` and `validator.wasm`, and package.json without its scripts
/// (they prepare a source checkout, which an installed package is not).
pub fn typescript_tarball() -> Result<Package, String> {
    let mut manifest = package_json();
    let version = typescript_version();
    manifest.remove("scripts");
    if let Some(serde_json::Value::Array(files)) = manifest.get_mut("files") {
        files.retain(|f| f != "scripts");
    }
    let mut package_json = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| format!("cannot write package.json: {e}"))?;
    package_json.push(b'\n');

    let mut entries: Vec<(String, &[u8])> = files::TYPESCRIPT
        .iter()
        .filter(|(path, _)| *path != "package.json")
        .map(|(path, bytes)| ((*path).to_owned(), *bytes))
        .collect();
    entries.extend(
        files::WIT
            .iter()
            .map(|(path, bytes)| (format!("wit/{path}"), *bytes)),
    );
    entries.push(("validator.wasm".to_owned(), files::VALIDATOR));
    entries.push(("package.json".to_owned(), package_json.as_slice()));
    entries.sort();

    let gzip = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    tar.mode(tar::HeaderMode::Deterministic);
    for (path, bytes) in &entries {
        let mut header = tar::Header::new_ustar();
        header.set_size(bytes.len() as u64);
        header.set_mode(if path.starts_with("bin/") {
            0o755
        } else {
            0o644
        });
        header.set_mtime(TAR_MTIME);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, format!("package/{path}"), *bytes)
            .map_err(|e| format!("cannot write the tarball: {e}"))?;
    }
    let bytes = tar
        .into_inner()
        .and_then(flate2::write::GzEncoder::finish)
        .map_err(|e| format!("cannot write the tarball: {e}"))?;
    let name = manifest
        .get("name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("atrium-sdk")
        .trim_start_matches('@')
        .replace('/', "-");
    Ok(Package {
        file_name: format!("{name}-{version}.tgz"),
        version,
        bytes,
    })
}

/// `atrium sdk` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SdkCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SdkCommand {
    /// Put this atrium's SDK package into a Python or TypeScript project's vendor/ (replacing
    /// the one there) and point the project's requirements at its version.
    Vendor {
        /// The project's directory.
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
    },
}

/// `atrium sdk vendor`.
///
/// Exit codes: 0 done, 1 bad input (not a Python or TypeScript project, a file that cannot be
/// written).
pub fn run(args: &Args) -> ExitCode {
    let SdkCommand::Vendor { project } = &args.command;
    match vendor(project) {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(message) => crate::client::Failure::BadInput(message).report("sdk vendor"),
    }
}

/// The SDK files in `vendor/` of a project whose names start with `prefix`.
fn vendored(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join("vendor"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(prefix))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn vendor(dir: &Path) -> Result<String, String> {
    use crate::lang::Lang;
    let lang = Lang::of(dir);
    let (package, prefix, edits): (Package, &str, Vec<(&str, String, String)>) = match lang {
        Some(Lang::Python) => {
            let package = python_wheel()?;
            let old = vendored(dir, "atrium_sdk-")
                .first()
                .and_then(|p| p.file_name()?.to_str().map(str::to_owned));
            let edits = old
                .map(|old| {
                    let old_version = old.split('-').nth(1).unwrap_or_default().to_owned();
                    vec![
                        (
                            "requirements.txt",
                            format!("./vendor/{old}"),
                            format!("./vendor/{}", package.file_name),
                        ),
                        (
                            "pyproject.toml",
                            format!("atrium-sdk=={old_version}"),
                            format!("atrium-sdk=={}", package.version),
                        ),
                    ]
                })
                .unwrap_or_default();
            (package, "atrium_sdk-", edits)
        }
        Some(Lang::TypeScript) => {
            let package = typescript_tarball()?;
            let old = vendored(dir, "atrium-sdk-")
                .first()
                .and_then(|p| p.file_name()?.to_str().map(str::to_owned));
            let edits = old
                .map(|old| {
                    vec![(
                        "package.json",
                        format!("file:vendor/{old}"),
                        format!("file:vendor/{}", package.file_name),
                    )]
                })
                .unwrap_or_default();
            (package, "atrium-sdk-", edits)
        }
        _ => {
            return Err(format!(
                "{} is not a Python or TypeScript project (no pyproject.toml, app.py or package.json); a Rust project names its SDK in Cargo.toml",
                dir.display()
            ));
        }
    };
    let target = dir.join("vendor").join(&package.file_name);
    let unchanged = std::fs::read(&target).is_ok_and(|bytes| bytes == package.bytes);
    std::fs::create_dir_all(dir.join("vendor"))
        .and_then(|()| std::fs::write(&target, &package.bytes))
        .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    for old in vendored(dir, prefix) {
        if old != target {
            std::fs::remove_file(&old)
                .map_err(|e| format!("cannot remove {}: {e}", old.display()))?;
        }
    }
    for (file, from, to) in edits {
        let path = dir.join(file);
        if let Ok(text) = std::fs::read_to_string(&path)
            && text.contains(&from)
        {
            std::fs::write(&path, text.replace(&from, &to))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    let setup = match lang {
        Some(Lang::Python) => crate::lang::PYTHON_SETUP,
        _ => crate::lang::TYPESCRIPT_SETUP,
    };
    Ok(if unchanged {
        format!("vendor/{} is this atrium's SDK already", package.file_name)
    } else {
        format!(
            "vendor/{} written (SDK {}); install it with `{setup}`",
            package.file_name, package.version
        )
    })
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    /// Both packages are the same bytes every time, and carry the validator and the WIT.
    #[test]
    fn the_packages_are_reproducible_and_complete() {
        let wheel = python_wheel().unwrap();
        assert_eq!(wheel.bytes, python_wheel().unwrap().bytes);
        let version = wheel.version.clone();
        assert_eq!(
            wheel.file_name,
            format!("atrium_sdk-{}-py3-none-any.whl", wheel.version)
        );
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(wheel.bytes)).unwrap();
        let names: Vec<String> = zip
            .file_names()
            .map(|name| name.unwrap().into_owned())
            .collect();
        for needed in [
            "atrium_sdk/__init__.py",
            "atrium_sdk/validator.wasm",
            "atrium_sdk/wit/platform.wit",
        ] {
            assert!(names.iter().any(|n| n == needed), "{needed} in {names:?}");
        }
        let mut record = String::new();
        zip.by_name(&format!("atrium_sdk-{}.dist-info/RECORD", version))
            .unwrap()
            .read_to_string(&mut record)
            .unwrap();
        assert!(record.contains("atrium_sdk/validator.wasm,sha256="));

        let tarball = typescript_tarball().unwrap();
        assert_eq!(tarball.bytes, typescript_tarball().unwrap().bytes);
        assert_eq!(
            tarball.file_name,
            format!("atrium-sdk-{}.tgz", typescript_version())
        );
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&tarball.bytes[..]));
        let mut paths = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            if path == "package/package.json" {
                let mut text = String::new();
                entry.read_to_string(&mut text).unwrap();
                let package: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert!(package.get("scripts").is_none(), "{text}");
            }
            paths.push(path);
        }
        for needed in [
            "package/package.json",
            "package/src/index.js",
            "package/bin/atrium-sdk-build.mjs",
            "package/validator.wasm",
            "package/wit/platform.wit",
        ] {
            assert!(paths.iter().any(|p| p == needed), "{needed} in {paths:?}");
        }
    }
}
