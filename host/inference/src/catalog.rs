//! The model catalog: which provider serves a model, under which jurisdiction, at what price.
//!
//! Prices are integer micro-dollars per million tokens, so costs are exact integers
//! (micro-dollars) and sums of them stay exact. The built-in catalog can be extended or
//! overridden by configuration.

use serde::{Deserialize, Serialize};

/// A provider the host can call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderId {
    /// OpenAI (US).
    Openai,
    /// Anthropic (US).
    Anthropic,
    /// Mistral AI (EU).
    Mistral,
    /// Ollama on a host the operator runs (EU: the operator's own machine).
    Ollama,
    /// OVHcloud AI Endpoints (EU).
    Ovh,
}

impl ProviderId {
    /// Every provider.
    pub const ALL: [ProviderId; 5] = [
        ProviderId::Openai,
        ProviderId::Anthropic,
        ProviderId::Mistral,
        ProviderId::Ollama,
        ProviderId::Ovh,
    ];

    /// The name used in requests, responses and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderId::Openai => "openai",
            ProviderId::Anthropic => "anthropic",
            ProviderId::Mistral => "mistral",
            ProviderId::Ollama => "ollama",
            ProviderId::Ovh => "ovh",
        }
    }

    /// Every provider's name in the order of [`ProviderId::ALL`], joined by `, `: the list that
    /// messages such as "`azure` is not one of ..." give.
    pub fn names() -> String {
        Self::ALL.map(ProviderId::as_str).join(", ")
    }

    /// Parses a provider name (case-insensitive).
    pub fn parse(name: &str) -> Option<ProviderId> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(name))
    }

    /// Where the provider processes data.
    pub fn jurisdiction(self) -> Jurisdiction {
        match self {
            ProviderId::Openai | ProviderId::Anthropic => Jurisdiction::Us,
            ProviderId::Mistral | ProviderId::Ollama | ProviderId::Ovh => Jurisdiction::Eu,
        }
    }
}

/// Where a model runs, for the data policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Jurisdiction {
    /// The European Union.
    Eu,
    /// The United States.
    Us,
}

/// One model of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model's name as the provider knows it.
    pub id: String,
    /// Who serves it.
    pub provider: ProviderId,
    /// Micro-dollars per million input tokens.
    pub input_micros_per_m: i64,
    /// Micro-dollars per million output tokens.
    pub output_micros_per_m: i64,
    /// Its place in the `eu-sovereign` tier (lower first), if it belongs there.
    #[serde(default)]
    pub sovereign_rank: Option<u32>,
    /// Its place in the `frontier` tier (lower first), if it belongs there.
    #[serde(default)]
    pub frontier_rank: Option<u32>,
}

impl ModelInfo {
    /// Where the model runs.
    pub fn jurisdiction(&self) -> Jurisdiction {
        self.provider.jurisdiction()
    }

    /// The cost of a call in micro-dollars, rounded half up; at half the price for batch items.
    pub fn cost_micros(&self, prompt_tokens: u64, completion_tokens: u64, batch: bool) -> i64 {
        let per_m = i128::from(self.input_micros_per_m) * i128::from(prompt_tokens)
            + i128::from(self.output_micros_per_m) * i128::from(completion_tokens);
        let divisor: i128 = if batch { 2_000_000 } else { 1_000_000 };
        i64::try_from((per_m + divisor / 2) / divisor).unwrap_or(i64::MAX)
    }
}

fn model(id: &str, provider: ProviderId, input_usd_per_m: f64, output_usd_per_m: f64) -> ModelInfo {
    ModelInfo {
        id: id.to_owned(),
        provider,
        input_micros_per_m: (input_usd_per_m * 1_000_000.0).round() as i64,
        output_micros_per_m: (output_usd_per_m * 1_000_000.0).round() as i64,
        sovereign_rank: None,
        frontier_rank: None,
    }
}

/// The models the host knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    models: Vec<ModelInfo>,
}

impl Default for Catalog {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Catalog {
    /// The built-in catalog (list prices in USD per million tokens; see docs/api.md).
    pub fn builtin() -> Self {
        use ProviderId::{Anthropic, Mistral, Ollama, Openai, Ovh};
        let ranked = |mut m: ModelInfo, sovereign: Option<u32>, frontier: Option<u32>| {
            m.sovereign_rank = sovereign;
            m.frontier_rank = frontier;
            m
        };
        Catalog {
            models: vec![
                // eu-sovereign: an EU-hosted open model first, then EU providers.
                ranked(
                    model("Meta-Llama-3_3-70B-Instruct", Ovh, 0.74, 0.74),
                    Some(1),
                    None,
                ),
                ranked(model("Qwen3-32B", Ovh, 0.09, 0.25), Some(2), None),
                ranked(
                    model("mistral-small-latest", Mistral, 0.10, 0.30),
                    Some(3),
                    None,
                ),
                ranked(
                    model("mistral-large-latest", Mistral, 2.00, 6.00),
                    Some(4),
                    None,
                ),
                ranked(model("qwen2.5:7b", Ollama, 0.0, 0.0), Some(5), None),
                // frontier: opt-in, US.
                ranked(
                    model("claude-sonnet-4-5", Anthropic, 3.00, 15.00),
                    None,
                    Some(1),
                ),
                ranked(model("gpt-4.1", Openai, 2.00, 8.00), None, Some(2)),
                model("claude-haiku-4-5", Anthropic, 1.00, 5.00),
                model("gpt-4o-mini", Openai, 0.15, 0.60),
            ],
        }
    }

    /// Adds a model, or replaces the one with the same provider and id.
    pub fn upsert(&mut self, model: ModelInfo) {
        match self
            .models
            .iter_mut()
            .find(|m| m.provider == model.provider && m.id == model.id)
        {
            Some(existing) => *existing = model,
            None => self.models.push(model),
        }
    }

    /// Every model, in catalog order.
    pub fn models(&self) -> &[ModelInfo] {
        &self.models
    }

    /// The models with this id, in catalog order (one id may be served by several providers).
    pub fn by_id<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a ModelInfo> + 'a {
        self.models.iter().filter(move |m| m.id == id)
    }

    /// The model `id` of `provider`.
    pub fn find(&self, provider: ProviderId, id: &str) -> Option<&ModelInfo> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    /// The provider's priciest model: the price charged for a model outside the catalog that
    /// was routed to it by name, so that an unknown price never meters as free.
    pub fn ceiling_price(&self, provider: ProviderId) -> (i64, i64) {
        self.models
            .iter()
            .filter(|m| m.provider == provider)
            .map(|m| (m.input_micros_per_m, m.output_micros_per_m))
            .max_by_key(|(i, o)| i + o)
            .unwrap_or((0, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_are_exact_integer_micro_dollars() {
        let m = model("m", ProviderId::Mistral, 0.10, 0.30);
        assert_eq!(
            (m.input_micros_per_m, m.output_micros_per_m),
            (100_000, 300_000)
        );
        // 1,000 in at $0.10/M + 500 out at $0.30/M = $0.000100 + $0.000150
        assert_eq!(m.cost_micros(1_000, 500, false), 250);
        assert_eq!(m.cost_micros(1_000, 500, true), 125);
        assert_eq!(m.cost_micros(1, 1, false), 0);
        assert_eq!(
            m.cost_micros(5, 0, false),
            1,
            "0.5 micro-dollars round half up"
        );
    }

    #[test]
    fn every_builtin_model_is_unique_and_tiers_are_consistent() {
        let c = Catalog::builtin();
        for m in c.models() {
            assert_eq!(
                c.models()
                    .iter()
                    .filter(|o| o.provider == m.provider && o.id == m.id)
                    .count(),
                1
            );
            if m.sovereign_rank.is_some() {
                assert_eq!(m.jurisdiction(), Jurisdiction::Eu, "{}", m.id);
            }
        }
        assert_eq!(ProviderId::parse("OVH"), Some(ProviderId::Ovh));
        assert_eq!(ProviderId::parse("azure"), None);
    }

    #[test]
    fn the_list_of_names_follows_all() {
        // The text of configuration and request errors; a new provider joins it at the end.
        assert_eq!(
            ProviderId::names(),
            "openai, anthropic, mistral, ollama, ovh"
        );
        for id in ProviderId::ALL {
            assert_eq!(ProviderId::parse(id.as_str()), Some(id));
        }
    }
}
