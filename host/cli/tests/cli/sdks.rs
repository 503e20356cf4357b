//! The Python and TypeScript SDKs: their own test suites and their example's (pytest and
//! node's test runner, run here so that the workspace's test command runs them), and
//! `atrium init --lang python|typescript` projects that pass their tests, build into components
//! with `atrium build`, and answer a tool call through the real runtime with `atrium call`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use atrium_test_artifacts::sdk;
use serde_json::{Value, json};

use crate::developer::{exits, http, json_body};
use crate::{Atrium, stderr, stdout};

/// The environment variable naming the manifest validator module the test build made.
const VALIDATOR: (&str, &str) = (
    "ATRIUM_MANIFEST_VALIDATOR",
    atrium_test_artifacts::MANIFEST_VALIDATOR,
);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[track_caller]
fn succeeds(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(out),
        stderr(out)
    );
}

fn with_env(mut command: Command, env: &[(&'static str, OsString)]) -> Command {
    command.envs(env.iter().map(|(k, v)| (*k, v)));
    command
}

#[test]
fn the_python_sdk_and_the_python_invoice_desk_pass_their_own_tests() {
    let mut command = with_env(Command::new("python3"), &sdk::python_env());
    let out = command
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(sdk::python_sdk().join("tests"))
        .arg(root().join("examples/invoices-py"))
        .current_dir(root())
        .output()
        .unwrap();
    succeeds("pytest", &out);
    assert!(stdout(&out).contains(" passed"), "{}", stdout(&out));
}

#[test]
fn the_typescript_sdk_and_the_typescript_invoice_desk_pass_their_own_tests() {
    let env = sdk::node_env();
    let out = with_env(Command::new("node"), &env)
        .arg("--test")
        .arg(sdk::typescript_sdk().join("test"))
        .current_dir(root())
        .output()
        .unwrap();
    succeeds("node --test (the SDK)", &out);
    let example = root().join("examples/invoices-ts");
    let out = with_env(Command::new("node"), &env)
        .arg("--import")
        .arg(sdk::typescript_sdk().join("register.mjs"))
        .arg("--test")
        .arg(example.join("test/app.test.ts"))
        .current_dir(&example)
        .output()
        .unwrap();
    succeeds("node --test (the example)", &out);
}

/// `atrium call` of the scaffold's `greet` tool on the component `atrium build` made.
fn greet(atrium: &Atrium, project: &Path, env: &[(&str, &str)]) {
    let out = atrium.run(project, &["build"], env);
    exits(&out, 0);
    let component = project.join("build/app.wasm");
    assert!(stdout(&out).contains("build/app.wasm"), "{}", stdout(&out));
    let out = atrium.run(
        project,
        &[
            "call",
            "--component",
            component.to_str().unwrap(),
            "--setting",
            "greeting=\"Welcome\"",
            "greet",
            r#"{"name": "Ada"}"#,
        ],
        env,
    );
    exits(&out, 0);
    let answer: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(answer, json!({"message": "Welcome, Ada!"}));
    let out = atrium.run(
        project,
        &[
            "call",
            "--component",
            component.to_str().unwrap(),
            "greet",
            r#"{"name": " "}"#,
        ],
        env,
    );
    exits(&out, 2);
    assert!(stderr(&out).contains("invalid input"), "{}", stderr(&out));
}

#[test]
fn atrium_init_python_makes_a_project_that_tests_builds_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let atrium = Atrium {
        config_dir: dir.path().join("config"),
    };
    let validator = [VALIDATOR];
    let out = atrium.run(
        dir.path(),
        &["init", "py-greeter", "--lang", "python"],
        &validator,
    );
    exits(&out, 0);
    let project = dir.path().join("py-greeter");
    for file in [
        "app.py",
        "test_app.py",
        "pyproject.toml",
        "atrium.app.yaml",
        "web/app.js",
    ] {
        assert!(project.join(file).is_file(), "{file}");
    }
    let pyproject = std::fs::read_to_string(project.join("pyproject.toml")).unwrap();
    assert!(
        pyproject.contains(
            &sdk::python_sdk()
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        ),
        "{pyproject}"
    );
    let env = sdk::python_env();
    let out = with_env(Command::new("python3"), &env)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(&project)
        .output()
        .unwrap();
    succeeds("pytest in the scaffold", &out);
    let owned: Vec<(&str, String)> = env
        .iter()
        .map(|(k, v)| (*k, v.to_string_lossy().into_owned()))
        .collect();
    let env: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = atrium.run(&project, &["lint"], &env);
    exits(&out, 0);
    greet(&atrium, &project, &env);
}

/// What a developer runs in a new TypeScript project: `npm install --install-links` (a copy of
/// the SDK, with esbuild and componentize-js), one install at a time.
fn npm_install(project: &Path) {
    let _lock = sdk::lock("npm-scaffold");
    let out = Command::new("npm")
        .args([
            "install",
            "--install-links",
            "--prefer-offline",
            "--no-audit",
            "--no-fund",
            "--silent",
        ])
        .current_dir(project)
        .output()
        .unwrap();
    succeeds("npm install", &out);
}

/// The TypeScript SDK as a published package would be: its files, the WIT and the validator
/// module, in a directory of its own (packing the source tree's SDK would write into it).
fn typescript_sdk_copy(into: &Path) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        if from.is_dir() {
            std::fs::create_dir_all(to).unwrap();
            for entry in std::fs::read_dir(from).unwrap().flatten() {
                let name = entry.file_name();
                if name != "node_modules" && name != "test" {
                    copy(&entry.path(), &to.join(name));
                }
            }
        } else {
            std::fs::copy(from, to).unwrap();
        }
    }
    let sdk = into.join("atrium-sdk");
    copy(&sdk::typescript_sdk(), &sdk);
    copy(&root().join("wit"), &sdk.join("wit"));
    std::fs::copy(
        atrium_test_artifacts::MANIFEST_VALIDATOR,
        sdk.join("validator.wasm"),
    )
    .unwrap();
    sdk
}

#[test]
fn atrium_init_typescript_makes_a_project_that_tests_builds_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let atrium = Atrium {
        config_dir: dir.path().join("config"),
    };
    let validator = [VALIDATOR];
    let sdk = typescript_sdk_copy(dir.path());
    let out = atrium.run(
        dir.path(),
        &[
            "init",
            "ts-greeter",
            "--lang",
            "typescript",
            "--sdk",
            sdk.to_str().unwrap(),
        ],
        &validator,
    );
    exits(&out, 0);
    assert!(
        stdout(&out).contains("export ATRIUM_MANIFEST_VALIDATOR="),
        "{}",
        stdout(&out)
    );
    let project = dir.path().join("ts-greeter");
    for file in [
        "package.json",
        "src/app.ts",
        "test/app.test.ts",
        "tsconfig.json",
    ] {
        assert!(project.join(file).is_file(), "{file}");
    }
    // Before `npm install`, the build says what is missing.
    let out = atrium.run(&project, &["build"], &validator);
    exits(&out, 1);
    assert!(stderr(&out).contains("npm install"), "{}", stderr(&out));
    // What a developer runs: npm install (a copy of the SDK, with esbuild and componentize-js),
    // npm test, with nothing set: the installed SDK carries its validator.
    npm_install(&project);
    let out = Command::new("npm")
        .args(["test", "--silent"])
        .env_remove("ATRIUM_MANIFEST_VALIDATOR")
        .current_dir(&project)
        .output()
        .unwrap();
    succeeds("npm test in the scaffold", &out);
    greet(&atrium, &project, &validator);
}

/// The whole loop for a Python or TypeScript project (`lang`), on the host of the developer
/// test (`base`, where the developer logged in with `atrium`'s config is Ada and `admin` a
/// tenant admin of her dev tenant): `atrium init`, `doctor`, `deploy` with a real build, an
/// install and a tool call over `/api`.
pub(crate) fn deploy_install_and_call(
    atrium: &Atrium,
    here: &Path,
    base: &str,
    admin: &str,
    lang: &str,
) {
    let slug = format!("{lang}-greeter");
    let mut env: Vec<(&str, String)> = vec![(VALIDATOR.0, VALIDATOR.1.to_owned())];
    let mut init = vec!["init", slug.as_str(), "--lang", lang];
    let sdk_copy;
    if lang == "typescript" {
        sdk_copy = typescript_sdk_copy(&here.join(format!("{lang}-sdk")));
        init.extend(["--sdk", sdk_copy.to_str().unwrap()]);
    } else {
        env.extend(
            sdk::python_env()
                .into_iter()
                .map(|(k, v)| (k, v.to_string_lossy().into_owned())),
        );
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = atrium.run(here, &init, &env);
    exits(&out, 0);
    let project = here.join(&slug);
    if lang == "typescript" {
        npm_install(&project);
    }
    let out = atrium.run(&project, &["doctor"], &env);
    exits(&out, 0);
    assert!(!stdout(&out).contains("FAIL"), "{}", stdout(&out));
    let out = atrium.run(&project, &["deploy"], &env);
    exits(&out, 0);
    assert!(
        stdout(&out).contains(&format!("Deployed {slug}: 0.1.0 is the current version"))
            && stdout(&out).contains("build/app.wasm"),
        "{}",
        stdout(&out)
    );
    let (status, body) = http(
        "POST",
        &format!("{base}/api/installs/{slug}/activate"),
        admin,
        json_body(&json!({"granted_scopes": [], "settings": {"greeting": "Good morning"}})),
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = http(
        "POST",
        &format!("{base}/api/apps/{slug}/tools/greet"),
        admin,
        json_body(&json!({"name": "Ada"})),
    );
    assert_eq!(
        (status, body["result"]["message"].as_str()),
        (200, Some("Good morning, Ada!")),
        "{lang}: {body}"
    );
}
