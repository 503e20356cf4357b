//! Guest output (stdout, stderr and `logging.log`) into `tracing`, within a per-call budget.
//!
//! Every line becomes one `tracing` event under the target `atrium::app` with the fields
//! `tenant`, `app`, `version`, `call` and `stream`. A call may write at most its log budget;
//! what goes beyond is dropped, counted, and reported once when the call ends. The tail of
//! stderr is kept so that a panic message can be named in the call's error.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::LogLevel;

/// How much of stderr is kept to explain a trap.
const STDERR_TAIL: usize = 4096;

/// Identifies the call in every log record.
#[derive(Debug, Clone)]
pub(crate) struct CallTags {
    pub tenant: String,
    pub app: String,
    pub version: String,
    pub call: String,
}

#[derive(Debug)]
struct SinkState {
    budget: usize,
    used: usize,
    dropped: usize,
    partial: [Vec<u8>; 2],
    stderr_tail: Vec<u8>,
}

/// The shared log destination of one call.
#[derive(Debug, Clone)]
pub(crate) struct LogSink {
    tags: Arc<CallTags>,
    state: Arc<Mutex<SinkState>>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    Stdout = 0,
    Stderr = 1,
}

impl LogSink {
    pub fn new(tags: CallTags, budget: usize) -> Self {
        LogSink {
            tags: Arc::new(tags),
            state: Arc::new(Mutex::new(SinkState {
                budget,
                used: 0,
                dropped: 0,
                partial: [Vec::new(), Vec::new()],
                stderr_tail: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SinkState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A record written through `logging.log`.
    pub fn record(&self, level: LogLevel, message: &str) {
        let mut state = self.lock();
        if !take_budget(&mut state, message.len()) {
            return;
        }
        drop(state);
        self.emit(level, "log", message);
    }

    /// Bytes written to stdout or stderr; complete lines are emitted, a partial line waits.
    pub fn write(&self, stream: Stream, bytes: &[u8]) {
        let mut lines = Vec::new();
        {
            let mut state = self.lock();
            if let Stream::Stderr = stream {
                state.stderr_tail.extend_from_slice(bytes);
                let excess = state.stderr_tail.len().saturating_sub(STDERR_TAIL);
                state.stderr_tail.drain(..excess);
            }
            let mut rest = bytes;
            while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
                let mut line = std::mem::take(&mut state.partial[stream as usize]);
                line.extend_from_slice(&rest[..pos]);
                rest = &rest[pos + 1..];
                if take_budget(&mut state, line.len()) {
                    lines.push(line);
                }
            }
            let partial = &mut state.partial[stream as usize];
            let room = STDERR_TAIL.saturating_sub(partial.len());
            partial.extend_from_slice(&rest[..rest.len().min(room)]);
        }
        for line in lines {
            self.emit_line(stream, &line);
        }
    }

    fn emit_line(&self, stream: Stream, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let (level, name) = match stream {
            Stream::Stdout => (LogLevel::Info, "stdout"),
            Stream::Stderr => (LogLevel::Warn, "stderr"),
        };
        self.emit(level, name, &text);
    }

    fn emit(&self, level: LogLevel, stream: &str, message: &str) {
        let t = &self.tags;
        macro_rules! ev {
            ($lvl:ident) => {
                tracing::$lvl!(target: "atrium::app", tenant = %t.tenant, app = %t.app, version = %t.version, call = %t.call, stream, "{message}")
            };
        }
        match level {
            LogLevel::Trace => ev!(trace),
            LogLevel::Debug => ev!(debug),
            LogLevel::Info => ev!(info),
            LogLevel::Warn => ev!(warn),
            LogLevel::Error => ev!(error),
        }
    }

    /// Emits what is left of partial lines and reports dropped output. Called when the call ends.
    pub fn finish(&self) {
        let (partials, dropped) = {
            let mut state = self.lock();
            let partials = [
                std::mem::take(&mut state.partial[0]),
                std::mem::take(&mut state.partial[1]),
            ];
            (partials, state.dropped)
        };
        for (stream, line) in [Stream::Stdout, Stream::Stderr].into_iter().zip(partials) {
            if !line.is_empty() {
                self.emit_line(stream, &line);
            }
        }
        if dropped > 0 {
            let t = &self.tags;
            tracing::warn!(target: "atrium::app", tenant = %t.tenant, app = %t.app, version = %t.version, call = %t.call,
                dropped_bytes = dropped, "log budget exhausted: {dropped} bytes of app output were dropped");
        }
    }

    /// The panic message found at the end of stderr, if the app panicked (Rust's default panic
    /// hook prints `panicked at <location>:` and the message).
    pub fn panic_message(&self) -> Option<String> {
        let state = self.lock();
        let mut text = String::from_utf8_lossy(&state.stderr_tail).into_owned();
        text.push_str(&String::from_utf8_lossy(&state.partial[1]));
        let start = text.rfind("panicked at ")?;
        let after = &text[start + "panicked at ".len()..];
        let (location, message) = after.split_once(":\n").unwrap_or((after, ""));
        let message = message.lines().next().unwrap_or("").trim();
        Some(format!("{message} (at {})", location.trim()))
    }

    /// The call's tags.
    pub fn tags(&self) -> &CallTags {
        &self.tags
    }

    /// How many bytes of output were dropped for exceeding the budget.
    pub fn dropped(&self) -> usize {
        self.lock().dropped
    }
}

fn take_budget(state: &mut SinkState, len: usize) -> bool {
    if state.used + len > state.budget {
        state.dropped += len;
        false
    } else {
        state.used += len;
        true
    }
}

/// stdout or stderr of one call, writing into its [`LogSink`].
#[derive(Clone)]
pub(crate) struct LogPipe {
    sink: LogSink,
    stream: Stream,
}

impl LogPipe {
    pub fn new(sink: LogSink, stream: Stream) -> Self {
        LogPipe { sink, stream }
    }
}

impl IsTerminal for LogPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl Pollable for LogPipe {
    async fn ready(&mut self) {}
}

#[async_trait::async_trait]
impl OutputStream for LogPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.sink.write(self.stream, &bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for LogPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.sink.write(self.stream, buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(budget: usize) -> LogSink {
        LogSink::new(
            CallTags {
                tenant: "t".into(),
                app: "a".into(),
                version: "1.0.0".into(),
                call: "c".into(),
            },
            budget,
        )
    }

    #[test]
    fn output_beyond_the_budget_is_dropped_and_counted() {
        let s = sink(10);
        s.write(Stream::Stdout, b"12345\n");
        s.write(Stream::Stdout, b"1234567890\n");
        assert_eq!(s.dropped(), 10);
        s.record(LogLevel::Info, "abcd");
        assert_eq!(s.dropped(), 10);
        s.record(LogLevel::Info, "more");
        assert_eq!(s.dropped(), 14);
    }

    #[test]
    fn the_panic_message_is_read_from_stderr() {
        let s = sink(1000);
        s.write(
            Stream::Stderr,
            b"\nthread '<unnamed>' panicked at src/lib.rs:10:5:\nboom at last\nnote: run with",
        );
        assert_eq!(
            s.panic_message().as_deref(),
            Some("boom at last (at src/lib.rs:10:5)")
        );
        assert_eq!(sink(10).panic_message(), None);
    }
}
