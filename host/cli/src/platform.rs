//! Where the developer commands find the platform: its address and the developer token.
//!
//! `ATRIUM_PLATFORM_URL` and `SERVICE_TOKEN` (the token in CI, as the spec names it) win;
//! otherwise `platform_url` and `token` from the tool's config file, `config.toml` in
//! `ATRIUM_CONFIG_DIR` (default `$XDG_CONFIG_HOME/atrium`, else `~/.config/atrium`).

use std::path::PathBuf;

/// The platform's address and the developer token, when both are configured.
#[derive(Debug, Clone)]
pub struct PlatformConfig {
    /// `http(s)://host:port`, without a trailing slash.
    pub url: String,
    /// The developer token.
    pub token: String,
}

#[derive(Debug, Default, serde::Deserialize)]
struct ConfigFile {
    platform_url: Option<String>,
    token: Option<String>,
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

/// The configured platform, if both its address and a token are known. A config file that
/// does not parse is an error naming it.
pub fn configured() -> Result<Option<PlatformConfig>, String> {
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let file = match config_dir().map(|d| d.join("config.toml")) {
        Some(path) if path.is_file() => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            toml::from_str::<ConfigFile>(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        _ => ConfigFile::default(),
    };
    let url = env("ATRIUM_PLATFORM_URL").or(file.platform_url);
    let token = env("SERVICE_TOKEN").or(file.token);
    Ok(url.zip(token).map(|(url, token)| PlatformConfig {
        url: url.trim_end_matches('/').to_owned(),
        token,
    }))
}
