//! The Python and TypeScript SDKs: their own test suites and their example's (pytest and
//! node's test runner, run here so that the workspace's test command runs them), and
//! `atrium init --lang python|typescript` projects that pass their tests, build into components
//! with `atrium build`, and answer a tool call through the real runtime with `atrium call`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use atrium_runtime::build_inputs;
use atrium_test_artifacts::sdk;
use serde_json::{Value, json};

use crate::developer::{exits, http, json_body};
use crate::{Atrium, stderr, stdout};

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
    // The room bot on its own: its modules share their names with the invoice desk's.
    let out = with_env(Command::new("python3"), &sdk::python_env())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root().join("examples/room-bot-py"))
        .current_dir(root())
        .output()
        .unwrap();
    succeeds("pytest (room-bot-py)", &out);
    assert!(stdout(&out).contains("3 passed"), "{}", stdout(&out));
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

/// `atrium call` of the scaffold's `greet` tool on the component `atrium build` made; answers
/// the component's bytes.
fn greet(atrium: &Atrium, project: &Path) -> Vec<u8> {
    let out = atrium.run(project, &["build"], &[]);
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
        &[],
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
        &[],
    );
    exits(&out, 2);
    assert!(stderr(&out).contains("invalid input"), "{}", stderr(&out));
    std::fs::read(&component).unwrap()
}

/// A second `atrium build` of unchanged sources keeps the component byte for byte; a change of
/// a source builds again with other inputs, and `--force` builds the same inputs again.
fn builds_are_reproducible(atrium: &Atrium, project: &Path, first: &[u8], source: &str) {
    let inputs = build_inputs::read(first).expect("the component records its build inputs");
    let out = atrium.run(project, &["build"], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("up to date"), "{}", stdout(&out));
    assert_eq!(
        std::fs::read(project.join("build/app.wasm")).unwrap(),
        first
    );

    let out = atrium.run(project, &["build", "--force", "--json"], &[]);
    exits(&out, 0);
    let built: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (built["built"].as_bool(), built["inputs"].as_str()),
        (Some(true), Some(inputs.as_str())),
        "{built}"
    );
    let rebuilt = std::fs::read(project.join("build/app.wasm")).unwrap();
    assert_eq!(
        build_inputs::read(&rebuilt).as_deref(),
        Some(inputs.as_str())
    );

    let path = project.join(source);
    let text = std::fs::read_to_string(&path).unwrap();
    let comment = if source.ends_with(".py") {
        "# edited"
    } else {
        "// edited"
    };
    std::fs::write(&path, format!("{text}\n{comment}\n")).unwrap();
    let out = atrium.run(project, &["build", "--json"], &[]);
    exits(&out, 0);
    let built: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(built["built"].as_bool(), Some(true), "{built}");
    assert_ne!(built["inputs"].as_str(), Some(inputs.as_str()), "{built}");
    std::fs::write(&path, text).unwrap();
}

/// The variables a developer's shell would not have: the tests' own SDK environment must not
/// reach a project that `atrium init` set up.
const NOT_SET: &[&str] = &[
    "ATRIUM_MANIFEST_VALIDATOR",
    "PYTHONPATH",
    "ATRIUM_NODE_MODULES",
    "ATRIUM_PYTHON",
];

fn command_in(project: &Path, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    command.current_dir(project);
    for name in NOT_SET {
        command.env_remove(name);
    }
    command
}

#[test]
fn atrium_init_python_makes_a_project_that_tests_builds_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let atrium = Atrium {
        config_dir: dir.path().join("config"),
    };
    let out = atrium.run(dir.path(), &["init", "py-greeter", "--lang", "python"], &[]);
    exits(&out, 0);
    let project = dir.path().join("py-greeter");
    for file in [
        "app.py",
        "test_app.py",
        "pyproject.toml",
        "requirements.txt",
        "atrium.app.yaml",
        "web/app.js",
        "vendor/atrium_sdk-0.1.0-py3-none-any.whl",
        ".venv/bin/python",
    ] {
        assert!(project.join(file).exists(), "{file}");
    }
    // The project's own environment runs its tests: the SDK from vendor/, its validator inside.
    let out = command_in(&project, project.join(".venv/bin/python"))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .output()
        .unwrap();
    succeeds("pytest in the scaffold", &out);
    // The environment is the project's alone: the machine's Python did not get the SDK.
    let out = command_in(&project, "python3")
        .args(["-c", "import atrium_sdk"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "the SDK was installed outside the project's .venv"
    );
    let out = atrium.run(&project, &["lint"], &[]);
    exits(&out, 0);
    let first = greet(&atrium, &project);
    builds_are_reproducible(&atrium, &project, &first, "app.py");
    nothing_written_into_the_checkout();
}

#[test]
fn atrium_init_typescript_makes_a_project_that_tests_builds_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let atrium = Atrium {
        config_dir: dir.path().join("config"),
    };
    let out = {
        let _lock = sdk::lock("npm-scaffold");
        atrium.run(
            dir.path(),
            &["init", "ts-greeter", "--lang", "typescript"],
            &[],
        )
    };
    exits(&out, 0);
    let project = dir.path().join("ts-greeter");
    for file in [
        "package.json",
        "package-lock.json",
        "src/app.ts",
        "test/app.test.ts",
        "tsconfig.json",
        "vendor/atrium-sdk-0.1.0.tgz",
        "node_modules/@atrium/sdk/validator.wasm",
        "node_modules/@bytecodealliance/componentize-js/package.json",
    ] {
        assert!(project.join(file).exists(), "{file}");
    }
    // A copy, not a link into the Atrium checkout.
    assert!(!project.join("node_modules/@atrium/sdk").is_symlink());
    let out = command_in(&project, "npm")
        .args(["test", "--silent"])
        .output()
        .unwrap();
    succeeds("npm test in the scaffold", &out);
    let first = greet(&atrium, &project);
    builds_are_reproducible(&atrium, &project, &first, "src/app.ts");
    nothing_written_into_the_checkout();
}

/// A new project's setup and builds left nothing in the SDKs' source directories.
fn nothing_written_into_the_checkout() {
    for dir in [
        sdk::python_sdk().join("build"),
        sdk::python_sdk().join("atrium_sdk.egg-info"),
        sdk::python_sdk().join("validator.wasm"),
        sdk::typescript_sdk().join("validator.wasm"),
        sdk::typescript_sdk().join("wit"),
    ] {
        assert!(!dir.exists(), "{} was written", dir.display());
    }
}

/// A project whose environment cannot be made: init writes the files and exits 1, saying
/// what failed and what to run once it is fixed.
#[test]
fn atrium_init_says_when_the_environment_cannot_be_set_up() {
    let dir = tempfile::tempdir().unwrap();
    let atrium = Atrium {
        config_dir: dir.path().join("config"),
    };
    let out = atrium.run(
        dir.path(),
        &["init", "no-python", "--lang", "python"],
        &[("ATRIUM_PYTHON", "/nonexistent/python3")],
    );
    exits(&out, 1);
    assert!(
        stderr(&out).contains("environment could not be set up")
            && stderr(&out).contains("python3 -m venv .venv"),
        "{}",
        stderr(&out)
    );
    assert!(dir.path().join("no-python/app.py").is_file());
    // --no-install writes the project and names the step.
    let out = atrium.run(
        dir.path(),
        &["init", "later", "--lang", "typescript", "--no-install"],
        &[],
    );
    exits(&out, 0);
    assert!(stdout(&out).contains("npm install"), "{}", stdout(&out));
    assert!(!dir.path().join("later/node_modules").exists());
    let later = dir.path().join("later");
    assert!(later.join("vendor/atrium-sdk-0.1.0.tgz").is_file());

    // `atrium sdk vendor` puts this atrium's SDK in place of an older one, and the pin with it.
    let out = atrium.run(&later, &["sdk", "vendor"], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("already"), "{}", stdout(&out));
    std::fs::rename(
        later.join("vendor/atrium-sdk-0.1.0.tgz"),
        later.join("vendor/atrium-sdk-0.0.9.tgz"),
    )
    .unwrap();
    let package = std::fs::read_to_string(later.join("package.json")).unwrap();
    std::fs::write(
        later.join("package.json"),
        package.replace("atrium-sdk-0.1.0.tgz", "atrium-sdk-0.0.9.tgz"),
    )
    .unwrap();
    let out = atrium.run(&later, &["sdk", "vendor"], &[]);
    exits(&out, 0);
    assert!(stdout(&out).contains("npm install"), "{}", stdout(&out));
    assert!(later.join("vendor/atrium-sdk-0.1.0.tgz").is_file());
    assert!(!later.join("vendor/atrium-sdk-0.0.9.tgz").exists());
    assert!(
        std::fs::read_to_string(later.join("package.json"))
            .unwrap()
            .contains("file:vendor/atrium-sdk-0.1.0.tgz")
    );
    let out = atrium.run(dir.path(), &["sdk", "vendor"], &[]);
    exits(&out, 1);
}

/// The whole loop for a Python or TypeScript project (`lang`), on the host of the developer
/// test (`base`, where the developer logged in with `atrium`'s config is Ada and `admin` a
/// tenant admin of her dev tenant): `atrium init`, `doctor`, `deploy` with a real build, an
/// install and a tool call over `/api`; deploy again, then again after a forced rebuild (other
/// bytes, the same inputs): the platform has the version already, both exit 0.
pub(crate) fn deploy_install_and_call(
    atrium: &Atrium,
    here: &Path,
    base: &str,
    admin: &str,
    lang: &str,
) {
    let slug = format!("{lang}-greeter");
    let init = ["init", slug.as_str(), "--lang", lang];
    let out = {
        let _lock = (lang == "typescript").then(|| sdk::lock("npm-scaffold"));
        atrium.run(here, &init, &[])
    };
    exits(&out, 0);
    let project = here.join(&slug);
    let out = atrium.run(&project, &["doctor"], &[]);
    exits(&out, 0);
    assert!(!stdout(&out).contains("FAIL"), "{}", stdout(&out));
    let out = atrium.run(&project, &["deploy"], &[]);
    exits(&out, 0);
    assert!(
        stdout(&out).contains(&format!("Deployed {slug}: 0.1.0 is the current version"))
            && stdout(&out).contains("build/app.wasm")
            && stdout(&out).contains(&format!("atrium apps call {slug} greet '{{}}'")),
        "{}",
        stdout(&out)
    );
    for build in [&["build"][..], &["build", "--force"][..]] {
        let out = atrium.run(&project, build, &[]);
        exits(&out, 0);
        let out = atrium.run(&project, &["deploy", "--skip-build"], &[]);
        exits(&out, 0);
        assert!(
            stdout(&out).contains("already registered with the same content"),
            "{lang} after {build:?}: {}",
            stdout(&out)
        );
    }
    // Deploy installed it in the dev tenant, where the call it printed answers.
    let out = atrium.run(here, &["apps", "call", &slug, "greet", "{}"], &[]);
    exits(&out, 0);
    assert!(
        stdout(&out).contains("Hello, world!"),
        "{lang}: {}",
        stdout(&out)
    );
    let (status, body) = http(
        "POST",
        &format!("{base}/api/installs/{slug}/activate"),
        admin,
        json_body(&json!({"settings": {"greeting": "Good morning"}})),
    );
    assert_eq!(status, 200, "{body}");
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
