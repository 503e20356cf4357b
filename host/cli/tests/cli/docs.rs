//! The documents' shell examples, run: every command line of the ```sh blocks of README.md,
//! docs/cli.md, docs/sdk.md and docs/demo.md runs, in order, in one shell, against the host that the README's
//! first block starts, and must succeed. The documents stop drifting: a renamed flag, a command
//! that no longer exists, a path or a response that changed fail here.
//!
//! The shell is a developer's on a fresh machine: a home directory of its own (`cd ~`), no
//! Atrium setting in its environment, no stored login. What the test changes in a line, and
//! why, is the table [`REWRITES`] and the functions below it; nothing else is changed.
//!
//! - "From this directory" (the checkout) is a stand-in directory: `examples/` is the
//!   checkout's, `target/debug` holds the `atrium` that `cargo` built for this run, and
//!   `target/wasm32-wasip2` is where the build scripts compile the examples. The host it
//!   starts keeps its `.atrium` there, not in the checkout.
//! - `cargo run -- ARGS` is `atrium ARGS`, the binary `cargo run` builds (a nested `cargo run`
//!   would build it again); `cargo run -- serve` starts that host, on a free port (every
//!   `http://127.0.0.1:8787` becomes its address), with a fake Ollama as its model provider,
//!   and the next line runs once it says the demo is ready, as a reader waits for its token.
//! - `cargo build` runs in the checkout into the examples' target directory, where the build
//!   scripts already compiled them with the same command.
//! - `curl -s` gets `--fail-with-body`: an HTTP error fails the line.
//! - A placeholder is the value an earlier line printed: `atr_...` the key of `keys create`,
//!   `<developer token>` the token of `developers create`. Optional flags of a synopsis
//!   (`[--out FILE]`) are left out.
//! - `atrium dev`, which serves until Ctrl-C, runs in the background until both its pages
//!   answer, then is stopped.
//! - A block that starts somewhere else than where the one before it left (the Python and
//!   TypeScript examples of docs/sdk.md) gets the setup of [`SETUPS`], printed in the log.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use crate::Serve;
use crate::developer::scaffold_target;

/// The documents, in the order their examples run.
const DOCS: &[&str] = &["README.md", "docs/cli.md", "docs/sdk.md", "docs/demo.md"];

/// One command line of a ```sh block.
#[derive(Debug, Clone)]
struct Example {
    doc: &'static str,
    /// The 1-based line of the document where the command starts.
    line: usize,
    /// Which block of the document (0-based).
    block: usize,
    /// The command, continuation lines joined and its trailing comment dropped.
    text: String,
}

impl std::fmt::Display for Example {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: `{}`", self.doc, self.line, self.text)
    }
}

/// The command lines of `text`'s ```sh blocks.
fn examples(doc: &'static str, text: &str) -> Vec<Example> {
    let mut found = Vec::new();
    let mut block = None::<usize>;
    let mut blocks = 0;
    let mut pending: Option<(usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.starts_with("```") {
            block = if block.is_none() && trimmed == "```sh" {
                blocks += 1;
                Some(blocks - 1)
            } else {
                None
            };
            continue;
        }
        let Some(block) = block else { continue };
        let code = strip_comment(trimmed);
        let code = code.trim();
        if code.is_empty() && pending.is_none() {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((index + 1, String::new()));
        if let Some(head) = code.strip_suffix('\\') {
            joined.push_str(head.trim_end());
            joined.push(' ');
            pending = Some((start, joined));
            continue;
        }
        joined.push_str(code);
        found.push(Example {
            doc,
            line: start,
            block,
            text: joined.trim().to_owned(),
        });
    }
    found
}

/// `line` without a trailing `# comment` (a `#` outside quotes that starts a word).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return &line[..at],
            _ => {}
        }
        previous = c;
    }
    line
}

/// Literal replacements in every line: (what the document says, what runs, why).
const REWRITES: &[(&str, &str, &str)] = &[
    (
        "cargo run -- ",
        "atrium ",
        "the binary `cargo run` builds, which this run built",
    ),
    (
        "curl -s ",
        "curl -sS --fail-with-body ",
        "an HTTP error status fails the line",
    ),
];

/// The setup a block gets before its first line: (document, the block's first command, setup).
const SETUPS: &[(&str, &str, &str)] = &[
    // "Back in the checkout", after the developer loop's `cd ~`.
    (
        "README.md",
        "cargo build -p invoice-desk",
        "cd \"$DOCS_CHECKOUT\"",
    ),
    // The session of docs/cli.md continues the README's: in the project it deployed.
    ("docs/cli.md", "atrium whoami", "cd ~/hello-app"),
    // docs/sdk.md's `atrium call` is the README's, from the checkout.
    ("docs/sdk.md", "atrium call ", "cd \"$DOCS_CHECKOUT\""),
    // The Python environment of a new project, made without `init`'s own install.
    (
        "docs/sdk.md",
        "python3 -m venv ",
        "cd ~ && atrium init hello-py --lang python --no-install && cd hello-py",
    ),
    (
        "docs/sdk.md",
        "python -m atrium_sdk build",
        ". .venv/bin/activate",
    ),
    (
        "docs/sdk.md",
        "node node_modules/@atrium/sdk/",
        "cd ~ && atrium init hello-ts --lang typescript && cd hello-ts",
    ),
    // docs/demo.md's calls run where the README started the host, which keeps its token there.
    (
        "docs/demo.md",
        "TOKEN=$(cat .atrium/demo-token)",
        "cd \"$DOCS_CHECKOUT\"",
    ),
];

/// What a line's output must contain besides its exit 0: (a part of the command, a part of its
/// standard output).
const EXPECTATIONS: &[(&str, &str)] = &[
    ("/api/installs", "invoice-desk"),
    ("tools/list_invoices", "inv-"),
    ("/v1/models", "\"data\""),
    ("/v1/chat/completions", "\"choices\""),
    ("/v1/rag/handbook/query", "reset"),
    ("/api/dev/me", "ada@example.com"),
    ("atrium apps call hello-app greet '{}'", "Hello, world!"),
    ("atrium whoami", "ada"),
    // docs/demo.md's claims.
    (
        "remind me to send the quarterly report",
        "room-bot:concierge",
    ),
    ("grants/ledger/invoice-desk/approve", "\"active\""),
    ("{\"status\": \"new\"}", "\"status\":200"),
    ("\"invoice_id\": \"inv-1002\"", "\"subscribers\":1"),
    ("/api/wires", "entry_booked"),
    ("/run-now", "\"outcome\""),
    ("/api/audit?kind=invoke", "\"invoke\""),
];

/// Whether `text` names `part` whole: not as the start of a longer path or word (the
/// heartbeats' `/api/installs/invoice-desk/heartbeats` does not name `/api/installs`).
fn mentions(text: &str, part: &str) -> bool {
    text.match_indices(part).any(|(at, _)| {
        text[at + part.len()..]
            .chars()
            .next()
            .is_none_or(|next| !(next.is_alphanumeric() || "/-_.".contains(next)))
    })
}

/// The commands of `atrium --help` that no example of these documents needs to run: the
/// host's administration, which docs/api.md and docs/platform.md document beside their
/// endpoints (the README runs `keys create` and `developers create`), and `help`.
const NOT_DEVELOPER_COMMANDS: &[&str] = &["keys", "developers", "tenants", "help"];

/// How one example runs.
enum Step {
    /// A command line for the shell.
    Shell(String),
    /// `atrium serve ARGS`: the host of the following examples.
    Serve(Vec<String>),
    /// A server that runs until stopped: started in the background until it answers.
    Dev(String),
    /// Not run, for the reason given.
    Skip(&'static str),
}

fn step(example: &Example, values: &[(String, String)], base: Option<&str>) -> Step {
    let text = &example.text;
    if text == "cargo test --workspace" {
        return Step::Skip("the test command: this is the run it started");
    }
    if let Some(args) = text.strip_prefix("cargo run -- serve") {
        return Step::Serve(args.split_whitespace().map(str::to_owned).collect());
    }
    let mut line = text.clone();
    for (from, to, _) in REWRITES {
        line = line.replace(from, to);
    }
    if let Some(base) = base {
        line = line.replace("http://127.0.0.1:8787", base);
    }
    for (placeholder, value) in values {
        line = line.replace(placeholder.as_str(), value);
    }
    line = without_optional_flags(&line);
    if line.starts_with("cargo build ") {
        return Step::Shell(format!(
            "(cd \"$DOCS_SOURCE\" && CARGO_TARGET_DIR=\"$DOCS_GUESTS\" {line})"
        ));
    }
    if line == "atrium dev" || line.starts_with("atrium dev ") {
        return Step::Dev(format!("{line} --no-open --bundle-port 0 --parent-port 0"));
    }
    Step::Shell(line)
}

/// `line` without the `[--flag VALUE]` groups of a synopsis.
fn without_optional_flags(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find(" [--") {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        out.push_str(&rest[..open]);
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// One `bash` that runs the examples one by one, keeping its working directory and
/// variables between them. Each command's output goes to files in `logs`.
struct Shell {
    child: Child,
    stdin: ChildStdin,
    done: Receiver<String>,
    logs: PathBuf,
    count: usize,
}

/// What a command did.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Shell {
    fn start(env: &[(String, String)], dir: &Path, logs: &Path) -> Self {
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc"])
            .current_dir(dir)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("bash runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, done) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            done,
            logs: logs.to_owned(),
            count: 0,
        }
    }

    /// Runs `line`, waiting at most `timeout`.
    fn run(&mut self, line: &str, timeout: Duration) -> Ran {
        self.count += 1;
        let n = self.count;
        let out = self.logs.join(format!("{n}.out"));
        let err = self.logs.join(format!("{n}.err"));
        writeln!(
            self.stdin,
            "{{ {line}\n}} >'{}' 2>'{}' </dev/null; echo \"__docs_done {n} $?\"",
            out.display(),
            err.display()
        )
        .unwrap();
        self.stdin.flush().unwrap();
        let deadline = Instant::now() + timeout;
        let code = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                Ok(marker) => {
                    let mut words = marker.split_whitespace();
                    if words.next() == Some("__docs_done")
                        && words.next() == Some(n.to_string().as_str())
                    {
                        break words.next().and_then(|c| c.parse().ok()).unwrap_or(-1);
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "`{line}` did not finish in {timeout:?}; its output so far:\n{}\n{}",
                    read(&out),
                    read(&err)
                ),
                Err(RecvTimeoutError::Disconnected) => panic!("the shell exited running `{line}`"),
            }
        };
        Ran {
            code,
            stdout: read(&out),
            stderr: read(&err),
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The examples' environment: the test's, without anything that would tell `atrium`, Python,
/// npm or cargo about this checkout or the machine's settings; `HOME` a new directory, with
/// the caches of the machine's toolchains kept (they are not settings, and downloading
/// componentize-py again would only cost time).
fn environment(home: &Path, checkout: &Path) -> Vec<(String, String)> {
    let real_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let keep = [
        "PATH",
        "LANG",
        "LC_ALL",
        "TERM",
        "TMPDIR",
        "USER",
        "RUSTUP_TOOLCHAIN",
        "ATRIUM_TEST_DATABASE_URL",
    ];
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| keep.contains(&k.as_str()))
        .collect();
    let or_default = |name: &str, default: String| std::env::var(name).unwrap_or(default);
    env.extend([
        ("HOME".to_owned(), home.display().to_string()),
        (
            "RUSTUP_HOME".to_owned(),
            or_default("RUSTUP_HOME", format!("{real_home}/.rustup")),
        ),
        (
            "CARGO_HOME".to_owned(),
            or_default("CARGO_HOME", format!("{real_home}/.cargo")),
        ),
        (
            "PIP_CACHE_DIR".to_owned(),
            or_default("PIP_CACHE_DIR", format!("{real_home}/.cache/pip")),
        ),
        (
            "npm_config_cache".to_owned(),
            or_default("npm_config_cache", format!("{real_home}/.npm")),
        ),
        // The Rust projects share the scaffold tests' target directory: their dependencies
        // compile once per machine, not once per test.
        (
            "CARGO_TARGET_DIR".to_owned(),
            scaffold_target().display().to_string(),
        ),
        (
            "DOCS_SOURCE".to_owned(),
            source_tree().display().to_string(),
        ),
        (
            "DOCS_GUESTS".to_owned(),
            guests_target().display().to_string(),
        ),
        ("DOCS_CHECKOUT".to_owned(), checkout.display().to_string()),
        ("PIP_DISABLE_PIP_VERSION_CHECK".to_owned(), "1".to_owned()),
        ("npm_config_update_notifier".to_owned(), "false".to_owned()),
        ("npm_config_fund".to_owned(), "false".to_owned()),
        ("npm_config_audit".to_owned(), "false".to_owned()),
    ]);
    env
}

/// This source tree.
fn source_tree() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The target directory the build scripts compile the examples into (atrium-wasm-build).
fn guests_target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| source_tree().join("target"), PathBuf::from)
        .join("wasm-guests")
}

/// The stand-in for "this directory" of the README: see the module's documentation.
fn stand_in(dir: &Path) -> PathBuf {
    let checkout = dir.join("atrium");
    std::fs::create_dir_all(checkout.join("target")).unwrap();
    std::os::unix::fs::symlink(source_tree().join("examples"), checkout.join("examples")).unwrap();
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_atrium"));
    std::os::unix::fs::symlink(binary.parent().unwrap(), checkout.join("target/debug")).unwrap();
    std::os::unix::fs::symlink(
        guests_target().join("wasm32-wasip2"),
        checkout.join("target/wasm32-wasip2"),
    )
    .unwrap();
    // The README's retrieval example uploads a manual.
    std::fs::write(
        checkout.join("manual.pdf"),
        atrium_test_artifacts::pdf::with_pages(&[&[
            "To reset the device, hold the power button for ten seconds.",
            "The light blinks twice when the reset is done.",
        ]]),
    )
    .unwrap();
    checkout
}

/// The developer commands `atrium --help` lists (`apps`, `secrets` and `sdk` with their
/// subcommands), which the examples must run between them.
fn developer_commands(env: &[(String, String)]) -> Vec<String> {
    let help = |args: &[&str]| -> Vec<String> {
        let out = Command::new(env!("CARGO_BIN_EXE_atrium"))
            .args(args)
            .arg("--help")
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // One command a line, two spaces in; its description may continue on lines indented
        // further.
        text.split("Commands:\n")
            .nth(1)
            .unwrap_or("")
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .filter(|c| !NOT_DEVELOPER_COMMANDS.contains(&c.as_str()))
            .collect()
    };
    let mut commands = Vec::new();
    for command in help(&[]) {
        let subcommands = help(&[command.as_str()]);
        if subcommands.is_empty() {
            commands.push(command);
        } else {
            commands.extend(subcommands.into_iter().map(|s| format!("{command} {s}")));
        }
    }
    commands
}

#[test]
fn every_shell_example_of_the_readme_cli_and_sdk_docs_runs() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&logs).unwrap();
    let checkout = stand_in(dir.path());
    let env = environment(&home, &checkout);
    let mut all = Vec::new();
    for doc in DOCS {
        let text = std::fs::read_to_string(source_tree().join(doc)).unwrap();
        all.extend(examples(doc, &text));
    }
    assert!(
        all.iter().any(|e| e.doc == "docs/cli.md") && all.len() >= 30,
        "the documents' examples were not found: {all:#?}"
    );

    let llm = atrium_fake_llm::FakeLlm::start_in_thread();
    let mut shell = Shell::start(&env, &checkout, &logs);
    // `atrium` on the PATH, as the README's `export PATH` puts it there, for the lines that
    // come before it (the administration commands `cargo run --` runs).
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_atrium"));
    shell.run(
        &format!("export PATH=\"{}:$PATH\"", bin.parent().unwrap().display()),
        Duration::from_secs(5),
    );
    let mut host: Option<Serve> = None;
    let mut base: Option<String> = None;
    let mut values: Vec<(String, String)> = Vec::new();
    let mut ran: Vec<String> = Vec::new();
    let mut previous_block = None;
    for example in &all {
        if previous_block != Some((example.doc, example.block)) {
            previous_block = Some((example.doc, example.block));
            if let Some((_, _, setup)) = SETUPS
                .iter()
                .find(|(doc, first, _)| *doc == example.doc && example.text.starts_with(first))
            {
                eprintln!("docs: setup for {example}: {setup}");
                let done = shell.run(setup, Duration::from_secs(600));
                assert_eq!(
                    done.code, 0,
                    "the setup `{setup}` failed:\n{}\n{}",
                    done.stdout, done.stderr
                );
            }
        }
        let started = Instant::now();
        match step(example, &values, base.as_deref()) {
            Step::Skip(why) => eprintln!("docs: {example}: not run, {why}"),
            Step::Serve(args) => {
                let mut command = Command::new(env!("CARGO_BIN_EXE_atrium"));
                command
                    .arg("serve")
                    .args(&args)
                    .args(["--addr", "127.0.0.1:0"])
                    .current_dir(&checkout)
                    .env_clear()
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .env("ATRIUM_OLLAMA_BASE_URL", llm.base_url("ollama"));
                let serve = Serve::spawn(command);
                // The first start prints the demo's token once the examples are installed;
                // the README's next lines read it.
                assert!(
                    serve.wait_for_log("the demo is ready", 1, Duration::from_secs(600)),
                    "{example}: the demo never got ready"
                );
                base = Some(format!("http://{}", serve.addr));
                host = Some(serve);
                ran.push("atrium serve".to_owned());
                eprintln!("docs: {example}: serving on {}", base.as_deref().unwrap());
            }
            Step::Dev(line) => {
                let log = logs.join("dev.log");
                let launched = shell.run(
                    &format!("{line} >'{}' 2>&1 & DOCS_DEV=$!", log.display()),
                    Duration::from_secs(10),
                );
                assert_eq!(launched.code, 0, "{example}: {}", launched.stderr);
                let pages = wait_for_dev(&log, Duration::from_secs(300));
                for url in &pages {
                    let addr = url.trim_start_matches("http://").trim_end_matches('/');
                    let page = crate::serve::http(addr, "GET", "/", None, "");
                    assert!(
                        page.starts_with("HTTP/1.1 200") && page.contains("<html"),
                        "{example}: {url} answered {page}"
                    );
                }
                shell.run(
                    "kill -INT $DOCS_DEV; wait $DOCS_DEV",
                    Duration::from_secs(30),
                );
                ran.push(line);
                eprintln!(
                    "docs: {example}: served {pages:?} ({:?})",
                    started.elapsed()
                );
            }
            Step::Shell(line) => {
                let done = shell.run(&line, Duration::from_secs(900));
                assert_eq!(
                    done.code, 0,
                    "{example} failed (ran `{line}`), exit {}:\n--- stdout\n{}\n--- stderr\n{}",
                    done.code, done.stdout, done.stderr
                );
                for (part, needle) in EXPECTATIONS {
                    if mentions(&example.text, part) || mentions(&line, part) {
                        assert!(
                            done.stdout.contains(needle),
                            "{example}: the output lacks `{needle}`:\n{}",
                            done.stdout
                        );
                    }
                }
                // The values later lines name by a placeholder.
                let last = done.stdout.lines().last().unwrap_or("").trim().to_owned();
                if line.starts_with("atrium keys create") {
                    values.push(("atr_...".to_owned(), last));
                } else if line.starts_with("atrium developers create") {
                    values.push(("<developer token>".to_owned(), last));
                }
                eprintln!("docs: {example}: ok ({:?})", started.elapsed());
                ran.push(line);
            }
        }
    }

    // Every developer command is run by an example.
    let commands = developer_commands(&env);
    assert!(commands.len() > 10, "atrium --help listed {commands:?}");
    let missing: Vec<&String> = commands
        .iter()
        .filter(|command| {
            let prefix = format!("atrium {command}");
            !ran.iter().any(|line| {
                line.split("&&").any(|part| {
                    let part = part.trim();
                    part == prefix || part.starts_with(&format!("{prefix} "))
                })
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "no example of {DOCS:?} runs {missing:?}: add them to docs/cli.md's session"
    );
    if let Some(host) = host {
        let (status, _) = host.stop();
        assert_eq!(status.code(), Some(0));
    }
}

/// The two addresses `atrium dev` prints once both servers listen.
fn wait_for_dev(log: &Path, timeout: Duration) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let text = read(log);
        let bundle = text
            .lines()
            .find_map(|l| l.strip_prefix("Bundle:"))
            .and_then(|r| r.split_whitespace().next());
        let shell = text
            .lines()
            .find_map(|l| l.strip_prefix("Parent shell:"))
            .map(str::trim);
        if let (Some(bundle), Some(shell)) = (bundle, shell) {
            return vec![bundle.to_owned(), shell.to_owned()];
        }
        assert!(
            Instant::now() < deadline,
            "atrium dev printed no addresses in {timeout:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn examples_are_read_as_a_shell_reads_them() {
    let doc = "text\n```sh\n# a comment\nfoo --a 'x # y' \\\n    --b  # why\n\nbar\n```\n```json\n{}\n```\n";
    let found = examples("d", doc);
    let texts: Vec<&str> = found.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts, ["foo --a 'x # y' --b", "bar"]);
    assert_eq!((found[0].line, found[1].line), (4, 7));
    assert_eq!(
        without_optional_flags("tool build [--project DIR] [--out FILE] x"),
        "tool build x"
    );
    assert!(mentions("curl http://h/api/installs", "/api/installs"));
    assert!(mentions(
        "curl -d '{\"status\": \"new\"}' x",
        "{\"status\": \"new\"}"
    ));
    assert!(!mentions(
        "curl http://h/api/installs/invoice-desk/heartbeats",
        "/api/installs"
    ));
}

/// The paths docs/ARCHITECTURE.md names in code spans (`host/store/src/lib.rs`,
/// `runner/team.rs`, `host/server/tests/server/`) and the pages it links to: API routes,
/// patterns (`<capability>`, `NNNN`, `*`) and bare words are not paths.
fn paths_named(map: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for (i, part) in map.split('`').enumerate() {
        if i % 2 == 1 {
            let looks_like_a_path = part.contains('/')
                && !part.starts_with('/')
                && !part.contains(['<', '*', ' ', '{'])
                && !part.contains("NNNN")
                && (part.ends_with('/')
                    || part
                        .rsplit('/')
                        .next()
                        .is_some_and(|name| name.contains('.'))
                    || part.starts_with("host/")
                    || part.starts_with("tests/"));
            if looks_like_a_path {
                paths.push(part.to_string());
            }
        }
    }
    for link in map.split("](").skip(1) {
        let target = link.split(')').next().unwrap_or_default();
        if !target.contains("://") && !target.starts_with('#') {
            paths.push(format!(
                "docs/{}",
                target.split('#').next().unwrap_or_default()
            ));
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

#[test]
fn every_path_the_architecture_map_names_exists() {
    let root = source_tree();
    let map = read(&root.join("docs/ARCHITECTURE.md"));
    let paths = paths_named(&map);
    assert!(
        paths.iter().any(|p| p == "host/store/src/lib.rs")
            && paths.iter().any(|p| p == "runner/team.rs")
            && paths.iter().any(|p| p == "platform/src/refusal.rs")
            && paths.iter().any(|p| p == "docs/runtime.md"),
        "the map's paths were not all found: {paths:?}"
    );
    // A path is from the checkout's root, from `host/` (`store/src/rooms.rs`, as the
    // capability table writes them), or relative to a crate's sources (`runner/team.rs`).
    let mut bases = vec![root.clone(), root.join("host")];
    bases.extend(
        std::fs::read_dir(root.join("host"))
            .unwrap()
            .map(|entry| entry.unwrap().path().join("src")),
    );
    let missing: Vec<&String> = paths
        .iter()
        .filter(|path| !bases.iter().any(|base| base.join(path).exists()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn the_map_test_reads_paths_and_leaves_routes_and_patterns() {
    let named = paths_named(
        "`host/a/src/b.rs` and `serving/` and `/api/mcp` and `host/store/src/<capability>.rs` \
         and `tests/*` and `Serving::call_tool` and `a/b` and [x](runtime.md#y) [z](https://e.org)",
    );
    assert_eq!(
        named,
        ["docs/runtime.md", "host/a/src/b.rs", "serving/"],
        "what the map test takes for a path"
    );
}
