//! `atrium dev` in a real browser: headless Chromium opens the parent shell, the bundle in its
//! frame calls the app's tools through the postMessage bridge and shows the answers (a mocked
//! platform tool, an unmocked one, an unknown tool), the theme toggle reaches the bundle, and a
//! change of the mock file and of the bundle reloads the page with the new answers.

use std::io::BufRead as _;
use std::process::{Command, Stdio};

use crate::stderr;

const INDEX: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Probe</title></head>
<body>
<p id="echo"></p><p id="mocked"></p><p id="unmocked"></p><p id="unknown"></p>
<script src="app.js"></script>
</body></html>
"#;

const APP_JS: &str = r#"const pending = new Map();
let next = 1;
function call(name, args) {
  const id = String(next++);
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    window.parent.postMessage({ type: "atrium:call-tool", id, name, args }, "*");
  });
}
function show(id, promise) {
  promise.then(
    (r) => { document.getElementById(id).textContent = "ok " + JSON.stringify(r); },
    (e) => { document.getElementById(id).textContent = "error " + e.decision + " " + e.message; });
}
window.addEventListener("message", (event) => {
  const m = event.data || {};
  if (m.type === "atrium:init" || m.type === "atrium:theme") {
    document.documentElement.dataset.theme = m.theme;
  }
  if (m.type === "atrium:init") {
    show("echo", call("echo", { word: "hi" }));
    show("mocked", call("platform", { op: "tool", name: "records.put", args: { title: "x" } }));
    show("unmocked", call("platform", { op: "tool", name: "records.query", args: {} }));
    show("unknown", call("no_such_tool", {}));
  }
  if (m.type === "atrium:tool-result" && pending.has(m.id)) {
    const { resolve, reject } = pending.get(m.id);
    pending.delete(m.id);
    m.ok ? resolve(m.result) : reject(m.error);
  }
});
window.parent.postMessage({ type: "atrium:ready" }, "*");
"#;

/// `atrium dev --no-open` on free ports for the project in `dir`, serving `component` as it
/// is: the process (killed when dropped), the bundle's address and the parent shell's. The
/// rest of its output is read and dropped, so the pipe never fills.
pub(crate) fn start(
    dir: &std::path::Path,
    component: &std::path::Path,
    env: &[(&str, &str)],
) -> (crate::KillOnDrop, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_atrium"))
        .args([
            "dev",
            "--no-open",
            "--bundle-port",
            "0",
            "--parent-port",
            "0",
            "--component",
        ])
        .arg(component)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let dev = crate::KillOnDrop(child);
    let (mut bundle, mut shell) = (None, None);
    while bundle.is_none() || shell.is_none() {
        let line = lines
            .next()
            .expect("atrium dev prints its addresses")
            .unwrap();
        if let Some(rest) = line.strip_prefix("Bundle:") {
            bundle = rest.split_whitespace().next().map(str::to_owned);
        } else if let Some(rest) = line.strip_prefix("Parent shell:") {
            shell = Some(rest.trim().to_owned());
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    (dev, bundle.unwrap_or_default(), shell.unwrap_or_default())
}

const SCRIPT: &str = r##"const { chromium } = require(process.env.PLAYWRIGHT);
const fs = require("fs");
(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const page = await browser.newPage();
  await page.goto(process.env.SHELL_URL);
  const frame = page.frameLocator("#app");
  const text = async (id, expected) => {
    const node = frame.locator("#" + id);
    await node.filter({ hasText: expected }).waitFor({ timeout: 30000 });
    return node.textContent();
  };
  const out = {};
  out.echo = await text("echo", "hi");
  out.mocked = await text("mocked", "r-1");
  out.unmocked = await text("unmocked", "unmocked");
  out.unknown = await text("unknown", "unknown_tool");
  await page.click("#theme");
  await frame.locator('html[data-theme="dark"]').waitFor({ timeout: 10000 });
  out.theme = "dark";
  // A new mock answer and a bundle change: the page reloads and asks again.
  fs.writeFileSync(process.env.MOCKS, JSON.stringify({ "records.put": { ok: true, result: { id: "r-2" } } }));
  fs.appendFileSync(process.env.INDEX, "<!-- changed -->\n");
  out.reloaded = await text("mocked", "r-2");
  out.status = await page.locator("#status").textContent();
  out.log = await page.locator("#log").textContent();
  console.log(JSON.stringify(out));
  await browser.close();
})().catch((e) => { console.error(e); process.exit(1); });
"##;

#[test]
fn dev_runs_the_bundle_and_the_component_in_a_parent_shell() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("probe");
    std::fs::create_dir_all(project.join("web")).unwrap();
    std::fs::copy(
        atrium_test_artifacts::PROBE_MANIFEST,
        project.join("atrium.app.yaml"),
    )
    .unwrap();
    std::fs::write(project.join("web/index.html"), INDEX).unwrap();
    std::fs::write(project.join("web/app.js"), APP_JS).unwrap();
    let mocks = project.join("atrium.dev.json");
    std::fs::write(
        &mocks,
        r#"{"records.put": {"ok": true, "result": {"id": "r-1"}}}"#,
    )
    .unwrap();

    // Bad input first: no bundle to serve is exit 1.
    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).unwrap();
    std::fs::copy(
        atrium_test_artifacts::PROBE_MANIFEST,
        bare.join("atrium.app.yaml"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_atrium"))
        .args([
            "dev",
            "--no-open",
            "--bundle-port",
            "0",
            "--parent-port",
            "0",
        ])
        .current_dir(&bare)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no dist/ or web/"),
        "{}",
        stderr(&out)
    );

    let (mut dev, _bundle, shell) = start(&project, atrium_test_artifacts::PROBE.as_ref(), &[]);
    let index = project.join("web/index.html");
    let out = atrium_test_artifacts::browser::run_script(
        dir.path(),
        SCRIPT,
        &[
            ("SHELL_URL", shell.as_str()),
            ("MOCKS", mocks.to_str().unwrap()),
            ("INDEX", index.to_str().unwrap()),
        ],
    );
    let _ = Command::new("kill")
        .args(["-INT", &dev.0.id().to_string()])
        .status();
    let status = dev.0.wait().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(status.code(), Some(0), "atrium dev stops cleanly on Ctrl-C");
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(seen["echo"].as_str().unwrap().starts_with("ok "), "{seen}");
    assert!(
        seen["mocked"].as_str().unwrap().contains("\"r-1\""),
        "{seen}"
    );
    assert!(
        seen["unmocked"]
            .as_str()
            .unwrap()
            .contains("\"decision\":\"unmocked\""),
        "{seen}"
    );
    assert!(
        seen["unknown"]
            .as_str()
            .unwrap()
            .starts_with("error unknown_tool"),
        "{seen}"
    );
    assert_eq!(seen["theme"], "dark");
    assert!(
        seen["reloaded"].as_str().unwrap().contains("\"r-2\""),
        "{seen}"
    );
    assert_eq!(seen["status"], "component ready", "{seen}");
    assert!(
        seen["log"]
            .as_str()
            .unwrap()
            .contains("reload: bundle changed"),
        "{seen}"
    );
}
