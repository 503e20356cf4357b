//! The developer loop as a newcomer walks it, in Rust, Python and TypeScript, on a host this
//! test starts: `init`, the project's own tests, `lint`, `build` twice (the same bytes), `dev`
//! serving its pages, `login`, `deploy` twice (exit 0 both times), the call deploy printed
//! answering in the dev tenant, a new version with a new required setting and a new scope
//! (deployed, but the dev tenant told what it misses, and its calls saying which version
//! answers), the tenant's upgrade with both, and a tool that fails answering 502.
//!
//! Each step's time is printed (`--nocapture` shows them; docs/benchmarks.md has a run's
//! figures): they are measured here, never asserted.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::developer::{exits, http, json_body, scaffold_target};
use crate::{Atrium, Serve, stderr, stdout};

/// The steps' times of one language.
struct Times {
    lang: &'static str,
    started: Instant,
    steps: Vec<(&'static str, Duration)>,
    first_call: Option<Duration>,
}

impl Times {
    fn step<T>(&mut self, name: &'static str, run: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = run();
        self.steps.push((name, started.elapsed()));
        out
    }

    fn print(&self) {
        println!("walk ({}):", self.lang);
        for (name, took) in &self.steps {
            println!("  {name:<36} {:>7.1} s", took.as_secs_f64());
        }
        if let Some(first) = self.first_call {
            println!(
                "  {:<36} {:>7.1} s",
                "init to the first answered call",
                first.as_secs_f64()
            );
        }
    }
}

/// The scaffold's code with a second tool, `boom`, that fails as each language fails.
fn add_boom(project: &Path, lang: &str) {
    let edit = |file: &str, from: &str, to: &str| {
        let path = project.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file} has no `{from}`");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    };
    match lang {
        "rust" => {
            edit(
                "src/lib.rs",
                "    app.tool(\"greet\", greet)?;",
                "    app.tool(\"greet\", greet)?;\n    app.tool(\"boom\", boom)?;",
            );
            edit(
                "src/lib.rs",
                "/// Builds the app",
                "fn boom(_: &Ctx<'_>, _: Value) -> Result<Value, Error> {\n    panic!(\"boom\")\n}\n\n/// Builds the app",
            );
        }
        "python" => {
            let path = project.join("app.py");
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(
                &path,
                format!("{text}\n\n@app.tool(\"boom\")\nasync def boom(ctx):\n    raise RuntimeError(\"boom\")\n"),
            )
            .unwrap();
        }
        _ => edit(
            "src/app.ts",
            ".tool('greet', greet);",
            ".tool('greet', greet).tool('boom', async () => {\n  throw new Error('boom');\n});",
        ),
    }
}

/// Version 0.2.0 of the scaffold's manifest: a new scope, a new required setting without a
/// default, the tool `boom`.
fn version_two(project: &Path) {
    let path = project.join("atrium.app.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text
        .replace("version: 0.1.0", "version: 0.2.0")
        .replace(
            "install_settings:\n",
            "required_scopes: [tasks.read]\ninstall_settings:\n  - id: signature\n    type: string\n    label: Signature\n    required: true\n",
        )
        .replace(
            "tools:\n",
            "tools:\n  - name: boom\n    description: Fails on purpose.\n    scopes_required: []\n",
        );
    std::fs::write(&path, text).unwrap();
}

fn component_of(out: &Output) -> (String, String) {
    let built: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)));
    (
        built["component"].as_str().unwrap().to_owned(),
        built["digest"].as_str().unwrap().to_owned(),
    )
}

/// `atrium dev` serves the parent shell and the bundle; both pages answer.
fn dev_serves_its_pages(project: &Path, component: &str, env: &[(&str, &str)]) {
    let (_dev, bundle, shell) = crate::dev::start(project, component.as_ref(), env);
    for url in [bundle, shell] {
        let addr = url.trim_start_matches("http://").trim_end_matches('/');
        let page = crate::serve::http(addr, "GET", "/", None, "");
        assert!(
            page.starts_with("HTTP/1.1 200") && page.contains("<html"),
            "{url}: {page}"
        );
    }
}

fn walk(atrium: &Atrium, here: &Path, base: &str, org_key: &str, lang: &'static str) -> Times {
    let mut times = Times {
        lang,
        started: Instant::now(),
        steps: Vec::new(),
        first_call: None,
    };
    let slug = format!("walk-{lang}");
    let target = scaffold_target();
    let target = target.to_str().unwrap().to_owned();
    let env: Vec<(&str, &str)> = if lang == "rust" {
        vec![("CARGO_TARGET_DIR", target.as_str())]
    } else {
        Vec::new()
    };
    let out = times.step("init", || {
        let _npm = (lang == "typescript").then(|| atrium_test_artifacts::sdk::lock("npm-scaffold"));
        atrium.run(here, &["init", &slug, "--lang", lang], &env)
    });
    exits(&out, 0);
    let project = here.join(&slug);

    let tested = times.step("the project's tests", || {
        let mut command = match lang {
            "rust" => {
                let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
                c.args(["test", "--quiet"]).env("CARGO_TARGET_DIR", &target);
                c
            }
            "python" => {
                let mut c = Command::new(project.join(".venv/bin/python"));
                c.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]);
                c
            }
            _ => {
                let mut c = Command::new("npm");
                c.args(["test", "--silent"]);
                c
            }
        };
        for name in [
            "ATRIUM_MANIFEST_VALIDATOR",
            "PYTHONPATH",
            "ATRIUM_NODE_MODULES",
        ] {
            command.env_remove(name);
        }
        command.current_dir(&project).output().unwrap()
    });
    exits(&tested, 0);
    let out = times.step("lint", || {
        atrium.run(&project, &["lint", "--offline"], &env)
    });
    exits(&out, 0);

    let out = times.step("build", || atrium.run(&project, &["build", "--json"], &env));
    exits(&out, 0);
    let (component, digest) = component_of(&out);
    let out = times.step("build again", || {
        atrium.run(&project, &["build", "--json"], &env)
    });
    exits(&out, 0);
    assert_eq!(
        component_of(&out).1,
        digest,
        "{lang}: the same sources, other bytes"
    );

    times.step("dev serves its pages", || {
        dev_serves_its_pages(&project, &component, &env);
    });

    let token = {
        let out = atrium.run(
            here,
            &[
                "developers",
                "token",
                "walker",
                "--data-dir",
                &here.join("data").to_string_lossy(),
            ],
            &[],
        );
        exits(&out, 0);
        stdout(&out).lines().last().unwrap().to_owned()
    };
    let out = times.step("login", || {
        atrium.run(
            &project,
            &["login", "--platform", base, "--token", &token],
            &[],
        )
    });
    exits(&out, 0);

    let out = times.step("deploy", || atrium.run(&project, &["deploy"], &env));
    exits(&out, 0);
    let printed = stdout(&out);
    let call = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("atrium apps call "))
        .unwrap_or_else(|| panic!("{lang}: deploy printed no call:\n{printed}"))
        .to_owned();
    let out = times.step("deploy again", || atrium.run(&project, &["deploy"], &env));
    exits(&out, 0);
    assert!(
        stdout(&out).contains("already registered with the same content"),
        "{lang}: {}",
        stdout(&out)
    );

    // The call deploy printed, as printed: `<slug> <tool> '<arguments>'`.
    let mut words = call.splitn(3, ' ');
    let (app, tool, arguments) = (
        words.next().unwrap(),
        words.next().unwrap(),
        words.next().unwrap().trim_matches('\''),
    );
    let out = times.step("the printed call", || {
        atrium.run(&project, &["apps", "call", app, tool, arguments], &[])
    });
    exits(&out, 0);
    assert!(
        stdout(&out).contains("Hello, world!"),
        "{lang}: {}",
        stdout(&out)
    );
    times.first_call = Some(times.started.elapsed());

    // 0.2.0: a new scope, a new required setting, a tool that fails.
    add_boom(&project, lang);
    version_two(&project);
    let out = times.step("deploy 0.2.0", || atrium.run(&project, &["deploy"], &env));
    exits(&out, 0);
    assert!(
        stdout(&out).contains("missing_settings") && stdout(&out).contains("signature"),
        "{lang}: the dev tenant is told what it misses: {}",
        stdout(&out)
    );
    // Until then the dev tenant runs 0.1.0: a call says so and what moves it; a tool only
    // 0.2.0 has is unknown there, and the error names the command that lists the tools.
    let out = atrium.run(&project, &["apps", "call", &slug, "greet", "{}"], &[]);
    exits(&out, 0);
    let said = stderr(&out);
    assert!(
        said.contains(&format!("from {slug} 0.1.0"))
            && said.contains("current version 0.2.0")
            && said.contains(&format!("atrium apps settings set {slug} signature=VALUE")),
        "{lang}: {said}"
    );
    let out = atrium.run(&project, &["apps", "call", &slug, "boom", "{}"], &[]);
    exits(&out, 2);
    let said = stderr(&out);
    assert!(
        said.contains("unknown_tool") && said.contains(&format!("atrium apps show {slug}")),
        "{lang}: {said}"
    );
    let (status, created) = http(
        "POST",
        &format!("{base}/api/tenants/walker-dev/tokens"),
        org_key,
        json_body(&json!({"role": "admin"})),
    );
    assert_eq!(status, 201, "{created}");
    let admin = created["token"].as_str().unwrap().to_owned();
    let (status, body) = times.step("upgrade with scope and setting", || {
        http(
            "POST",
            &format!("{base}/api/installs/{slug}/upgrade"),
            &admin,
            json_body(&json!({"granted_scopes": ["tasks.read"], "settings": {"signature": "Ada"}})),
        )
    });
    assert_eq!(
        (status, body["version"].as_str()),
        (200, Some("0.2.0")),
        "{lang}: {body}"
    );
    let out = times.step("a failing tool", || {
        atrium.run(&project, &["apps", "call", &slug, "boom", "{}"], &[])
    });
    exits(&out, 2);
    assert!(stderr(&out).contains("502"), "{lang}: {}", stderr(&out));
    let out = atrium.run(&project, &["apps", "call", &slug, "greet", "{}"], &[]);
    exits(&out, 0);
    times
}

#[test]
fn a_newcomer_walks_the_loop_in_every_language() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path();
    let atrium = Atrium {
        config_dir: here.join("config"),
    };
    let data = here.join("data");
    let data = data.to_str().unwrap();
    // The operator: a key of the dev tenants' organization, a developer (with the default dev
    // tenant, `walker-dev` of `developers`).
    let key = atrium.run(
        here,
        &[
            "keys",
            "create",
            "--org",
            "developers",
            "--data-dir",
            data,
            "--create",
        ],
        &[],
    );
    exits(&key, 0);
    let org_key = stdout(&key).lines().last().unwrap().to_owned();
    let out = atrium.run(
        here,
        &[
            "developers",
            "create",
            "--email",
            "walker@example.com",
            "--login",
            "walker",
            "--publish-allowed",
            "--data-dir",
            data,
        ],
        &[],
    );
    exits(&out, 0);
    assert!(stdout(&out).contains("walker-dev"), "{}", stdout(&out));
    let host = Serve::spawn(atrium.command(
        here,
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--data-dir",
            data,
            "--no-demo",
        ],
        &[],
    ));
    let base = format!("http://{}", host.addr);
    for lang in ["rust", "python", "typescript"] {
        walk(&atrium, here, &base, &org_key, lang).print();
    }
    let (status, log) = host.stop();
    assert_eq!(status.code(), Some(0), "{log:?}");
}
