//! `atrium init` and `atrium dev` on a new project, without a host: the project lints, passes
//! its own tests, satisfies `doctor`'s local checks, and `dev` builds it, answers its tool
//! calls and rebuilds it after a source change.

use std::process::Command;

use serde_json::json;

use crate::developer::{exits, http, json_body, scaffold_target};
use crate::{Atrium, stdout};

/// The `run: |` script of the workflow step named `name`, de-indented.
fn step_script(workflow: &str, name: &str) -> String {
    let mut lines = workflow
        .lines()
        .skip_while(|l| !l.contains(&format!("name: {name}")));
    assert!(lines.next().is_some(), "no step {name}:\n{workflow}");
    let run = lines
        .by_ref()
        .find(|l| l.trim_start().starts_with("run: |"))
        .unwrap_or_else(|| panic!("step {name} has no `run: |`"));
    let indent = run.len() - run.trim_start().len() + 2;
    lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    exits(&out, 0);
    stdout(&out).trim().to_owned()
}

/// The scaffold's CI workflows (every language) are YAML, fetch Atrium's source at
/// `ATRIUM_REF` whether it names a branch, a tag or a commit (a clone's `--branch` takes no
/// commit), and build the developer tool only when the cache of that commit has none.
#[test]
fn the_ci_workflows_fetch_any_ref_and_cache_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    // Atrium's stand-in: a commit, a tag on it, and a branch one commit further.
    let upstream = dir.path().join("upstream");
    std::fs::create_dir(&upstream).unwrap();
    git(&upstream, &["init", "--quiet", "--initial-branch=main"]);
    // GitHub answers a fetch of any commit it has by its id.
    git(
        &upstream,
        &["config", "uploadpack.allowAnySHA1InWant", "true"],
    );
    std::fs::write(upstream.join("which.txt"), "first").unwrap();
    git(&upstream, &["add", "which.txt"]);
    git(&upstream, &["commit", "--quiet", "-m", "first"]);
    let first = git(&upstream, &["rev-parse", "HEAD"]);
    git(&upstream, &["tag", "v1"]);
    std::fs::write(upstream.join("which.txt"), "second").unwrap();
    git(&upstream, &["commit", "--quiet", "-am", "second"]);
    let second = git(&upstream, &["rev-parse", "HEAD"]);
    let url = format!("file://{}", upstream.display());

    let scaffold = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scaffold");
    for lang in ["rust", "python", "typescript"] {
        let workflow =
            std::fs::read_to_string(scaffold.join(lang).join(".github/workflows/deploy.yml"))
                .unwrap();
        assert!(
            !atrium_manifest::validate(&workflow)
                .problems
                .iter()
                .any(|p| p.code == atrium_manifest::Code::Syntax),
            "{lang}: the workflow is not YAML: {:?}",
            atrium_manifest::validate(&workflow).problems
        );
        assert!(!workflow.contains("--branch"), "{lang}: {workflow}");
        for expected in [
            "uses: actions/cache@v4",
            "key: atrium-tool-${{ runner.os }}-${{ env.ATRIUM_COMMIT }}",
            "if: steps.atrium-tool.outputs.cache-hit != 'true'",
            "echo \"$HOME/.atrium-tool/bin\" >> \"$GITHUB_PATH\"",
        ] {
            assert!(
                workflow.contains(expected),
                "{lang}: {expected}:\n{workflow}"
            );
        }
        let script = step_script(&workflow, "Atrium's source at ATRIUM_REF");
        for (reference, commit, content) in [
            (first.as_str(), first.as_str(), "first"),
            ("v1", first.as_str(), "first"),
            ("main", second.as_str(), "second"),
        ] {
            let runner = tempfile::tempdir().unwrap();
            let env_file = runner.path().join("github-env");
            let out = Command::new("bash")
                .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
                .env("ATRIUM_GIT", &url)
                .env("ATRIUM_REF", reference)
                .env("RUNNER_TEMP", runner.path())
                .env("GITHUB_ENV", &env_file)
                .current_dir(runner.path())
                .output()
                .unwrap();
            exits(&out, 0);
            assert_eq!(
                std::fs::read_to_string(runner.path().join("atrium/which.txt")).unwrap(),
                content,
                "{lang}: {reference}"
            );
            assert_eq!(
                std::fs::read_to_string(&env_file).unwrap().trim(),
                format!("ATRIUM_COMMIT={commit}"),
                "{lang}: {reference}"
            );
        }
    }
}

/// `atrium init` makes a project that lints and passes its own tests as it is; bad input
/// exits 1 and writes nothing.
#[test]
fn init_scaffolds_a_project_that_lints_and_passes_its_tests() {
    let dir = tempfile::tempdir().unwrap();
    let atrium = Atrium {
        config_dir: dir.path().join("config"),
    };
    let here = dir.path();
    let out = atrium.run(here, &["init", "Bad_Slug"], &[]);
    exits(&out, 1);
    assert!(!here.join("Bad_Slug").exists());
    std::fs::create_dir(here.join("taken")).unwrap();
    std::fs::write(here.join("taken/keep.txt"), "mine").unwrap();
    let out = atrium.run(here, &["init", "greeter", "--directory", "taken"], &[]);
    exits(&out, 1);
    assert_eq!(
        std::fs::read_to_string(here.join("taken/keep.txt")).unwrap(),
        "mine"
    );
    let out = atrium.run(here, &["init", "greeter", "--sdk", "/nowhere"], &[]);
    exits(&out, 1);

    let out = atrium.run(
        here,
        &[
            "init",
            "greeter",
            "--name",
            "The Greeter",
            "--description",
            "Says \"hello\": politely",
        ],
        &[],
    );
    exits(&out, 0);
    let project = here.join("greeter");
    for file in [
        "Cargo.toml",
        "rust-toolchain.toml",
        "atrium.app.yaml",
        "atrium.dev.json",
        "src/lib.rs",
        "app_docs/user.md",
        "defaults/templates/note.json",
        ".github/workflows/deploy.yml",
        "web/index.html",
        "web/app.js",
    ] {
        assert!(project.join(file).is_file(), "{file}");
    }
    let manifest = std::fs::read_to_string(project.join("atrium.app.yaml")).unwrap();
    assert!(
        manifest.contains("app_id: greeter") && manifest.contains("The Greeter"),
        "{manifest}"
    );
    let workflow = std::fs::read_to_string(project.join(".github/workflows/deploy.yml")).unwrap();
    assert!(
        workflow.contains("SERVICE_TOKEN") && workflow.contains("atrium deploy"),
        "{workflow}"
    );
    let bridge = std::fs::read_to_string(project.join("web/app.js")).unwrap();
    assert!(
        bridge.contains("atrium:call-tool") && bridge.contains("postMessage"),
        "{bridge}"
    );

    let out = atrium.run(&project, &["lint", "--offline"], &[]);
    exits(&out, 0);
    assert!(
        stdout(&out).contains("lint passed: 0 errors, 0 warnings"),
        "{}",
        stdout(&out)
    );

    // Its own tests pass, natively, against the SDK of this source tree.
    let target = scaffold_target();
    let tested = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["test", "--quiet"])
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    exits(&tested, 0);
    assert!(stdout(&tested).contains("3 passed"), "{}", stdout(&tested));

    // doctor: everything local holds; without a login it fails, naming what to do.
    let out = atrium.run(&project, &["doctor"], &[]);
    exits(&out, 1);
    let said = stdout(&out);
    for expected in [
        "[FAIL] login: atrium doctor",
        "[ok  ] build toolchain",
        "[ok  ] SDK: atrium-sdk",
        "[ok  ] manifest",
    ] {
        assert!(
            said.contains(expected.trim_end_matches(": atrium doctor")),
            "{expected}: {said}"
        );
    }
    assert!(said.contains("--platform"), "{said}");

    // dev builds the component, answers the bundle's tool calls with it, and rebuilds it when
    // the source changes.
    let mut dev = atrium
        .command(
            &project,
            &[
                "dev",
                "--no-open",
                "--bundle-port",
                "0",
                "--parent-port",
                "0",
            ],
            &[("CARGO_TARGET_DIR", target.to_str().unwrap())],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Its output, read by a thread; a line waited for more than 10 minutes fails the test.
    let (sender, received) = std::sync::mpsc::channel();
    let output = dev.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(output)).map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut dev = crate::KillOnDrop(dev);
    let next_line = move || {
        received
            .recv_timeout(std::time::Duration::from_secs(600))
            .expect("atrium dev prints its next line within 10 minutes")
    };
    let shell = loop {
        let line = next_line();
        if let Some(url) = line.strip_prefix("Parent shell:") {
            break url.trim().to_owned();
        }
    };
    let greet = |name: &str| {
        http(
            "POST",
            &format!("{shell}__atrium/tools/greet"),
            "",
            json_body(&json!({"name": name})),
        )
    };
    let (status, answer) = greet("Ada");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"ok": true, "result": {"message": "Hello, Ada!"}})
    );
    // Only the parent shell's own pages may call: another origin, another Host (DNS
    // rebinding) or a body that is not JSON is refused.
    let foreign = |headers: &[(&str, &str)]| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut request = reqwest::Client::new()
                .post(format!("{shell}__atrium/tools/greet"))
                .body(r#"{"name": "Eve"}"#);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            request.send().await.unwrap().status().as_u16()
        })
    };
    assert_eq!(
        foreign(&[
            ("content-type", "application/json"),
            ("origin", "http://evil.example")
        ]),
        403
    );
    assert_eq!(
        foreign(&[
            ("content-type", "application/json"),
            ("host", "evil.example")
        ]),
        403
    );
    assert_eq!(foreign(&[("content-type", "text/plain")]), 403);
    assert_eq!(foreign(&[("content-type", "application/json")]), 200);
    let (_, refused) = greet(" ");
    assert_eq!(refused["ok"], false, "{refused}");
    assert_eq!(refused["error"]["decision"], "invalid_request", "{refused}");
    let lib = project.join("src/lib.rs");
    std::fs::write(
        &lib,
        std::fs::read_to_string(&lib)
            .unwrap()
            .replace("{greeting}, {name}!", "{greeting}, {name}! Welcome."),
    )
    .unwrap();
    while !next_line().starts_with("Built and loaded") {}
    let (_, answer) = greet("Ada");
    assert_eq!(
        answer["result"]["message"], "Hello, Ada! Welcome.",
        "{answer}"
    );
    let _ = Command::new("kill")
        .args(["-INT", &dev.0.id().to_string()])
        .status();
    assert_eq!(dev.0.wait().unwrap().code(), Some(0));
}
