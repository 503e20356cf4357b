//! Lifecycle hooks over HTTP: a first activation whose `on_install` fails is undone, and one
//! that succeeds serves calls.

use atrium_store::TenantKey;
use reqwest::StatusCode;
use serde_json::json;

use super::{Body, Host, code, slug};
use crate::{stores, unique};

/// The invoices example, under fresh slugs: its `on_install` refuses an empty company name, and
/// a first activation whose hook fails is undone.
#[tokio::test]
async fn a_failing_on_install_undoes_the_first_activation() {
    let component = std::fs::read(atrium_test_artifacts::INVOICES).unwrap();
    let (store, _dir) = stores().await.remove(0);
    let host = Host::start(&store).await;
    let (_, dev) = host.sign_up("ada", true).await;
    let (desk, ledger) = (slug("desk"), slug("ledger"));
    let text = std::fs::read_to_string(atrium_test_artifacts::INVOICES_MANIFEST)
        .unwrap()
        .replace("app_id: invoice-desk", &format!("app_id: {desk}"))
        .replace("app_id: ledger", &format!("app_id: {ledger}"));
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("version: "))
        .unwrap()
        .trim()
        .to_owned();
    for (app, parts) in [
        (
            &ledger,
            vec![(
                "manifest",
                None,
                super::manifest(&ledger, "1.0.0", "").into_bytes(),
            )],
        ),
        (
            &desk,
            vec![
                ("manifest", None, text.clone().into_bytes()),
                ("component", None, component.clone()),
            ],
        ),
    ] {
        let parts: Vec<super::Part<'_>> = parts
            .iter()
            .map(|(n, f, b)| (*n, *f, b.as_slice()))
            .collect();
        let (status, body) = host.register(app, &dev, &parts).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let v = if app == &desk {
            version.as_str()
        } else {
            "1.0.0"
        };
        let (status, body) = host
            .post(
                &format!("/api/dev/apps/{app}/versions/{v}/promote"),
                &dev,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
    let (_, created) = host
        .post(
            "/api/tenants/shop/tokens",
            &acme.secret,
            Body::Json(json!({"role": "admin"})),
        )
        .await;
    let admin = created["token"].as_str().unwrap().to_owned();
    host.put(
        "/api/integrations/gmail",
        &admin,
        Body::Json(json!({"config": {"primary_email": "a@shop.example"}})),
    )
    .await;
    host.post(
        &format!("/api/installs/{ledger}/activate"),
        &admin,
        Body::Json(json!({})),
    )
    .await;
    store
        .create_collection(
            &TenantKey::new(&acme.org_id, "shop"),
            "contracts",
            "lexical",
            "lexical-v1",
        )
        .await
        .unwrap();
    let scopes = json!(["invoices.read", "invoices.write", "mail.send"]);
    let (status, body) = host
        .post(
            &format!("/api/installs/{desk}/activate"),
            &admin,
            Body::Json(json!({"granted_scopes": scopes, "settings": {"company_name": "   "}, "rag_bindings": {"contracts": "contracts"}})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(code(&body), "install_hook_failed");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("company_name"),
        "{body}"
    );
    let (status, _) = host.get(&format!("/api/installs/{desk}"), &admin).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the refused activation left no install"
    );

    let (status, body) = host
        .post(
            &format!("/api/installs/{desk}/activate"),
            &admin,
            Body::Json(json!({"granted_scopes": scopes, "settings": {"company_name": "Acme"}, "rag_bindings": {"contracts": "contracts"}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"], "active", "{body}");
    let (status, body) = host
        .post(
            &format!("/api/apps/{desk}/tools/list_invoices"),
            &admin,
            Body::Json(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["invoices"], json!([]), "{body}");
    assert_eq!(body["result"]["currency"], "EUR", "{body}");
    // Workflow overrides, merged by id and kept across a re-activation.
    let workflows = format!("/api/installs/{desk}/workflows");
    let (status, body) = host.get(&workflows, &admin).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["workflows"][0]["id"], "approve-flow", "{body}");
    let flow = format!("{workflows}/approve-flow");
    let (status, body) = host
        .send(
            "PATCH",
            &flow,
            Some(&admin),
            Body::Json(json!({"specifics": "Never above 500 EUR."})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["specifics"], "Never above 500 EUR.");
    assert_eq!(body["overridden"], json!(["specifics"]));
    let (status, body) = host
        .send(
            "PATCH",
            &flow,
            Some(&admin),
            Body::Json(json!({"flow": []})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["param"], "flow");
    let (status, _) = host
        .send(
            "PATCH",
            &format!("{workflows}/nothing"),
            Some(&admin),
            Body::Json(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = host
        .post(
            &format!("/api/installs/{desk}/activate"),
            &admin,
            Body::Json(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = host.get(&workflows, &admin).await;
    assert_eq!(
        body["workflows"][0]["specifics"], "Never above 500 EUR.",
        "{body}"
    );
    let (status, body) = host
        .post(
            &format!("/api/installs/{desk}/deactivate"),
            &admin,
            Body::None,
        )
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "on_uninstall runs and the install is inactive: {body}"
    );
    host.stop().await;
}
