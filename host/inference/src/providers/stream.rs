//! Streaming: the events a provider's stream is turned into, and the line framing of the two
//! stream formats providers use (server-sent events and newline-delimited JSON).

use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::UpstreamError;

/// One event of a streamed completion, in OpenAI's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of the assistant message: OpenAI's `delta` object (`role`, `content`,
    /// `tool_calls`).
    Delta(Value),
    /// Why the message ended.
    Finish(String),
    /// Token counts as the provider reported them (they may come in parts; later values win).
    Usage {
        /// Input tokens, when reported.
        prompt_tokens: Option<u64>,
        /// Output tokens, when reported.
        completion_tokens: Option<u64>,
    },
}

/// A stream of events.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, UpstreamError>> + Send>>;

/// Splits a byte stream into frames: SSE `data:` payloads (separated by blank lines), or, with
/// `ndjson`, one JSON document per line.
pub(crate) fn frames(
    body: impl Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
    ndjson: bool,
) -> Pin<Box<dyn Stream<Item = Result<String, UpstreamError>> + Send>> {
    let state = (
        Box::pin(body),
        Vec::<u8>::new(),
        std::collections::VecDeque::<String>::new(),
        false,
    );
    Box::pin(futures::stream::unfold(
        state,
        move |(mut body, mut buffer, mut ready, mut done)| async move {
            loop {
                if let Some(frame) = ready.pop_front() {
                    return Some((Ok(frame), (body, buffer, ready, done)));
                }
                if done {
                    return None;
                }
                match body.next().await {
                    Some(Ok(chunk)) => {
                        buffer.extend_from_slice(&chunk);
                        split(&mut buffer, &mut ready, ndjson, false);
                    }
                    Some(Err(e)) => {
                        done = true;
                        return Some((
                            Err(UpstreamError::Connect(format!("the stream broke: {e}"))),
                            (body, buffer, ready, done),
                        ));
                    }
                    None => {
                        done = true;
                        split(&mut buffer, &mut ready, ndjson, true);
                    }
                }
            }
        },
    ))
}

fn split(
    buffer: &mut Vec<u8>,
    ready: &mut std::collections::VecDeque<String>,
    ndjson: bool,
    end: bool,
) {
    let mut push = |line: &[u8]| {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches('\r');
        if ndjson {
            if !line.trim().is_empty() {
                ready.push_back(line.to_owned());
            }
        } else if let Some(data) = line.strip_prefix("data:") {
            ready.push_back(data.trim_start().to_owned());
        }
    };
    while let Some(newline) = buffer.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = buffer.drain(..=newline).collect();
        push(&line[..newline]);
    }
    if end && !buffer.is_empty() {
        let line = std::mem::take(buffer);
        push(&line);
    }
}

/// Turns frames into events with `parse`, which may give several events per frame and ends
/// the stream by returning `None` (for example on `[DONE]`).
pub(crate) fn events(
    frames: Pin<Box<dyn Stream<Item = Result<String, UpstreamError>> + Send>>,
    parse: impl Fn(&str) -> Option<Result<Vec<StreamEvent>, UpstreamError>> + Send + 'static,
) -> EventStream {
    Box::pin(
        frames
            .map(move |frame| match frame {
                Ok(frame) => parse(&frame),
                Err(e) => Some(Err(e)),
            })
            .take_while(|parsed| futures::future::ready(parsed.is_some()))
            .flat_map(|parsed| match parsed {
                Some(Ok(events)) => {
                    futures::stream::iter(events.into_iter().map(Ok).collect::<Vec<_>>())
                }
                Some(Err(e)) => futures::stream::iter(vec![Err(e)]),
                None => futures::stream::iter(Vec::new()),
            }),
    )
}

/// Sends a streaming request: an error status is read whole and reported like any other.
pub(crate) async fn open(
    request: reqwest::RequestBuilder,
    timeout: std::time::Duration,
) -> Result<reqwest::Response, UpstreamError> {
    // The timeout covers the wait for the response head; a stream may then run longer.
    let response = tokio::time::timeout(timeout, request.send())
        .await
        .map_err(|_| UpstreamError::Timeout(timeout))?
        .map_err(|e| super::transport_error(&e, timeout))?;
    if !response.status().is_success() {
        let status = response.status().as_u16();
        let body: String = response
            .text()
            .await
            .unwrap_or_default()
            .chars()
            .take(500)
            .collect();
        return Err(UpstreamError::Status { status, body });
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn collect(chunks: Vec<&'static str>, ndjson: bool) -> Vec<String> {
        let body = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, reqwest::Error>(Bytes::from(c))),
        );
        frames(body, ndjson)
            .map(|f| f.unwrap_or_default())
            .collect()
            .await
    }

    #[tokio::test]
    async fn sse_frames_survive_any_chunking() {
        let frames = collect(
            vec![
                "event: x\nda",
                "ta: {\"a\":1}\n\ndata: {\"b\"",
                ":2}\r\n\r\n: keepalive\n\ndata: [DONE]\n\n",
            ],
            false,
        )
        .await;
        assert_eq!(frames, ["{\"a\":1}", "{\"b\":2}", "[DONE]"]);
    }

    #[tokio::test]
    async fn ndjson_lines_including_a_last_one_without_newline() {
        let frames = collect(vec!["{\"a\":1}\n{\"b\"", ":2}\n\n{\"c\":3}"], true).await;
        assert_eq!(frames, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
    }
}
