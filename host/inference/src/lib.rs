//! Chat inference and embeddings for the /v1 API.
//!
//! - [`catalog`]: the models, which provider serves each, under which jurisdiction, at what
//!   price; [`ProviderId`], the providers the host can call.
//! - [`router`]: from a request's `tier`, `provider`, `model` and `contains_pii` to an ordered
//!   list of backends, under the EU data policy.
//! - [`providers`]: one adapter per provider behind one trait, each file owning its provider's
//!   identity (default API base, default timeout, what it needs to be configured, how it is
//!   built); adapters speak their provider's wire protocol and answer in OpenAI's shape, plain
//!   or streamed.
//! - [`config`]: the inference configuration file and the environment variables that override
//!   it: provider settings and catalog additions.
//! - [`gateway`]: the configured providers and a chat call that falls back along the routed
//!   backends.
//! - [`embed`]: the EU embedding providers and the built-in lexical embedder.
//!
//! The arrows point one way: `gateway` and `embed` read `config`, which reads `providers`,
//! `catalog` and `router`; `providers` never see the configuration file.

pub mod catalog;
pub mod config;
pub mod embed;
pub mod gateway;
pub mod providers;
pub mod request;
pub mod router;

pub use catalog::{Catalog, Jurisdiction, ModelInfo, ProviderId};
pub use config::InferenceConfig;
pub use gateway::{Attempt, Completed, Gateway, GatewayError, Streaming};
pub use request::{ChatCall, InvalidChat, parse_chat};
pub use router::{PII_MESSAGE, RouteError, Selection, Tier, route};
