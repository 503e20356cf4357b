//! Routing: from a request's `tier`, `provider`, `model` and `contains_pii` to an ordered list
//! of backends to try, under the EU data policy.
//!
//! Order of decisions:
//! 1. An explicit `model` (with or without `provider`) selects that model: from the catalog, or,
//!    for a name the catalog lacks, by name (`gpt*` → openai, `claude*` → anthropic, a Qwen
//!    name → an EU backend). An explicit `provider` alone selects that provider's models, best
//!    ranked first. Otherwise the `tier` decides (default `eu-sovereign`).
//! 2. `contains_pii: true` with any non-EU selection is refused (403 `policy_violation`)
//!    before any upstream is contacted.
//! 3. Providers without credentials are skipped.
//! 4. The fallback list never leaves the EU once the first choice is in the EU.

use crate::catalog::{Catalog, Jurisdiction, ModelInfo, ProviderId};

/// The routing intents of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// `eu-sovereign` (default): an EU-hosted open model first, then EU providers.
    EuSovereign,
    /// `frontier`: the newest US frontier models, by explicit opt-in.
    Frontier,
    /// `cheapest`: the lowest-cost available EU model first.
    Cheapest,
}

impl Tier {
    /// Parses a tier value.
    pub fn parse(value: &str) -> Option<Tier> {
        match value {
            "eu-sovereign" => Some(Tier::EuSovereign),
            "frontier" => Some(Tier::Frontier),
            "cheapest" => Some(Tier::Cheapest),
            _ => None,
        }
    }

    /// The tier's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::EuSovereign => "eu-sovereign",
            Tier::Frontier => "frontier",
            Tier::Cheapest => "cheapest",
        }
    }
}

/// What a request asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// `tier`, when given.
    pub tier: Option<Tier>,
    /// `provider`, when given.
    pub provider: Option<ProviderId>,
    /// `model`, when given.
    pub model: Option<String>,
    /// `contains_pii`.
    pub contains_pii: bool,
}

/// Why no route exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The data policy forbids the selection (403 `policy_violation`).
    #[error("{0}")]
    Policy(String),
    /// The selection names something that does not exist (400), with the field at fault.
    #[error("{message}")]
    Invalid {
        /// The request field.
        param: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Nothing that fits is configured (503).
    #[error("{0}")]
    Unavailable(String),
}

/// The policy's message, as the spec words it.
pub const PII_MESSAGE: &str = "personal data may only use an EU-sovereign model";

fn is_qwen(name: &str) -> bool {
    name.to_ascii_lowercase().contains("qwen")
}

/// A model the catalog lacks, routed by its name.
fn by_name(
    catalog: &Catalog,
    name: &str,
    available: &dyn Fn(ProviderId) -> bool,
) -> Result<Vec<ModelInfo>, RouteError> {
    let lower = name.to_ascii_lowercase();
    let providers: Vec<ProviderId> = if lower.starts_with("gpt") {
        vec![ProviderId::Openai]
    } else if lower.starts_with("claude") {
        vec![ProviderId::Anthropic]
    } else if is_qwen(name) {
        vec![ProviderId::Ovh, ProviderId::Ollama]
    } else {
        return Err(RouteError::Invalid {
            param: "model",
            message: format!(
                "unknown model `{name}`: it is not in the catalog (GET /v1/models) and its name does not route \
                 (gpt* to openai, claude* to anthropic, Qwen models to an EU backend); name a provider too, or add it to the configuration"
            ),
        });
    };
    let usable: Vec<ProviderId> = providers
        .iter()
        .copied()
        .filter(|p| available(*p))
        .collect();
    let chosen = if usable.is_empty() { providers } else { usable };
    Ok(chosen
        .into_iter()
        .map(|provider| {
            let (input, output) = catalog.ceiling_price(provider);
            ModelInfo {
                id: name.to_owned(),
                provider,
                input_micros_per_m: input,
                output_micros_per_m: output,
                sovereign_rank: None,
                frontier_rank: None,
            }
        })
        .collect())
}

/// The backends to try for `selection`, best first. `available` says which providers have
/// credentials.
pub fn route(
    catalog: &Catalog,
    selection: &Selection,
    available: &dyn Fn(ProviderId) -> bool,
) -> Result<Vec<ModelInfo>, RouteError> {
    let tier = selection.tier.unwrap_or(Tier::EuSovereign);
    let mut candidates: Vec<ModelInfo> = match (&selection.model, selection.provider) {
        (Some(model), Some(provider)) => match catalog.find(provider, model) {
            Some(m) => vec![m.clone()],
            None => {
                let known: Vec<ModelInfo> = catalog.by_id(model).cloned().collect();
                if !known.is_empty() {
                    return Err(RouteError::Invalid {
                        param: "model",
                        message: format!(
                            "model `{model}` is not served by provider `{}`",
                            provider.as_str()
                        ),
                    });
                }
                let mut routed = by_name(catalog, model, &|p| p == provider).unwrap_or_default();
                routed.retain(|m| m.provider == provider);
                if routed.is_empty() {
                    let (input, output) = catalog.ceiling_price(provider);
                    routed.push(ModelInfo {
                        id: model.clone(),
                        provider,
                        input_micros_per_m: input,
                        output_micros_per_m: output,
                        sovereign_rank: None,
                        frontier_rank: None,
                    });
                }
                routed
            }
        },
        (Some(model), None) => {
            let known: Vec<ModelInfo> = catalog.by_id(model).cloned().collect();
            if known.is_empty() {
                by_name(catalog, model, available)?
            } else {
                known
            }
        }
        (None, Some(provider)) => {
            let mut models: Vec<ModelInfo> = catalog
                .models()
                .iter()
                .filter(|m| m.provider == provider)
                .cloned()
                .collect();
            models.sort_by_key(|m| match tier {
                Tier::Frontier => m.frontier_rank.unwrap_or(u32::MAX),
                Tier::Cheapest => {
                    u32::try_from(m.input_micros_per_m + m.output_micros_per_m).unwrap_or(u32::MAX)
                }
                Tier::EuSovereign => m.sovereign_rank.unwrap_or(u32::MAX),
            });
            models
        }
        (None, None) => tier_models(catalog, tier),
    };

    if selection.contains_pii {
        if selection.model.is_none() && selection.provider.is_none() && tier == Tier::Frontier {
            return Err(RouteError::Policy(format!(
                "{PII_MESSAGE}: `contains_pii` is true but tier `frontier` routes to US models"
            )));
        }
        if let Some(us) = candidates
            .iter()
            .find(|m| m.jurisdiction() != Jurisdiction::Eu)
        {
            return Err(RouteError::Policy(format!(
                "{PII_MESSAGE}: `contains_pii` is true but model `{}` of provider `{}` runs in the US",
                us.id,
                us.provider.as_str()
            )));
        }
    }

    let wanted = candidates.clone();
    candidates.retain(|m| available(m.provider));
    if candidates.is_empty() {
        let mut providers: Vec<&str> = Vec::new();
        for m in &wanted {
            if !providers.contains(&m.provider.as_str()) {
                providers.push(m.provider.as_str());
            }
        }
        return Err(RouteError::Unavailable(match providers.as_slice() {
            [] => "no backend can serve this request: no model fits it".to_owned(),
            [one] => format!(
                "no backend can serve this request: its provider {one} is not configured (set ATRIUM_{}_{})",
                one.to_ascii_uppercase(),
                if *one == "ollama" {
                    "BASE_URL"
                } else {
                    "API_KEY"
                }
            ),
            many => format!(
                "no backend can serve this request: none of its providers is configured ({}; set ATRIUM_<PROVIDER>_API_KEY, or ATRIUM_OLLAMA_BASE_URL for ollama)",
                in_words(many)
            ),
        }));
    }
    // Never fall back from the EU to elsewhere.
    if candidates[0].jurisdiction() == Jurisdiction::Eu {
        candidates.retain(|m| m.jurisdiction() == Jurisdiction::Eu);
    }
    Ok(candidates)
}

/// Names as a sentence lists them: `a`, `a and b`, `a, b and c`.
fn in_words(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn tier_models(catalog: &Catalog, tier: Tier) -> Vec<ModelInfo> {
    let mut models: Vec<ModelInfo> = match tier {
        Tier::EuSovereign => catalog
            .models()
            .iter()
            .filter(|m| m.sovereign_rank.is_some())
            .cloned()
            .collect(),
        Tier::Frontier => catalog
            .models()
            .iter()
            .filter(|m| m.frontier_rank.is_some())
            .cloned()
            .collect(),
        Tier::Cheapest => catalog
            .models()
            .iter()
            .filter(|m| m.jurisdiction() == Jurisdiction::Eu)
            .cloned()
            .collect(),
    };
    match tier {
        Tier::EuSovereign => models.sort_by_key(|m| m.sovereign_rank),
        Tier::Frontier => models.sort_by_key(|m| m.frontier_rank),
        Tier::Cheapest => models.sort_by(|a, b| {
            (a.input_micros_per_m + a.output_micros_per_m)
                .cmp(&(b.input_micros_per_m + b.output_micros_per_m))
                .then_with(|| a.id.cmp(&b.id))
        }),
    }
    models
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(_: ProviderId) -> bool {
        true
    }

    fn ids(models: &[ModelInfo]) -> Vec<String> {
        models
            .iter()
            .map(|m| format!("{}/{}", m.provider.as_str(), m.id))
            .collect()
    }

    fn sel(
        tier: Option<Tier>,
        provider: Option<ProviderId>,
        model: Option<&str>,
        pii: bool,
    ) -> Selection {
        Selection {
            tier,
            provider,
            model: model.map(str::to_owned),
            contains_pii: pii,
        }
    }

    #[test]
    fn tiers_order_their_models() {
        let c = Catalog::builtin();
        let eu = route(&c, &Selection::default(), &all).unwrap();
        assert_eq!(ids(&eu)[0], "ovh/Meta-Llama-3_3-70B-Instruct");
        assert!(eu.iter().all(|m| m.jurisdiction() == Jurisdiction::Eu));
        let frontier = route(&c, &sel(Some(Tier::Frontier), None, None, false), &all).unwrap();
        assert_eq!(
            ids(&frontier),
            ["anthropic/claude-sonnet-4-5", "openai/gpt-4.1"]
        );
        let cheapest = route(&c, &sel(Some(Tier::Cheapest), None, None, false), &all).unwrap();
        assert_eq!(ids(&cheapest)[0], "ollama/qwen2.5:7b");
        let without_ollama = route(&c, &sel(Some(Tier::Cheapest), None, None, false), &|p| {
            p != ProviderId::Ollama
        })
        .unwrap();
        assert_eq!(ids(&without_ollama)[0], "ovh/Qwen3-32B");
    }

    #[test]
    fn names_route_to_their_providers() {
        let c = Catalog::builtin();
        assert_eq!(
            ids(&route(&c, &sel(None, None, Some("gpt-5-mini"), false), &all).unwrap()),
            ["openai/gpt-5-mini"]
        );
        assert_eq!(
            ids(&route(&c, &sel(None, None, Some("claude-opus-4-1"), false), &all).unwrap()),
            ["anthropic/claude-opus-4-1"]
        );
        assert_eq!(
            ids(&route(&c, &sel(None, None, Some("Qwen2.5-VL-72B"), false), &all).unwrap()),
            ["ovh/Qwen2.5-VL-72B", "ollama/Qwen2.5-VL-72B"]
        );
        assert_eq!(
            ids(&route(
                &c,
                &sel(None, None, Some("mistral-small-latest"), false),
                &all
            )
            .unwrap()),
            ["mistral/mistral-small-latest"]
        );
        assert!(matches!(
            route(&c, &sel(None, None, Some("llama-9"), false), &all),
            Err(RouteError::Invalid { param: "model", .. })
        ));
        // An unknown name is charged at the provider's highest catalog price, never as free.
        let routed = route(&c, &sel(None, None, Some("gpt-5-mini"), false), &all).unwrap();
        assert_eq!(
            (routed[0].input_micros_per_m, routed[0].output_micros_per_m),
            (2_000_000, 8_000_000)
        );
    }

    #[test]
    fn pii_never_reaches_a_us_model() {
        let c = Catalog::builtin();
        for s in [
            sel(Some(Tier::Frontier), None, None, true),
            sel(None, Some(ProviderId::Openai), None, true),
            sel(None, None, Some("claude-sonnet-4-5"), true),
            sel(None, None, Some("gpt-4o"), true),
        ] {
            let err = route(&c, &s, &all).unwrap_err();
            assert!(
                matches!(&err, RouteError::Policy(m) if m.starts_with(PII_MESSAGE)),
                "{s:?}: {err:?}"
            );
        }
        assert!(route(&c, &sel(None, None, None, true), &all).is_ok());
        assert!(route(&c, &sel(None, Some(ProviderId::Mistral), None, true), &all).is_ok());
    }

    #[test]
    fn unavailable_providers_are_skipped_and_eu_never_falls_back_to_us() {
        let c = Catalog::builtin();
        let only_mistral = route(&c, &Selection::default(), &|p| p == ProviderId::Mistral).unwrap();
        assert_eq!(
            ids(&only_mistral),
            [
                "mistral/mistral-small-latest",
                "mistral/mistral-large-latest"
            ]
        );
        let err = route(&c, &Selection::default(), &|p| p == ProviderId::Openai).unwrap_err();
        assert!(
            matches!(&err, RouteError::Unavailable(m) if m.contains("none of its providers is configured (ovh, mistral and ollama;")),
            "{err:?}"
        );
        let explicit = route(
            &c,
            &sel(
                None,
                Some(ProviderId::Mistral),
                Some("mistral-large-latest"),
                false,
            ),
            &all,
        )
        .unwrap();
        assert_eq!(ids(&explicit), ["mistral/mistral-large-latest"]);
        let wrong = route(
            &c,
            &sel(
                None,
                Some(ProviderId::Openai),
                Some("mistral-large-latest"),
                false,
            ),
            &all,
        )
        .unwrap_err();
        assert!(matches!(wrong, RouteError::Invalid { param: "model", .. }));
    }
}
