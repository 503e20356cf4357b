//! `context`, `config` and `logging`: facts about the call, install settings, log records.

use crate::bindings::atrium::app::{config, context, logging};
use crate::state::CallState;
use crate::{CallInfo, LogLevel};

impl context::Host for CallState {
    async fn current(&mut self) -> wasmtime::Result<CallInfo> {
        Ok(self.call.clone())
    }

    async fn public_callback_url(
        &mut self,
        path: String,
    ) -> wasmtime::Result<Result<String, String>> {
        let declared = self
            .manifest
            .http_routes
            .iter()
            .any(|r| r.public && r.match_path(&path).is_some());
        if !declared {
            let public: Vec<&str> = self
                .manifest
                .http_routes
                .iter()
                .filter(|r| r.public)
                .map(|r| r.path.as_str())
                .collect();
            return Ok(Err(format!(
                "`{path}` matches no public route of this app ({})",
                if public.is_empty() {
                    "it declares none".to_owned()
                } else {
                    format!("public routes: {}", public.join(", "))
                }
            )));
        }
        Ok(Ok(self.platform.public_callback_url(&self.call, &path)))
    }
}

impl config::Host for CallState {
    async fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.settings.get(&key).map(|v| v.to_string()))
    }

    async fn all(&mut self) -> wasmtime::Result<String> {
        Ok(serde_json::Value::Object((*self.settings).clone()).to_string())
    }
}

impl logging::Host for CallState {
    async fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        self.log.record(level, &message);
        Ok(())
    }
}
