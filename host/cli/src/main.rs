//! `atrium`: the Atrium host and developer tool.
//!
//! Exit codes follow the platform's CLI contract: 0 success, 1 bad input, 2 platform error
//! (or, for `lint`, a check that could not run), 3 authentication error.

mod lint;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Atrium: a WebAssembly host for apps.
#[derive(Debug, Parser)]
#[command(name = "atrium", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate an app manifest (and the template defaults and docs beside it) locally.
    ///
    /// Exit codes: 0 pass (warnings allowed), 1 an error-severity problem, 2 the check could
    /// not run (file missing or unreadable).
    Lint(lint::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            use clap::error::ErrorKind;
            let code = match err.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        1
                    } else {
                        0
                    }
                }
                // Bad command-line input is exit code 1, as for every other bad input.
                _ => 1,
            };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Lint(args) => lint::run(&args),
    }
}
