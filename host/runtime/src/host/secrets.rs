//! `secrets`: values set by the developer or the tenant, read at call time.

use atrium_manifest::sandbox;

use crate::LogLevel;
use crate::bindings::atrium::app::secrets;
use crate::logs::LogSink;
use crate::state::CallContext;

/// The `secrets` capability's view of a call.
pub(crate) struct Secrets<'a> {
    pub call: &'a CallContext,
    pub log: &'a LogSink,
}

super::capability!(crate::bindings::atrium::app::secrets, Secrets);

impl secrets::Host for Secrets<'_> {
    async fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        // `get` returns none and never fails: a malformed key is logged for the developer
        // and reads as unset (docs/runtime.md).
        if let Err(warning) = sandbox::secret_key(&key) {
            self.log.record(LogLevel::Warn, &warning);
            return Ok(None);
        }
        Ok(self.call.platform.secret(&self.call.info, &key).await)
    }
}
