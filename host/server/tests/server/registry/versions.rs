//! Registering versions: once per version, by the app's owner, then promoted and archived;
//! and the registrations refused, each naming what is wrong and leaving nothing behind.

use atrium_runtime::build_inputs;
use reqwest::StatusCode;

use super::{Body, Host, Part, code, manifest, message, slug};
use crate::stores;

#[tokio::test]
async fn versions_are_registered_once_owned_promoted_and_archived() {
    let component = std::fs::read(atrium_test_artifacts::MINIMAL).unwrap();
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, ada_token) = host.sign_up("ada", true).await;
        let (_, bob_token) = host.sign_up("bob", false).await;
        let app = slug("notes");

        // A container-image app: the manifest alone.
        let v1 = manifest(&app, "1.0.0", "");
        let v1_parts = [("manifest", Some("atrium.app.yaml"), v1.as_bytes())];
        let (status, body) = host.register(&app, &ada_token, &v1_parts).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["created"], true);
        assert_eq!(body["app"]["status"], "draft");
        assert_eq!(body["version"]["status"], "registered");
        assert_eq!(body["version"]["kind"], "image");
        assert_eq!(body["version"]["build_result"], "success");
        assert_eq!(
            body["version"]["image"],
            format!("ghcr.io/acme/{app}:1.0.0")
        );

        // The same again is a no-op; anything else under that version is a conflict.
        let (status, body) = host.register(&app, &ada_token, &v1_parts).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["created"], false);
        let changed = v1.replace("name: Test", "name: Changed");
        let blobs_before = host.blobs();
        let (status, body) = host
            .register(
                &app,
                &ada_token,
                &[
                    ("manifest", Some("atrium.app.yaml"), changed.as_bytes()),
                    (
                        "app_docs",
                        Some("user.md"),
                        b"# A file no version will keep\n",
                    ),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(code(&body), "immutable");
        assert!(message(&body).contains("immutable"), "{body}");
        // The refused registration wrote a docs blob before the database said no; it is gone.
        assert_eq!(host.blobs(), blobs_before);

        // Someone else's app.
        let (status, body) = host.register_image(&app, &bob_token, "9.0.0").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(message(&body).contains("another developer"), "{body}");
        for path in [
            format!("/api/dev/apps/{app}"),
            format!("/api/dev/apps/{app}/secrets"),
        ] {
            assert_eq!(
                host.get(&path, &bob_token).await.0,
                StatusCode::FORBIDDEN,
                "{path}"
            );
        }

        // A component version, and a docs bundle beside it.
        let v2 = manifest(&app, "1.1.0", "");
        let (status, body) = host
            .register(
                &app,
                &ada_token,
                &[
                    ("manifest", Some("atrium.app.yaml"), v2.as_bytes()),
                    ("component", Some("app.wasm"), &component),
                    (
                        "app_docs",
                        Some("app_docs/user.md"),
                        b"# Notes\nHow to use it.\n",
                    ),
                    ("app_docs", Some("guides/setup.md"), b"# Setup\n"),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["version"]["kind"], "component");
        let digest = body["version"]["component_digest"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(digest.starts_with("sha256:"), "{body}");
        assert_eq!(body["docs"].as_array().unwrap().len(), 2, "{body}");
        assert_eq!(body["docs"][0]["path"], "guides/setup.md");
        let hex = digest.trim_start_matches("sha256:");
        assert!(
            host.blobs().iter().any(|p| p.ends_with(hex)),
            "the component is stored by digest"
        );

        // A component that carries its build inputs counts by them: a rebuild of the same
        // inputs (other bytes) is the version already there, which keeps its first bytes and
        // stores nothing more; other inputs are other content.
        let inputs = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let tagged = build_inputs::embed(&component, &inputs('a')).unwrap();
        let v15 = manifest(&app, "1.1.5", "");
        let v15_with = |component: &[u8]| -> [(&'static str, Option<&'static str>, Vec<u8>); 2] {
            [
                (
                    "manifest",
                    Some("atrium.app.yaml"),
                    v15.clone().into_bytes(),
                ),
                ("component", Some("app.wasm"), component.to_vec()),
            ]
        };
        fn as_parts<'a>(
            owned: &'a [(&'static str, Option<&'static str>, Vec<u8>); 2],
        ) -> [Part<'a>; 2] {
            owned
                .each_ref()
                .map(|(name, file, bytes)| (*name, *file, bytes.as_slice()))
        }
        let first = v15_with(&tagged);
        let (status, body) = host.register(&app, &ada_token, &as_parts(&first)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let kept = body["version"]["component_digest"].clone();
        // The rebuild: the same inputs, other bytes (a custom section of its own).
        let mut rebuilt = component.clone();
        rebuilt.extend_from_slice(b"\0\x05\x04note");
        let rebuilt = build_inputs::embed(&rebuilt, &inputs('a')).unwrap();
        assert_ne!(rebuilt, tagged);
        let blobs_before = host.blobs();
        let again = v15_with(&rebuilt);
        let (status, body) = host.register(&app, &ada_token, &as_parts(&again)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["created"], false, "{body}");
        assert_eq!(body["version"]["component_digest"], kept, "{body}");
        assert_eq!(
            host.blobs(),
            blobs_before,
            "the rebuild's bytes were not kept"
        );
        let other = v15_with(&build_inputs::embed(&component, &inputs('c')).unwrap());
        let (status, body) = host.register(&app, &ada_token, &as_parts(&other)).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(code(&body), "immutable");
        assert_eq!(host.blobs(), blobs_before);

        // Not a component: refused, nothing stored.
        let blobs_before = host.blobs();
        let (status, body) = host
            .register(
                &app,
                &ada_token,
                &[
                    ("manifest", None, manifest(&app, "1.2.0", "").as_bytes()),
                    ("component", None, b"\0asm\x0d\0\x01\0garbage"),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "invalid_component");
        assert_eq!(body["error"]["param"], "component");
        assert_eq!(host.blobs(), blobs_before);

        // A component written without the SDK that registers what its manifest does not
        // declare: refused as the SDK would refuse it, naming the registration; nothing stored.
        let hostile = std::fs::read(atrium_test_artifacts::HOSTILE).unwrap();
        let hostile_manifest = |register: &str| {
            std::fs::read_to_string(atrium_test_artifacts::HOSTILE_MANIFEST)
                .unwrap()
                .replace("app_id: hostile", &format!("app_id: {app}"))
                .replace("version: 1.0.0", "version: 1.3.0")
                .replace(
                    "HOSTILE_REGISTER: \"\"",
                    &format!("HOSTILE_REGISTER: \"{register}\""),
                )
        };
        for (register, words) in [
            (
                "tool:drop_tables",
                "cannot register tool `drop_tables`: it is not in the manifest's tools",
            ),
            (
                "route:POST /admin",
                "cannot register route `POST /admin`: it is not in the manifest's http_routes",
            ),
        ] {
            let text = hostile_manifest(register);
            let (status, body) = host
                .register(
                    &app,
                    &ada_token,
                    &[
                        ("manifest", None, text.as_bytes()),
                        ("component", None, &hostile),
                    ],
                )
                .await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            assert_eq!(code(&body), "invalid_component");
            assert!(message(&body).contains(words), "{body}");
            assert_eq!(host.blobs(), blobs_before);
        }

        // Promotion: needs publish_allowed, a registered version and the owner.
        let promote = |v: &str| format!("/api/dev/apps/{app}/versions/{v}/promote");
        let (status, body) = host.post(&promote("9.9.9"), &ada_token, Body::None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        let (status, _) = host.post(&promote("1.1.0"), &bob_token, Body::None).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host.post(&promote("1.1.0"), &ada_token, Body::None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["app"]["status"], "active");
        assert_eq!(body["app"]["current_version"], "1.1.0");

        // Bob may register his own app but not promote it.
        let his = slug("bobs");
        let (status, _) = host.register_image(&his, &bob_token, "0.1.0").await;
        assert_eq!(status, StatusCode::CREATED);
        let (status, body) = host
            .post(
                &format!("/api/dev/apps/{his}/versions/0.1.0/promote"),
                &bob_token,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(message(&body).contains("publish_allowed"), "{body}");

        // Listings: each developer sees their own apps only.
        let (status, list) = host.get("/api/dev/apps", &ada_token).await;
        assert_eq!(status, StatusCode::OK);
        let apps = list["apps"].as_array().unwrap();
        assert_eq!(apps.len(), 1, "{list}");
        assert_eq!(apps[0]["slug"], app.as_str());
        assert_eq!(apps[0]["status"], "active");
        let (_, shown) = host.get(&format!("/api/dev/apps/{app}"), &ada_token).await;
        let versions = shown["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 3, "{shown}");
        assert!(shown["versions_next_cursor"].is_null(), "{shown}");
        // The versions a page at a time, newest first; another developer's are refused.
        let versions_path = format!("/api/dev/apps/{app}/versions");
        let pages = host.pages(&versions_path, &ada_token, "versions", 1).await;
        let names: Vec<&str> = pages
            .iter()
            .flatten()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["1.1.5", "1.1.0", "1.0.0"]);
        assert_eq!(pages[1][0]["current"], true);
        let (status, _) = host.get(&versions_path, &bob_token).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        // A second app of ada's, and her apps a page at a time, by slug.
        let second = slug("notes-b");
        let second_manifest = manifest(&second, "1.0.0", "");
        let parts = [(
            "manifest",
            Some("atrium.app.yaml"),
            second_manifest.as_bytes(),
        )];
        let (status, body) = host.register(&second, &ada_token, &parts).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let pages = host.pages("/api/dev/apps", &ada_token, "apps", 1).await;
        let mut slugs: Vec<&str> = pages
            .iter()
            .flatten()
            .map(|a| a["slug"].as_str().unwrap())
            .collect();
        assert_eq!(slugs.len(), 2, "{pages:?}");
        assert!(slugs[0] < slugs[1], "by slug: {slugs:?}");
        slugs.sort_unstable();
        let mut expected = [app.as_str(), second.as_str()];
        expected.sort_unstable();
        assert_eq!(slugs, expected);
        let (_, his_list) = host.get("/api/dev/apps", &bob_token).await;
        assert!(
            his_list["apps"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["slug"] != app.as_str() && a["slug"] != second.as_str()),
            "{his_list}"
        );
        let current = versions.iter().find(|v| v["version"] == "1.1.0").unwrap();
        assert_eq!(current["status"], "published");
        assert_eq!(current["current"], true);
        assert_eq!(current["component_digest"], digest.as_str());
        let old = versions.iter().find(|v| v["version"] == "1.0.0").unwrap();
        assert_eq!(old["status"], "registered");
        assert_eq!(old["current"], false);
        assert!(old["created_at"].as_str().unwrap().ends_with('Z'));
        let (status, _) = host
            .get(&format!("/api/dev/apps/{}", slug("nothing")), &ada_token)
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, body) = host.get("/api/dev/apps/Not_A_Slug", &ada_token).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["param"], "slug");

        // Archive.
        let (status, _) = host
            .post(
                &format!("/api/dev/apps/{app}/archive"),
                &bob_token,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host
            .post(
                &format!("/api/dev/apps/{app}/archive"),
                &ada_token,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["app"]["status"], "archived");
        assert!(body["app"]["archived_at"].is_string());
        host.stop().await;
        drop(dir);
    }
}

#[tokio::test]
async fn bad_registrations_name_what_is_wrong() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, token) = host.sign_up("ada", true).await;
        let app = slug("bad");
        let text = manifest(&app, "1.0.0", "");

        let (status, body) = host
            .register(&app, &token, &[("component", None, b"\0asm")])
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "manifest");
        let (status, body) = host
            .register(
                &app,
                &token,
                &[("manifest", None, text.as_bytes()), ("readme", None, b"x")],
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "readme");

        // Every problem of the manifest, in lint's shape.
        let broken = manifest(
            &app,
            "1.0",
            "colour: blue\nrequired_scopes: [mail.send, telepathy.read]\n",
        );
        let (status, body) = host
            .register(
                &app,
                &token,
                &[("manifest", Some("atrium.app.yaml"), broken.as_bytes())],
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "invalid_project");
        let problems = body["error"]["problems"].as_array().unwrap();
        let paths: Vec<&str> = problems
            .iter()
            .map(|p| p["path"].as_str().unwrap())
            .collect();
        assert!(paths.contains(&"version"), "{body}");
        assert!(paths.contains(&"colour"), "{body}");
        assert!(
            problems.iter().all(|p| p["file"] == "atrium.app.yaml"
                && p["code"].is_string()
                && p["severity"].is_string()),
            "{body}"
        );

        // A scope the platform does not know, once the manifest is otherwise valid.
        let unknown = manifest(
            &app,
            "1.0.0",
            "required_scopes: [mail.send, telepathy.read]\n",
        );
        let (status, body) = host
            .register(&app, &token, &[("manifest", None, unknown.as_bytes())])
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            body["error"]["problems"][0]["path"], "required_scopes[1]",
            "{body}"
        );
        assert!(message(&body).contains("telepathy.read"), "{body}");

        // The path names another app than the manifest.
        let (status, body) = host
            .register(
                &app,
                &token,
                &[(
                    "manifest",
                    None,
                    manifest("other-app", "1.0.0", "").as_bytes(),
                )],
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["error"]["problems"][0]["path"], "app_id", "{body}");

        // Docs over the limits of section 8.
        let big = vec![b'a'; 500_001];
        let (status, body) = host
            .register(
                &app,
                &token,
                &[
                    ("manifest", None, text.as_bytes()),
                    ("app_docs", Some("user.md"), &big),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
        assert_eq!(body["error"]["param"], "app_docs");
        assert!(message(&body).contains("500 KB"), "{body}");
        let names: Vec<String> = (0..201).map(|i| format!("page-{i}.md")).collect();
        let mut parts: Vec<Part<'_>> = vec![("manifest", None, text.as_bytes())];
        parts.extend(
            names
                .iter()
                .map(|n| ("app_docs", Some(n.as_str()), b"# page\n".as_slice())),
        );
        let (status, body) = host.register(&app, &token, &parts).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
        assert!(message(&body).contains("201 files"), "{body}");
        let (status, body) = host
            .register(
                &app,
                &token,
                &[
                    ("manifest", None, text.as_bytes()),
                    ("app_docs", Some("../escape.md"), b"x"),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "app_docs");

        // Template defaults sent with the registration are checked too.
        let (status, body) = host
            .register(
                &app,
                &token,
                &[
                    ("manifest", None, text.as_bytes()),
                    ("templates", Some("memo.json"), br#"{"slug": "Memo"}"#),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(
            body["error"]["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["file"] == "memo.json"),
            "{body}"
        );

        // None of it registered anything.
        assert_eq!(
            host.get(&format!("/api/dev/apps/{app}"), &token).await.0,
            StatusCode::NOT_FOUND
        );
        assert!(host.blobs().is_empty(), "{:?}", host.blobs());
        host.stop().await;
        drop(dir);
    }
}
