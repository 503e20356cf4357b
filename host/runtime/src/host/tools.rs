//! `tools` and `commitments`: platform tools behind the install's scopes.

use crate::ToolCallError;
use crate::bindings::atrium::app::{commitments, tools};
use crate::platform::Commitment;
use crate::state::CallState;

fn refusal(tool: &str, decision: &str, message: String) -> ToolCallError {
    ToolCallError {
        tool_name: tool.to_owned(),
        decision: decision.to_owned(),
        message,
        needed_scopes: Vec::new(),
    }
}

impl tools::Host for CallState {
    async fn call(
        &mut self,
        name: String,
        args: String,
    ) -> wasmtime::Result<Result<String, ToolCallError>> {
        let args = match super::parse_json("the arguments", &args) {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                return Ok(Err(refusal(
                    &name,
                    "invalid_arguments",
                    "the arguments must be a JSON object".into(),
                )));
            }
            Err(message) => return Ok(Err(refusal(&name, "invalid_arguments", message))),
        };
        let Some(scopes) = self.platform.tool_scopes(&name) else {
            return Ok(Err(refusal(
                &name,
                "unknown_tool",
                format!("the platform has no tool named `{name}`"),
            )));
        };
        let needed: Vec<String> = scopes
            .into_iter()
            .filter(|s| !self.granted_scopes.contains(s))
            .collect();
        if !needed.is_empty() {
            let undeclared: Vec<&str> = needed
                .iter()
                .filter(|s| !self.manifest.required_scopes.contains(s))
                .map(String::as_str)
                .collect();
            let hint = if undeclared.is_empty() {
                "the tenant has not granted them".to_owned()
            } else {
                format!(
                    "add {} to required_scopes so the tenant can grant them",
                    undeclared.join(", ")
                )
            };
            return Ok(Err(ToolCallError {
                tool_name: name.clone(),
                decision: "scope_denied".into(),
                message: format!("tool `{name}` needs scopes {}: {hint}", needed.join(", ")),
                needed_scopes: needed,
            }));
        }
        Ok(self
            .platform
            .call_tool(&self.call, &name, args)
            .await
            .map(|v| v.to_string()))
    }
}

impl commitments::Host for CallState {
    async fn add(
        &mut self,
        title: String,
        content: String,
        from_agent: String,
        due_at: Option<String>,
    ) -> wasmtime::Result<Result<String, ToolCallError>> {
        const TOOL: &str = "commitments.add";
        if from_agent.is_empty() {
            return Ok(Err(refusal(
                TOOL,
                "invalid_arguments",
                "from_agent is required".into(),
            )));
        }
        if self.agent(&from_agent).is_none() {
            let agents = self.declared_agents();
            return Ok(Err(refusal(
                TOOL,
                "unknown_agent",
                format!("`{from_agent}` is not an agent of this app ({agents})"),
            )));
        }
        if title.trim().is_empty() {
            return Ok(Err(refusal(
                TOOL,
                "invalid_arguments",
                "title must not be empty".into(),
            )));
        }
        if let Some(due) = &due_at
            && due.parse::<jiff::Timestamp>().is_err()
        {
            return Ok(Err(refusal(
                TOOL,
                "invalid_arguments",
                format!(
                    "due_at `{due}` is not an ISO-8601 time with an offset (for example 2026-05-01T09:00:00Z)"
                ),
            )));
        }
        let commitment = Commitment {
            title,
            content,
            from_agent,
            due_at,
        };
        Ok(self.platform.add_commitment(&self.call, commitment).await)
    }
}
