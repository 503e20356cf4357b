//! `atrium init <slug>`: a new app project that builds, passes its own tests and deploys as
//! it is.
//!
//! A Rust project (the default `--lang`): the manifest with one tool and one setting, the
//! handler, native unit tests with the SDK's `TestClient`, `app_docs/user.md`, a template
//! default, the mock file of `atrium dev`, a CI workflow (lint, test, deploy with
//! `SERVICE_TOKEN`) and a `web/` bundle wired to the postMessage bridge of `atrium dev`'s
//! parent shell. The project depends on the Rust SDK by path: `--sdk DIR`, else
//! `ATRIUM_SDK_PATH`, else the `guest-sdk` of the source tree this `atrium` was built from.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::client::Failure;

/// `atrium init` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The app's slug (its app_id): 3 to 64 lowercase letters, digits and hyphens, starting
    /// with a letter.
    slug: String,
    /// The language of the handler.
    #[arg(long, value_enum, default_value = "rust")]
    lang: Lang,
    /// The app's display name (default: derived from the slug, `invoice-desk` → `Invoice
    /// Desk`).
    #[arg(long)]
    name: Option<String>,
    /// What the app does, one line.
    #[arg(long, default_value = "")]
    description: String,
    /// The owner in the manifest's `runtime.image` label (`ghcr.io/<owner>/<slug>`).
    #[arg(long, default_value = "your-org")]
    github_owner: String,
    /// Where to create the project (default: ./<slug>); it must not exist or be empty.
    #[arg(long)]
    directory: Option<PathBuf>,
    /// The Rust SDK's directory (default: ATRIUM_SDK_PATH, else the guest-sdk of the source
    /// tree this atrium was built from).
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Lang {
    /// Rust, compiled to a WebAssembly component.
    Rust,
    /// Python (needs the Python guest SDK).
    Python,
    /// TypeScript (needs the TypeScript guest SDK).
    Typescript,
}

pub fn run(args: &Args) -> ExitCode {
    match init(args) {
        Ok(dir) => {
            println!("Created {} in {}", args.slug, dir.display());
            println!();
            println!("Next:");
            println!("  cd {}", dir.display());
            println!("  cargo test                   # the handler's unit tests, natively");
            println!("  atrium lint                  # the manifest, templates and docs");
            println!("  atrium dev                   # the web/ bundle in a local parent shell");
            println!("  atrium login --platform URL --token TOKEN");
            println!("  atrium deploy                # build, register, upload, promote");
            ExitCode::SUCCESS
        }
        Err(failure) => failure.report("init"),
    }
}

/// A slug as a display name: `invoice-desk` → `Invoice Desk`.
fn display_name(slug: &str) -> String {
    slug.split('-')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_uppercase().collect::<String>() + chars.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The Rust SDK's directory.
fn sdk_dir(flag: Option<&Path>) -> Result<PathBuf, Failure> {
    let chosen = flag
        .map(Path::to_path_buf)
        .or_else(|| {
            std::env::var_os("ATRIUM_SDK_PATH")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../guest-sdk")));
    let dir = std::fs::canonicalize(&chosen).map_err(|_| {
        Failure::BadInput(format!(
            "the Rust SDK is not at {}: pass --sdk DIR (the guest-sdk directory of an Atrium source tree) or set ATRIUM_SDK_PATH",
            chosen.display()
        ))
    })?;
    if !dir.join("Cargo.toml").is_file() {
        return Err(Failure::BadInput(format!(
            "{} has no Cargo.toml: pass --sdk DIR naming the guest-sdk directory",
            dir.display()
        )));
    }
    Ok(dir)
}

/// A YAML double-quoted string.
fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

fn init(args: &Args) -> Result<PathBuf, Failure> {
    let slug = &args.slug;
    crate::apps::check_slug(slug)?;
    match args.lang {
        Lang::Rust => {}
        Lang::Python | Lang::Typescript => {
            return Err(Failure::BadInput(format!(
                "--lang {}: this atrium has no {} guest SDK yet; use --lang rust",
                match args.lang {
                    Lang::Python => "python",
                    _ => "typescript",
                },
                match args.lang {
                    Lang::Python => "Python",
                    _ => "TypeScript",
                },
            )));
        }
    }
    let name = args.name.clone().unwrap_or_else(|| display_name(slug));
    if name.trim().is_empty() || name.chars().count() > 80 {
        return Err(Failure::BadInput(
            "--name must be 1 to 80 characters".to_owned(),
        ));
    }
    if !atrium_manifest::rules::is_lower_slug(&args.github_owner.to_lowercase())
        || args.github_owner.contains('/')
    {
        return Err(Failure::BadInput(format!(
            "--github-owner `{}` is not an owner name",
            args.github_owner
        )));
    }
    let dir = args
        .directory
        .clone()
        .unwrap_or_else(|| PathBuf::from(slug));
    if dir.exists() {
        let empty = std::fs::read_dir(&dir)
            .map(|mut entries| entries.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(Failure::BadInput(format!(
                "{} exists and is not empty: choose another --directory",
                dir.display()
            )));
        }
    }
    let sdk = sdk_dir(args.sdk.as_deref())?;
    let crate_name = slug.replace('-', "_");
    let fill = |template: &str| {
        template
            .replace("{{slug}}", slug)
            .replace("{{crate}}", &crate_name)
            .replace("{{name}}", &name)
            .replace("{{name_yaml}}", &yaml_string(&name))
            .replace("{{description_yaml}}", &yaml_string(&args.description))
            .replace("{{owner}}", &args.github_owner.to_lowercase())
            .replace("{{sdk}}", &sdk.display().to_string().replace('\\', "/"))
            .replace("{{toolchain}}", TOOLCHAIN)
    };
    let files: [(&str, &str); 13] = [
        ("Cargo.toml", CARGO_TOML),
        ("rust-toolchain.toml", "{{toolchain}}"),
        (".gitignore", GITIGNORE),
        ("atrium.app.yaml", MANIFEST),
        ("atrium.dev.json", DEV_MOCKS),
        ("src/lib.rs", LIB_RS),
        ("app_docs/user.md", USER_MD),
        ("defaults/templates/note.json", TEMPLATE),
        (".github/workflows/deploy.yml", WORKFLOW),
        ("web/index.html", INDEX_HTML),
        ("web/app.js", APP_JS),
        ("web/style.css", STYLE_CSS),
        ("README.md", README),
    ];
    for (path, template) in files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::BadInput(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        std::fs::write(&target, fill(template))
            .map_err(|e| Failure::BadInput(format!("cannot write {}: {e}", target.display())))?;
    }
    Ok(dir)
}

/// The toolchain file of this source tree: the scaffold builds with the same compiler and
/// gets the wasm32-wasip2 target from rustup.
const TOOLCHAIN: &str = include_str!("../../../rust-toolchain.toml");

const CARGO_TOML: &str = r#"[package]
name = "{{slug}}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# cdylib: the WebAssembly component `atrium deploy` builds; rlib: the native unit tests.
crate-type = ["cdylib", "rlib"]

[dependencies]
atrium-sdk = { path = "{{sdk}}" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"

[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = true

# A project of its own, even inside another Cargo workspace.
[workspace]
"#;

const GITIGNORE: &str = "/target\n/dist\n";

const MANIFEST: &str = r#"# The app's manifest (docs/manifest.md in the Atrium source tree has every field).
apiVersion: platform/v2
app_id: {{slug}}
version: 0.1.0
name: {{name_yaml}}
description: {{description_yaml}}
runtime:
  image: ghcr.io/{{owner}}/{{slug}}:0.1.0
install_settings:
  - id: greeting
    type: string
    label: Greeting
    description: How the app greets people.
    default: Hello
tools:
  - name: greet
    description: Greets someone by name, with the install's greeting.
    scopes_required: []
"#;

const DEV_MOCKS: &str = r#"{
  "records.query": {"ok": true, "result": []}
}
"#;

const LIB_RS: &str = r#"//! {{name}}: an Atrium app.
//!
//! `greet` answers with the install's `greeting` setting. `cargo test` runs the handler
//! natively against the SDK's test client; `atrium deploy` builds the component.

use atrium_sdk::{App, Ctx, Error, ManifestInfo, RegistrationError};
use serde::Deserialize;
use serde_json::{Value, json};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");

#[derive(Deserialize)]
struct GreetArgs {
    name: String,
}

fn greet(ctx: &Ctx<'_>, args: GreetArgs) -> Result<Value, Error> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err(Error::invalid_input("`name` is empty"));
    }
    let greeting = ctx
        .config
        .get_as::<String>("greeting")
        .unwrap_or_else(|| "Hello".into());
    Ok(json!({"message": format!("{greeting}, {name}!")}))
}

/// Builds the app: its tools and handlers, checked against the manifest.
pub fn app() -> Result<App, RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.tool("greet", greet)?;
    Ok(app)
}

atrium_sdk::export!(app);

#[cfg(test)]
mod tests {
    use super::app;
    use atrium_sdk::HandlerError;
    use atrium_sdk::testing::TestClient;
    use serde_json::json;

    #[test]
    fn greet_uses_the_install_greeting() {
        let client = TestClient::new(app()).unwrap().setting("greeting", json!("Welcome"));
        let result = client.call_tool("greet", json!({"name": "Ada"})).unwrap();
        assert_eq!(result["message"], "Welcome, Ada!");
    }

    #[test]
    fn greet_refuses_an_empty_name() {
        let client = TestClient::new(app()).unwrap();
        let err = client.call_tool("greet", json!({"name": " "})).unwrap_err();
        assert!(matches!(err, HandlerError::InvalidInput(_)), "{err:?}");
    }
}
"#;

const USER_MD: &str = r"# {{name}}

{{name}} greets people by name.

## Settings

- **Greeting**: the word it greets with (default: Hello).
";

const TEMPLATE: &str = r##"{
  "slug": "note",
  "name": "Note",
  "description": "A short note.",
  "sections": [{"type": "markdown", "id": "body", "content": "# Note"}],
  "metadata": {}
}
"##;

const WORKFLOW: &str = r#"# Lint, test and deploy on every push to main. Set the repository variables ATRIUM_GIT (the
# Atrium source repository: its developer tool and Rust SDK are built from source) and
# ATRIUM_REF (the tag or commit to build, pinned), and the secrets ATRIUM_PLATFORM_URL (the
# platform's address) and SERVICE_TOKEN (a developer token). The token reaches the deploy step
# only, never the build or the tests.
name: deploy
on:
  push:
    branches: [main]
  pull_request:
jobs:
  deploy:
    runs-on: ubuntu-latest
    env:
      ATRIUM_GIT: ${{ vars.ATRIUM_GIT }}
      ATRIUM_REF: ${{ vars.ATRIUM_REF }}
    steps:
      - uses: actions/checkout@v4
      - name: Toolchain (rust-toolchain.toml, with the wasm32-wasip2 target)
        run: rustup show
      - name: Atrium's developer tool and Rust SDK
        run: |
          git clone --depth 1 --branch "$ATRIUM_REF" "$ATRIUM_GIT" "$RUNNER_TEMP/atrium"
          cargo install --locked --path "$RUNNER_TEMP/atrium/host/cli"
          sed -i "s|^atrium-sdk = { path = .* }|atrium-sdk = { path = \"$RUNNER_TEMP/atrium/guest-sdk\" }|" Cargo.toml
      - name: Lint (locally: the platform's preflight runs in the deploy step)
        run: atrium lint --offline
      - name: Test
        run: cargo test
      - name: Deploy
        if: github.event_name == 'push'
        env:
          ATRIUM_PLATFORM_URL: ${{ secrets.ATRIUM_PLATFORM_URL }}
          SERVICE_TOKEN: ${{ secrets.SERVICE_TOKEN }}
        run: atrium deploy
"#;

const INDEX_HTML: &str = r#"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{{name}}</title>
  <link rel="stylesheet" href="style.css">
</head>
<body>
  <main>
    <h1>{{name}}</h1>
    <form id="greet">
      <label>Name <input name="name" required autocomplete="off"></label>
      <button type="submit">Greet</button>
    </form>
    <p id="answer" role="status"></p>
  </main>
  <script src="app.js"></script>
</body>
</html>
"#;

const APP_JS: &str = r#"// The bundle talks to its parent (the workspace, or `atrium dev`'s shell) by postMessage:
//   to the parent:   {type: "atrium:ready"}
//                    {type: "atrium:call-tool", id, name, args}
//   from the parent: {type: "atrium:init", theme, appId, tenantId}
//                    {type: "atrium:theme", theme}            ("light" or "dark")
//                    {type: "atrium:tool-result", id, ok, result} or {..., ok: false, error}
const pending = new Map();
let nextId = 1;
// The parent's origin, learnt from its `atrium:init`: messages go only there, and only its
// messages are heard.
let parentOrigin = null;

function callTool(name, args) {
  if (parentOrigin === null) {
    return Promise.reject({ decision: "not_ready", message: "the parent has not answered yet" });
  }
  const id = String(nextId++);
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    window.parent.postMessage({ type: "atrium:call-tool", id, name, args }, parentOrigin);
  });
}

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme === "dark" ? "dark" : "light";
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data || {};
  if (message.type === "atrium:init" && parentOrigin === null) parentOrigin = event.origin;
  if (event.origin !== parentOrigin) return;
  if (message.type === "atrium:init" || message.type === "atrium:theme") {
    applyTheme(message.theme);
  } else if (message.type === "atrium:tool-result" && pending.has(message.id)) {
    const { resolve, reject } = pending.get(message.id);
    pending.delete(message.id);
    if (message.ok) resolve(message.result);
    else reject(message.error || { decision: "error", message: "the call failed" });
  }
});

document.getElementById("greet").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = document.getElementById("answer");
  const name = new FormData(event.target).get("name");
  try {
    const result = await callTool("greet", { name });
    answer.textContent = result.message;
  } catch (error) {
    answer.textContent = `${error.decision}: ${error.message}`;
  }
});

window.parent.postMessage({ type: "atrium:ready" }, "*");
"#;

const STYLE_CSS: &str = r#":root { color-scheme: light; --bg: #ffffff; --fg: #1d1d1f; --accent: #3b5bdb; }
:root[data-theme="dark"] { color-scheme: dark; --bg: #16171a; --fg: #ececf1; --accent: #91a7ff; }
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; background: var(--bg); color: var(--fg); }
main { max-width: 32rem; margin: 2rem auto; padding: 0 1rem; }
button { background: var(--accent); color: var(--bg); border: 0; border-radius: 4px; padding: 0.4rem 0.9rem; }
"#;

const README: &str = r"# {{name}}

An Atrium app.

```sh
cargo test          # the handler's unit tests, natively
atrium lint         # the manifest, templates and docs
atrium dev          # the web/ bundle in a local parent shell, tools answered by the component
atrium deploy       # build the component, register the version, upload web/, promote
```

`atrium.app.yaml` is the manifest, `src/lib.rs` the handler, `app_docs/` the user's
documentation, `defaults/templates/` the document templates the app ships, `atrium.dev.json`
the mocked platform tools of `atrium dev`, `web/` the frontend bundle.
";
