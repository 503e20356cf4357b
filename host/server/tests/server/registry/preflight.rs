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
