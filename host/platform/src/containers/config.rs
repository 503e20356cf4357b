//! The shim's configuration: the variables `PlatformConfig::from_env` reads for it
//! (docs/operations.md, "Container apps").

use std::path::PathBuf;
use std::time::Duration;

/// `off` turns the shim off (container apps answer 503); anything else, or unset, runs them.
pub const CONTAINERS_ENV: &str = "ATRIUM_CONTAINERS";
/// The `runc` binary (default `/usr/sbin/runc`, then `runc` on `PATH`).
pub const RUNC_ENV: &str = "ATRIUM_RUNC";
/// Where images, bundles and runc's state live (default `<data dir>/containers`); every
/// directory above it must be traversable by the containers' users.
pub const DIR_ENV: &str = "ATRIUM_CONTAINER_DIR";
/// Containers the operator runs: `app=host:port` or `app@version=host:port`, comma-separated.
pub const URLS_ENV: &str = "ATRIUM_CONTAINER_URLS";
/// Seconds a container stays up without a call (default 600).
pub const IDLE_ENV: &str = "ATRIUM_CONTAINER_IDLE_SECS";
/// A Docker client `config.json` with pull credentials per registry.
pub const AUTH_FILE_ENV: &str = "ATRIUM_REGISTRY_AUTH_FILE";
/// Registries (`host:port`) pulled from over plain HTTP, comma-separated.
pub const INSECURE_ENV: &str = "ATRIUM_INSECURE_REGISTRIES";
/// The host uid and gid of a container's root (default 100000; 65536 ids from there).
pub const UID_BASE_ENV: &str = "ATRIUM_CONTAINER_UID_BASE";

/// How many ids each container's user namespace maps.
pub(super) const ID_RANGE: u32 = 65_536;

/// A container the operator runs for an app (all its versions, or one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlEntry {
    /// The app.
    pub app: String,
    /// Its version, or every version.
    pub version: Option<String>,
    /// `host:port` it answers on (plain HTTP).
    pub authority: String,
}

/// The shim's configuration ([`ContainersConfig::from_env`]).
#[derive(Debug, Clone)]
pub struct ContainersConfig {
    /// Whether the host runs container apps at all.
    pub enabled: bool,
    /// The `runc` binary.
    pub runc: Option<PathBuf>,
    /// Where images, bundles and state live (default under the data directory).
    pub dir: Option<PathBuf>,
    /// Containers the operator runs.
    pub urls: Vec<UrlEntry>,
    /// How long a container stays up without a call.
    pub idle: Duration,
    /// Pull credentials.
    pub credentials: Option<PathBuf>,
    /// Registries spoken to over plain HTTP.
    pub insecure: Vec<String>,
    /// The host id of a container's root.
    pub uid_base: u32,
}

impl Default for ContainersConfig {
    fn default() -> Self {
        ContainersConfig {
            enabled: true,
            runc: None,
            dir: None,
            urls: Vec::new(),
            idle: Duration::from_secs(600),
            credentials: None,
            insecure: Vec::new(),
            uid_base: 100_000,
        }
    }
}

fn list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty())
}

impl ContainersConfig {
    /// The configuration the variables in `get` set; an error names the variable.
    ///
    /// # Errors
    ///
    /// A value that does not parse.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut config = ContainersConfig::default();
        if let Some(v) = get(CONTAINERS_ENV) {
            config.enabled = match v.as_str() {
                "off" | "0" | "false" => false,
                "on" | "1" | "true" => true,
                other => {
                    return Err(format!(
                        "{CONTAINERS_ENV} must be `on` or `off`, not `{other}`"
                    ));
                }
            };
        }
        config.runc = get(RUNC_ENV).map(PathBuf::from);
        config.dir = get(DIR_ENV).map(PathBuf::from);
        if let Some(v) = get(URLS_ENV) {
            for entry in list(&v) {
                let (app, authority) = entry.split_once('=').ok_or_else(|| {
                    format!(
                        "{URLS_ENV}: `{entry}` is not `app=host:port` or `app@version=host:port`"
                    )
                })?;
                let (app, version) = match app.split_once('@') {
                    Some((a, v)) => (a, Some(v.to_owned())),
                    None => (app, None),
                };
                let authority = authority
                    .trim_start_matches("http://")
                    .trim_end_matches('/');
                if !atrium_manifest::rules::is_app_slug(app) || !authority.contains(':') {
                    return Err(format!(
                        "{URLS_ENV}: `{entry}` names no app slug and `host:port` (plain HTTP)"
                    ));
                }
                config.urls.push(UrlEntry {
                    app: app.to_owned(),
                    version,
                    authority: authority.to_owned(),
                });
            }
        }
        if let Some(v) = get(IDLE_ENV) {
            let secs: u64 = v
                .parse()
                .ok()
                .filter(|s| (1..=86_400).contains(s))
                .ok_or_else(|| format!("{IDLE_ENV} must be 1 to 86400 seconds, not `{v}`"))?;
            config.idle = Duration::from_secs(secs);
        }
        config.credentials = get(AUTH_FILE_ENV).map(PathBuf::from);
        if let Some(v) = get(INSECURE_ENV) {
            config.insecure = list(&v).map(str::to_owned).collect();
        }
        if let Some(v) = get(UID_BASE_ENV) {
            config.uid_base = v
                .parse()
                .ok()
                .filter(|b| *b >= 1000 && u32::MAX - b >= ID_RANGE)
                .ok_or_else(|| format!("{UID_BASE_ENV} must be a uid from 1000, not `{v}`"))?;
        }
        Ok(config)
    }

    /// The operator's container for `app` at `version`, if any.
    pub(super) fn url_of(&self, app: &str, version: &str) -> Option<&str> {
        let exact = self
            .urls
            .iter()
            .find(|u| u.app == app && u.version.as_deref() == Some(version));
        exact
            .or_else(|| {
                self.urls
                    .iter()
                    .find(|u| u.app == app && u.version.is_none())
            })
            .map(|u| u.authority.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn the_configuration_names_the_variable_it_cannot_read() {
        let config = ContainersConfig::from_env(vars(&[
            (
                URLS_ENV,
                "invoice-desk=desk.apps.svc:8080, ledger@1.2.0=http://ledger:80/",
            ),
            (IDLE_ENV, "30"),
            (INSECURE_ENV, "127.0.0.1:5000"),
        ]))
        .unwrap();
        assert_eq!(
            config.url_of("invoice-desk", "2.0.0"),
            Some("desk.apps.svc:8080")
        );
        assert_eq!(config.url_of("ledger", "1.2.0"), Some("ledger:80"));
        assert_eq!(config.url_of("ledger", "1.3.0"), None);
        assert_eq!(config.idle, Duration::from_secs(30));
        assert_eq!(config.insecure, vec!["127.0.0.1:5000".to_owned()]);
        for (name, value) in [
            (CONTAINERS_ENV, "maybe"),
            (URLS_ENV, "no-equals"),
            (URLS_ENV, "Bad_Slug=host:1"),
            (IDLE_ENV, "0"),
            (UID_BASE_ENV, "10"),
        ] {
            let error = ContainersConfig::from_env(vars(&[(name, value)])).unwrap_err();
            assert!(error.contains(name), "{name}={value}: {error}");
        }
    }
}
