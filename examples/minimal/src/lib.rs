//! The minimal app (docs/manifest.md): a manifest with apiVersion, app_id, version, name and
//! runtime.image, and no handler. It starts, answers its health check and idles.

use atrium_sdk::{App, ManifestInfo, RegistrationError};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");

/// Builds the app: nothing to register.
pub fn app() -> Result<App, RegistrationError> {
    Ok(App::new(&MANIFEST))
}

atrium_sdk::export!(app, without_http);

#[cfg(test)]
mod tests {
    use super::*;
    use atrium_sdk::HandlerError;
    use atrium_sdk::testing::TestClient;

    #[test]
    fn it_registers_nothing_and_idles() {
        let app = app().unwrap();
        let registration = app.registration();
        assert!(
            registration.tools.is_empty()
                && registration.lifecycle.is_empty()
                && registration.routes.is_empty()
        );
        assert!(registration.manifest.contains("app_id: hello-minimal"));
        assert_eq!(app.manifest().app_id, "hello-minimal");
    }

    fn serde_json_free_args() -> std::collections::BTreeMap<String, String> {
        std::collections::BTreeMap::new()
    }

    #[test]
    fn calls_it_does_not_serve_say_so() {
        let client = TestClient::new(app()).unwrap();
        assert_eq!(
            client.call_tool("anything", serde_json_free_args()),
            Err(HandlerError::NoHandler("tool `anything`".into()))
        );
        assert_eq!(client.request("GET", "/health", b"").status, 404);
    }
}
