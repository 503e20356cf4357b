//! The developer tool's mock file (`atrium.dev.json`, docs/sdk.md): platform
//! tool names mapped to the answer a local run gives.
//!
//! ```json
//! {
//!   "records.query": {"ok": true, "result": [], "scopes": ["invoices.read"]},
//!   "mail.send": {"ok": false, "error": {"decision": "scope_denied", "message": "...", "neededScopes": ["mail.send"]}}
//! }
//! ```
//!
//! `scopes` is Atrium's addition: the scopes the tool needs, so that a local run refuses the
//! call as the platform would when the install lacks them. A tool missing from the file is
//! answered with decision `unmocked`.

use serde_json::Value;

/// One tool's mocked answer.
#[derive(Debug, Clone, PartialEq)]
pub struct MockTool {
    /// The tool's name.
    pub name: String,
    /// The scopes it needs.
    pub scopes: Vec<String>,
    /// What it answers.
    pub answer: Result<Value, MockFailure>,
}

/// A mocked refusal or failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockFailure {
    /// `decision` (for example `scope_denied`, `network_error`).
    pub decision: String,
    /// `message`.
    pub message: String,
    /// `neededScopes`.
    pub needed_scopes: Vec<String>,
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Parses a mock file. Errors name the entry and what is wrong.
pub fn parse_mock_file(text: &str) -> Result<Vec<MockTool>, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the mock file is not valid JSON: {e}"))?;
    let Value::Object(entries) = value else {
        return Err("the mock file must be a JSON object mapping tool names to answers".into());
    };
    entries
        .into_iter()
        .map(|(name, entry)| {
            let answer = match entry.get("ok").and_then(Value::as_bool) {
                Some(true) => Ok(entry.get("result").cloned().unwrap_or(Value::Null)),
                Some(false) => {
                    let error = entry.get("error").cloned().unwrap_or(Value::Null);
                    let text = |k: &str| {
                        error
                            .get(k)
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned()
                    };
                    Err(MockFailure {
                        decision: text("decision"),
                        message: text("message"),
                        needed_scopes: strings(error.get("neededScopes")),
                    })
                }
                None => return Err(format!("mock `{name}` needs `ok`: true or false")),
            };
            Ok(MockTool {
                scopes: strings(entry.get("scopes")),
                name,
                answer,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_failures_and_scopes() {
        let tools = parse_mock_file(
            r#"{"a": {"ok": true, "result": {"x": 1}, "scopes": ["s"]},
                "b": {"ok": false, "error": {"decision": "scope_denied", "message": "m", "neededScopes": ["t"]}}}"#,
        )
        .unwrap();
        assert_eq!(
            tools[0],
            MockTool {
                name: "a".into(),
                scopes: vec!["s".into()],
                answer: Ok(serde_json::json!({"x": 1}))
            }
        );
        assert_eq!(
            tools[1].answer,
            Err(MockFailure {
                decision: "scope_denied".into(),
                message: "m".into(),
                needed_scopes: vec!["t".into()]
            })
        );
        assert!(parse_mock_file("[]").unwrap_err().contains("JSON object"));
        assert!(
            parse_mock_file(r#"{"c": {}}"#)
                .unwrap_err()
                .contains("mock `c` needs `ok`")
        );
        assert!(parse_mock_file("{").unwrap_err().contains("not valid JSON"));
    }
}
