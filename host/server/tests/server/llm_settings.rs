//! `/api/llm-settings` over HTTP, on SQLite and PostgreSQL: the defaults of a tenant that set
//! nothing, an admin's changes (partial, reset with null), the errors naming the field with
//! nothing stored, users reading and not writing, and no other tenant or organization seeing
//! or touching another's roles.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::host::{Body, Host, code};
use crate::{state, stores, unique};

fn role<'a>(settings: &'a Value, name: &str) -> &'a Value {
    &settings["roles"][name]
}

#[tokio::test]
async fn a_tenant_reads_its_defaults_and_its_admin_changes_its_model_roles() {
    for (store, _dir) in stores().await {
        let host = Host::start(state(&store, vec![])).await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let umbrella = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let user = host.tenant_token(&acme.secret, "shop", "user").await;
        let other_tenant = host.tenant_token(&acme.secret, "depot", "admin").await;
        // Same tenant id, another organization.
        let other_org = host.tenant_token(&umbrella.secret, "shop", "admin").await;

        // Nothing set: the documented defaults, and the model tiers' roles.
        let (status, defaults) = host.get("/api/llm-settings", &user).await;
        assert_eq!(status, StatusCode::OK, "{defaults}");
        assert_eq!(role(&defaults, "fast")["tier"], "cheapest");
        assert_eq!(role(&defaults, "specialist")["tier"], "eu-sovereign");
        assert_eq!(role(&defaults, "orchestrator")["tier"], "eu-sovereign");
        for name in ["fast", "specialist", "orchestrator"] {
            assert_eq!(role(&defaults, name)["source"], "default", "{defaults}");
            assert_eq!(role(&defaults, name)["updated_at"], Value::Null);
        }
        assert_eq!(
            defaults["model_tiers"],
            json!({"cheap": "fast", "standard": "specialist", "premium": "orchestrator"})
        );

        // An admin sets two roles; the third keeps its default.
        let (status, set) = host
            .put(
                "/api/llm-settings",
                &admin,
                Body::Json(json!({"roles": {
                    "specialist": {"provider": "Mistral", "model": "mistral-large-latest"},
                    "orchestrator": {"tier": "frontier"},
                }})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{set}");
        let specialist = role(&set, "specialist");
        assert_eq!(specialist["provider"], "mistral");
        assert_eq!(specialist["model"], "mistral-large-latest");
        assert_eq!(specialist["tier"], Value::Null);
        assert_eq!(specialist["source"], "tenant");
        assert!(specialist["updated_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(role(&set, "orchestrator")["tier"], "frontier");
        assert_eq!(role(&set, "fast")["source"], "default");
        let (_, read) = host.get("/api/llm-settings", &user).await;
        assert_eq!(read["roles"], set["roles"]);

        // Bad input: 400 naming the field, and nothing stored, not even the valid role.
        for (body, param) in [
            (
                json!({"roles": {"fast": {"tier": "gold"}}}),
                "roles.fast.tier",
            ),
            (json!({"roles": {"fast": {}}}), "roles.fast.tier"),
            (
                json!({"roles": {"fast": {"tier": "cheapest"}, "specialist": {"provider": "azure"}}}),
                "roles.specialist.provider",
            ),
            (
                json!({"roles": {"orchestrator": {"model": "m".repeat(201)}}}),
                "roles.orchestrator.model",
            ),
        ] {
            let (status, refused) = host
                .put("/api/llm-settings", &admin, Body::Json(body))
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
            assert_eq!(code(&refused), "invalid_request", "{refused}");
            assert_eq!(refused["error"]["param"], param, "{refused}");
        }
        for body in [
            json!({"roles": {"planner": {"tier": "cheapest"}}}),
            json!({"roles": {"fast": {"tier": "cheapest", "temperature": 0}}}),
            json!({"role": {}}),
        ] {
            let (status, refused) = host
                .put("/api/llm-settings", &admin, Body::Json(body.clone()))
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {refused}");
            let message = refused["error"]["message"].as_str().unwrap();
            assert!(
                ["planner", "temperature", "role"]
                    .iter()
                    .any(|f| message.contains(f)),
                "the error names the field: {refused}"
            );
        }
        let (_, after) = host.get("/api/llm-settings", &admin).await;
        assert_eq!(
            after["roles"], set["roles"],
            "a refused change stored nothing"
        );

        // A user reads but does not write.
        let (status, refused) = host
            .put(
                "/api/llm-settings",
                &user,
                Body::Json(json!({"roles": {"fast": {"tier": "frontier"}}})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");

        // Another tenant and another organization see their own defaults, and their changes
        // do not reach this tenant.
        for other in [&other_tenant, &other_org] {
            let (status, theirs) = host.get("/api/llm-settings", other).await;
            assert_eq!(status, StatusCode::OK, "{theirs}");
            assert_eq!(role(&theirs, "specialist")["source"], "default", "{theirs}");
            let (status, _) = host
                .put(
                    "/api/llm-settings",
                    other,
                    Body::Json(json!({"roles": {"specialist": {"tier": "cheapest"}}})),
                )
                .await;
            assert_eq!(status, StatusCode::OK);
        }
        let (_, mine) = host.get("/api/llm-settings", &user).await;
        assert_eq!(mine["roles"], set["roles"]);
        // An organization key is not a tenant principal.
        let (status, _) = host.get("/api/llm-settings", &acme.secret).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);

        // null returns a role to its default; a role left out keeps its value.
        let (status, reset) = host
            .put(
                "/api/llm-settings",
                &admin,
                Body::Json(json!({"roles": {"specialist": null}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{reset}");
        assert_eq!(role(&reset, "specialist"), role(&defaults, "specialist"));
        assert_eq!(role(&reset, "orchestrator")["tier"], "frontier");
        host.stop().await;
    }
}
