//! Default templates and frontend bundles: set once per version, and hostile archives
//! refused.

use reqwest::StatusCode;
use serde_json::json;

use super::{Body, Host, code, message, slug, tar_of, zip_of};
use crate::stores;

#[tokio::test]
async fn templates_and_bundles_are_set_once_per_version() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, token) = host.sign_up("ada", true).await;
        let (_, bob_token) = host.sign_up("bob", true).await;
        let app = slug("docs");
        let (status, _) = host.register_image(&app, &token, "2.0.0").await;
        assert_eq!(status, StatusCode::CREATED);

        let templates_path = format!("/api/dev/apps/{app}/versions/2.0.0/defaults/templates");
        let templates = json!([
            {"slug": "memo", "name": "Memo", "description": "A short memo", "sections": [{"type": "markdown", "id": "body", "content": "# Memo"}], "metadata": {}},
            {"slug": "minutes", "name": "Minutes", "sections": [], "metadata": {"kind": "meeting"}}
        ]);
        let (status, body) = host
            .post(&templates_path, &token, Body::Json(templates.clone()))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["templates"], 2);
        // The same templates in another order are the same set.
        let reordered = json!([templates[1], templates[0]]);
        let (status, body) = host
            .post(&templates_path, &token, Body::Json(reordered))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["created"], false);
        let (status, body) = host
            .post(&templates_path, &token, Body::Json(json!([templates[0]])))
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        let (status, body) = host
            .post(&templates_path, &token, Body::Json(json!([{"slug": "x"}])))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            body["error"]["problems"][0]["file"], "templates[0]",
            "{body}"
        );
        let (status, _) = host
            .post(&templates_path, &bob_token, Body::Json(templates.clone()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) = host
            .post(
                &format!("/api/dev/apps/{app}/versions/3.0.0/defaults/templates"),
                &token,
                Body::Json(templates.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // The frontend bundle.
        let bundle_path = format!("/api/dev/apps/{app}/versions/2.0.0/bundle");
        let put = |body: Vec<u8>, token: String| {
            let path = bundle_path.clone();
            let host = &host;
            async move {
                host.put(&path, &token, Body::Raw("application/zip".into(), body))
                    .await
            }
        };
        let site = zip_of(&[
            ("index.html", b"<h1>Docs</h1>"),
            ("assets/app.js", b"console.log(1)"),
        ]);
        let (status, body) = put(site.clone(), token.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["files"], 2);
        let digest = body["bundle_digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:")
            .to_owned();
        let unpacked = host.data().join("bundles").join(&digest);
        assert_eq!(
            std::fs::read(unpacked.join("assets/app.js")).unwrap(),
            b"console.log(1)"
        );
        // The same files as a tar are the same bundle; other files are refused.
        let same = tar_of(&[
            (
                "index.html",
                tar::EntryType::Regular,
                b"<h1>Docs</h1>",
                None,
            ),
            (
                "assets/app.js",
                tar::EntryType::Regular,
                b"console.log(1)",
                None,
            ),
        ]);
        let (status, body) = put(same, token.clone()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, body) = put(zip_of(&[("index.html", b"<h1>Other</h1>")]), token.clone()).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert!(message(&body).contains("bundle"), "{body}");
        let (status, _) = put(site.clone(), bob_token.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN);

        // Hostile archives, on a fresh version.
        let (status, _) = host.register_image(&app, &token, "2.0.1").await;
        assert_eq!(status, StatusCode::CREATED);
        let hostile_path = format!("/api/dev/apps/{app}/versions/2.0.1/bundle");
        let hostile = |body: Vec<u8>| {
            let path = hostile_path.clone();
            let (host, token) = (&host, token.clone());
            async move {
                host.put(
                    &path,
                    &token,
                    Body::Raw("application/octet-stream".into(), body),
                )
                .await
            }
        };
        let slip = zip_of(&[("../../etc/evil.sh", b"rm -rf /")]);
        let (status, body) = hostile(slip).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "invalid_archive");
        assert!(message(&body).contains("evil.sh"), "{body}");
        let link = tar_of(&[(
            "index.html",
            tar::EntryType::Symlink,
            b"",
            Some("/etc/passwd"),
        )]);
        let (status, body) = hostile(link).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let device = tar_of(&[("dev", tar::EntryType::Char, b"", None)]);
        assert_eq!(hostile(device).await.0, StatusCode::UNPROCESSABLE_ENTITY);
        let absolute = tar_of(&[("/tmp/x", tar::EntryType::Regular, b"x", None)]);
        assert_eq!(hostile(absolute).await.0, StatusCode::UNPROCESSABLE_ENTITY);
        let many: Vec<(String, &[u8])> = (0..2001)
            .map(|i| (format!("f{i}.txt"), b"".as_slice()))
            .collect();
        let many: Vec<(&str, &[u8])> = many.iter().map(|(p, b)| (p.as_str(), *b)).collect();
        let (status, body) = hostile(zip_of(&many)).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
        let (status, body) = hostile(vec![
            0u8;
            atrium_platform::registry::BUNDLE_ARCHIVE_BYTES + 1
        ])
        .await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
        assert_eq!(
            hostile(b"not an archive".to_vec()).await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        // Nothing escaped the bundles directory, and the version still has no bundle.
        assert!(!host.data().join("etc").exists());
        let (_, shown) = host.get(&format!("/api/dev/apps/{app}"), &token).await;
        let fresh = shown["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["version"] == "2.0.1")
            .unwrap()
            .clone();
        assert!(fresh["bundle_digest"].is_null(), "{shown}");
        host.stop().await;
        drop(dir);
    }
}
