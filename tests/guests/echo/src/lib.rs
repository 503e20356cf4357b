//! The trivial app: one tool, `echo`, that returns its arguments. It declares no route and
//! sends no request, and is exported `without_http`, so its component imports no `wasi:http`
//! interface (docs/sdk.md, "Lean components"). The runtime's benchmarks call it beside
//! `probe`'s `echo`, the same handler in a component that imports everything.

use atrium_sdk::{App, ManifestInfo, RegistrationError};
use serde_json::Value;

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");

/// Builds the app.
pub fn app() -> Result<App, RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.tool("echo", |_, args: Value| Ok(args))?;
    Ok(app)
}

atrium_sdk::export!(app, without_http);

#[cfg(test)]
mod tests {
    use super::app;
    use atrium_sdk::testing::TestClient;
    use serde_json::json;

    #[test]
    fn echo_returns_its_arguments() {
        let client = TestClient::new(app()).unwrap();
        let args = json!({"a": [1, 2], "b": "c"});
        assert_eq!(client.call_tool("echo", &args).unwrap(), args);
    }
}
