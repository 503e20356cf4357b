//! The `atrium` binary, run as a user would: exit codes and output of each command.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod call;
mod keys;
mod lint;
mod serve;

use std::path::Path;
use std::process::{Command, Output};

pub(crate) fn atrium(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_atrium"))
        .args(args)
        .current_dir(dir)
        // The tests choose their own store.
        .env_remove("ATRIUM_DATABASE_URL")
        .output()
        .expect("run atrium")
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
