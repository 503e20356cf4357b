//! Reading an uploaded archive (a frontend bundle, a docs tree) without trusting it.
//!
//! [`read`] takes the bytes of a tar, tar.gz or zip archive and returns its regular files with
//! normalized relative paths, or refuses the whole archive. Nothing in it is taken on faith:
//!
//! - every path must be relative and stay inside the archive (no `/abs`, no `..`, no empty,
//!   `.`, NUL or backslash component) and must be valid UTF-8;
//! - only regular files and directories are accepted: symbolic and hard links, devices, FIFOs
//!   and other special entries are refused, because a link is how an archive writes outside
//!   the directory it is unpacked in;
//! - two entries may not name the same path, and a file may not also be used as a directory;
//! - the [`Limits`] are enforced while reading, on the bytes actually produced: the sizes an
//!   archive declares are never trusted, so a zip bomb stops one byte past the limit.
//!
//! Errors name the entry and the rule in plain English, since they are shown to the developer
//! who uploaded the archive.
//!
//! ```
//! use atrium_archive::{self as archive, Limits};
//!
//! let limits = Limits { max_files: 100, max_file_bytes: 1 << 20, max_total_bytes: 8 << 20 };
//! let err = archive::read(b"not an archive", &limits).unwrap_err();
//! assert!(err.to_string().contains("not a tar, tar.gz or zip archive"));
//! ```

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

/// How much an archive may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most regular files (directories are not counted).
    pub max_files: usize,
    /// Most bytes in one file, uncompressed.
    pub max_file_bytes: u64,
    /// Most bytes in all files together, uncompressed.
    pub max_total_bytes: u64,
}

/// A regular file read from an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveFile {
    /// Relative, `/`-separated and normalized: no leading `./`, no `.` or `..` component.
    pub path: String,
    /// The file's content.
    pub bytes: Vec<u8>,
}

/// Why an archive was refused.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// Not a tar, tar.gz or zip archive, or a corrupt one.
    #[error("the archive could not be read: {0}")]
    Format(String),
    /// An entry breaks one of the rules of the module.
    #[error("the archive's entry `{entry}` is refused: {reason}")]
    Refused {
        /// The entry's path as written in the archive.
        entry: String,
        /// The rule it breaks.
        reason: String,
    },
    /// More regular files than [`Limits::max_files`].
    #[error("the archive holds more than {limit} files")]
    TooManyFiles {
        /// The limit.
        limit: usize,
    },
    /// A file larger than [`Limits::max_file_bytes`].
    #[error("the archive's file `{entry}` is larger than {limit} bytes")]
    FileTooLarge {
        /// The file's path.
        entry: String,
        /// The limit.
        limit: u64,
    },
    /// Files larger together than [`Limits::max_total_bytes`].
    #[error("the archive's files add up to more than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
}

/// The regular files of the tar, tar.gz or zip archive `bytes`, sorted by path; the format is
/// told by its magic bytes, not by a file name.
pub fn read(bytes: &[u8], limits: &Limits) -> Result<Vec<ArchiveFile>, ArchiveError> {
    let files = if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        read_zip(bytes, limits)?
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        read_tar(flate2::read::GzDecoder::new(bytes), limits)?
    } else if bytes.get(257..262) == Some(b"ustar".as_slice()) {
        read_tar(bytes, limits)?
    } else {
        return Err(ArchiveError::Format(
            "it is not a tar, tar.gz or zip archive".into(),
        ));
    };
    files.into_files()
}

/// Files collected so far, with the running counts the limits are checked against.
struct Collected<'l> {
    limits: &'l Limits,
    files: BTreeMap<String, Vec<u8>>,
    /// Files counted so far.
    count: usize,
    /// Bytes of content read so far.
    total: u64,
}

impl<'l> Collected<'l> {
    fn new(limits: &'l Limits) -> Self {
        Collected {
            limits,
            files: BTreeMap::new(),
            count: 0,
            total: 0,
        }
    }

    /// Counts one more file, before its content is read.
    fn count_file(&mut self) -> Result<(), ArchiveError> {
        self.count += 1;
        if self.count > self.limits.max_files {
            return Err(ArchiveError::TooManyFiles {
                limit: self.limits.max_files,
            });
        }
        Ok(())
    }

    /// Reads the content of the file at `path` (already normalized and counted) from `content`,
    /// never more than one byte past the smaller of the limits left.
    fn add(
        &mut self,
        path: String,
        content: impl Read,
        read_error: impl Fn(std::io::Error) -> ArchiveError,
    ) -> Result<(), ArchiveError> {
        if self.files.contains_key(&path) {
            return Err(refused(&path, "another entry has the same path"));
        }
        let left = self.limits.max_total_bytes.saturating_sub(self.total);
        let budget = self.limits.max_file_bytes.min(left);
        let mut bytes = Vec::new();
        content
            .take(budget.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        let size = bytes.len() as u64;
        if size > self.limits.max_file_bytes {
            return Err(ArchiveError::FileTooLarge {
                entry: path,
                limit: self.limits.max_file_bytes,
            });
        }
        if size > left {
            return Err(ArchiveError::TooLarge {
                limit: self.limits.max_total_bytes,
            });
        }
        self.total += size;
        self.files.insert(path, bytes);
        Ok(())
    }

    fn into_files(self) -> Result<Vec<ArchiveFile>, ArchiveError> {
        // A path that is a file and also the parent of another file cannot be unpacked.
        for path in self.files.keys() {
            if let Some(ancestor) = ancestors(path).find(|a| self.files.contains_key(*a)) {
                return Err(refused(
                    path,
                    &format!("it is inside `{ancestor}`, which is a file"),
                ));
            }
        }
        Ok(self
            .files
            .into_iter()
            .map(|(path, bytes)| ArchiveFile { path, bytes })
            .collect())
    }
}

/// The proper ancestors of a normalized path: `a/b/c` gives `a` and `a/b`.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

fn refused(entry: &str, reason: &str) -> ArchiveError {
    ArchiveError::Refused {
        entry: entry.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The normalized form of an entry's raw name: a leading `./` (any number of them) and a
/// trailing `/` removed. `Ok("")` is the archive's root, which only a directory may name.
fn normalize(raw: &[u8]) -> Result<String, ArchiveError> {
    let lossy = || String::from_utf8_lossy(raw).into_owned();
    let name =
        std::str::from_utf8(raw).map_err(|_| refused(&lossy(), "its name is not valid UTF-8"))?;
    let rule = |reason: &str| Err(refused(name, reason));
    if name.contains('\0') {
        return rule("its name contains a NUL byte");
    }
    if name.contains('\\') {
        return rule("its name contains a backslash; paths must use `/`");
    }
    if name.starts_with('/') {
        return rule("it is an absolute path; paths must be relative to the archive");
    }
    let mut path = name;
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    let path = path.strip_suffix('/').unwrap_or(path);
    if path.is_empty() || path == "." {
        return Ok(String::new());
    }
    let first = path.split('/').next().unwrap_or_default();
    if first.len() == 2 && first.ends_with(':') {
        return rule("it starts with a drive letter; paths must be relative to the archive");
    }
    for component in path.split('/') {
        match component {
            "" => return rule("its path has an empty component (`//`)"),
            "." => return rule("its path has a `.` component"),
            ".." => return rule("its path climbs out of the archive with `..`"),
            _ => {}
        }
    }
    Ok(path.to_owned())
}

/// Bytes of tar structure (headers, padding, long names, pax records) allowed on top of the
/// files' content: generous for real archives, small next to the content limit.
const TAR_OVERHEAD_PER_FILE: u64 = 16 << 10;
const TAR_OVERHEAD: u64 = 1 << 20;

fn read_tar(stream: impl Read, limits: &Limits) -> Result<Collected<'_>, ArchiveError> {
    // The tar reader reads whatever the headers declare, even for entries it skips (a
    // directory with a size) or buffers whole (GNU long names, pax records), so the
    // decompressed stream as a whole is capped too: a small tar.gz cannot make it read or hold
    // gigabytes.
    let cap = limits
        .max_total_bytes
        .saturating_add(TAR_OVERHEAD)
        .saturating_add((limits.max_files as u64).saturating_mul(TAR_OVERHEAD_PER_FILE));
    let mut capped = Capped {
        inner: stream,
        left: cap,
        exceeded: false,
    };
    let result = read_tar_entries(&mut capped, limits);
    if capped.exceeded {
        return Err(ArchiveError::TooLarge {
            limit: limits.max_total_bytes,
        });
    }
    result
}

fn read_tar_entries<'l>(
    stream: impl Read,
    limits: &'l Limits,
) -> Result<Collected<'l>, ArchiveError> {
    use tar::EntryType;

    let corrupt = |e: std::io::Error| ArchiveError::Format(format!("the tar is corrupt: {e}"));
    let mut collected = Collected::new(limits);
    let mut archive = tar::Archive::new(stream);
    for entry in archive.entries().map_err(corrupt)? {
        let entry = entry.map_err(corrupt)?;
        let raw = entry.path_bytes().into_owned();
        let kind = match entry.header().entry_type() {
            EntryType::Regular | EntryType::Continuous => Kind::File,
            EntryType::Directory => Kind::Directory,
            // Defaults (times, owners) for the entries that follow: nothing to unpack.
            EntryType::XGlobalHeader => continue,
            EntryType::Symlink => Kind::Refused("it is a symbolic link"),
            EntryType::Link => Kind::Refused("it is a hard link"),
            EntryType::Char | EntryType::Block => Kind::Refused("it is a device file"),
            EntryType::Fifo => Kind::Refused("it is a FIFO"),
            EntryType::GNUSparse => Kind::Refused("it is a sparse file"),
            _ => Kind::Refused("it is a special entry"),
        };
        if let Some(path) = kind.check(&raw)? {
            collected.count_file()?;
            let read_error = |e: std::io::Error| {
                ArchiveError::Format(format!("the tar's entry `{path}` is corrupt: {e}"))
            };
            collected.add(path.clone(), entry, read_error)?;
        }
    }
    Ok(collected)
}

/// What an entry is, as far as unpacking goes.
enum Kind {
    File,
    Directory,
    /// Anything else, with what it is.
    Refused(&'static str),
}

impl Kind {
    /// The normalized path of a file entry, `None` for a directory (skipped, but its path must
    /// be acceptable too), or why the entry is refused.
    fn check(self, raw: &[u8]) -> Result<Option<String>, ArchiveError> {
        match self {
            Kind::File => {
                let path = normalize(raw)?;
                if path.is_empty() {
                    return Err(refused(
                        &String::from_utf8_lossy(raw),
                        "a file needs a name",
                    ));
                }
                Ok(Some(path))
            }
            Kind::Directory => normalize(raw).map(|_| None),
            Kind::Refused(what) => Err(refused(
                &String::from_utf8_lossy(raw),
                &format!("{what}; archives may hold only regular files and directories"),
            )),
        }
    }
}

/// A reader that fails once more than `left` bytes have been read through it.
struct Capped<R> {
    inner: R,
    left: u64,
    exceeded: bool,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Ask for one byte more than allowed, so reaching the cap exactly is not an error.
        let want = (buf.len() as u64).min(self.left.saturating_add(1));
        let want = usize::try_from(want).unwrap_or(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            self.exceeded = true;
            return Err(std::io::Error::other("the archive is larger than allowed"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Unix file types, from the mode a zip entry's external attributes may carry.
const S_IFMT: u32 = 0o170_000;
const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFLNK: u32 = 0o120_000;

fn read_zip<'l>(bytes: &[u8], limits: &'l Limits) -> Result<Collected<'l>, ArchiveError> {
    use zip::CompressionMethod;

    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| ArchiveError::Format(format!("the zip is corrupt: {e}")))?;
    // The zip crate keeps one entry per name, so a repeated name would otherwise be silently
    // dropped, and which copy wins is where zip tools disagree.
    if archive.has_duplicate_names() {
        return Err(ArchiveError::Format(
            "the zip's central directory lists the same path twice".into(),
        ));
    }
    let entry_error = |name: &[u8], e: &dyn std::fmt::Display| {
        ArchiveError::Format(format!(
            "the zip's entry `{}` is corrupt: {e}",
            String::from_utf8_lossy(name)
        ))
    };

    // First pass, on the central directory only: every name and type is checked and the files
    // counted before any content is inflated.
    let mut files = Vec::new();
    for index in 0..archive.len() {
        let entry = archive
            .by_index_data(index)
            .map_err(|e| ArchiveError::Format(format!("the zip is corrupt: {e}")))?;
        let raw = entry.name_raw();
        // The type in the mode is looked at before the trailing `/` that marks a directory, so
        // a link cannot pass for a directory by its name.
        let kind = match entry.unix_mode().map_or(0, |mode| mode & S_IFMT) {
            S_IFLNK => Kind::Refused("it is a symbolic link"),
            S_IFDIR => Kind::Directory,
            0 | S_IFREG if entry.is_dir() => Kind::Directory,
            0 | S_IFREG => Kind::File,
            _ => Kind::Refused("it is a special file (device, FIFO or socket)"),
        };
        let Some(path) = kind.check(raw)? else {
            continue;
        };
        if entry.encrypted() {
            return Err(refused(&path, "it is encrypted"));
        }
        if !matches!(
            entry.compression(),
            CompressionMethod::Stored | CompressionMethod::Deflated
        ) {
            return Err(refused(
                &path,
                "it is compressed with a method other than store or deflate",
            ));
        }
        if files.len() == limits.max_files {
            return Err(ArchiveError::TooManyFiles {
                limit: limits.max_files,
            });
        }
        files.push((index, path));
    }

    let mut collected = Collected::new(limits);
    for (index, path) in files {
        // The local header must agree with the central directory, so that every zip tool sees
        // the same name for the same bytes.
        let options = zip::read::ZipReadOptions::new().enforce_header_consistency(true);
        let entry = archive
            .by_index_with_options(index, options)
            .map_err(|e| entry_error(path.as_bytes(), &e))?;
        // The zip crate also stops at the size the entry declares; `add` does not rely on it.
        let read_error = |e: std::io::Error| entry_error(path.as_bytes(), &e);
        collected.add(path.clone(), entry, read_error)?;
    }
    Ok(collected)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use tar::{EntryType, Header};
    use zip::write::SimpleFileOptions;

    use super::*;

    const LIMITS: Limits = Limits {
        max_files: 10,
        max_file_bytes: 1000,
        max_total_bytes: 5000,
    };

    /// One tar entry; the name is written into the header as is, so that tests can build what
    /// `tar::Builder`'s checked setters refuse (`..`, absolute paths).
    fn entry(tar: &mut tar::Builder<Vec<u8>>, name: &[u8], kind: EntryType, data: &[u8]) {
        let mut header = Header::new_gnu();
        header.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name);
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        if matches!(kind, EntryType::Symlink | EntryType::Link) {
            header.set_link_name("../../etc/passwd").unwrap();
        }
        header.set_cksum();
        tar.append(&header, data).unwrap();
    }

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let kind = if name.ends_with('/') {
                EntryType::Directory
            } else {
                EntryType::Regular
            };
            entry(&mut tar, name.as_bytes(), kind, data);
        }
        tar.into_inner().unwrap()
    }

    fn one_tar_entry(name: &[u8], kind: EntryType) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        entry(&mut tar, b"ok.txt", EntryType::Regular, b"fine");
        entry(&mut tar, name, kind, b"");
        tar.into_inner().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            if name.ends_with('/') {
                zip.add_directory(*name, options).unwrap();
            } else {
                zip.start_file(*name, options).unwrap();
                zip.write_all(data).unwrap();
            }
        }
        zip.finish().unwrap().into_inner()
    }

    fn refusal(result: Result<Vec<ArchiveFile>, ArchiveError>) -> (String, String) {
        match result {
            Err(ArchiveError::Refused { entry, reason }) => (entry, reason),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn tar_tar_gz_and_zip_give_the_same_sorted_files() {
        let entries: &[(&str, &[u8])] = &[
            ("./", b""),
            ("index.html", b"<h1>hello</h1>"),
            ("assets/", b""),
            ("./assets/app.js", b"console.log(1)"),
            ("assets/img/", b""),
            ("assets/img/logo.svg", b"<svg/>"),
        ];
        let tar = tar_of(entries);
        for (format, bytes) in [
            ("tar", tar.clone()),
            ("tar.gz", gzip(&tar)),
            ("zip", zip_of(entries)),
        ] {
            let files = read(&bytes, &LIMITS).unwrap_or_else(|e| panic!("{format}: {e}"));
            let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
            assert_eq!(
                paths,
                ["assets/app.js", "assets/img/logo.svg", "index.html"],
                "{format}"
            );
            assert_eq!(files[0].bytes, b"console.log(1)", "{format}");
            assert_eq!(files[2].bytes, b"<h1>hello</h1>", "{format}");
        }
    }

    #[test]
    fn an_empty_zip_has_no_files() {
        let zip = zip::ZipWriter::new(Cursor::new(Vec::new()))
            .finish()
            .unwrap()
            .into_inner();
        assert!(zip.starts_with(b"PK\x05\x06"));
        assert_eq!(read(&zip, &LIMITS).unwrap(), []);
    }

    #[test]
    fn paths_that_climb_out_are_refused() {
        for name in ["../evil", "a/../../evil", "a/.."] {
            let (entry, reason) = refusal(read(&tar_of(&[(name, b"x")]), &LIMITS));
            assert_eq!(entry, name);
            assert!(reason.contains("`..`"), "{reason}");
            let (entry, reason) = refusal(read(&zip_of(&[(name, b"x")]), &LIMITS));
            assert_eq!(entry, name);
            assert!(reason.contains("`..`"), "{reason}");
        }
    }

    #[test]
    fn absolute_paths_are_refused() {
        for name in ["/etc/passwd", "C:/Windows/win.ini"] {
            for bytes in [tar_of(&[(name, b"x")]), zip_of(&[(name, b"x")])] {
                let (entry, reason) = refusal(read(&bytes, &LIMITS));
                assert_eq!(entry, name);
                assert!(reason.contains("relative"), "{reason}");
            }
        }
    }

    #[test]
    fn odd_names_are_refused() {
        for (name, rule) in [
            (b"a\\b.txt".as_slice(), "backslash"),
            (b"a//b.txt", "empty component"),
            (b"a/./b.txt", "`.` component"),
            (b"caf\xe9.txt", "UTF-8"),
        ] {
            let (_, reason) = refusal(read(&one_tar_entry(name, EntryType::Regular), &LIMITS));
            assert!(reason.contains(rule), "{reason}");
        }
        let (entry, reason) = refusal(read(&zip_of(&[("a\\b.txt", b"x")]), &LIMITS));
        assert_eq!(entry, "a\\b.txt");
        assert!(reason.contains("backslash"), "{reason}");
    }

    #[test]
    fn links_are_refused() {
        for (kind, what) in [
            (EntryType::Symlink, "symbolic link"),
            (EntryType::Link, "hard link"),
        ] {
            let (entry, reason) = refusal(read(&one_tar_entry(b"link", kind), &LIMITS));
            assert_eq!(entry, "link");
            assert!(reason.contains(what), "{reason}");
        }

        // In a zip, a symbolic link is an entry whose Unix mode (in the external attributes)
        // says S_IFLNK; its content is the target.
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        zip.start_file("ok.txt", SimpleFileOptions::default())
            .unwrap();
        zip.add_symlink("link", "/etc/passwd", SimpleFileOptions::default())
            .unwrap();
        let zip = zip.finish().unwrap().into_inner();
        let (entry, reason) = refusal(read(&zip, &LIMITS));
        assert_eq!(entry, "link");
        assert!(reason.contains("symbolic link"), "{reason}");
    }

    #[test]
    fn devices_and_fifos_are_refused() {
        for (kind, what) in [
            (EntryType::Char, "device"),
            (EntryType::Block, "device"),
            (EntryType::Fifo, "FIFO"),
        ] {
            let (entry, reason) = refusal(read(&one_tar_entry(b"dev/null", kind), &LIMITS));
            assert_eq!(entry, "dev/null");
            assert!(reason.contains(what), "{reason}");
        }
    }

    #[test]
    fn too_many_files_are_refused_before_reading_them() {
        let names: Vec<String> = (0..11).map(|i| format!("f{i}.txt")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        for bytes in [tar_of(&entries), zip_of(&entries)] {
            assert!(matches!(
                read(&bytes, &LIMITS),
                Err(ArchiveError::TooManyFiles { limit: 10 })
            ));
        }
        // Ten files and any number of directories are fine.
        let mut entries = entries;
        entries.pop();
        entries.extend([("d1/", &b""[..]), ("d2/", &b""[..])]);
        assert_eq!(read(&tar_of(&entries), &LIMITS).unwrap().len(), 10);
    }

    #[test]
    fn a_file_over_the_limit_is_refused() {
        // Zeros compress well: the archives are small, only what they unpack to is large.
        let big = vec![0; 10 << 20];
        let entries: &[(&str, &[u8])] = &[("small.txt", b"x"), ("big.bin", &big)];
        for bytes in [gzip(&tar_of(entries)), zip_of(entries)] {
            assert!(bytes.len() < 100 << 10);
            match read(&bytes, &LIMITS) {
                Err(ArchiveError::FileTooLarge { entry, limit }) => {
                    assert_eq!((entry.as_str(), limit), ("big.bin", 1000));
                }
                other => panic!("{other:?}"),
            }
        }
        // Exactly at the limit is fine.
        let at_limit = vec![7; 1000];
        assert_eq!(
            read(&zip_of(&[("f", &at_limit)]), &LIMITS).unwrap()[0].bytes,
            at_limit
        );
    }

    #[test]
    fn files_over_the_total_are_refused() {
        let data = vec![1; 900];
        let names: Vec<String> = (0..6).map(|i| format!("f{i}")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &data[..])).collect();
        for bytes in [tar_of(&entries), zip_of(&entries)] {
            assert!(matches!(
                read(&bytes, &LIMITS),
                Err(ArchiveError::TooLarge { limit: 5000 })
            ));
        }
        assert_eq!(read(&tar_of(&entries[..5]), &LIMITS).unwrap().len(), 5);
    }

    #[test]
    fn a_zip_that_inflates_past_its_declared_size_is_refused() {
        let mut zip = zip_of(&[("bomb.bin", &vec![0; 10 << 20])]);
        // Claim 100 bytes in both the local header and the central directory.
        let declared = 100u32.to_le_bytes();
        zip[22..26].copy_from_slice(&declared);
        let central = zip
            .windows(4)
            .position(|w| w == b"PK\x01\x02")
            .expect("a central directory entry");
        zip[central + 24..central + 28].copy_from_slice(&declared);

        let limits = Limits {
            max_file_bytes: 1 << 20,
            max_total_bytes: 1 << 20,
            ..LIMITS
        };
        match read(&zip, &limits) {
            Err(ArchiveError::Format(message)) => {
                assert!(message.contains("bomb.bin"), "{message}")
            }
            Err(ArchiveError::FileTooLarge { entry, .. }) => assert_eq!(entry, "bomb.bin"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn structure_that_inflates_past_the_cap_is_refused() {
        // A directory entry declaring 64 MiB of zeros: nothing the limits count, but the tar
        // reader would still inflate all of it to skip it.
        let mut tar = tar::Builder::new(Vec::new());
        entry(&mut tar, b"dir/", EntryType::Directory, &vec![0; 64 << 20]);
        let bytes = gzip(&tar.into_inner().unwrap());
        assert!(matches!(
            read(&bytes, &LIMITS),
            Err(ArchiveError::TooLarge { limit: 5000 })
        ));
    }

    #[test]
    fn duplicate_paths_are_refused() {
        for names in [["a.txt", "a.txt"], ["a.txt", "./a.txt"]] {
            let entries = [(names[0], &b"1"[..]), (names[1], &b"2"[..])];
            let (entry, reason) = refusal(read(&tar_of(&entries), &LIMITS));
            assert_eq!(entry, "a.txt");
            assert!(reason.contains("same path"), "{reason}");
        }
        let (entry, reason) = refusal(read(
            &zip_of(&[("a.txt", b"1"), ("./a.txt", b"2")]),
            &LIMITS,
        ));
        assert_eq!(entry, "a.txt");
        assert!(reason.contains("same path"), "{reason}");

        // A file cannot also be a directory.
        let (entry, reason) = refusal(read(&tar_of(&[("a", b"1"), ("a/b", b"2")]), &LIMITS));
        assert_eq!(entry, "a/b");
        assert!(reason.contains("inside `a`"), "{reason}");
    }

    #[test]
    fn garbage_is_not_an_archive() {
        let mut truncated_zip = zip_of(&[("a.txt", b"hello")]);
        truncated_zip.truncate(20);
        let mut truncated_gz = gzip(&tar_of(&[("a.txt", b"hello")]));
        truncated_gz.truncate(30);
        let mut bad_checksum = tar_of(&[("a.txt", b"hello")]);
        bad_checksum[0] = b'b';
        for bytes in [
            b"".to_vec(),
            b"hello, world".to_vec(),
            vec![0; 4096],
            b"PK\x03\x04garbage".to_vec(),
            vec![0x1f, 0x8b, 1, 2, 3],
            truncated_zip,
            truncated_gz,
            bad_checksum,
        ] {
            match read(&bytes, &LIMITS) {
                Err(ArchiveError::Format(message)) => assert!(!message.is_empty()),
                other => panic!("{:?}: {other:?}", &bytes[..bytes.len().min(8)]),
            }
        }
    }
}
