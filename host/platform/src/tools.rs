//! The platform tools apps reach through `tools.call` (and agents through the runner, and a
//! heartbeat's pre-filter): one catalogue ([`Catalogue`]), each tool registered once by the
//! capability that owns it (`records`, `memory`, `rooms`, `knowledge`, `chat`) and each
//! capability's list once in the composition, each tool with the scopes an install must hold
//! (docs/platform.md).
//!
//! A tool is a type implementing [`Tool`]: its arguments are a struct that refuses unknown
//! fields and whose errors name the field (read through [`crate::fields`]), its JSON schema,
//! which the model sees, is generated from that struct, and its answer is a typed value. The
//! catalogue finds a tool by its whole name; nothing is chosen by a prefix.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use atrium_manifest::sandbox::{Decision, ToolRefusal};
use atrium_runtime::ToolCallError;
use atrium_store::{InstallKey, Store};
use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::gateway::Chat;
use crate::registry::Actor;
use crate::scopes::Risk;

/// A platform tool of the catalogue.
#[derive(Clone, Copy)]
pub struct PlatformTool {
    /// Its name in `tools.call`.
    pub name: &'static str,
    /// The scopes the install must hold.
    pub scopes: &'static [&'static str],
    /// What it does.
    pub description: &'static str,
    /// How much a call exposes, in the scope catalogue's terms: at least the risk of each of
    /// its scopes; a tool that changes data or spends money is not LOW. A heartbeat's
    /// pre-filter runs only LOW-risk tools.
    pub risk: Risk,
    /// The argument that names one of the app's agents and that the agent runner fills with
    /// the running agent, whatever the model says (an agent reaches only its own memory).
    pub runner_fills_agent: Option<&'static str>,
    /// Whether the agent runner offers it to models (chat is the model's own call).
    pub offered_to_agents: bool,
    schema: fn() -> Value,
    call: for<'a> fn(&'a ToolContext<'a>, Value) -> ToolFuture<'a>,
}

type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, ToolCallError>> + Send + 'a>>;

impl std::fmt::Debug for PlatformTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlatformTool")
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .field("risk", &self.risk)
            .finish_non_exhaustive()
    }
}

impl PlatformTool {
    /// The catalogue's entry of `T`.
    pub(crate) const fn of<T: Tool>() -> Self {
        PlatformTool {
            name: T::NAME,
            scopes: T::SCOPES,
            description: T::DESCRIPTION,
            risk: T::RISK,
            runner_fills_agent: T::RUNNER_FILLS_AGENT,
            offered_to_agents: T::OFFERED_TO_AGENTS,
            schema: schema_of::<T::Args>,
            call: call_of::<T>,
        }
    }

    /// The JSON schema of its arguments, generated from their type: what a model is shown.
    #[must_use]
    pub fn parameters(&self) -> Value {
        (self.schema)()
    }

    /// Runs it with `args` (a JSON object) for the install of `cx`, its scopes already checked.
    pub(crate) async fn call(
        &self,
        cx: &ToolContext<'_>,
        args: Value,
    ) -> Result<Value, ToolCallError> {
        (self.call)(cx, args).await
    }
}

/// What a tool runs for: the install (its tenant, app, slots and agents) and what of the host
/// the tools reach.
pub struct ToolContext<'a> {
    /// The platform's store.
    pub(crate) store: &'a Store,
    /// Managed retrieval, when the host has it.
    pub(crate) retrieval: Option<&'a Arc<atrium_retrieval::Retrieval>>,
    /// The chat gateway and its metering, when the host has providers.
    pub(crate) chat: Option<&'a Chat>,
    /// The tenant of the install.
    pub(crate) tenant: &'a Actor,
    /// The app of the install.
    pub(crate) app_slug: &'a str,
    /// The install's slot bindings and its manifest's slots and agents.
    pub(crate) knowledge: &'a Knowledge,
}

impl ToolContext<'_> {
    /// The install the tool runs for.
    pub(crate) fn install(&self) -> InstallKey {
        self.tenant.install(self.app_slug)
    }

    /// The platform's store.
    pub(crate) fn store(&self) -> &Store {
        self.store
    }
}

/// A platform tool: its name, scopes and risk, its argument and answer types, and what it
/// does. A capability registers it once, in the list its module gives the composition
/// (`composition::platform_tools`).
pub(crate) trait Tool: 'static {
    /// Its name in `tools.call`.
    const NAME: &'static str;
    /// The scopes the install must hold.
    const SCOPES: &'static [&'static str] = &[];
    /// What it does, as docs/platform.md and the model read it.
    const DESCRIPTION: &'static str;
    /// How much a call exposes.
    const RISK: Risk;
    /// See [`PlatformTool::runner_fills_agent`].
    const RUNNER_FILLS_AGENT: Option<&'static str> = None;
    /// See [`PlatformTool::offered_to_agents`].
    const OFFERED_TO_AGENTS: bool = true;
    /// Its arguments.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// What it answers.
    type Answer: Serialize;
    /// Runs it.
    fn run(
        cx: &ToolContext<'_>,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Answer, Fault>> + Send;
}

fn call_of<'a, T: Tool>(cx: &'a ToolContext<'a>, args: Value) -> ToolFuture<'a> {
    Box::pin(async move {
        let refuse = |fault: Fault| ToolRefusal::new(T::NAME, fault.decision, fault.message);
        if !args.is_object() {
            return Err(refuse(Fault::invalid("the arguments must be a JSON object")).into());
        }
        let args: T::Args =
            crate::fields::from_value(args).map_err(|e| refuse(Fault::invalid(e.sentence())))?;
        let answer = T::run(cx, args).await.map_err(refuse)?;
        serde_json::to_value(answer).map_err(|e| refuse(Fault::failed(&e)).into())
    })
}

/// The JSON schema of `T`, inlined, without the meta-schema and title a model has no use for.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("title");
        object.remove("description");
    }
    value
}

/// Why a tool refused its call: the sandbox's decision and a sentence for the app.
#[derive(Debug)]
pub(crate) struct Fault {
    pub(crate) decision: Decision,
    pub(crate) message: String,
}

impl Fault {
    /// A refusal with `decision`.
    pub(crate) fn new(decision: Decision, message: impl Into<String>) -> Self {
        Fault {
            decision,
            message: message.into(),
        }
    }

    /// Arguments the tool cannot take.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Fault::new(Decision::InvalidArguments, message)
    }

    /// The platform's own failure.
    pub(crate) fn failed(error: &dyn std::fmt::Display) -> Self {
        Fault::new(Decision::Failed, format!("the platform failed: {error}"))
    }
}

/// The platform tools of a host: every tool, by name, listed by the composition
/// (`composition::platform_tools`) and held by [`crate::services::Services`].
#[derive(Debug, Clone, Copy)]
pub struct Catalogue(&'static [PlatformTool]);

impl Catalogue {
    /// A catalogue of `tools`, which must be sorted by name, each name once.
    pub(crate) const fn new(tools: &'static [PlatformTool]) -> Self {
        Catalogue(tools)
    }

    /// Every tool, by name.
    #[must_use]
    pub fn all(&self) -> &'static [PlatformTool] {
        self.0
    }

    /// The tool named `name` (its whole name: nothing is found by a prefix).
    #[must_use]
    pub fn find(&self, name: &str) -> Option<&'static PlatformTool> {
        self.0.iter().find(|t| t.name == name)
    }
}

/// What the knowledge tools need of an install: its slot bindings and the manifest's slots.
#[derive(Debug, Clone, Default)]
pub struct Knowledge {
    /// Slot name to the name of one of the tenant's collections.
    pub bindings: Map<String, Value>,
    /// The slots the install's manifest declares.
    pub slots: Vec<atrium_manifest::RagSlot>,
    /// The agents the install's manifest declares (whose memory the `memory.*` tools reach).
    pub agents: Vec<String>,
}

/// A string of `MIN` to `MAX` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text<const MIN: usize, const MAX: usize>(pub(crate) String);

/// A name: a string of 1 to 200 characters.
pub(crate) type Name = Text<1, 200>;

impl<const MIN: usize, const MAX: usize> Text<MIN, MAX> {
    fn rule() -> String {
        if MIN == 0 {
            format!("must be a string of at most {MAX} characters")
        } else {
            format!("must be a string of {MIN} to {MAX} characters")
        }
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de, const MIN: usize, const MAX: usize> Deserialize<'de> for Text<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(s) if (MIN..=MAX).contains(&s.chars().count()) => Ok(Text(s)),
            _ => Err(D::Error::custom(Self::rule())),
        }
    }
}

impl<const MIN: usize, const MAX: usize> JsonSchema for Text<MIN, MAX> {
    fn schema_name() -> Cow<'static, str> {
        format!("Text{MIN}to{MAX}").into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "minLength": MIN, "maxLength": MAX})
    }
}

/// A whole number from `MIN` to `MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Whole<const MIN: i64, const MAX: i64>(pub(crate) i64);

impl<'de, const MIN: i64, const MAX: i64> Deserialize<'de> for Whole<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer)?
            .as_i64()
            .filter(|n| (MIN..=MAX).contains(n))
            .map(Whole)
            .ok_or_else(|| D::Error::custom(format!("must be a whole number from {MIN} to {MAX}")))
    }
}

impl<const MIN: i64, const MAX: i64> JsonSchema for Whole<MIN, MAX> {
    fn schema_name() -> Cow<'static, str> {
        format!("Whole{MIN}to{MAX}").into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": MIN, "maximum": MAX})
    }
}

/// A moment, sent as an ISO-8601 time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moment(pub(crate) jiff::Timestamp);

impl<'de> Deserialize<'de> for Moment {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer)?
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(Moment)
            .ok_or_else(|| D::Error::custom("must be an ISO-8601 time"))
    }
}

impl JsonSchema for Moment {
    fn schema_name() -> Cow<'static, str> {
        "Moment".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "date-time"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalogue() -> &'static [PlatformTool] {
        crate::composition::platform_tools().all()
    }

    fn find(name: &str) -> Option<&'static PlatformTool> {
        crate::composition::platform_tools().find(name)
    }

    #[test]
    fn every_tool_has_a_generated_object_schema_that_names_its_fields() {
        for tool in catalogue() {
            let schema = tool.parameters();
            assert_eq!(schema["type"], "object", "{}: {schema}", tool.name);
            assert!(
                schema["properties"]
                    .as_object()
                    .is_some_and(|p| !p.is_empty()),
                "{}: {schema}",
                tool.name
            );
            assert!(schema.get("$ref").is_none() && schema.get("$defs").is_none());
        }
        let put = find("records.put").unwrap().parameters();
        assert_eq!(put["additionalProperties"], false, "{put}");
        assert_eq!(put["required"], json!(["record_type", "record"]), "{put}");
        assert_eq!(put["properties"]["record_type"]["maxLength"], 200, "{put}");
        let query = find("memory.query").unwrap().parameters();
        assert_eq!(query["properties"]["limit"]["maximum"], 100, "{query}");
    }

    #[test]
    fn the_catalogue_holds_each_name_once_and_finds_only_whole_names() {
        let names: Vec<&str> = catalogue().iter().map(|t| t.name).collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique);
        assert!(find("records.get").is_some());
        assert!(find("records.").is_none() && find("records").is_none());
        assert!(find("records.teleport").is_none());
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Probe {
        name: Name,
        limit: Option<Whole<1, 100>>,
        before: Option<Moment>,
    }

    fn refused(args: Value) -> String {
        crate::fields::from_value::<Probe>(args)
            .unwrap_err()
            .sentence()
    }

    #[test]
    fn a_broken_argument_is_named_with_its_rule() {
        assert_eq!(
            refused(json!({"name": ""})),
            "`name`: must be a string of 1 to 200 characters"
        );
        assert_eq!(
            refused(json!({"name": 5})),
            "`name`: must be a string of 1 to 200 characters"
        );
        assert_eq!(
            refused(json!({"name": "a", "limit": 101})),
            "`limit`: must be a whole number from 1 to 100"
        );
        assert_eq!(
            refused(json!({"name": "a", "limit": 2.5})),
            "`limit`: must be a whole number from 1 to 100"
        );
        assert_eq!(
            refused(json!({"name": "a", "before": "yesterday"})),
            "`before`: must be an ISO-8601 time"
        );
        assert!(refused(json!({})).starts_with("`name`: missing field"));
        assert!(refused(json!({"name": "a", "colour": 1})).starts_with("`colour`: unknown field"));
        let ok: Probe = crate::fields::from_value(
            json!({"name": "a", "limit": null, "before": "2026-01-01T00:00:00Z"}),
        )
        .unwrap();
        assert_eq!(ok.limit, None);
        assert_eq!(
            ok.before.map(|m| m.0.as_microsecond()),
            Some(1_767_225_600_000_000)
        );
    }
}
