//! Chat inference for the /v1 API: the model catalog, routing by tier, provider and model name,
//! the EU data policy, and (next) the provider adapters and fallback.

pub mod catalog;
pub mod config;
pub mod embed;
pub mod gateway;
pub mod providers;
pub mod router;

pub use catalog::{Catalog, Jurisdiction, ModelInfo, ProviderId};
pub use config::InferenceConfig;
pub use gateway::{Attempt, Completed, Gateway, GatewayError, Streaming};
pub use router::{PII_MESSAGE, RouteError, Selection, Tier, route};
