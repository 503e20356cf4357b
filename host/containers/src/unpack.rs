//! Unpacking an image's layers into one root filesystem without trusting them.
//!
//! A layer is a tar stream (plain, gzip or zstd). Each entry is applied in order over what the
//! layers before it left, as the OCI image spec says ("Applying changesets"):
//!
//! - a path is relative to the root: a leading `/` or `./` is dropped, and a `..` component,
//!   an empty path or one longer than [`MAX_PATH`] bytes refuses the layer;
//! - every parent of a path must be a real directory: a parent that is a symbolic link refuses
//!   the layer (nothing is ever written through a link, so a link cannot point a write outside
//!   the root), a missing one is created;
//! - `.wh.<name>` removes `<name>` from the layers below, `.wh..wh..opq` empties its directory
//!   of what the layers below put there;
//! - a hard link must name a regular file already in the root;
//! - device nodes and FIFOs are skipped (a container has no business with either; they are
//!   counted in [`Unpacked::skipped`]);
//! - setuid and setgid bits are dropped, owners are shifted into the range the container's user
//!   namespace maps ([`IdShift`]), and an owner beyond that range refuses the layer;
//! - the bytes written and the entries made are counted against [`Limits`] across all layers.
//!
//! The uncompressed stream is hashed as it is read, so that [`unpack_layer`] can check it
//! against the image configuration's `diff_id`.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{PermissionsExt, lchown};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

/// The longest path an entry may name, in bytes.
pub const MAX_PATH: usize = 4096;

/// What all the layers of one image may make in all.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of file content.
    pub max_bytes: u64,
    /// Entries (files, directories, links).
    pub max_entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 8 << 30,
            max_entries: 1_000_000,
        }
    }
}

/// How the owners in a layer become owners on the host: container id `n` is host id
/// `base + n`, for `n` below `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdShift {
    /// The host id of the container's id 0.
    pub base: u32,
    /// How many ids are mapped.
    pub size: u32,
}

impl IdShift {
    /// No shift: owners stay as the layer says (only for tests and rootless setups).
    pub const NONE: IdShift = IdShift {
        base: 0,
        size: u32::MAX,
    };
}

/// The compression of a layer, from its media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A plain tar.
    None,
    /// gzip.
    Gzip,
    /// zstd.
    Zstd,
}

impl Compression {
    /// The compression of a layer media type (OCI or Docker), or `None` for one that is no
    /// layer this host unpacks (a foreign or non-distributable layer, an artifact).
    #[must_use]
    pub fn of_media_type(media_type: &str) -> Option<Compression> {
        match media_type {
            "application/vnd.oci.image.layer.v1.tar"
            | "application/vnd.docker.image.rootfs.diff.tar" => Some(Compression::None),
            "application/vnd.oci.image.layer.v1.tar+gzip"
            | "application/vnd.docker.image.rootfs.diff.tar.gzip" => Some(Compression::Gzip),
            "application/vnd.oci.image.layer.v1.tar+zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// Why a layer was refused.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    /// An entry breaks a rule; the message names it.
    #[error("layer entry `{path}`: {reason}")]
    Entry {
        /// The entry's path as the layer gives it.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The layer makes more than the limits allow.
    #[error("the image is larger than this host allows: {0}")]
    TooLarge(String),
    /// The uncompressed layer is not what the image configuration says.
    #[error("layer content digest is {actual}, the image configuration says {expected}")]
    DiffId {
        /// The configuration's `diff_id`.
        expected: String,
        /// What was read.
        actual: String,
    },
    /// Reading the layer or writing the root failed.
    #[error("unpacking a layer failed: {0}")]
    Io(#[from] io::Error),
}

/// What unpacking made so far, across layers.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unpacked {
    /// Bytes of file content written.
    pub bytes: u64,
    /// Entries made.
    pub entries: u64,
    /// Device nodes and FIFOs skipped.
    pub skipped: u64,
}

struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Applies one layer, read from `compressed`, over `root`; checks its uncompressed digest
/// against `diff_id` (`sha256:<hex>`) when one is given. `so_far` carries the counts across
/// the layers of one image.
///
/// # Errors
///
/// [`UnpackError`]: an entry that breaks a rule, the limits, the digest, or I/O.
pub fn unpack_layer(
    compressed: impl Read,
    compression: Compression,
    root: &Path,
    diff_id: Option<&str>,
    limits: Limits,
    shift: IdShift,
    so_far: &mut Unpacked,
) -> Result<(), UnpackError> {
    let reader: Box<dyn Read> = match compression {
        Compression::None => Box::new(compressed),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(compressed)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(compressed)?),
    };
    let mut hashing = Hashing {
        inner: reader,
        hasher: Sha256::new(),
    };
    {
        let mut layer = Layer {
            root,
            limits,
            shift,
            made: HashSet::new(),
            counts: so_far,
        };
        let mut archive = tar::Archive::new(&mut hashing);
        for entry in archive.entries()? {
            layer.apply(entry?)?;
        }
    }
    // What the tar reader left (its end blocks, padding) is part of the digest.
    io::copy(&mut hashing, &mut io::sink())?;
    if let Some(expected) = diff_id {
        let actual = format!("sha256:{}", hex(&hashing.hasher.finalize()));
        if actual != expected {
            return Err(UnpackError::DiffId {
                expected: expected.to_owned(),
                actual,
            });
        }
    }
    Ok(())
}

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

struct Layer<'a> {
    root: &'a Path,
    limits: Limits,
    shift: IdShift,
    /// The paths this layer made: an opaque whiteout keeps them.
    made: HashSet<PathBuf>,
    counts: &'a mut Unpacked,
}

/// The relative path an entry names, or why it is refused.
fn clean(raw: &Path) -> Result<PathBuf, String> {
    if raw.as_os_str().len() > MAX_PATH {
        return Err(format!("the path is longer than {MAX_PATH} bytes"));
    }
    let mut clean = PathBuf::new();
    for component in raw.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => return Err("the path has a `..` component".into()),
            Component::Prefix(_) => return Err("the path has a prefix".into()),
        }
    }
    Ok(clean)
}

impl Layer<'_> {
    fn refuse(path: &Path, reason: impl Into<String>) -> UnpackError {
        UnpackError::Entry {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }

    /// Makes every parent of `rel` a real directory under the root, refusing a symbolic link.
    fn parents(&mut self, rel: &Path) -> Result<(), UnpackError> {
        let mut at = self.root.to_path_buf();
        let Some(parent) = rel.parent() else {
            return Ok(());
        };
        for part in parent.components() {
            at.push(part);
            match fs::symlink_metadata(&at) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(Self::refuse(
                        rel,
                        "a parent directory is a symbolic link in an earlier entry; nothing is written through a link",
                    ));
                }
                Ok(_) => {
                    return Err(Self::refuse(rel, "a parent is not a directory"));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs::create_dir(&at)?;
                    fs::set_permissions(&at, fs::Permissions::from_mode(0o755))?;
                    self.count_entry(rel)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn count_entry(&mut self, rel: &Path) -> Result<(), UnpackError> {
        self.counts.entries += 1;
        if self.counts.entries > self.limits.max_entries {
            return Err(UnpackError::TooLarge(format!(
                "more than {} entries (at `{}`)",
                self.limits.max_entries,
                rel.display()
            )));
        }
        Ok(())
    }

    fn owner(&self, rel: &Path, id: u64) -> Result<u32, UnpackError> {
        u32::try_from(id)
            .ok()
            .filter(|id| *id < self.shift.size)
            .and_then(|id| self.shift.base.checked_add(id))
            .ok_or_else(|| {
                Self::refuse(
                    rel,
                    format!(
                        "owner id {id} is outside the {} ids the container's user namespace maps",
                        self.shift.size
                    ),
                )
            })
    }

    fn apply<R: Read>(&mut self, mut entry: tar::Entry<'_, R>) -> Result<(), UnpackError> {
        let raw = entry.path()?.into_owned();
        let rel = clean(&raw).map_err(|reason| Self::refuse(&raw, reason))?;
        if rel.as_os_str().is_empty() {
            // The root itself (`./`): its mode comes from the host.
            return Ok(());
        }
        let name = rel
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        self.parents(&rel)?;
        let parent = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        if name == ".wh..wh..opq" {
            return self.opaque(&parent);
        }
        if let Some(hidden) = name.strip_prefix(".wh.") {
            let target = self.root.join(&parent).join(hidden);
            return remove(&target).map_err(Into::into);
        }
        let header = entry.header();
        let kind = header.entry_type();
        let mode = header.mode()? & 0o1777;
        let uid = self.owner(&rel, header.uid()?)?;
        let gid = self.owner(&rel, header.gid()?)?;
        let at = self.root.join(&rel);
        match kind {
            tar::EntryType::Directory => {
                match fs::symlink_metadata(&at) {
                    Ok(meta) if meta.is_dir() => {}
                    Ok(_) => {
                        remove(&at)?;
                        fs::create_dir(&at)?;
                    }
                    Err(_) => fs::create_dir(&at)?,
                }
                fs::set_permissions(&at, fs::Permissions::from_mode(mode))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                remove(&at)?;
                let size = header.size()?;
                self.counts.bytes = self.counts.bytes.saturating_add(size);
                if self.counts.bytes > self.limits.max_bytes {
                    return Err(UnpackError::TooLarge(format!(
                        "more than {} bytes of files (at `{}`)",
                        self.limits.max_bytes,
                        rel.display()
                    )));
                }
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&at)?;
                let copied = io::copy(&mut (&mut entry).take(size), &mut file)?;
                if copied != size {
                    return Err(Self::refuse(&rel, "the layer ends inside this file"));
                }
                fs::set_permissions(&at, fs::Permissions::from_mode(mode))?;
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()?
                    .ok_or_else(|| Self::refuse(&rel, "a symbolic link without a target"))?
                    .into_owned();
                remove(&at)?;
                std::os::unix::fs::symlink(&target, &at)?;
            }
            tar::EntryType::Link => {
                let target = entry
                    .link_name()?
                    .ok_or_else(|| Self::refuse(&rel, "a hard link without a target"))?
                    .into_owned();
                let target = clean(&target).map_err(|reason| Self::refuse(&rel, reason))?;
                let source = self.root.join(&target);
                self.parents(&target)?;
                match fs::symlink_metadata(&source) {
                    Ok(meta) if meta.is_file() => {}
                    _ => {
                        return Err(Self::refuse(
                            &rel,
                            format!(
                                "a hard link to `{}`, which is no regular file of the image",
                                target.display()
                            ),
                        ));
                    }
                }
                if source != at {
                    remove(&at)?;
                    fs::hard_link(&source, &at)?;
                }
            }
            tar::EntryType::Char | tar::EntryType::Block | tar::EntryType::Fifo => {
                self.counts.skipped += 1;
                return Ok(());
            }
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => return Ok(()),
            other => {
                return Err(Self::refuse(
                    &rel,
                    format!("entries of type {other:?} are not unpacked"),
                ));
            }
        }
        if kind != tar::EntryType::Link {
            lchown(&at, Some(uid), Some(gid))?;
        }
        self.count_entry(&rel)?;
        self.made.insert(rel);
        Ok(())
    }

    /// `.wh..wh..opq` in `dir`: removes what the layers below put in it.
    fn opaque(&mut self, dir: &Path) -> Result<(), UnpackError> {
        let at = self.root.join(dir);
        for child in fs::read_dir(&at)? {
            let child = child?;
            let rel = dir.join(child.file_name());
            if !self.made.contains(&rel) {
                remove(&child.path())?;
            }
        }
        Ok(())
    }
}

/// Removes what is at `at` (a file, a link or a whole directory), if anything; never follows a
/// link.
fn remove(at: &Path) -> io::Result<()> {
    match fs::symlink_metadata(at) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(at),
        Ok(_) => fs::remove_file(at),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use super::*;

    /// A tar layer of `(path, entry)` written in order.
    enum E<'a> {
        File(&'a str),
        Dir,
        Symlink(&'a str),
        Hardlink(&'a str),
        Fifo,
    }

    fn layer(entries: &[(&str, E<'_>)]) -> Vec<u8> {
        let mut out = tar::Builder::new(Vec::new());
        for (path, e) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o755);
            h.set_uid(0);
            h.set_gid(0);
            let data: &[u8] = match e {
                E::File(text) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(text.len() as u64);
                    text.as_bytes()
                }
                E::Dir => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_size(0);
                    &[]
                }
                E::Symlink(target) | E::Hardlink(target) => {
                    h.set_entry_type(if matches!(e, E::Symlink(_)) {
                        tar::EntryType::Symlink
                    } else {
                        tar::EntryType::Link
                    });
                    h.set_size(0);
                    h.set_link_name(target).unwrap();
                    &[]
                }
                E::Fifo => {
                    h.set_entry_type(tar::EntryType::Fifo);
                    h.set_size(0);
                    &[]
                }
            };
            // Paths go in raw so that hostile ones (`..`) can be written.
            let name = path.as_bytes();
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            h.set_cksum();
            out.append(&h, data).unwrap();
        }
        out.into_inner().unwrap()
    }

    fn apply(root: &Path, bytes: &[u8], so_far: &mut Unpacked) -> Result<(), UnpackError> {
        unpack_layer(
            bytes,
            Compression::None,
            root,
            None,
            Limits::default(),
            IdShift::NONE,
            so_far,
        )
    }

    #[test]
    fn layers_apply_in_order_with_whiteouts_and_opaque_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut n = Unpacked::default();
        apply(
            root,
            &layer(&[
                ("etc/", E::Dir),
                ("etc/a", E::File("a")),
                ("etc/b", E::File("b")),
                ("opt/x/old", E::File("old")),
                ("bin/tool", E::File("tool")),
                ("bin/link", E::Hardlink("bin/tool")),
            ]),
            &mut n,
        )
        .unwrap();
        apply(
            root,
            &layer(&[
                ("etc/.wh.a", E::File("")),
                ("opt/x/new", E::File("new")),
                ("opt/x/.wh..wh..opq", E::File("")),
                ("etc/b", E::File("b2")),
            ]),
            &mut n,
        )
        .unwrap();
        assert!(!root.join("etc/a").exists(), "whited out");
        assert_eq!(fs::read_to_string(root.join("etc/b")).unwrap(), "b2");
        assert!(
            !root.join("opt/x/old").exists(),
            "opaque removes the lower layer's"
        );
        assert_eq!(
            fs::read_to_string(root.join("opt/x/new")).unwrap(),
            "new",
            "opaque keeps this layer's own"
        );
        assert_eq!(fs::read_to_string(root.join("bin/link")).unwrap(), "tool");
    }

    #[test]
    fn no_entry_escapes_the_root() {
        for (what, bytes) in [
            ("a `..` path", layer(&[("../escape", E::File("x"))])),
            ("a nested `..`", layer(&[("a/../../escape", E::File("x"))])),
            (
                "a write through a symbolic link",
                layer(&[("out", E::Symlink("/tmp")), ("out/escape", E::File("x"))]),
            ),
            (
                "a hard link to a file outside",
                layer(&[("passwd", E::Hardlink("../../etc/passwd"))]),
            ),
            (
                "a hard link to a missing file",
                layer(&[("passwd", E::Hardlink("etc/passwd"))]),
            ),
        ] {
            let outer = tempfile::tempdir().unwrap();
            let root = outer.path().join("root");
            fs::create_dir(&root).unwrap();
            let result = apply(&root, &bytes, &mut Unpacked::default());
            assert!(
                matches!(result, Err(UnpackError::Entry { .. })),
                "{what}: {result:?}"
            );
            assert!(!outer.path().join("escape").exists(), "{what}");
        }
    }

    #[test]
    fn an_absolute_path_lands_inside_the_root_and_a_symlink_may_point_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        apply(
            root,
            &layer(&[
                ("/etc/hostname", E::File("h")),
                ("etc/resolv.conf", E::Symlink("/run/resolv.conf")),
            ]),
            &mut Unpacked::default(),
        )
        .unwrap();
        assert_eq!(fs::read_to_string(root.join("etc/hostname")).unwrap(), "h");
        assert_eq!(
            fs::read_link(root.join("etc/resolv.conf")).unwrap(),
            Path::new("/run/resolv.conf"),
            "a link is stored, never followed while unpacking"
        );
    }

    #[test]
    fn device_nodes_and_fifos_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut n = Unpacked::default();
        apply(
            dir.path(),
            &layer(&[("dev/pipe", E::Fifo), ("ok", E::File("x"))]),
            &mut n,
        )
        .unwrap();
        assert!(!dir.path().join("dev/pipe").exists());
        assert_eq!(n.skipped, 1);
    }

    #[test]
    fn the_limits_hold_across_layers() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_bytes: 10,
            max_entries: 100,
        };
        let mut n = Unpacked::default();
        let one = layer(&[("a", E::File("123456"))]);
        unpack_layer(
            &one[..],
            Compression::None,
            dir.path(),
            None,
            limits,
            IdShift::NONE,
            &mut n,
        )
        .unwrap();
        let two = layer(&[("b", E::File("123456"))]);
        let result = unpack_layer(
            &two[..],
            Compression::None,
            dir.path(),
            None,
            limits,
            IdShift::NONE,
            &mut n,
        );
        assert!(
            matches!(result, Err(UnpackError::TooLarge(_))),
            "{result:?}"
        );
    }

    #[test]
    fn the_diff_id_is_checked_and_owners_are_shifted_into_the_mapped_range() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = layer(&[("a", E::File("x"))]);
        let digest = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
        let shift = IdShift {
            base: 100_000,
            size: 65_536,
        };
        let mut n = Unpacked::default();
        unpack_layer(
            &bytes[..],
            Compression::None,
            dir.path(),
            Some(&digest),
            Limits::default(),
            shift,
            &mut n,
        )
        .unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(fs::metadata(dir.path().join("a")).unwrap().uid(), 100_000);
        let other = tempfile::tempdir().unwrap();
        let wrong = unpack_layer(
            &bytes[..],
            Compression::None,
            other.path(),
            Some("sha256:00"),
            Limits::default(),
            shift,
            &mut Unpacked::default(),
        );
        assert!(
            matches!(wrong, Err(UnpackError::DiffId { .. })),
            "{wrong:?}"
        );
    }
}
