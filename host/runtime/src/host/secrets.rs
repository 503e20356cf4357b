//! `secrets`: values set by the developer or the tenant, read at call time.

use atrium_manifest::rules::is_secret_key;

use crate::bindings::atrium::app::secrets;
use crate::state::CallState;

impl secrets::Host for CallState {
    async fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        // The spec: `get` returns null and does not throw. A malformed key is logged for the
        // developer and reads as unset.
        if !is_secret_key(&key) {
            self.log.record(
                crate::LogLevel::Warn,
                &format!("secrets.get(`{key}`): a secret key must match ^[A-Z][A-Z0-9_]{{0,63}}$; returning none"),
            );
            return Ok(None);
        }
        Ok(self.platform.secret(&self.call, &key).await)
    }
}
