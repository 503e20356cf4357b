//! Where the developer commands find the platform: its address and the developer token.
//!
//! The address: `--platform`, else `ATRIUM_PLATFORM_URL`, else `platform_url` from the tool's
//! config file, `config.toml` in `ATRIUM_CONFIG_DIR` (default `$XDG_CONFIG_HOME/atrium`, else
//! `~/.config/atrium`). The token: `SERVICE_TOKEN` (the token in CI, as the spec names it),
//! else the config file's `token`, which `atrium login` wrote for the file's `platform_url`
//! only: a token is never sent to another platform than the one it was stored for. The file
//! is written with mode 0600 (its directory 0700), since it holds a credential.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The platform's address and the developer token, when both are configured.
#[derive(Debug, Clone)]
pub struct PlatformConfig {
    /// `http(s)://host:port`, without a trailing slash.
    pub url: String,
    /// The developer token.
    pub token: String,
}

/// The tool's config file.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The platform `atrium login` last signed in to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_url: Option<String>,
    /// The developer token for `platform_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// Where a token came from: what to tell the developer when it is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// `SERVICE_TOKEN`.
    Environment,
    /// The config file.
    ConfigFile,
    /// Given to `atrium login`, not stored yet.
    Given,
}

/// The tool's configuration directory.
pub fn config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("ATRIUM_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("atrium"))
}

/// The config file's path.
pub fn config_path() -> Result<PathBuf, String> {
    config_dir()
        .map(|d| d.join("config.toml"))
        .ok_or_else(|| "cannot find a config directory: set ATRIUM_CONFIG_DIR or HOME".to_owned())
}

fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// Reads the config file; a missing one is empty, one that does not parse is an error naming
/// it.
pub fn read_config() -> Result<ConfigFile, String> {
    let path = config_path()?;
    if !path.is_file() {
        return Ok(ConfigFile::default());
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes the config file with mode 0600 (through a file beside it, renamed over it).
pub fn write_config(config: &ConfigFile) -> Result<PathBuf, String> {
    let path = config_path()?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let fail = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", path.display());
    create_private_dir(dir).map_err(|e| fail("create the directory of", e))?;
    let text = toml::to_string(config).map_err(|e| format!("cannot encode the config: {e}"))?;
    let temporary = dir.join(format!(".config.toml.{}.tmp", std::process::id()));
    write_private(&temporary, text.as_bytes()).map_err(|e| fail("write", e))?;
    std::fs::rename(&temporary, &path).map_err(|e| fail("replace", e))?;
    Ok(path)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    // A directory that was there already is made private too.
    #[cfg(unix)]
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    // An existing file keeps its mode through `open`: set it explicitly.
    #[cfg(unix)]
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A platform address as given: trimmed, without trailing slashes; it must be http(s).
pub fn normalize_url(url: &str) -> Result<String, String> {
    let url = url.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => Ok(url.to_owned()),
        _ => Err(format!(
            "`{url}` is not a platform address: give it as http(s)://host[:port]"
        )),
    }
}

/// The platform address: `flag`, else `ATRIUM_PLATFORM_URL`, else the config file's.
pub fn platform_url(flag: Option<&str>, config: &ConfigFile) -> Result<Option<String>, String> {
    flag.map(str::to_owned)
        .or_else(|| env("ATRIUM_PLATFORM_URL"))
        .or_else(|| config.platform_url.clone())
        .map(|u| normalize_url(&u))
        .transpose()
}

/// The developer token for `url`: `SERVICE_TOKEN`, else the config file's when it was stored
/// for that address.
pub fn token_for(url: &str, config: &ConfigFile) -> Option<(String, TokenSource)> {
    if let Some(token) = env("SERVICE_TOKEN") {
        return Some((token, TokenSource::Environment));
    }
    let stored_for = config
        .platform_url
        .as_deref()
        .and_then(|u| normalize_url(u).ok());
    match (&config.token, stored_for) {
        (Some(token), Some(stored)) if stored == url => {
            Some((token.clone(), TokenSource::ConfigFile))
        }
        _ => None,
    }
}

/// The configured platform, if both its address and a token are known (what `atrium lint`
/// uses to ask the platform's preflight). A config file that does not parse is an error.
pub fn configured(flag: Option<&str>) -> Result<Option<PlatformConfig>, String> {
    let config = read_config()?;
    let Some(url) = platform_url(flag, &config)? else {
        return Ok(None);
    };
    Ok(token_for(&url, &config).map(|(token, _)| PlatformConfig { url, token }))
}
