//! The host's inference configuration file (TOML): provider settings and catalog additions.
//!
//! ```toml
//! [providers.mistral]
//! base_url = "https://api.mistral.ai/v1"   # optional
//! api_key = "..."                           # optional; ATRIUM_MISTRAL_API_KEY wins
//! timeout_seconds = 60                      # optional, default 120
//! max_in_flight = 256                       # optional, default 1024; ATRIUM_MISTRAL_MAX_IN_FLIGHT wins
//!
//! [[models]]
//! id = "mistral-medium-latest"
//! provider = "mistral"
//! input_usd_per_million = 0.4
//! output_usd_per_million = 2.0
//! tier = "eu-sovereign"                     # optional: join a tier
//! rank = 6                                  # its place in that tier (lower first)
//! ```
//!
//! Environment variables (`ATRIUM_<PROVIDER>_BASE_URL`, `ATRIUM_<PROVIDER>_API_KEY`) override
//! the file. A model with the id and provider of a built-in one replaces it (a price change).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::catalog::{Catalog, Jurisdiction, ModelInfo, ProviderId};
use crate::providers::{self, ProviderConfig, Requirement};
use crate::router::Tier;

/// The configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferenceConfig {
    /// Settings per provider name.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSettings>,
    /// Models to add to (or replace in) the built-in catalog.
    #[serde(default)]
    pub models: Vec<ModelEntry>,
}

/// One provider's settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// The API base URL.
    pub base_url: Option<String>,
    /// The API key.
    pub api_key: Option<String>,
    /// How long a call may take, in seconds.
    pub timeout_seconds: Option<u64>,
    /// The most requests in flight to the provider at once; past it the gateway falls back to
    /// the next backend, or answers 503 `overloaded` (docs/api.md, "Limits and overload").
    pub max_in_flight: Option<usize>,
}

/// A provider's limit of requests in flight when neither the file nor the environment sets
/// one: far above what one host sends a provider that keeps up (1,000 requests a second that
/// take a second each), low enough that a provider that stalls cannot hold every request the
/// host admits (`ATRIUM_MAX_IN_FLIGHT`, 4,096).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// One catalog entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The model's name at the provider.
    pub id: String,
    /// The provider's name.
    pub provider: String,
    /// USD per million input tokens.
    pub input_usd_per_million: f64,
    /// USD per million output tokens.
    pub output_usd_per_million: f64,
    /// A tier to join: `eu-sovereign` or `frontier` (every EU model is in `cheapest`).
    pub tier: Option<String>,
    /// The model's place in that tier.
    pub rank: Option<u32>,
}

impl InferenceConfig {
    /// Parses the file; errors name the line and the field.
    pub fn parse(text: &str) -> Result<Self, String> {
        let config: InferenceConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        for name in config.providers.keys() {
            ProviderId::parse(name).ok_or_else(|| {
                format!(
                    "[providers.{name}]: `{name}` is not one of {}",
                    ProviderId::names()
                )
            })?;
        }
        for (name, settings) in &config.providers {
            if settings.timeout_seconds == Some(0) {
                return Err(format!(
                    "[providers.{name}] timeout_seconds must be at least 1"
                ));
            }
            if settings.max_in_flight == Some(0) {
                return Err(format!(
                    "[providers.{name}] max_in_flight must be at least 1"
                ));
            }
        }
        config.catalog()?;
        Ok(config)
    }

    /// The built-in catalog with this file's models.
    pub fn catalog(&self) -> Result<Catalog, String> {
        let mut catalog = Catalog::builtin();
        for (i, m) in self.models.iter().enumerate() {
            let at = format!("models[{i}] (`{}`)", m.id);
            if m.id.trim().is_empty() {
                return Err(format!("models[{i}]: id must not be empty"));
            }
            let provider = ProviderId::parse(&m.provider).ok_or_else(|| {
                format!(
                    "{at}: provider `{}` is not one of {}",
                    m.provider,
                    ProviderId::names()
                )
            })?;
            for (field, price) in [
                ("input_usd_per_million", m.input_usd_per_million),
                ("output_usd_per_million", m.output_usd_per_million),
            ] {
                if !(0.0..=10_000.0).contains(&price) {
                    return Err(format!(
                        "{at}: {field} must be between 0 and 10000, got {price}"
                    ));
                }
            }
            let mut info = ModelInfo {
                id: m.id.clone(),
                provider,
                input_micros_per_m: (m.input_usd_per_million * 1_000_000.0).round() as i64,
                output_micros_per_m: (m.output_usd_per_million * 1_000_000.0).round() as i64,
                sovereign_rank: None,
                frontier_rank: None,
            };
            match m.tier.as_deref().map(|t| (t, Tier::parse(t))) {
                None => {}
                Some((_, Some(Tier::EuSovereign))) => {
                    if provider.jurisdiction() != Jurisdiction::Eu {
                        return Err(format!(
                            "{at}: a {} model cannot join eu-sovereign",
                            provider.as_str()
                        ));
                    }
                    info.sovereign_rank = Some(m.rank.unwrap_or(100));
                }
                Some((_, Some(Tier::Frontier))) => info.frontier_rank = Some(m.rank.unwrap_or(100)),
                Some((_, Some(Tier::Cheapest))) => {
                    return Err(format!(
                        "{at}: every EU model is in `cheapest`; tier takes eu-sovereign or frontier"
                    ));
                }
                Some((t, None)) => {
                    return Err(format!(
                        "{at}: tier `{t}` is not one of eu-sovereign, frontier"
                    ));
                }
            }
            catalog.upsert(info);
        }
        Ok(catalog)
    }

    /// A provider's setting, with the environment variable winning over the file.
    pub(crate) fn setting(
        &self,
        provider: ProviderId,
        what: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<String> {
        let from_env = env(&format!(
            "ATRIUM_{}_{what}",
            provider.as_str().to_ascii_uppercase()
        ))
        .filter(|v| !v.trim().is_empty());
        from_env.or_else(|| {
            let settings = self.providers.get(provider.as_str())?;
            match what {
                "BASE_URL" => settings.base_url.clone(),
                "API_KEY" => settings.api_key.clone(),
                _ => None,
            }
        })
    }

    /// How to reach `provider`, or `None` when it is not configured: what its descriptor
    /// requires (an API key; for Ollama, a base URL) must be set. Unset base URLs and timeouts
    /// take the provider's defaults.
    pub(crate) fn provider(
        &self,
        provider: ProviderId,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<ProviderConfig> {
        let descriptor = providers::descriptor(provider);
        let key = self.setting(provider, "API_KEY", env);
        let base = self.setting(provider, "BASE_URL", env);
        let available = match descriptor.requires {
            Requirement::ApiKey => key.is_some(),
            Requirement::BaseUrl => base.is_some(),
        };
        if !available {
            return None;
        }
        Some(ProviderConfig {
            base_url: base.unwrap_or_else(|| descriptor.default_base_url.to_owned()),
            api_key: key,
            timeout: self.timeout(provider).unwrap_or(descriptor.default_timeout),
        })
    }

    /// A provider's limit of requests in flight: `ATRIUM_<PROVIDER>_MAX_IN_FLIGHT`, else the
    /// file's `max_in_flight`, else [`DEFAULT_MAX_IN_FLIGHT`]. An error names the variable.
    pub fn max_in_flight(
        &self,
        provider: ProviderId,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<usize, String> {
        let name = format!(
            "ATRIUM_{}_MAX_IN_FLIGHT",
            provider.as_str().to_ascii_uppercase()
        );
        match env(&name).map(|v| v.trim().to_owned()) {
            Some(text) if !text.is_empty() => match text.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!(
                    "{name} must be a whole number above 0, not `{text}`"
                )),
            },
            _ => Ok(self
                .providers
                .get(provider.as_str())
                .and_then(|s| s.max_in_flight)
                .unwrap_or(DEFAULT_MAX_IN_FLIGHT)),
        }
    }

    /// Checks the environment's settings this file does not hold, for every provider: an
    /// error names the variable.
    pub fn check_env(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        for provider in ProviderId::ALL {
            self.max_in_flight(provider, env)?;
        }
        Ok(())
    }

    /// A provider's timeout, when the file sets one.
    pub(crate) fn timeout(&self, provider: ProviderId) -> Option<Duration> {
        self.providers
            .get(provider.as_str())?
            .timeout_seconds
            .map(Duration::from_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_and_providers_are_read_and_checked() {
        let config = InferenceConfig::parse(
            r#"
            [providers.mistral]
            api_key = "from-file"
            timeout_seconds = 5

            [[models]]
            id = "mistral-medium-latest"
            provider = "mistral"
            input_usd_per_million = 0.4
            output_usd_per_million = 2.0
            tier = "eu-sovereign"
            rank = 0

            [[models]]
            id = "gpt-4o-mini"
            provider = "openai"
            input_usd_per_million = 0.2
            output_usd_per_million = 0.8
            "#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let catalog = config.catalog().unwrap_or_else(|e| panic!("{e}"));
        let medium = catalog
            .find(ProviderId::Mistral, "mistral-medium-latest")
            .cloned();
        assert_eq!(medium.and_then(|m| m.sovereign_rank), Some(0));
        assert_eq!(
            catalog
                .find(ProviderId::Openai, "gpt-4o-mini")
                .map(|m| m.input_micros_per_m),
            Some(200_000)
        );
        let env = |name: &str| (name == "ATRIUM_MISTRAL_API_KEY").then(|| "from-env".to_owned());
        assert_eq!(
            config
                .setting(ProviderId::Mistral, "API_KEY", &env)
                .as_deref(),
            Some("from-env")
        );
        assert_eq!(
            config
                .setting(ProviderId::Mistral, "API_KEY", &|_| None)
                .as_deref(),
            Some("from-file")
        );
        assert_eq!(
            config.timeout(ProviderId::Mistral),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn the_limit_of_requests_in_flight_comes_from_the_environment_the_file_or_the_default() {
        let config =
            InferenceConfig::parse("[providers.ovh]\napi_key = \"k\"\nmax_in_flight = 64\n")
                .unwrap_or_else(|e| panic!("{e}"));
        let none = |_: &str| None;
        assert_eq!(config.max_in_flight(ProviderId::Ovh, &none), Ok(64));
        assert_eq!(
            config.max_in_flight(ProviderId::Mistral, &none),
            Ok(DEFAULT_MAX_IN_FLIGHT)
        );
        let env = |name: &str| (name == "ATRIUM_OVH_MAX_IN_FLIGHT").then(|| " 8 ".to_owned());
        assert_eq!(config.max_in_flight(ProviderId::Ovh, &env), Ok(8));
        assert_eq!(config.check_env(&env), Ok(()));
        for bad in ["0", "-3", "many", "1.5"] {
            let env = |name: &str| (name == "ATRIUM_OLLAMA_MAX_IN_FLIGHT").then(|| bad.to_owned());
            assert_eq!(
                config.check_env(&env),
                Err(format!(
                    "ATRIUM_OLLAMA_MAX_IN_FLIGHT must be a whole number above 0, not `{bad}`"
                ))
            );
        }
        assert_eq!(
            InferenceConfig::parse("[providers.ovh]\nmax_in_flight = 0").unwrap_err(),
            "[providers.ovh] max_in_flight must be at least 1"
        );
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            (
                "[providers.azure]\napi_key = \"x\"",
                "`azure` is not one of",
            ),
            ("[providers.ovh]\napikey = \"x\"", "apikey"),
            (
                "[[models]]\nid = \"m\"\nprovider = \"openai\"\ninput_usd_per_million = 1\noutput_usd_per_million = 1\ntier = \"eu-sovereign\"",
                "cannot join eu-sovereign",
            ),
            (
                "[[models]]\nid = \"m\"\nprovider = \"ovh\"\ninput_usd_per_million = -1.0\noutput_usd_per_million = 1",
                "input_usd_per_million must be between",
            ),
            (
                "[[models]]\nid = \"m\"\nprovider = \"ovh\"",
                "input_usd_per_million",
            ),
            ("models = 3", "invalid type"),
        ];
        for (text, expected) in cases {
            let err = InferenceConfig::parse(text).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
        // The list of names comes from `ProviderId::ALL`; the text is the one operators know.
        assert_eq!(
            InferenceConfig::parse("[providers.azure]\napi_key = \"x\"").unwrap_err(),
            "[providers.azure]: `azure` is not one of openai, anthropic, mistral, ollama, ovh"
        );
        assert_eq!(
            InferenceConfig::parse("[[models]]\nid = \"m\"\nprovider = \"azure\"\ninput_usd_per_million = 1\noutput_usd_per_million = 1").unwrap_err(),
            "models[0] (`m`): provider `azure` is not one of openai, anthropic, mistral, ollama, ovh"
        );
    }
}
