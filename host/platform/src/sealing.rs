//! Encryption of app secrets at rest.
//!
//! A [`SecretsKey`] seals a secret's value with AES-256-GCM-SIV before it is written to the
//! database and opens it when an app reads it. GCM-SIV is nonce-misuse resistant: even if the
//! random generator ever repeated a nonce, the only thing that would leak is whether two
//! sealed values are equal, never the key stream.
//!
//! The key comes from `ATRIUM_SECRETS_KEY` when the operator sets it, and otherwise from
//! `<data_dir>/secrets.key`, generated on first use and readable only by its owner.
//!
//! ```no_run
//! # fn main() -> Result<(), atrium_platform::sealing::SealError> {
//! use atrium_platform::sealing::SecretsKey;
//!
//! let key = SecretsKey::load_or_create(std::path::Path::new("/var/lib/atrium"), None)?;
//! let sealed = key.seal(b"sk-live-123", b"invoices\0STRIPE_KEY")?;
//! assert_eq!(key.open(&sealed, b"invoices\0STRIPE_KEY")?, b"sk-live-123");
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aws_lc_rs::aead::{AES_256_GCM_SIV, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

use crate::keyfile::{KEY_LEN, KeyFileError, read_or_create_key_file};

/// Where a sealed value is stored: its associated data binds the ciphertext there, so a value
/// copied into another row, app, tenant, organization or kind does not open. Every sealed
/// value of the platform names its place with this one enum; the bytes each variant makes are
/// part of the format of data at rest and never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sealed<'a> {
    /// An app's dev-default secret, set by its developer.
    AppSecret {
        /// The app's slug.
        app: &'a str,
        /// The secret's key.
        key: &'a str,
    },
    /// A secret-typed setting of an install.
    InstallSetting {
        /// The install.
        install: &'a atrium_store::InstallKey,
        /// The setting's id.
        key: &'a str,
    },
    /// A tenant's override of an app secret, for its install.
    SecretOverride {
        /// The install.
        install: &'a atrium_store::InstallKey,
        /// The secret's key.
        key: &'a str,
    },
    /// A tenant's integration configuration (a JSON object: credentials, addresses).
    Integration {
        /// The tenant.
        tenant: &'a atrium_store::TenantKey,
        /// The provider's slug.
        provider: &'a str,
    },
}

impl Sealed<'_> {
    /// The associated data of this place.
    #[must_use]
    pub fn associated_data(&self) -> Vec<u8> {
        let install = |i: &atrium_store::InstallKey, kind: atrium_store::InstallValueKind, key| {
            format!(
                "atrium-install\0{}\0{}\0{}\0{}\0{key}",
                i.org_id,
                i.tenant_id,
                i.app_slug,
                kind.as_str()
            )
        };
        match self {
            Sealed::AppSecret { app, key } => format!("atrium-secret\0{app}\0{key}"),
            Sealed::InstallSetting { install: i, key } => {
                install(i, atrium_store::InstallValueKind::Setting, key)
            }
            Sealed::SecretOverride { install: i, key } => {
                install(i, atrium_store::InstallValueKind::Override, key)
            }
            Sealed::Integration { tenant, provider } => format!(
                "atrium-integration\0{}\0{}\0{provider}",
                tenant.org_id, tenant.tenant_id
            ),
        }
        .into_bytes()
    }
}

/// The environment variable that holds the secrets key, when the operator provides one.
pub const SECRETS_KEY_ENV: &str = "ATRIUM_SECRETS_KEY";

/// The key file's name under the data directory when [`SECRETS_KEY_ENV`] is not set.
pub const SECRETS_KEY_FILE: &str = "secrets.key";

/// The first byte of every sealed value: the format (AES-256-GCM-SIV, 96-bit nonce, 128-bit
/// tag). A later format gets a new number, so values sealed today still open after an upgrade.
const FORMAT_AES_256_GCM_SIV: u8 = 1;

/// AES-256-GCM-SIV's tag length.
const TAG_LEN: usize = 16;

/// A failure to load the secrets key or to seal or open a value.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// `ATRIUM_SECRETS_KEY` or the key file holds no usable key, or the key file is readable
    /// by other users. The message names the variable or the file and what to do.
    #[error("{0}")]
    Key(String),
    /// The key file could not be read or created.
    #[error("cannot read or create the key file {}: {source}", path.display())]
    Io {
        /// The key file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The value does not open: it was tampered with, sealed under another key, or sealed for
    /// another row (its associated data differs).
    #[error(
        "the sealed value does not open: it was altered, sealed under another secrets key, or belongs to another secret"
    )]
    Open,
    /// The value was sealed in a format this host does not know (a newer Atrium wrote it).
    #[error("the sealed value has format {0}, which this version of Atrium does not know")]
    UnknownFormat(u8),
    /// The random generator or the cipher failed while sealing.
    #[error("sealing failed: {0}")]
    Seal(String),
    /// A stored sealed text is not what sealing writes (not base64, or not UTF-8 inside).
    #[error("{0}")]
    Corrupt(String),
}

/// The key that seals and opens app secrets.
///
/// Cloning is cheap (the key schedule is shared). `Debug` never prints the key.
#[derive(Clone)]
pub struct SecretsKey {
    key: Arc<LessSafeKey>,
}

impl fmt::Debug for SecretsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretsKey")
            .field("algorithm", &"AES-256-GCM-SIV")
            .finish_non_exhaustive()
    }
}

impl SecretsKey {
    /// The key from `configured` (the value of `ATRIUM_SECRETS_KEY`: 32 bytes written as 64
    /// hex characters or as base64) when it is `Some`; otherwise the key in
    /// `<data_dir>/secrets.key`, generated with mode 0600 on first use.
    ///
    /// An existing key file that group or others can read is refused rather than used: a key
    /// that may already have leaked protects nothing, and the operator should know.
    ///
    /// # Errors
    ///
    /// [`SealError::Key`] for a malformed variable or key file or a key file with loose
    /// permissions, [`SealError::Io`] when the file cannot be read or created.
    pub fn load_or_create(data_dir: &Path, configured: Option<&str>) -> Result<Self, SealError> {
        let key = match configured {
            Some(value) => parse_key(value).ok_or_else(|| {
                SealError::Key(format!(
                    "{SECRETS_KEY_ENV} must be 32 bytes written as 64 hex characters or as base64 \
                     (for example the output of `openssl rand -hex 32`); the value set has {} \
                     characters and is neither",
                    value.trim().len()
                ))
            })?,
            None => {
                let path = data_dir.join(SECRETS_KEY_FILE);
                let text = read_or_create_key_file(&path)?;
                parse_key(&text).ok_or_else(|| {
                    SealError::Key(format!(
                        "{} does not hold a secrets key (64 hex characters); restore it from a \
                         backup: without it the stored secrets cannot be opened",
                        path.display()
                    ))
                })?
            }
        };
        Ok(Self::from_bytes(key))
    }

    /// A key from its 32 raw bytes.
    pub fn from_bytes(key: [u8; 32]) -> Self {
        // `UnboundKey::new` fails only for a key of the wrong length, and the array type
        // already guarantees 32 bytes.
        let unbound = UnboundKey::new(&AES_256_GCM_SIV, &key);
        let key = match unbound {
            Ok(unbound) => LessSafeKey::new(unbound),
            Err(_) => unreachable!("AES-256-GCM-SIV takes a 32-byte key"),
        };
        Self { key: Arc::new(key) }
    }

    /// Encrypts `plaintext` with a fresh random nonce.
    ///
    /// The output is one format byte, the 12-byte nonce, then the ciphertext and its tag.
    /// `aad` binds the ciphertext to where it is stored (for example `"app-slug\0KEY"`), so a
    /// ciphertext copied into another row does not open there.
    ///
    /// # Errors
    ///
    /// [`SealError::Seal`] when the system random generator fails.
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce)
            .map_err(|e| SealError::Seal(format!("the system random generator failed: {e}")))?;

        let mut out = Vec::with_capacity(1 + NONCE_LEN + plaintext.len() + TAG_LEN);
        out.push(FORMAT_AES_256_GCM_SIV);
        out.extend_from_slice(&nonce);
        let mut body = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut body,
            )
            .map_err(|_| SealError::Seal("the cipher refused the input".to_owned()))?;
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Seals a text for `place` and answers it as base64, as the store keeps sealed values.
    pub fn seal_text(&self, plaintext: &str, place: Sealed<'_>) -> Result<String, SealError> {
        Ok(STANDARD.encode(self.seal(plaintext.as_bytes(), &place.associated_data())?))
    }

    /// Opens a text sealed by [`SecretsKey::seal_text`] for the same `place`.
    pub fn open_text(&self, sealed: &str, place: Sealed<'_>) -> Result<String, SealError> {
        let bytes = STANDARD
            .decode(sealed)
            .map_err(|e| SealError::Corrupt(format!("a sealed value is not base64: {e}")))?;
        let plain = self.open(&bytes, &place.associated_data())?;
        String::from_utf8(plain)
            .map_err(|e| SealError::Corrupt(format!("a sealed value is not UTF-8: {e}")))
    }

    /// Decrypts a value made by [`SecretsKey::seal`] with the same `aad`.
    ///
    /// # Errors
    ///
    /// [`SealError::Open`] when the value was altered or truncated, sealed under another key or
    /// with other associated data; [`SealError::UnknownFormat`] for a format byte this
    /// version does not know.
    pub fn open(&self, sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>, SealError> {
        let (&format, rest) = sealed.split_first().ok_or(SealError::Open)?;
        if format != FORMAT_AES_256_GCM_SIV {
            return Err(SealError::UnknownFormat(format));
        }
        if rest.len() < NONCE_LEN + TAG_LEN {
            return Err(SealError::Open);
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Open)?;
        let mut body = body.to_vec();
        let plaintext = self
            .key
            .open_in_place(nonce, Aad::from(aad), &mut body)
            .map_err(|_| SealError::Open)?;
        Ok(plaintext.to_vec())
    }
}

/// Parses a 32-byte key written as 64 hex characters or as base64 (standard or URL-safe,
/// padded or not), ignoring surrounding whitespace such as a trailing newline.
fn parse_key(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    let bytes = if text.len() == 2 * KEY_LEN {
        hex_decode(text)
    } else {
        None
    };
    let bytes = bytes.or_else(|| {
        [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
            .iter()
            .find_map(|engine| engine.decode(text).ok())
    })?;
    bytes.try_into().ok()
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digits = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(digits, 16).ok()
        })
        .collect()
}

impl From<KeyFileError> for SealError {
    fn from(error: KeyFileError) -> Self {
        match error {
            KeyFileError::Refused(message) => SealError::Key(message),
            KeyFileError::Io { path, source } => SealError::Io { path, source },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_place_keeps_the_associated_data_values_at_rest_were_sealed_with() {
        let install = atrium_store::InstallKey::new("org_1", "shop", "desk");
        let tenant = install.tenant();
        let cases: [(Sealed<'_>, &[u8]); 4] = [
            (
                Sealed::AppSecret {
                    app: "desk",
                    key: "STRIPE_KEY",
                },
                b"atrium-secret\0desk\0STRIPE_KEY",
            ),
            (
                Sealed::InstallSetting {
                    install: &install,
                    key: "api_key",
                },
                b"atrium-install\0org_1\0shop\0desk\0setting\0api_key",
            ),
            (
                Sealed::SecretOverride {
                    install: &install,
                    key: "STRIPE_KEY",
                },
                b"atrium-install\0org_1\0shop\0desk\0override\0STRIPE_KEY",
            ),
            (
                Sealed::Integration {
                    tenant: &tenant,
                    provider: "gmail",
                },
                b"atrium-integration\0org_1\0shop\0gmail",
            ),
        ];
        for (place, aad) in cases {
            assert_eq!(place.associated_data(), aad, "{place:?}");
        }
        // A value sealed for one place opens there only.
        let sealed = key().seal_text("v", cases[1].0).unwrap();
        assert_eq!(key().open_text(&sealed, cases[1].0).unwrap(), "v");
        assert!(key().open_text(&sealed, cases[2].0).is_err());
        assert!(matches!(
            key().open_text("not base64!", cases[1].0),
            Err(SealError::Corrupt(_))
        ));
    }
    use crate::keyfile::{hex_encode, random_hex_key};

    fn key() -> SecretsKey {
        SecretsKey::from_bytes([7u8; 32])
    }

    #[test]
    fn seal_then_open_roundtrips() {
        let sealed = key().seal(b"sk-live-123", b"invoices\0STRIPE_KEY").unwrap();
        assert_eq!(sealed[0], FORMAT_AES_256_GCM_SIV);
        assert_eq!(sealed.len(), 1 + NONCE_LEN + b"sk-live-123".len() + TAG_LEN);
        let opened = key().open(&sealed, b"invoices\0STRIPE_KEY").unwrap();
        assert_eq!(opened, b"sk-live-123");
    }

    #[test]
    fn empty_plaintext_roundtrips() {
        let sealed = key().seal(b"", b"a\0K").unwrap();
        assert_eq!(key().open(&sealed, b"a\0K").unwrap(), b"");
    }

    #[test]
    fn wrong_aad_does_not_open() {
        let sealed = key().seal(b"value", b"invoices\0STRIPE_KEY").unwrap();
        let err = key().open(&sealed, b"room-bot\0STRIPE_KEY").unwrap_err();
        assert!(matches!(err, SealError::Open), "{err:?}");
    }

    #[test]
    fn tampered_byte_does_not_open() {
        let sealed = key().seal(b"value", b"aad").unwrap();
        // Flip a bit in the nonce, in the ciphertext and in the tag.
        for index in [1, 1 + NONCE_LEN, sealed.len() - 1] {
            let mut tampered = sealed.clone();
            tampered[index] ^= 0x01;
            let err = key().open(&tampered, b"aad").unwrap_err();
            assert!(matches!(err, SealError::Open), "byte {index}: {err:?}");
        }
        let err = key().open(&sealed[..sealed.len() - 1], b"aad").unwrap_err();
        assert!(matches!(err, SealError::Open), "{err:?}");
        let err = key().open(&[], b"aad").unwrap_err();
        assert!(matches!(err, SealError::Open), "{err:?}");
    }

    #[test]
    fn unknown_format_byte_is_reported() {
        let mut sealed = key().seal(b"value", b"aad").unwrap();
        sealed[0] = 9;
        let err = key().open(&sealed, b"aad").unwrap_err();
        assert!(matches!(err, SealError::UnknownFormat(9)), "{err:?}");
    }

    #[test]
    fn another_key_does_not_open() {
        let sealed = key().seal(b"value", b"aad").unwrap();
        let other = SecretsKey::from_bytes([8u8; 32]);
        let err = other.open(&sealed, b"aad").unwrap_err();
        assert!(matches!(err, SealError::Open), "{err:?}");
    }

    #[test]
    fn two_seals_of_the_same_plaintext_differ() {
        let a = key().seal(b"value", b"aad").unwrap();
        let b = key().seal(b"value", b"aad").unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn debug_prints_nothing_secret() {
        let printed = format!("{:?}", SecretsKey::from_bytes([0xab; 32]));
        assert!(!printed.contains("ab"), "{printed}");
        assert!(!printed.contains("171"), "{printed}");
    }

    #[cfg(unix)]
    #[test]
    fn key_file_is_created_0600_and_reused() {
        use std::os::unix::fs::PermissionsExt as _;

        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        let first = SecretsKey::load_or_create(&data_dir, None).unwrap();
        let path = data_dir.join(SECRETS_KEY_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let contents = std::fs::read_to_string(&path).unwrap();
        assert_eq!(contents.trim().len(), 64);

        let sealed = first.seal(b"value", b"aad").unwrap();
        let second = SecretsKey::load_or_create(&data_dir, None).unwrap();
        assert_eq!(second.open(&sealed, b"aad").unwrap(), b"value");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), contents);
    }

    #[cfg(unix)]
    #[test]
    fn racing_creators_agree_on_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SECRETS_KEY_FILE);
        let keys: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| read_or_create_key_file(&path).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| k == &keys[0]), "{keys:?}");
    }

    #[cfg(unix)]
    #[test]
    fn world_readable_key_file_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SECRETS_KEY_FILE);
        std::fs::write(&path, random_hex_key()).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = SecretsKey::load_or_create(dir.path(), None).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, SealError::Key(_)), "{err:?}");
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("chmod 600"), "{message}");
    }

    #[test]
    fn garbage_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SECRETS_KEY_FILE);
        std::fs::write(&path, "not a key\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let err = SecretsKey::load_or_create(dir.path(), None).unwrap_err();
        assert!(matches!(err, SealError::Key(_)), "{err:?}");
        assert!(err.to_string().contains(SECRETS_KEY_FILE), "{err}");
    }

    #[test]
    fn configured_key_in_hex_or_base64_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let raw = [0x42u8; 32];
        let from_hex = SecretsKey::load_or_create(dir.path(), Some(&hex_encode(&raw))).unwrap();
        let from_b64 =
            SecretsKey::load_or_create(dir.path(), Some(&format!("{}\n", STANDARD.encode(raw))))
                .unwrap();
        let from_b64url =
            SecretsKey::load_or_create(dir.path(), Some(&URL_SAFE_NO_PAD.encode(raw))).unwrap();
        let sealed = from_hex.seal(b"value", b"aad").unwrap();
        assert_eq!(from_b64.open(&sealed, b"aad").unwrap(), b"value");
        assert_eq!(from_b64url.open(&sealed, b"aad").unwrap(), b"value");
        let direct = SecretsKey::from_bytes(raw);
        assert_eq!(direct.open(&sealed, b"aad").unwrap(), b"value");
        // A configured key never touches the data directory.
        assert!(!dir.path().join(SECRETS_KEY_FILE).exists());
    }

    #[test]
    fn bad_configured_keys_are_refused_naming_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        let too_short_hex = hex_encode(&[1u8; 16]);
        let too_long_b64 = STANDARD.encode([1u8; 33]);
        for value in [
            "",
            "secret",
            too_short_hex.as_str(),
            too_long_b64.as_str(),
            &"zz".repeat(32),
        ] {
            let err = SecretsKey::load_or_create(dir.path(), Some(value)).unwrap_err();
            assert!(matches!(err, SealError::Key(_)), "{value:?}: {err:?}");
            let message = err.to_string();
            assert!(message.contains(SECRETS_KEY_ENV), "{message}");
        }
        // The message never repeats the value, which may be a real key in the wrong encoding.
        let err = SecretsKey::load_or_create(dir.path(), Some("hunter2-hunter2")).unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
