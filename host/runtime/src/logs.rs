//! Guest output (stdout, stderr and `logging.log`) into `tracing`, within a per-call budget.
//!
//! Every line becomes one `tracing` event under the target `atrium::app` with the fields
//! `tenant`, `app`, `version`, `call` and `stream`. A call may write at most its log budget,
//! and every record costs at least [`MIN_RECORD_COST`] bytes of it, so a flood of empty lines
//! or empty records is bounded like a flood of text. The first record that does not fit
//! exhausts the budget: it and everything after it is dropped and counted, and one warning (the
//! truncation marker) reports the count when the call ends. A line longer than
//! [`MAX_LINE_BYTES`] is cut into records of that size. The tail of stderr is kept so that a
//! panic message can be named in the call's error.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::LogLevel;

/// How much of stderr is kept to explain a trap.
const STDERR_TAIL: usize = 4096;

/// The least one record costs against the budget, however short it is: what a record's tags,
/// level and timestamp cost the log pipeline. With the default 64 KiB budget a call writes at
/// most 512 records.
pub const MIN_RECORD_COST: usize = 128;

/// The longest line kept as one record; a longer line (or output with no newline at all) is
/// cut into records of this size.
pub const MAX_LINE_BYTES: usize = 4096;

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
    /// Set by the first record that did not fit: from then on everything is dropped.
    exhausted: bool,
    dropped_bytes: usize,
    dropped_records: usize,
    partial: [Vec<u8>; 2],
    stderr_tail: Vec<u8>,
}

impl SinkState {
    /// Charges one record of `len` bytes; false when it is dropped.
    fn take(&mut self, len: usize) -> bool {
        let cost = len.max(MIN_RECORD_COST);
        if !self.exhausted && self.used + cost <= self.budget {
            self.used += cost;
            return true;
        }
        self.exhausted = true;
        self.dropped_bytes += len;
        self.dropped_records += 1;
        false
    }
}

/// What was dropped for exceeding the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Dropped {
    pub records: usize,
    pub bytes: usize,
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
                exhausted: false,
                dropped_bytes: 0,
                dropped_records: 0,
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
        if self.lock().take(message.len()) {
            self.emit(level, "log", message);
        }
    }

    /// Bytes written to stdout or stderr; complete lines are emitted, a partial line waits
    /// (up to [`MAX_LINE_BYTES`]).
    pub fn write(&self, stream: Stream, bytes: &[u8]) {
        let mut lines = Vec::new();
        {
            let mut state = self.lock();
            if let Stream::Stderr = stream {
                state.stderr_tail.extend_from_slice(bytes);
                let excess = state.stderr_tail.len().saturating_sub(STDERR_TAIL);
                state.stderr_tail.drain(..excess);
            }
            let s = stream as usize;
            let mut rest = bytes;
            while !rest.is_empty() {
                let newline = rest.iter().position(|b| *b == b'\n');
                let room = MAX_LINE_BYTES - state.partial[s].len();
                let (take, complete) = match newline {
                    Some(pos) if pos <= room => (pos, true),
                    _ if rest.len() >= room => (room, true),
                    _ => (rest.len(), false),
                };
                let (head, tail) = rest.split_at(take);
                rest = tail;
                if newline == Some(take) {
                    rest = &rest[1..];
                }
                if state.exhausted {
                    // Past the budget nothing is buffered: only counted.
                    let pending = std::mem::take(&mut state.partial[s]).len();
                    if complete {
                        state.take(pending + head.len());
                    } else {
                        state.dropped_bytes += head.len();
                    }
                    continue;
                }
                state.partial[s].extend_from_slice(head);
                if complete {
                    let line = std::mem::take(&mut state.partial[s]);
                    if state.take(line.len()) {
                        lines.push(line);
                    }
                }
            }
        }
        for line in lines {
            self.emit_line(stream, &line);
        }
    }

    fn emit_line(&self, stream: Stream, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        // A blank line says nothing (Rust's panic report writes one around its message): it
        // would be an empty record beside the real one.
        if text.trim().is_empty() {
            return;
        }
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

    /// Emits what is left of partial lines (within the budget) and, when output was dropped,
    /// the one truncation marker. Called when the call ends.
    pub fn finish(&self) {
        let (lines, dropped, budget) = {
            let mut state = self.lock();
            let mut lines = Vec::new();
            for stream in [Stream::Stdout, Stream::Stderr] {
                let line = std::mem::take(&mut state.partial[stream as usize]);
                if !line.is_empty() && state.take(line.len()) {
                    lines.push((stream, line));
                }
            }
            let dropped = Dropped {
                records: state.dropped_records,
                bytes: state.dropped_bytes,
            };
            (lines, dropped, state.budget)
        };
        for (stream, line) in lines {
            self.emit_line(stream, &line);
        }
        if dropped != Dropped::default() {
            let t = &self.tags;
            tracing::warn!(target: "atrium::app", tenant = %t.tenant, app = %t.app, version = %t.version, call = %t.call,
                dropped_records = dropped.records, dropped_bytes = dropped.bytes,
                "log budget exhausted: {} records ({} bytes) of app output were dropped; a call may write {budget} bytes, every record counting at least {MIN_RECORD_COST}",
                dropped.records, dropped.bytes);
        }
    }

    /// The panic message found at the end of stderr, if the app panicked (Rust's default panic
    /// hook prints `panicked at <location>:` and the message).
    pub fn panic_message(&self) -> Option<String> {
        let state = self.lock();
        // The tail holds every byte written to stderr, the pending partial line included.
        let text = String::from_utf8_lossy(&state.stderr_tail);
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

    /// What was dropped for exceeding the budget.
    pub fn dropped(&self) -> Dropped {
        let state = self.lock();
        Dropped {
            records: state.dropped_records,
            bytes: state.dropped_bytes,
        }
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

    fn dropped(records: usize, bytes: usize) -> Dropped {
        Dropped { records, bytes }
    }

    #[test]
    fn every_record_costs_at_least_the_minimum_and_the_first_drop_ends_the_output() {
        let s = sink(3 * MIN_RECORD_COST);
        s.write(Stream::Stdout, b"12345\n");
        s.record(LogLevel::Info, "");
        s.write(Stream::Stderr, b"\n");
        assert_eq!(s.dropped(), Dropped::default());
        // The budget is spent by three short records; the fourth is dropped, and so is
        // everything after it, even what would fit by bytes alone.
        s.record(LogLevel::Info, "abcd");
        assert_eq!(s.dropped(), dropped(1, 4));
        s.write(Stream::Stdout, b"x\ny\n");
        s.record(LogLevel::Info, "");
        assert_eq!(s.dropped(), dropped(4, 6));
    }

    #[test]
    fn a_flood_of_empty_lines_is_bounded_by_records() {
        let s = sink(64 * 1024);
        s.write(Stream::Stdout, &vec![b'\n'; 128 * 1024]);
        let kept = 64 * 1024 / MIN_RECORD_COST;
        assert_eq!(s.dropped(), dropped(128 * 1024 - kept, 0));
        for _ in 0..1000 {
            s.record(LogLevel::Info, "");
        }
        assert_eq!(s.dropped().records, 128 * 1024 - kept + 1000);
    }

    #[test]
    fn a_long_line_is_cut_into_records_and_a_partial_line_is_charged_at_the_end() {
        let s = sink(2 * MAX_LINE_BYTES + MIN_RECORD_COST);
        // 2.5 lines' worth without a newline: two full records now, the rest waits.
        s.write(Stream::Stdout, &vec![b'a'; MAX_LINE_BYTES * 5 / 2]);
        assert_eq!(s.dropped(), Dropped::default());
        assert_eq!(s.lock().partial[0].len(), MAX_LINE_BYTES / 2);
        // At the end the waiting half line is a record of its own, past the budget.
        s.finish();
        assert_eq!(s.dropped(), dropped(1, MAX_LINE_BYTES / 2));
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
