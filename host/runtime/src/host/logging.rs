//! `logging`: structured log records, into tracing with the call's tags, under the call's log
//! budget.

use crate::LogLevel;
use crate::bindings::atrium::app::logging;
use crate::logs::LogSink;

/// The `logging` capability's view of a call.
pub(crate) struct Logging<'a> {
    pub log: &'a LogSink,
}

super::capability!(crate::bindings::atrium::app::logging, Logging);

impl logging::Host for Logging<'_> {
    async fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        self.log.record(level, &message);
        Ok(())
    }
}
