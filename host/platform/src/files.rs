//! Writing a set of files under a directory that no path can escape.
//!
//! [`materialize`] unpacks files (a frontend bundle, a docs tree) into `root/<name>/`. Only
//! `root` itself is opened by its ambient path; every other file and directory is reached
//! through that open directory with `cap-std`, which refuses any path (`..`, absolute, or a
//! symbolic link) that resolves outside it. The paths are also checked here first, so that a
//! bad path is an `InvalidInput` error before anything is written.
//!
//! The directory appears whole or not at all: the files are written into a temporary sibling
//! that is then renamed to `name`. Names are content addresses, so when `root/<name>` already
//! exists it already holds the same files and is left as it is.

use std::io;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// Writes `files` (relative `/`-separated paths and their bytes) into `root/<name>/`, creating
/// `root` if needed, and returns that directory's path. `name` must be a single path
/// component; when `root/<name>` already exists as a directory, nothing is written.
pub fn materialize(root: &Path, name: &str, files: &[(&str, &[u8])]) -> io::Result<PathBuf> {
    check_name(name)?;
    for (path, _) in files {
        check_path(path)?;
    }
    Dir::create_ambient_dir_all(root, ambient_authority())?;
    let root_dir = Dir::open_ambient_dir(root, ambient_authority())?;
    let target = root.join(name);
    if existing(&root_dir, name)? {
        return Ok(target);
    }

    let temp = format!(".tmp-{name}-{}", random_suffix()?);
    root_dir.create_dir(&temp)?;
    let written =
        write_all(&root_dir, &temp, files).and_then(|()| root_dir.rename(&temp, &root_dir, name));
    match written {
        Ok(()) => Ok(target),
        Err(error) => {
            // Best effort: the error that matters is the one that stopped the write.
            let _ = root_dir.remove_dir_all(&temp);
            // Another writer won the race to the same name: its files are the same as ours.
            if existing(&root_dir, name)? {
                Ok(target)
            } else {
                Err(error)
            }
        }
    }
}

fn write_all(root_dir: &Dir, temp: &str, files: &[(&str, &[u8])]) -> io::Result<()> {
    let dir = root_dir.open_dir(temp)?;
    for (path, bytes) in files {
        if let Some((parent, _)) = path.rsplit_once('/') {
            dir.create_dir_all(parent)?;
        }
        dir.write(path, bytes)?;
    }
    Ok(())
}

/// Whether `name` already exists under `root_dir` as a real directory. Anything else at that
/// name (a file, or a symbolic link that could lead anywhere) is an error rather than an
/// answer that would send the caller through it.
fn existing(root_dir: &Dir, name: &str) -> io::Result<bool> {
    match root_dir.symlink_metadata(name) {
        Ok(meta) if meta.is_dir() => Ok(true),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("`{name}` exists and is not a directory"),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn check_name(name: &str) -> io::Result<()> {
    if name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\', '\0'])
        // Temporary directories start with `.tmp-`; a name cannot pass for one.
        || name.starts_with(".tmp-")
    {
        return Err(invalid(format!("`{name}` is not a single path component")));
    }
    Ok(())
}

fn check_path(path: &str) -> io::Result<()> {
    let bad = path.is_empty()
        || path.contains(['\\', '\0'])
        || path
            .split('/')
            .any(|component| matches!(component, "" | "." | ".."));
    if bad {
        return Err(invalid(format!(
            "`{path}` is not a relative path of plain components"
        )));
    }
    Ok(())
}

/// Enough randomness that two writers of the same name never share a temporary directory.
fn random_suffix() -> io::Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(io::Error::other)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_nested_files() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().join("bundles");
        let dir = materialize(
            &root,
            "sha256-abc",
            &[
                ("index.html", b"<h1>hi</h1>"),
                ("assets/js/app.js", b"go()"),
                ("assets/app.css", b"body{}"),
            ],
        )
        .unwrap();
        assert_eq!(dir, root.join("sha256-abc"));
        assert_eq!(
            std::fs::read(dir.join("index.html")).unwrap(),
            b"<h1>hi</h1>"
        );
        assert_eq!(
            std::fs::read(dir.join("assets/js/app.js")).unwrap(),
            b"go()"
        );
        assert_eq!(
            std::fs::read(dir.join("assets/app.css")).unwrap(),
            b"body{}"
        );
        // No temporary directory is left behind.
        let entries: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(entries, ["sha256-abc"]);
    }

    #[test]
    fn paths_out_of_the_root_fail_without_writing() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        for path in ["../x", "a/../../x", "/tmp/x", "", "a//b", "./a", "a\\b"] {
            let err = materialize(&root, "v1", &[("ok.txt", b"ok"), (path, b"evil")]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{path}");
        }
        for name in ["", ".", "..", "a/b", "../v1", "/v1", ".tmp-v1-0"] {
            let err = materialize(&root, name, &[("ok.txt", b"ok")]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name}");
        }
        // Nothing was written anywhere: not even the root was created.
        let entries: Vec<_> = std::fs::read_dir(base.path()).unwrap().collect();
        assert!(entries.is_empty(), "{entries:?}");
    }

    #[test]
    fn a_symlink_in_the_root_is_not_followed() {
        let base = tempfile::tempdir().unwrap();
        let outside = base.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let root = base.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("v1")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("v2")).unwrap();

        for name in ["v1", "v2"] {
            let err = materialize(&root, name, &[("index.html", b"evil")]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{name}: {err}");
        }
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // Nothing else was written to the root either; the links are as they were.
        let mut entries: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        entries.sort();
        assert_eq!(entries, ["v1", "v2"]);

        // And through the open root, cap-std itself refuses to follow a link out of it.
        let dir = Dir::open_ambient_dir(&root, ambient_authority()).unwrap();
        assert!(dir.write("v1/index.html", b"evil").is_err());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }

    #[test]
    fn a_second_call_leaves_the_first_directory_as_it_is() {
        let root = tempfile::tempdir().unwrap();
        let first = materialize(root.path(), "v1", &[("a.txt", b"first")]).unwrap();
        let second = materialize(root.path(), "v1", &[("a.txt", b"second")]).unwrap();
        assert_eq!(first, second);
        assert_eq!(std::fs::read(first.join("a.txt")).unwrap(), b"first");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
    }
}
