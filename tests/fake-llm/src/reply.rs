//! The replies a script holds.

use std::time::Duration;

use serde_json::Value;

/// One tool call a reply asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call's id (`call_1`), which the tool's result names.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The arguments, a JSON value (OpenAI's wire carries it as a string of JSON).
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `name` with `arguments`, identified by `id`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// `text` in pieces of one word each, every piece but the first starting with its spaces.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for c in text.chars() {
        if c == ' ' && !piece.is_empty() && !piece.ends_with(' ') {
            pieces.push(std::mem::take(&mut piece));
        }
        piece.push(c);
    }
    if !piece.is_empty() || pieces.is_empty() {
        pieces.push(piece);
    }
    pieces
}

/// What a reply answers.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// `"{upstream} says hi"`, streamed as the name and `" says hi"`.
    Greeting,
    /// A text, streamed in these pieces.
    Text(Vec<String>),
    /// The last user message's text.
    Echo,
    /// Tool calls.
    ToolCalls(Vec<ToolCall>),
    /// An error status with a body in the protocol's shape.
    Status { status: u16, message: String },
    /// No answer: the request waits until the client leaves.
    Hang,
    /// Embeddings for every input but the last `missing`.
    EmbeddingsMissing(usize),
}

/// One answer of an upstream's script: what it says ([`Reply::text`], [`Reply::tool_call`],
/// [`Reply::status`], ...) and how it is delivered ([`Reply::after`], [`Reply::stall_after`],
/// [`Reply::cut_after`]).
///
/// A reply answers whatever protocol the request speaks. Chat replies (texts, tool calls) to
/// an embeddings request answer the embeddings; [`Reply::embeddings_missing`] to a chat
/// request answers the greeting.
#[derive(Debug, Clone)]
pub struct Reply {
    pub(crate) kind: Kind,
    pub(crate) delay: Option<Duration>,
    pub(crate) stall: Option<(usize, Duration)>,
    pub(crate) cut_after: Option<usize>,
    pub(crate) usage: Option<(u64, u64)>,
    pub(crate) finish_reason: Option<String>,
}

impl Reply {
    fn of(kind: Kind) -> Reply {
        Reply {
            kind,
            delay: None,
            stall: None,
            cut_after: None,
            usage: None,
            finish_reason: None,
        }
    }

    /// `"{upstream} says hi"`, streamed in two pieces (the upstream's name, then
    /// `" says hi"`): what an upstream answers by default.
    pub fn greeting() -> Reply {
        Reply::of(Kind::Greeting)
    }

    /// A text answer, streamed word by word (each piece but the first starts with its space).
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::of(Kind::Text(words(&text.into())))
    }

    /// A text answer streamed in exactly these pieces.
    pub fn pieces<S: Into<String>>(pieces: impl IntoIterator<Item = S>) -> Reply {
        Reply::of(Kind::Text(pieces.into_iter().map(Into::into).collect()))
    }

    /// The text of the request's last user message, streamed word by word.
    pub fn echo() -> Reply {
        Reply::of(Kind::Echo)
    }

    /// One tool call of `name` with `arguments`, identified as `call_1`; the finish reason is
    /// `tool_calls` (Anthropic's `tool_use`).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Reply {
        Reply::tool_calls([ToolCall::new("call_1", name, arguments)])
    }

    /// Several tool calls in one answer. Streamed, each call comes as its id and name, then
    /// its arguments in two pieces.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Reply {
        Reply::of(Kind::ToolCalls(calls.into_iter().collect()))
    }

    /// An error status with a body in the protocol's shape whose message is
    /// `injected {status}`.
    pub fn status(status: u16) -> Reply {
        Reply::error(status, format!("injected {status}"))
    }

    /// An error status with a body in the protocol's shape carrying `message`.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        Reply::of(Kind::Status {
            status,
            message: message.into(),
        })
    }

    /// No answer at all: the request hangs until the client gives up.
    pub fn hang() -> Reply {
        Reply::of(Kind::Hang)
    }

    /// To an embeddings request, vectors for every input but the last `missing`.
    pub fn embeddings_missing(missing: usize) -> Reply {
        Reply::of(Kind::EmbeddingsMissing(missing))
    }

    /// Waits `by` before answering.
    pub fn after(mut self, by: Duration) -> Reply {
        self.delay = Some(by);
        self
    }

    /// A stream pauses for `pause` after its first `pieces` pieces (SSE events or NDJSON
    /// lines; the first OpenAI event is the role's). A plain answer is sent in two pieces,
    /// the two halves of its JSON.
    pub fn stall_after(mut self, pieces: usize, pause: Duration) -> Reply {
        self.stall = Some((pieces, pause));
        self
    }

    /// The connection drops after the first `pieces` pieces of the answer (as
    /// [`Reply::stall_after`] counts them): the client sees a body cut short.
    pub fn cut_after(mut self, pieces: usize) -> Reply {
        self.cut_after = Some(pieces);
        self
    }

    /// Reports these token counts (see [`crate::Upstream::usage`]).
    pub fn with_usage(mut self, prompt: u64, completion: u64) -> Reply {
        self.usage = Some((prompt, completion));
        self
    }

    /// Finishes with OpenAI's `reason` (`length`, ...) instead of `stop` or `tool_calls`;
    /// Anthropic's and Ollama's wire carry its equivalent.
    pub fn finish_reason(mut self, reason: impl Into<String>) -> Reply {
        self.finish_reason = Some(reason.into());
        self
    }

    /// This reply, pausing after `pieces` unless it already stalls somewhere.
    pub(crate) fn stalling_unless_set(mut self, pieces: usize, pause: Duration) -> Reply {
        if self.stall.is_none() {
            self.stall = Some((pieces, pause));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(reply: &Reply) -> Vec<String> {
        match &reply.kind {
            Kind::Text(pieces) => pieces.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn texts_stream_word_by_word_and_join_back() {
        for text in ["ovh says hi", "one", "", " lead", "two  spaces ", "a b"] {
            let split = pieces(&Reply::text(text));
            assert_eq!(split.concat(), text, "{split:?}");
            assert!(!split.is_empty());
        }
        assert_eq!(pieces(&Reply::text("ovh says hi")), ["ovh", " says", " hi"]);
    }
}
