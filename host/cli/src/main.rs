//! `atrium`: the Atrium host and developer tool.
//!
//! Exit codes follow the platform's CLI contract: 0 success, 1 bad input, 2 platform error
//! (or, for `lint`, a check that could not run), 3 authentication error.

mod account;
mod apps;
mod build;
mod call;
mod client;
mod demo;
mod deploy;
mod dev;
mod developers;
mod doctor;
mod hoststore;
mod init;
mod inputs;
mod keys;
mod lang;
mod lint;
mod oauth;
mod platform;
mod sdk;
mod secrets;
mod serve;
mod tenants;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

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
    /// Run one call into an app component locally: a tool, an event, a route, a lifecycle
    /// hook, a schedule, a room message or the health check, against an in-memory platform.
    ///
    /// Exit codes: 0 the call succeeded, 1 bad input, 2 the component did not load or the
    /// call failed.
    Call(Box<call::Args>),
    /// Manage the organization API keys of the /v1 API (create, list, revoke).
    ///
    /// Exit codes: 0 success, 1 bad input (an invalid name, an unknown key id), 2 the store
    /// could not be opened or written.
    Keys(keys::Args),
    /// Manage developer accounts of the app registry and issue their tokens.
    ///
    /// Exit codes: 0 success, 1 bad input (an invalid or taken email or login, an unknown
    /// developer or organization), 2 the store or the signing key could not be opened.
    Developers(developers::Args),
    /// Issue, list and revoke the tokens of a tenant's admins and users (the tenant principals
    /// of /api).
    ///
    /// Exit codes: 0 success, 1 bad input (an unknown organization, tenant or token, an
    /// invalid user id or display name), 2 the store could not be opened or written.
    Tenants(tenants::Args),
    /// Create a new app project: manifest, handler with a tool and its unit tests, docs, a
    /// template, a CI workflow, a web/ bundle wired to the postMessage bridge.
    ///
    /// Exit codes: 0 created, 1 bad input (an invalid slug, a directory that is not empty, a
    /// language without an SDK).
    Init(init::Args),
    /// Sign in with a browser (the platform's OpenID Connect provider), or store a developer
    /// token given with --token; either way the platform checks it first.
    ///
    /// Exit codes: 0 logged in, 1 bad input (no platform address, an empty token), 2 the
    /// platform or the provider could not be reached, 3 the sign-in or the token was refused
    /// (nothing stored).
    Login(account::LoginArgs),
    /// Show the developer account of the stored token (or SERVICE_TOKEN): email, login,
    /// publish_allowed and the dev tenant.
    ///
    /// Exit codes: 0 authenticated, 1 not authenticated (no token, or one the platform
    /// refuses), 2 the platform could not be reached.
    Whoami(account::WhoamiArgs),
    /// Remove the stored developer token (it stays valid on the platform until it expires).
    ///
    /// Exit codes: 0, or 1 when the config file cannot be read, 2 when it cannot be written.
    Logout(account::LogoutArgs),
    /// Your apps on the platform (list, show, promote, rollback, archive, call, and the
    /// settings of their installs in your dev tenant).
    ///
    /// Exit codes: 0 success, 1 bad input, 2 a platform error (including an unknown app), 3 no
    /// token or a refused one.
    Apps(apps::Args),
    /// Deploy the app of this directory: preflight, build, registration with its docs and
    /// templates, the frontend bundle, promotion.
    ///
    /// Exit codes: 0 deployed, 1 bad input (a manifest or preflight error, a failed build), 2
    /// a platform error, 3 no token or a refused one.
    Deploy(deploy::Args),
    /// Build the component of an app project (Rust, Python or TypeScript) and print its path.
    ///
    /// Exit codes: 0 built, 1 the build failed or the project has no component to build.
    Build(build::Args),
    /// Run the app locally: its web bundle with live reload in a parent shell that speaks the
    /// postMessage bridge, its tools answered by the component against the mock file, a
    /// rebuild when the source changes.
    ///
    /// Exit codes: 0 after Ctrl-C, 1 bad input (no manifest, no bundle, a port in use), 2 the
    /// runtime could not start.
    Dev(dev::Args),
    /// Check what deploying needs: login, the build toolchain, the registry credential, the
    /// SDK, the manifest.
    ///
    /// Exit codes: 0 every check passed (warnings allowed), 1 a check failed.
    Doctor(doctor::Args),
    /// Move installs of your app to a version, bypassing their upgrade policy.
    ///
    /// Exit codes: 0 success, 1 bad input, 2 a platform error, 3 no token or a refused one.
    Upgrade(apps::UpgradeArgs),
    /// Manage your app's dev-default secrets (set, list, get, delete); values are never shown.
    ///
    /// Exit codes: 0 success, 1 bad input (a bad key, no app), 2 a platform error, 3 no token
    /// or a refused one.
    Secrets(secrets::Args),
    /// Put this atrium's Python or TypeScript SDK package into a project's vendor/.
    ///
    /// Exit codes: 0 done, 1 bad input (not a Python or TypeScript project).
    Sdk(sdk::Args),
    /// Print the shell completion script of `atrium` for a shell, e.g. `atrium completions
    /// bash > ~/.local/share/bash-completion/completions/atrium`.
    ///
    /// Exit codes: 0 printed, 1 an unknown shell.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Run the host: the /v1 API on --addr, data under --data-dir (or ATRIUM_DATABASE_URL).
    ///
    /// Exit codes: 0 after a clean shutdown (SIGINT or SIGTERM), 1 bad input, 2 the host could
    /// not start.
    Serve(serve::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    match cli.command {
        Command::Lint(args) => lint::run(&args),
        Command::Call(args) => call::run(&args),
        Command::Keys(args) => keys::run(&args),
        Command::Developers(args) => developers::run(&args),
        Command::Tenants(args) => tenants::run(&args),
        Command::Init(args) => init::run(&args),
        Command::Login(args) => account::login(&args),
        Command::Whoami(args) => account::whoami(&args),
        Command::Logout(args) => account::logout(&args),
        Command::Apps(args) => apps::run(&args),
        Command::Deploy(args) => deploy::run(&args),
        Command::Build(args) => build::run(&args),
        Command::Dev(args) => dev::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Upgrade(args) => apps::upgrade(&args),
        Command::Secrets(args) => secrets::run(&args),
        Command::Sdk(args) => sdk::run(&args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "atrium", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::Serve(args) => serve::run(&args),
    }
}

/// Prints clap's message; help and version exit 0, every usage mistake exits 1 (the CLI's
/// code for bad input) and names the usage of the command that was meant.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let _ = err.print();
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        return ExitCode::SUCCESS;
    }
    let rendered = err.render().to_string();
    if !rendered.contains("Usage:") {
        let mut command = Cli::command();
        command.build();
        let sub = std::env::args()
            .nth(1)
            .and_then(|name| command.find_subcommand_mut(&name).map(|c| c.render_usage()));
        let usage = sub.unwrap_or_else(|| command.render_usage());
        eprintln!("\n{usage}");
    }
    ExitCode::from(1)
}

/// A Tokio runtime for one command: multi-threaded for the host, current-thread otherwise.
pub(crate) fn async_runtime(multi_thread: bool) -> Result<tokio::runtime::Runtime, String> {
    let mut builder = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Runs a command's future to completion; a runtime that cannot start is exit code 2.
pub(crate) fn block_on(
    multi_thread: bool,
    command: impl std::future::Future<Output = ExitCode>,
) -> ExitCode {
    match async_runtime(multi_thread) {
        Ok(runtime) => runtime.block_on(command),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// Logs to stderr (colored on a terminal), filtered by `ATRIUM_LOG` or `default_filter`.
fn init_logging(default_filter: &str) {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ATRIUM_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .try_init();
}

#[cfg(test)]
mod tests {
    /// Every command's arguments are consistent (clap's own checks: unique names, valid
    /// defaults, no flag shadowing another).
    #[test]
    fn the_command_line_is_consistent() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }

    /// The documents whose shell examples name `atrium` commands.
    const DOCS: &[(&str, &str)] = &[
        ("README.md", include_str!("../../../README.md")),
        ("docs/cli.md", include_str!("../../../docs/cli.md")),
        ("docs/sdk.md", include_str!("../../../docs/sdk.md")),
        (
            "docs/platform.md",
            include_str!("../../../docs/platform.md"),
        ),
        ("docs/api.md", include_str!("../../../docs/api.md")),
    ];

    /// The command lines of a document's ```sh blocks: continuation lines joined, comments
    /// dropped, split at `&&`, `;` and `|`.
    fn shell_commands(doc: &str) -> Vec<String> {
        let mut commands = Vec::new();
        let mut inside = false;
        let mut pending = String::new();
        for line in doc.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with("```") {
                inside = trimmed == "```sh" && !inside;
                continue;
            }
            if !inside {
                continue;
            }
            let code = trimmed
                .split(" #")
                .next()
                .unwrap_or("")
                .trim_start_matches("$ ");
            if let Some(head) = code.strip_suffix('\\') {
                pending.push_str(head);
                pending.push(' ');
                continue;
            }
            pending.push_str(code);
            for part in pending
                .split("&&")
                .flat_map(|p| p.split(';'))
                .flat_map(|p| p.split('|'))
            {
                let part = part.trim();
                if !part.is_empty() && !part.starts_with('#') {
                    commands.push(part.to_owned());
                }
            }
            pending.clear();
        }
        commands
    }

    /// The inline code spans of a document that are `atrium` command lines (`atrium init
    /// <slug>`), with the usage notation undone: `[--flag V]` is the flag given, `a|b` is `a`.
    fn inline_commands(doc: &str) -> Vec<String> {
        doc.split('`')
            .skip(1)
            .step_by(2)
            // A span with an escape is a string (`atrium public route\0`), not a command.
            .filter(|span| span.starts_with("atrium ") && !span.contains(['\n', '\\']))
            // `atrium <command>: ...` is the shape of a message, not a command.
            .filter(|span| !span["atrium ".len()..].starts_with('<'))
            .map(|span| {
                span.replace(['[', ']'], "")
                    .split_whitespace()
                    .map(|w| w.split('|').next().unwrap_or(w))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    /// A command line's words, with single and double quotes (no other shell syntax).
    fn words(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut quote = None;
        let mut started = false;
        for c in line.chars() {
            match (quote, c) {
                (None, '\'' | '"') => {
                    quote = Some(c);
                    started = true;
                }
                (Some(q), c) if c == q => quote = None,
                (None, c) if c.is_whitespace() => {
                    if started {
                        words.push(std::mem::take(&mut word));
                        started = false;
                    }
                }
                (_, c) => {
                    word.push(c);
                    started = true;
                }
            }
        }
        if started {
            words.push(word);
        }
        words
    }

    /// Every `atrium ...` (and `cargo run -- ...`) in the documents' shell examples is a
    /// command line this `atrium` takes: the documents cannot name a command or flag that does
    /// not exist (placeholders like `<slug>` stand for any value).
    #[test]
    fn every_documented_command_line_parses() {
        use clap::Parser as _;
        let mut checked = 0;
        for (name, doc) in DOCS {
            let examples = shell_commands(doc).into_iter().map(|l| (l, true));
            for (line, complete) in
                examples.chain(inline_commands(doc).into_iter().map(|l| (l, false)))
            {
                // Placeholders (`<developer token>`) stand for one value; redirections go.
                let placeholders = line.contains('<') || line.contains("...");
                let mut line = line;
                while let Some(open) = line.find('<') {
                    let Some(close) = line[open..].find('>') else {
                        break;
                    };
                    line.replace_range(open..open + close + 1, "x");
                }
                let command = line.split(" > ").next().unwrap_or("").to_owned();
                let words = words(&command);
                let args: Vec<String> = match words.first().map(String::as_str) {
                    Some("atrium") => words[1..].to_vec(),
                    Some("cargo") if words.get(1).map(String::as_str) == Some("run") => {
                        match words.iter().position(|w| w == "--") {
                            Some(at) => words[at + 1..].to_vec(),
                            None => continue,
                        }
                    }
                    _ => continue,
                };
                let args: Vec<String> = args
                    .into_iter()
                    .map(|w| if w.contains("...") { "x".to_owned() } else { w })
                    .collect();
                if let Err(e) =
                    super::Cli::try_parse_from(std::iter::once("atrium".to_owned()).chain(args))
                {
                    use clap::error::ErrorKind as K;
                    // A placeholder is any value: one the parser checks may not be `x`.
                    let placeholder_value =
                        placeholders && matches!(e.kind(), K::InvalidValue | K::ValueValidation);
                    // Prose names a command with only the flag it is about.
                    let fragment = !complete
                        && matches!(
                            e.kind(),
                            K::MissingRequiredArgument
                                | K::DisplayHelpOnMissingArgumentOrSubcommand
                        );
                    assert!(
                        placeholder_value
                            || fragment
                            || matches!(e.kind(), K::DisplayHelp | K::DisplayVersion),
                        "{name}: `{line}` is not a command line of atrium: {e}"
                    );
                }
                checked += 1;
            }
        }
        assert!(
            checked >= 20,
            "only {checked} documented command lines were found"
        );
    }
}
