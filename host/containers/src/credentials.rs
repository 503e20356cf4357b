//! Pull credentials per registry, read from a Docker client's `config.json`.

use std::collections::HashMap;

use oci_client::Reference;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// Pull credentials, one per registry host (`host[:port]`), in the format of a Docker client's
/// `config.json` (`{"auths": {"registry.example": {"auth": "<base64 user:password>"}}}`, or
/// `username` and `password` fields, or `registrytoken` for a bearer token).
#[derive(Clone, Default)]
pub struct Credentials {
    by_registry: HashMap<String, RegistryAuth>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("registries", &self.by_registry.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: HashMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

impl Credentials {
    /// No credentials: every registry is pulled from anonymously.
    #[must_use]
    pub fn none() -> Self {
        Credentials::default()
    }

    /// Adds the credentials of one registry.
    #[must_use]
    pub fn with(mut self, registry: impl Into<String>, auth: RegistryAuth) -> Self {
        self.by_registry.insert(registry.into(), auth);
        self
    }

    /// Reads a Docker client's `config.json` text.
    ///
    /// # Errors
    ///
    /// A sentence naming the registry whose entry is malformed.
    pub fn from_docker_config(text: &str) -> Result<Self, String> {
        use base64::Engine;
        let config: DockerConfig = serde_json::from_str(text)
            .map_err(|e| format!("the registry credentials are not a Docker config.json: {e}"))?;
        let mut out = Credentials::default();
        for (registry, entry) in config.auths {
            // `https://index.docker.io/v1/` and plain host names both name a registry.
            let host = registry
                .trim_start_matches("https://")
                .trim_start_matches("http://")
                .split('/')
                .next()
                .unwrap_or_default()
                .to_owned();
            let auth = if let Some(token) = entry.registrytoken {
                RegistryAuth::Bearer(token)
            } else if let (Some(user), Some(password)) = (entry.username, entry.password) {
                RegistryAuth::Basic(user, password)
            } else if let Some(encoded) = entry.auth {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(encoded.trim())
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| {
                        format!(
                            "the `auth` of registry `{registry}` is not base64 of user:password"
                        )
                    })?;
                let (user, password) = decoded.split_once(':').ok_or_else(|| {
                    format!("the `auth` of registry `{registry}` is not base64 of user:password")
                })?;
                RegistryAuth::Basic(user.to_owned(), password.to_owned())
            } else {
                return Err(format!(
                    "registry `{registry}` has neither `auth`, `username` and `password`, nor `registrytoken`"
                ));
            };
            out.by_registry.insert(host, auth);
        }
        Ok(out)
    }

    pub(crate) fn of(&self, reference: &Reference) -> RegistryAuth {
        self.by_registry
            .get(reference.resolve_registry())
            .or_else(|| self.by_registry.get(reference.registry()))
            .cloned()
            .unwrap_or(RegistryAuth::Anonymous)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use super::*;

    #[test]
    fn docker_config_credentials_are_read_per_registry() {
        let creds = Credentials::from_docker_config(
            r#"{"auths": {
                "127.0.0.1:5000": {"auth": "dXNlcjpwYXNz"},
                "https://ghcr.io/v2/": {"username": "u", "password": "p"},
                "tok.example": {"registrytoken": "t"}
            }}"#,
        )
        .unwrap();
        let of = |r: &str| format!("{:?}", creds.of(&r.parse().unwrap()));
        assert_eq!(
            of("127.0.0.1:5000/app:1"),
            format!("{:?}", RegistryAuth::Basic("user".into(), "pass".into()))
        );
        assert_eq!(
            of("ghcr.io/o/app:1"),
            format!("{:?}", RegistryAuth::Basic("u".into(), "p".into()))
        );
        assert_eq!(
            of("tok.example/app:1"),
            format!("{:?}", RegistryAuth::Bearer("t".into()))
        );
        assert_eq!(of("other.example/app:1"), "Anonymous");
        let bad = Credentials::from_docker_config(r#"{"auths": {"r": {"auth": "!!"}}}"#);
        assert!(bad.unwrap_err().contains("registry `r`"));
    }
}
