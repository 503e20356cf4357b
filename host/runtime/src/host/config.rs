//! `config`: the install settings the tenant filled in.

use serde_json::{Map, Value};

use crate::bindings::atrium::app::config;

/// The `config` capability's view of a call.
pub(crate) struct Config<'a> {
    pub settings: &'a Map<String, Value>,
}

super::capability!(crate::bindings::atrium::app::config, Config);

impl config::Host for Config<'_> {
    async fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.settings.get(&key).map(Value::to_string))
    }

    async fn all(&mut self) -> wasmtime::Result<String> {
        Ok(Value::Object(self.settings.clone()).to_string())
    }
}
