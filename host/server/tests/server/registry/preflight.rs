//! Preflight: lint's checks of a project, plus those only the platform can make.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, manifest, slug};
use crate::stores;

#[tokio::test]
async fn preflight_adds_the_platform_checks_to_lint() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, token) = host.sign_up("ada", true).await;
        let (_, bob_token) = host.sign_up("bob", true).await;
        let app = slug("pre");
        let text = manifest(&app, "1.0.0", "required_scopes: [mail.send]\n");
        let project = |manifest: &str, files: Value| json!({"manifest": manifest, "manifest_file": "atrium.app.yaml", "files": files});

        let (status, body) = host
            .post("/api/dev/preflight", &token, Body::Json(project(&text, json!([
                {"path": "app_docs/user.md", "content": "# Hello"},
                {"path": "defaults/templates/memo.json", "content": r#"{"slug": "memo", "name": "Memo", "sections": [], "metadata": {}}"#},
            ]))))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["passed"], true, "{body}");
        assert_eq!(body["errors"], 0);

        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(project(
                    &text.replace("mail.send", "mail.sned"),
                    json!([
                        {"path": "app_docs/guide.md", "content_base64": "IyBHdWlkZQ=="},
                        {"path": "defaults/templates/memo.json", "content": r#"{"slug": "memo"}"#},
                    ]),
                )),
            )
            .await;
        assert_eq!(body["passed"], false, "{body}");
        let problems = body["problems"].as_array().unwrap();
        assert!(
            problems.iter().any(|p| p["path"] == "required_scopes[0]"
                && p["message"].as_str().unwrap().contains("mail.sned")),
            "{body}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p["file"] == "defaults/templates/memo.json" && p["severity"] == "error"),
            "{body}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p["file"] == "app_docs" && p["severity"] == "warning"),
            "{body}"
        );

        // A heartbeat naming a skill the host does not provide is refused at registration,
        // as lint and the preflight refuse it, and nothing is stored.
        let unknown_skill = manifest(
            &app,
            "0.9.0",
            "agents:\n  - id: desk\n    name: Desk\n    system_prompt: Watches.\n    heartbeats:\n      - slug: overdue\n        skill: invoices.search\n        tool: search_overdue\n        interval_minutes: 60\n",
        );
        let (status, body) = host
            .register(
                &app,
                &token,
                &[("manifest", None, unknown_skill.as_bytes())],
            )
            .await;
        assert!(status.is_client_error(), "{status}: {body}");
        assert!(
            body.to_string().contains("agents[0].heartbeats[0].skill")
                && body.to_string().contains("invoices.search"),
            "{body}"
        );
        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(project(&unknown_skill, json!([]))),
            )
            .await;
        assert_eq!(body["passed"], false, "{body}");
        assert!(
            body["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["path"] == "agents[0].heartbeats[0].skill"),
            "{body}"
        );
        // Registered: the same manifest is a warning, another one under that version an error,
        // and the app_id is another developer's.
        let (status, _) = host
            .register(&app, &token, &[("manifest", None, text.as_bytes())])
            .await;
        assert_eq!(status, StatusCode::CREATED);
        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(project(&text, json!([]))),
            )
            .await;
        assert_eq!(body["passed"], true, "{body}");
        assert_eq!(body["problems"][0]["path"], "version", "{body}");
        assert_eq!(body["problems"][0]["severity"], "warning", "{body}");
        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(project(&text.replace("Test", "Changed"), json!([]))),
            )
            .await;
        assert_eq!(body["passed"], false, "{body}");
        assert!(
            body["problems"][0]["message"]
                .as_str()
                .unwrap()
                .contains("bump"),
            "{body}"
        );
        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &bob_token,
                Body::Json(project(&text, json!([]))),
            )
            .await;
        assert_eq!(body["passed"], false, "{body}");
        assert_eq!(body["problems"][0]["path"], "app_id", "{body}");

        // A component registered with the digest of its build inputs (a Rust project's, sent
        // as a part; a Python or TypeScript component carries its own) and a docs file: the
        // preflight compares the project's with the version's, and names a free version when
        // they differ, before anything is built.
        let component = std::fs::read(atrium_test_artifacts::MINIMAL).unwrap();
        let inputs = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let built = manifest(&app, "2.0.0", "");
        let registered_inputs = inputs('a');
        let (status, body) = host
            .register(
                &app,
                &token,
                &[
                    ("manifest", None, built.as_bytes()),
                    ("component", None, component.as_slice()),
                    ("build_inputs", None, registered_inputs.as_bytes()),
                    ("app_docs", Some("user.md"), b"# Hello"),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let check = |build_inputs: Option<String>, docs: &str| {
            let mut request = project(
                &built,
                json!([{"path": "app_docs/user.md", "content": docs}]),
            );
            if let Some(inputs) = build_inputs {
                request["build_inputs"] = json!(inputs);
            }
            request
        };
        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(check(Some(inputs('a')), "# Hello")),
            )
            .await;
        assert_eq!(body["passed"], true, "{body}");
        assert_eq!(body["problems"][0]["path"], "version", "{body}");
        assert!(
            body["problems"][0]["message"]
                .as_str()
                .unwrap()
                .contains("same content"),
            "{body}"
        );
        // The code changed, not the version: what registering would refuse with 409.
        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(check(Some(inputs('b')), "# Hello")),
            )
            .await;
        assert_eq!(body["passed"], false, "{body}");
        assert_eq!(body["problems"][0]["severity"], "error", "{body}");
        let said = body["problems"][0]["message"].as_str().unwrap();
        assert!(
            said.contains("other build inputs") && said.contains("atrium deploy --version 2.0.1"),
            "{body}"
        );
        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(check(Some(inputs('a')), "# Hello again")),
            )
            .await;
        assert_eq!(body["passed"], false, "{body}");
        assert!(
            body["problems"][0]["message"]
                .as_str()
                .unwrap()
                .contains("other docs"),
            "{body}"
        );
        // Without the inputs the component cannot be compared: a warning that says so.
        let (_, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(check(None, "# Hello")),
            )
            .await;
        assert_eq!(body["passed"], true, "{body}");
        assert!(
            body["problems"][0]["message"]
                .as_str()
                .unwrap()
                .contains("another one is refused"),
            "{body}"
        );
        // Build inputs are a digest, in the preflight and the registration alike.
        let (status, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(check(Some("sha256:xyz".to_owned()), "# Hello")),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "build_inputs", "{body}");
        let next = manifest(&app, "3.0.0", "");
        let (status, body) = host
            .register(
                &app,
                &token,
                &[
                    ("manifest", None, next.as_bytes()),
                    ("component", None, component.as_slice()),
                    ("build_inputs", None, b"not a digest"),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "build_inputs", "{body}");

        let (status, body) = host
            .post(
                "/api/dev/preflight",
                &token,
                Body::Json(json!({"manifests": text})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "manifests", "{body}");
        let (status, _) = host
            .send(
                "POST",
                "/api/dev/preflight",
                None,
                Body::Json(project(&text, json!([]))),
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        host.stop().await;
        drop(dir);
    }
}
