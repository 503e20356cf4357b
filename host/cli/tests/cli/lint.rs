//! `atrium lint`.

use std::path::Path;

use crate::{atrium, stdout};

const MINIMAL: &str = "apiVersion: platform/v2\napp_id: demo-app\nversion: 1.0.0\nname: Demo\nruntime:\n  image: ghcr.io/acme/demo:1.0.0\n";

fn project(manifest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("atrium.app.yaml"), manifest).expect("write");
    dir
}

#[test]
fn valid_manifest_in_the_current_directory_passes() {
    let dir = project(MINIMAL);
    let out = atrium(dir.path(), &["lint"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("lint passed: 0 errors, 0 warnings"));
}

#[test]
fn warnings_still_pass() {
    let dir = project(&format!("{MINIMAL}seed_doc_templates_from: old-app\n"));
    let out = atrium(dir.path(), &["lint"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("atrium.app.yaml:7:26: warning[deprecated] seed_doc_templates_from:"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn errors_exit_1_with_path_message_and_line() {
    let dir = project(&MINIMAL.replace("demo-app", "Demo App"));
    let out = atrium(dir.path(), &["lint"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains(
            "atrium.app.yaml:2:9: error[pattern] app_id: `Demo App` is not a valid app slug"
        ),
        "{text}"
    );
    assert!(text.contains("lint failed: 1 error, 0 warnings"), "{text}");
}

#[test]
fn json_output_is_an_array_of_problems() {
    let dir = project(&format!("{MINIMAL}emits: [a, a]\ncolour: red\n"));
    let out = atrium(dir.path(), &["lint", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let problems: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let list = problems.as_array().expect("array");
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["path"], "emits[1]");
    assert_eq!(list[0]["code"], "duplicate");
    assert_eq!(list[0]["severity"], "error");
    assert_eq!(list[0]["line"], 7);
    assert_eq!(list[0]["column"], 12);
    assert_eq!(list[0]["file"], "atrium.app.yaml");
    assert_eq!(list[1]["code"], "unknown_field");
    let dir = project(MINIMAL);
    let out = atrium(dir.path(), &["lint", "--json"]);
    assert_eq!((out.status.code(), stdout(&out).trim()), (Some(0), "[]"));
}

/// One typo, one problem: a misspelt required field is the unknown field, naming the field it
/// stands for, not also a missing field; and no message says "?.".
#[test]
fn a_misspelt_required_field_is_one_problem() {
    let dir = project(&MINIMAL.replace("name: Demo", "nmae: Demo"));
    let out = atrium(dir.path(), &["lint", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let problems: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let list = problems.as_array().expect("array");
    assert_eq!(list.len(), 1, "{problems}");
    assert_eq!(list[0]["code"], "unknown_field", "{problems}");
    assert_eq!(list[0]["path"], "nmae", "{problems}");
    let message = list[0]["message"].as_str().expect("message");
    assert!(
        message.contains("did you mean `name`? `name` is required") && !message.contains("?."),
        "{message}"
    );
    let out = atrium(dir.path(), &["lint"]);
    assert!(
        stdout(&out).contains("lint failed: 1 error, 0 warnings"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn manifest_flag_and_json_manifests() {
    let dir = project(MINIMAL);
    std::fs::write(dir.path().join("app.json"), r#"{"apiVersion":"platform/v2","app_id":"demo-app","version":"1.0.0","name":"D","runtime":{"image":"acme/d","port":1}}"#).expect("write");
    let out = atrium(dir.path(), &["lint", "--manifest", "app.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("app.json:1:"), "{}", stdout(&out));
    assert!(stdout(&out).contains("runtime.port"));
}

#[test]
fn missing_or_unreadable_manifest_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = atrium(dir.path(), &["lint"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read atrium.app.yaml"));
    // Outside a project, lint and deploy say where they looked and how to name a manifest.
    let here = dir
        .path()
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    for (args, code) in [(&["lint"][..], 2), (&["deploy"][..], 1)] {
        let out = atrium(dir.path(), args);
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {said}");
        assert!(
            said.contains("--manifest") && said.contains(&here),
            "{args:?}: {said}"
        );
    }
    std::fs::create_dir(dir.path().join("adir")).expect("mkdir");
    assert_eq!(
        atrium(dir.path(), &["lint", "--manifest", "adir"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn non_utf8_manifest_is_a_problem_not_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("atrium.app.yaml"), [0xff, 0xfe, 0x00, 0x41]).expect("write");
    let out = atrium(dir.path(), &["lint"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("not UTF-8"));
}

#[test]
fn bad_command_line_exits_1_with_usage() {
    let dir = project(MINIMAL);
    for args in [
        &["lint", "--bogus"][..],
        &["frobnicate"],
        &[],
        &["lint", "--manifest"],
    ] {
        let out = atrium(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Usage"),
            "{args:?}"
        );
    }
    assert_eq!(
        atrium(dir.path(), &["lint", "--help"]).status.code(),
        Some(0)
    );
    assert_eq!(atrium(dir.path(), &["--version"]).status.code(), Some(0));
}

#[test]
fn templates_and_docs_beside_the_manifest_are_checked() {
    let dir = project(MINIMAL);
    let templates = dir.path().join("defaults/templates");
    std::fs::create_dir_all(&templates).expect("mkdir");
    std::fs::write(
        templates.join("a.json"),
        r#"{"slug":"letter","name":"Letter"}"#,
    )
    .expect("write");
    std::fs::write(
        templates.join("b.json"),
        r#"{"slug":"letter","name":"Again"}"#,
    )
    .expect("write");
    std::fs::write(templates.join("c.json"), r#"{"slug":"Bad","name":"x"}"#).expect("write");
    let docs = dir.path().join("app_docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(docs.join("big.md"), vec![b'x'; 600_000]).expect("write");
    let out = atrium(dir.path(), &["lint", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let problems: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("json");
    let has = |file_end: &str, code: &str| {
        problems
            .iter()
            .any(|p| p["file"].as_str().is_some_and(|f| f.ends_with(file_end)) && p["code"] == code)
    };
    assert!(has("c.json", "pattern"), "{problems:?}");
    assert!(has("b.json", "duplicate"), "{problems:?}");
    assert!(has("app_docs", "input_limit"), "{problems:?}");
    assert!(has("app_docs", "required"), "{problems:?}");
}

/// A heartbeat whose skill nothing on the host provides would fail every run until it is
/// disabled: lint refuses it, naming the skills the host provides.
#[test]
fn a_heartbeat_naming_a_skill_nothing_provides_is_refused() {
    let agents = |skill: &str, tool: &str| {
        format!(
            "{MINIMAL}agents:\n  - id: collector\n    name: Collector\n    system_prompt: Chase.\n    is_default: true\n    heartbeats:\n      - slug: overdue\n        skill: {skill}\n        tool: {tool}\n        interval_minutes: 60\n"
        )
    };
    let dir = project(&agents("invoices.search", "search_overdue"));
    let out = atrium(dir.path(), &["lint", "--offline"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "atrium.app.yaml:14:16: error[invalid_value] agents[0].heartbeats[0].skill: `invoices.search` is not a skill this host provides"
        ),
        "{text}"
    );
    for skill in [
        "`_internal_app_records`",
        "`_internal_agent_memory`",
        "`knowledge`",
        "`memory`",
        "`records`",
        "`rooms`",
    ] {
        assert!(text.contains(skill), "{skill}: {text}");
    }
    // A platform skill with a tool it does not have: refused at the tool, naming its tools.
    let dir = project(&agents("records", "search_overdue"));
    let out = atrium(dir.path(), &["lint", "--offline", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let problems: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        problems[0]["path"], "agents[0].heartbeats[0].tool",
        "{problems}"
    );
    assert_eq!(problems[0]["code"], "invalid_value", "{problems}");
    assert!(
        problems[0]["message"].as_str().unwrap().contains("`query`"),
        "{problems}"
    );
    // What the host provides passes.
    for (skill, tool) in [("records", "query"), ("_internal_app_records", "query")] {
        let dir = project(&agents(skill, tool));
        let out = atrium(dir.path(), &["lint", "--offline"]);
        assert_eq!(out.status.code(), Some(0), "{skill}: {}", stdout(&out));
    }
}

#[test]
fn example_manifests_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for example in ["minimal", "invoices", "invoices-py", "invoices-ts"] {
        let out = atrium(&root.join(example), &["lint", "--offline"]);
        assert_eq!(out.status.code(), Some(0), "{example}: {}", stdout(&out));
    }
}

/// Runs the manifest validator module (`guest-sdk/manifest-wasm`) in Node.js, as the Python and
/// TypeScript SDKs do, on each `(file, text)`; answers its JSON answers.
fn validator_module(cases: &[(String, String)]) -> Vec<serde_json::Value> {
    const SCRIPT: &str = r#"
const fs = require("fs");
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const module = new WebAssembly.Module(fs.readFileSync(process.env.VALIDATOR));
if (WebAssembly.Module.imports(module).length !== 0) throw new Error("the validator imports something");
const { exports } = new WebAssembly.Instance(module, {});
const answers = cases.map(([file, text]) => {
  const request = new TextEncoder().encode(JSON.stringify({ file, text }));
  const ptr = exports.atrium_alloc(request.length);
  new Uint8Array(exports.memory.buffer, ptr, request.length).set(request);
  const packed = exports.atrium_check(ptr, request.length);
  const at = Number(packed >> 32n), len = Number(packed & 0xffffffffn);
  const answer = new TextDecoder().decode(new Uint8Array(exports.memory.buffer, at, len));
  exports.atrium_free(at, len);
  return JSON.parse(answer);
});
process.stdout.write(JSON.stringify(answers));
"#;
    let mut child = std::process::Command::new("node")
        .args(["-e", SCRIPT])
        .env("VALIDATOR", atrium_test_artifacts::MANIFEST_VALIDATOR)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node runs (the SDK tests need Node.js 20 or later)");
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        serde_json::to_string(cases).unwrap().as_bytes(),
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The validator module the Python and TypeScript SDKs run and `atrium lint` give the same
/// findings for every manifest: every manifest of the examples and test guests, and broken
/// variants of them in YAML and JSON.
#[test]
fn the_sdks_validator_module_and_lint_agree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cases: Vec<(String, String)> = Vec::new();
    for manifest in [
        "examples/minimal/atrium.app.yaml",
        "examples/invoices/atrium.app.yaml",
        "examples/room-bot/atrium.app.yaml",
        "examples/ledger/atrium.app.yaml",
        "tests/guests/probe/atrium.app.yaml",
        "tests/guests/plain-http/atrium.app.yaml",
        "tests/guests/handlers-only/atrium.app.yaml",
        "guest-sdk/tests/fixtures/atrium.app.yaml",
    ] {
        let text = std::fs::read_to_string(root.join(manifest)).unwrap();
        cases.push(("atrium.app.yaml".into(), text.clone()));
        cases.push((
            "atrium.app.yaml".into(),
            text.replacen("app_id: ", "app_id: Not_A_Slug-", 1),
        ));
        cases.push((
            "atrium.app.yaml".into(),
            text.replacen("version: ", "colour: blue\nversion: ", 1),
        ));
    }
    cases.push((
        "atrium.app.yaml".into(),
        format!("{MINIMAL}  bad: [indent\n"),
    ));
    cases.push((
        "atrium.app.yaml".into(),
        format!("{MINIMAL}seed_doc_templates_from: old-app\n"),
    ));
    cases.push((
        "atrium.app.json".into(),
        r#"{"apiVersion": "platform/v2", "app_id": "json-app", "version": "1.0", "name": "J", "runtime": {"image": "x"}}"#.into(),
    ));
    let answers = validator_module(&cases);
    assert_eq!(answers.len(), cases.len());
    let mut invalid = 0;
    for ((file, text), answer) in cases.iter().zip(&answers) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(file), text).unwrap();
        let out = atrium(
            dir.path(),
            &["lint", "--offline", "--json", "--manifest", file],
        );
        let linted: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["findings"], linted, "{file}:\n{text}");
        assert_eq!(
            answer["valid"].as_bool(),
            Some(out.status.code() == Some(0)),
            "{file}:\n{text}"
        );
        assert_eq!(answer["manifest"].is_object(), answer["valid"] == true);
        invalid += usize::from(answer["valid"] == false);
    }
    assert!(invalid >= 18, "the broken variants are refused: {invalid}");
    // The normalised manifest is the host's model.
    assert_eq!(answers[3]["manifest"]["app_id"], "invoice-desk");
    assert_eq!(answers[3]["manifest"]["tools"][0]["name"], "list_invoices");
}
