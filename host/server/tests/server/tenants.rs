//! Tenant principals over HTTP, on SQLite and PostgreSQL: an organization key holder issues
//! tenant admin and user tokens, lists and revokes them; each principal reaches what it may
//! and gets 401, 403 or 404 elsewhere; no organization or tenant sees another's tokens.

use atrium_server::POLL_INTERVAL;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::host::{Body, Host, code};
use crate::{state, stores, unique};

const ADA: &str = "3F2B9C1E-0D4A-4E8B-9A61-5C7D2E0F1A3B";

async fn issue(host: &Host, key: &str, tenant: &str, body: Value) -> Value {
    let (status, created) = host
        .post(
            &format!("/api/tenants/{tenant}/tokens"),
            key,
            Body::Json(body),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created
}

fn secret(created: &Value) -> &str {
    created["token"].as_str().unwrap()
}

fn is_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, len)| {
            g.len() == len
                && g.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

#[tokio::test]
async fn tenant_tokens_are_issued_listed_and_revoked_by_their_organization() {
    for (store, dir) in stores().await {
        let host = Host::start(state(&store, vec![])).await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let umbrella = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        let key = acme.secret.as_str();

        // Issuing: an admin with defaults, a user with the caller's id (any case) and name.
        let admin = issue(&host, key, "shop", json!({"role": "admin"})).await;
        assert_eq!(admin["role"], "admin");
        assert_eq!(admin["display_name"], "Admin");
        assert_eq!(admin["tenant"], "shop");
        assert!(admin["id"].as_str().unwrap().starts_with("ttk_"), "{admin}");
        assert!(is_uuid(admin["user_id"].as_str().unwrap()), "{admin}");
        assert!(
            admin["created_at"].as_str().unwrap().ends_with('Z'),
            "{admin}"
        );
        let admin_token = secret(&admin);
        assert!(
            admin_token.starts_with("att_") && admin_token.len() == 68,
            "{admin}"
        );
        let user = issue(
            &host,
            key,
            "shop",
            json!({"role": "user", "user_id": ADA, "display_name": "Ada"}),
        )
        .await;
        assert_eq!(user["user_id"], ADA.to_ascii_lowercase());
        assert_eq!(user["display_name"], "Ada");
        let user_token = secret(&user);
        let user_default = issue(&host, key, "shop", json!({"role": "user"})).await;
        assert_eq!(user_default["display_name"], "User");
        assert_ne!(user_default["user_id"], admin["user_id"]);

        // /api/tenant/me speaks for each token.
        let (status, me) = host.get("/api/tenant/me", admin_token).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(
            me,
            json!({"organization": acme.org_id, "tenant": "shop", "role": "admin",
                   "user_id": admin["user_id"], "display_name": "Admin"})
        );
        let (status, me) = host.get("/api/tenant/me", user_token).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me["role"], "user");
        assert_eq!(me["user_id"], ADA.to_ascii_lowercase());
        assert_eq!(me["display_name"], "Ada");

        // Refused credentials say why; keys and tenant tokens open only their own doors.
        let (status, body) = host.send("GET", "/api/tenant/me", None, Body::None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "missing_token", "{body}");
        let unknown = format!("att_{}", "0".repeat(64));
        for refused in [unknown.as_str(), key] {
            let (status, body) = host.get("/api/tenant/me", refused).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
            assert_eq!(code(&body), "invalid_token", "{body}");
        }
        assert_eq!(
            host.get("/v1/usage", admin_token).await.0,
            StatusCode::UNAUTHORIZED
        );
        let (status, body) = host
            .post(
                "/api/tenants/shop/tokens",
                admin_token,
                Body::Json(json!({"role": "admin"})),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "only the key issues: {body}"
        );

        // Listing: the organization and the tenant's own admin; never a secret.
        let tokens = "/api/tenants/shop/tokens";
        let (status, by_key) = host.get(tokens, key).await;
        assert_eq!(status, StatusCode::OK, "{by_key}");
        let listed = by_key["tokens"].as_array().unwrap();
        assert_eq!(listed.len(), 3, "{by_key}");
        assert!(by_key["next_cursor"].is_null(), "{by_key}");
        // A page at a time, oldest first: 2, then 1, the same tokens in the same order.
        let (status, first) = host.get(&format!("{tokens}?limit=2"), key).await;
        assert_eq!(status, StatusCode::OK, "{first}");
        let cursor = first["next_cursor"].as_str().unwrap().to_owned();
        let (_, second) = host
            .get(&format!("{tokens}?limit=2&cursor={cursor}"), key)
            .await;
        assert!(second["next_cursor"].is_null(), "{second}");
        let paged: Vec<&Value> = first["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .chain(second["tokens"].as_array().unwrap())
            .collect();
        assert_eq!(paged, listed.iter().collect::<Vec<_>>());
        let (status, body) = host.get(&format!("{tokens}?cursor=bm9wZQ"), key).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "cursor", "{body}");
        assert_eq!(listed[0]["id"], admin["id"]);
        assert_eq!(listed[1]["display_name"], "Ada");
        assert_eq!(listed[0]["prefix"], admin_token[..12]);
        assert!(
            listed
                .iter()
                .all(|t| t.get("token").is_none() && t["revoked_at"].is_null())
        );
        let text = by_key.to_string();
        for created in [&admin, &user, &user_default] {
            assert!(
                !text.contains(&secret(created)[12..]),
                "a secret is listed: {text}"
            );
        }
        let (status, by_admin) = host.get(tokens, admin_token).await;
        assert_eq!(status, StatusCode::OK, "{by_admin}");
        assert_eq!(by_admin, by_key);

        // A user token is not an admin's; another tenant's admin and another organization see
        // no such tenant.
        let (status, body) = host.get(tokens, user_token).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(code(&body), "admin_required");
        assert_eq!(body["error"]["type"], "permission_error");
        let warehouse = issue(&host, key, "warehouse", json!({"role": "admin"})).await;
        let (status, body) = host.get(tokens, secret(&warehouse)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(
            host.get("/api/tenants/warehouse/tokens", secret(&warehouse))
                .await
                .0,
            StatusCode::OK
        );
        let (status, body) = host.get(tokens, &umbrella.secret).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        let user_path = format!("{tokens}/{}", user["id"].as_str().unwrap());
        let (status, _) = host.delete(&user_path, &umbrella.secret).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // Umbrella's own tenant `shop` is another tenant altogether.
        let theirs = issue(&host, &umbrella.secret, "shop", json!({"role": "admin"})).await;
        let (_, listed) = host.get(tokens, &umbrella.secret).await;
        assert_eq!(listed["tokens"].as_array().unwrap().len(), 1, "{listed}");
        let (status, body) = host.get(tokens, secret(&theirs)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["tokens"][0]["id"], theirs["id"]);
        assert_eq!(
            host.get(tokens, key).await.1["tokens"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
        let (status, _) = host.get("/api/tenants/nowhere/tokens", key).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // A tenant admin or user token cannot revoke, even in its own tenant.
        for token in [admin_token, user_token] {
            assert_eq!(
                host.delete(&user_path, token).await.0,
                StatusCode::UNAUTHORIZED
            );
        }

        // Bad input names the field and writes nothing.
        for (body, param) in [
            (json!({"role": "owner"}), "role"),
            (json!({}), "role"),
            (json!({"role": "user", "user_id": "ada"}), "user_id"),
            (json!({"role": "user", "display_name": ""}), "display_name"),
            (
                json!({"role": "user", "display_name": "x".repeat(101)}),
                "display_name",
            ),
            (
                json!({"role": "user", "display_name": "a\u{1b}b"}),
                "display_name",
            ),
            (json!({"role": "user", "email": "ada@example.com"}), "email"),
        ] {
            for tenant in ["shop", "fresh"] {
                let (status, answer) = host
                    .post(
                        &format!("/api/tenants/{tenant}/tokens"),
                        key,
                        Body::Json(body.clone()),
                    )
                    .await;
                assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
                assert_eq!(answer["error"]["param"], param, "{body}: {answer}");
            }
        }
        assert_eq!(
            host.get(tokens, key).await.1["tokens"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            host.get("/api/tenants/fresh/tokens", key).await.0,
            StatusCode::NOT_FOUND,
            "a refused request creates no tenant"
        );

        // Revoking: 404 through another tenant's path, 204 through its own; the token gets
        // 401 at once, the user's other tokens keep working.
        let (status, _) = host
            .delete(
                &format!(
                    "/api/tenants/warehouse/tokens/{}",
                    user["id"].as_str().unwrap()
                ),
                key,
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let second = issue(&host, key, "shop", json!({"role": "user", "user_id": ADA})).await;
        assert_eq!(
            second["display_name"], "Ada",
            "an existing user keeps their name"
        );
        assert_eq!(
            host.get("/api/tenant/me", user_token).await.0,
            StatusCode::OK
        );
        let (status, body) = host.delete(&user_path, key).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        let (status, body) = host.get("/api/tenant/me", user_token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "invalid_token", "{body}");
        assert_eq!(
            host.get("/api/tenant/me", secret(&second)).await.0,
            StatusCode::OK
        );
        let (_, listed) = host.get(tokens, key).await;
        let revoked = listed["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == user["id"])
            .unwrap();
        assert!(revoked["revoked_at"].is_string(), "{listed}");
        let (status, _) = host
            .delete(&format!("{tokens}/{}", admin["id"].as_str().unwrap()), key)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert_eq!(
            host.get(tokens, admin_token).await.0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            host.delete(&format!("{tokens}/ttk_nope"), key).await.0,
            StatusCode::NOT_FOUND
        );

        host.stop().await;
        drop(dir);
    }
}

/// Two hosts on one database, each with its own handle: a token revoked through one stops
/// working on the other when that host's change feed poller reads the revocation (every
/// [`POLL_INTERVAL`]), well before its feed could go stale.
#[tokio::test]
async fn a_token_revoked_on_one_host_stops_working_on_another() {
    for (store, dir) in stores().await {
        let other = crate::reopen(&store, dir.as_ref()).await;
        let one = Host::start(state(&store, vec![])).await;
        let two = Host::start(state(&other, vec![])).await;
        let key = store
            .create_key(&unique("acme"), "ops")
            .await
            .unwrap()
            .secret;
        let created = issue(&one, &key, "shop", json!({"role": "user"})).await;
        let token = secret(&created);
        for _ in 0..2 {
            assert_eq!(two.get("/api/tenant/me", token).await.0, StatusCode::OK);
        }
        let path = format!(
            "/api/tenants/shop/tokens/{}",
            created["id"].as_str().unwrap()
        );
        assert_eq!(one.delete(&path, &key).await.0, StatusCode::NO_CONTENT);
        assert_eq!(
            one.get("/api/tenant/me", token).await.0,
            StatusCode::UNAUTHORIZED
        );
        // Read again until the other host's poller has seen it: within a few poll intervals,
        // and always before STALE_AFTER (when the feed would be bypassed anyway).
        let mut seen = false;
        for _ in 0..(atrium_store::STALE_AFTER.as_millis() / 20 - 5) {
            if two.get("/api/tenant/me", token).await.0 == StatusCode::UNAUTHORIZED {
                seen = true;
                break;
            }
            tokio::time::sleep(POLL_INTERVAL / 5).await;
        }
        assert!(
            seen,
            "the revocation reached the other host's cache by its poller"
        );
        one.stop().await;
        two.stop().await;
        other.close().await;
        drop(dir);
    }
}
