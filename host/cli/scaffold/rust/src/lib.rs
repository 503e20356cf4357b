//! {{name}}: an Atrium app.
//!
//! `greet` answers with the install's `greeting` setting (and greets the world when no `name`
//! is given). `cargo test` runs the handler
//! natively against the SDK's test client; `atrium deploy` builds the component.

use atrium_sdk::{App, Ctx, Error, ManifestInfo, RegistrationError};
use serde::Deserialize;
use serde_json::{Value, json};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");

#[derive(Deserialize)]
struct GreetArgs {
    #[serde(default = "world")]
    name: String,
}

fn world() -> String {
    "world".to_owned()
}

fn greet(ctx: &Ctx<'_>, args: GreetArgs) -> Result<Value, Error> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err(Error::invalid_input("`name` is empty"));
    }
    let greeting = ctx
        .config
        .get_as::<String>("greeting")
        .unwrap_or_else(|| "Hello".into());
    Ok(json!({"message": format!("{greeting}, {name}!")}))
}

/// Builds the app: its tools and handlers, checked against the manifest.
pub fn app() -> Result<App, RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.tool("greet", greet)?;
    Ok(app)
}

atrium_sdk::export!(app, without_http);

#[cfg(test)]
mod tests {
    use super::app;
    use atrium_sdk::HandlerError;
    use atrium_sdk::testing::TestClient;
    use serde_json::json;

    #[test]
    fn greet_uses_the_install_greeting() {
        let client = TestClient::new(app()).unwrap().setting("greeting", json!("Welcome"));
        let result = client.call_tool("greet", json!({"name": "Ada"})).unwrap();
        assert_eq!(result["message"], "Welcome, Ada!");
    }

    #[test]
    fn greet_greets_the_world_without_a_name() {
        let client = TestClient::new(app()).unwrap();
        let result = client.call_tool("greet", json!({})).unwrap();
        assert_eq!(result["message"], "Hello, world!");
    }

    #[test]
    fn greet_refuses_an_empty_name() {
        let client = TestClient::new(app()).unwrap();
        let err = client.call_tool("greet", json!({"name": " "})).unwrap_err();
        assert!(matches!(err, HandlerError::InvalidInput(_)), "{err:?}");
    }
}
