//! The chat request of /v1/chat/completions, checked: the OpenAI fields with Atrium's `tier`,
//! `provider`, `model` and `contains_pii`. The HTTP API and the `chat.complete` platform tool
//! of installed apps read the same body.

use serde_json::{Map, Value};

use crate::providers::{ChatRequest, PASSTHROUGH_FIELDS};
use crate::{ProviderId, Selection, Tier};

const ROLES: &[&str] = &["system", "developer", "user", "assistant", "tool"];

/// Checks an OpenAI-style chat body (with Atrium's `tier`, `provider`, `model` and
/// `contains_pii`) and splits it into the routing selection and the provider request.
pub fn parse_chat(body: Value) -> Result<ChatCall, InvalidChat> {
    let Value::Object(mut body) = body else {
        return Err(InvalidChat::body("the body must be a JSON object"));
    };
    let messages = match body.remove("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) => {
            return Err(InvalidChat::field("messages", "messages must not be empty"));
        }
        Some(_) => {
            return Err(InvalidChat::field(
                "messages",
                "messages must be an array of {role, content} objects",
            ));
        }
        None => return Err(InvalidChat::field("messages", "messages is required")),
    };
    for (i, m) in messages.iter().enumerate() {
        let param = format!("messages[{i}]");
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| InvalidChat::field(&param, format!("{param}.role is required")))?;
        if !ROLES.contains(&role) {
            return Err(InvalidChat::field(
                &param,
                format!("{param}.role `{role}` is not one of {}", ROLES.join(", ")),
            ));
        }
        match m.get("content") {
            Some(Value::String(_) | Value::Array(_)) => {}
            Some(Value::Null) | None if role == "assistant" && m.get("tool_calls").is_some() => {}
            _ => {
                return Err(InvalidChat::field(
                    &param,
                    format!("{param}.content must be a string or an array of parts"),
                ));
            }
        }
    }
    let tier = match body.remove("tier") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(Tier::parse(&t).ok_or_else(|| {
            InvalidChat::field(
                "tier",
                format!("tier `{t}` is not one of eu-sovereign, frontier, cheapest"),
            )
        })?),
        Some(_) => return Err(InvalidChat::field("tier", "tier must be a string")),
    };
    let provider = match body.remove("provider") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(ProviderId::parse(&p).ok_or_else(|| {
            InvalidChat::field(
                "provider",
                format!("provider `{p}` is not one of {}", ProviderId::names()),
            )
        })?),
        Some(_) => return Err(InvalidChat::field("provider", "provider must be a string")),
    };
    let model = match body.remove("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if !m.trim().is_empty() => Some(m),
        Some(_) => {
            return Err(InvalidChat::field(
                "model",
                "model must be a non-empty string",
            ));
        }
    };
    // OpenAI clients must send a model: a tier's name in `model` means that tier.
    let (tier, model) = match (tier, model) {
        (None, Some(name)) if Tier::parse(&name).is_some() => (Tier::parse(&name), None),
        other => other,
    };
    let contains_pii = match body.remove("contains_pii") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => {
            return Err(InvalidChat::field(
                "contains_pii",
                "contains_pii must be true or false",
            ));
        }
    };
    let stream = match body.remove("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(InvalidChat::field("stream", "stream must be true or false")),
    };
    let include_usage = match body.remove("stream_options") {
        None | Some(Value::Null) => false,
        Some(options) => match options.get("include_usage") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(InvalidChat::field(
                    "stream_options",
                    "stream_options.include_usage must be true or false",
                ));
            }
        },
    };
    let mut params = Map::new();
    for field in PASSTHROUGH_FIELDS {
        if let Some(v) = body.remove(*field)
            && !v.is_null()
        {
            params.insert((*field).to_owned(), v);
        }
    }
    Ok(ChatCall {
        selection: Selection {
            tier,
            provider,
            model,
            contains_pii,
        },
        request: ChatRequest { messages, params },
        stream,
        include_usage,
    })
}

/// A checked chat request.
#[derive(Debug, Clone)]
pub struct ChatCall {
    /// How to route it.
    pub selection: Selection,
    /// What the provider is sent.
    pub request: ChatRequest,
    /// Whether the answer is streamed.
    pub stream: bool,
    /// Whether a streamed answer ends with a usage chunk.
    pub include_usage: bool,
}

/// Why a chat body was refused: the field (none for the body as a whole) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidChat {
    /// The field, e.g. `messages[2]` or `tier`.
    pub param: Option<String>,
    /// What is wrong with it.
    pub message: String,
}

impl InvalidChat {
    fn body(message: &str) -> Self {
        InvalidChat {
            param: None,
            message: message.to_owned(),
        }
    }

    fn field(param: &str, message: impl Into<String>) -> Self {
        InvalidChat {
            param: Some(param.to_owned()),
            message: message.into(),
        }
    }
}
