//! Key files: a secret the host generates on first start and keeps in its data directory
//! (the secrets key, the developer-token signing key), readable by its owner only.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The length of every key this crate generates, in bytes.
pub(crate) const KEY_LEN: usize = 32;

/// Lower-case hex.
pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut out, b| {
            // Writing to a String cannot fail.
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// A failure of [`read_or_create_key_file`]; each module that keeps a key file turns it into
/// its own error type.
#[derive(Debug)]
pub(crate) enum KeyFileError {
    /// The file exists but must not be used; the message says why and what to do.
    Refused(String),
    /// Reading or creating the file failed.
    Io { path: PathBuf, source: io::Error },
}

/// Returns the contents of the key file at `path`, creating it first with 32 random bytes
/// written as hex if it does not exist. The secrets key and the host's JWT secret both live
/// in such files.
///
/// The file is created with `create_new` and mode 0600 in one step, so it is never readable
/// by others, not even for an instant, and two processes starting together cannot both write
/// a key: the one that loses the race gets `AlreadyExists` and reads the winner's key.
pub(crate) fn read_or_create_key_file(path: &Path) -> Result<String, KeyFileError> {
    let io_error = |source| KeyFileError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_error)?;
    }

    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            let mut key = [0u8; KEY_LEN];
            if let Err(e) = getrandom::fill(&mut key) {
                // Leave no empty key file behind: the next start would refuse it.
                let _ = std::fs::remove_file(path);
                return Err(io_error(io::Error::other(format!(
                    "the system random generator failed: {e}"
                ))));
            }
            let text = hex_encode(&key);
            let written = file
                .write_all(format!("{text}\n").as_bytes())
                .and_then(|()| file.sync_all());
            if let Err(e) = written {
                let _ = std::fs::remove_file(path);
                return Err(io_error(e));
            }
            tracing::info!(path = %path.display(), "generated a new key file");
            Ok(text)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_existing_key_file(path),
        Err(e) => Err(io_error(e)),
    }
}

/// Reads a key file that already exists, refusing one that group or others can read.
fn read_existing_key_file(path: &Path) -> Result<String, KeyFileError> {
    let io_error = |source| KeyFileError::Io {
        path: path.to_owned(),
        source,
    };
    // A process that just won the creation race writes the key right after creating the
    // file; give it a moment rather than reading an empty file and refusing it.
    let mut attempt = 0;
    loop {
        let mut file = std::fs::File::open(path).map_err(io_error)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = file.metadata().map_err(io_error)?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(KeyFileError::Refused(format!(
                    "the key file {path} can be read by other users (mode {mode:04o}); \
                     restrict it with `chmod 600 {path}`, and replace the key if anyone else \
                     may have read it",
                    path = path.display()
                )));
            }
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(|e| {
            if e.kind() == io::ErrorKind::InvalidData {
                KeyFileError::Refused(format!("the key file {} is not text", path.display()))
            } else {
                io_error(e)
            }
        })?;
        let text = text.trim();
        if !text.is_empty() || attempt == 20 {
            return Ok(text.to_owned());
        }
        attempt += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// 32 random bytes written as 64 hex characters, for tests that need a key file's contents.
#[cfg(test)]
#[allow(clippy::expect_used)]
pub(crate) fn random_hex_key() -> String {
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).expect("random bytes");
    hex_encode(&key)
}
