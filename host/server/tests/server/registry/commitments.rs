//! Commitments over HTTP: the probe app's agent makes them with `commitments.add` (its sandbox
//! rule first), the tenant's users list, filter, page and close them, and another tenant or
//! organization sees none of them. Run inside the serving test, on its started host and
//! install.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host};

/// The tokens the serving test made: the install's tenant `shop` (a user, an admin), another
/// tenant of the same organization, and a tenant `shop` of another organization.
pub(super) struct Callers<'a> {
    pub user: &'a str,
    pub admin: &'a str,
    pub other_tenant: &'a str,
    pub other_org: &'a str,
    pub org_key: &'a str,
}

async fn commit(host: &Host, app: &str, who: &str, args: Value) -> Value {
    let mut op = json!({"op": "commit"});
    op.as_object_mut()
        .unwrap()
        .extend(args.as_object().unwrap().clone());
    host.probe(app, who, op).await
}

fn ids(body: &Value) -> Vec<String> {
    body["commitments"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every check of commitments, on `app`'s install for tenant `shop`.
pub(super) async fn commitments_are_kept_for_the_tenant(host: &Host, app: &str, who: &Callers<'_>) {
    let (_, me) = host.get("/api/tenant/me", who.user).await;
    let user_id = me["user_id"].as_str().unwrap().to_owned();

    // Made by the app's agent, in calls for the user; the sandbox rule refuses first.
    let first = commit(
        host,
        app,
        who.user,
        json!({"title": "Call back", "content": "About invoice 7", "from": "lead", "due_at": "2026-05-01T11:00:00+02:00"}),
    )
    .await;
    let first = first["ok"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    assert!(first.starts_with("cmt_"), "{first}");
    let second = commit(
        host,
        app,
        who.admin,
        json!({"title": "Send the report", "content": "", "from": "lead"}),
    )
    .await;
    let second = second["ok"]
        .as_str()
        .unwrap_or_else(|| panic!("{second}"))
        .to_owned();
    for (args, decision, words) in [
        (
            json!({"title": "x", "content": "", "from": "lead", "due_at": "friday"}),
            "invalid_arguments",
            "due_at `friday`",
        ),
        (
            json!({"title": "x", "content": "", "from": "ghost"}),
            "unknown_agent",
            "`ghost` is not an agent",
        ),
        (
            json!({"title": "  ", "content": "", "from": "lead"}),
            "invalid_arguments",
            "title must not be empty",
        ),
        (
            json!({"title": "x".repeat(201), "content": "", "from": "lead"}),
            "invalid_arguments",
            "title has 201 characters",
        ),
        (
            json!({"title": "x", "content": "y".repeat(10_001), "from": "lead"}),
            "invalid_arguments",
            "content has 10001 characters",
        ),
    ] {
        let result = commit(host, app, who.user, args).await;
        assert_eq!(result["err"]["tool_name"], "commitments.add", "{result}");
        assert_eq!(result["err"]["decision"], decision, "{result}");
        assert!(
            result["err"]["message"].as_str().unwrap().contains(words),
            "{result}"
        );
    }

    // Listed oldest first, with what the agent sent and who it was for.
    let (status, body) = host.get("/api/commitments", who.user).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        ids(&body),
        [first.clone(), second.clone()],
        "refused ones are not stored: {body}"
    );
    let made = &body["commitments"][0];
    assert_eq!(made["app"], app, "{body}");
    assert_eq!(made["agent"], "lead", "{body}");
    assert_eq!(made["title"], "Call back", "{body}");
    assert_eq!(made["content"], "About invoice 7", "{body}");
    assert_eq!(
        made["due_at"], "2026-05-01T09:00:00Z",
        "the due time in UTC: {body}"
    );
    assert_eq!(made["status"], "open", "{body}");
    assert_eq!(made["user_id"], user_id.as_str(), "{body}");
    assert!(made["closed_by"].is_null(), "{body}");
    assert!(body["commitments"][1]["due_at"].is_null(), "{body}");

    // Pages and filters.
    let (_, page) = host.get("/api/commitments?limit=1", who.user).await;
    assert_eq!(ids(&page), [first.as_str()], "{page}");
    let cursor = page["next_cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("{page}"));
    let (_, page) = host
        .get(
            &format!("/api/commitments?limit=1&cursor={cursor}"),
            who.user,
        )
        .await;
    assert_eq!(ids(&page), [second.as_str()], "{page}");
    assert!(page["next_cursor"].is_null(), "{page}");
    for (query, expected) in [
        (
            format!("app={app}&agent=lead&status=open"),
            vec![first.clone(), second.clone()],
        ),
        ("agent=helper".to_owned(), vec![]),
        ("app=another-app".to_owned(), vec![]),
        ("status=done".to_owned(), vec![]),
    ] {
        let (status, body) = host
            .get(&format!("/api/commitments?{query}"), who.user)
            .await;
        assert_eq!(status, StatusCode::OK, "{query}: {body}");
        assert_eq!(ids(&body), expected, "{query}: {body}");
    }
    for (query, param) in [
        ("status=later", Some("status")),
        ("limit=0", Some("limit")),
        ("colour=red", None),
    ] {
        let (status, body) = host
            .get(&format!("/api/commitments?{query}"), who.user)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        if let Some(param) = param {
            assert_eq!(body["error"]["param"], param, "{query}: {body}");
        } else {
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("colour"),
                "{body}"
            );
        }
    }

    // Closed by a user (recorded), reopened, refused when the status is not one.
    let path = format!("/api/commitments/{first}");
    let (status, body) = host
        .send(
            "PATCH",
            &path,
            Some(who.user),
            Body::Json(json!({"status": "done"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["status"].as_str(), body["closed_by"].as_str()),
        (Some("done"), Some(user_id.as_str())),
        "{body}"
    );
    let (_, listed) = host.get("/api/commitments?status=done", who.user).await;
    assert_eq!(ids(&listed), [first.as_str()], "{listed}");
    let (_, listed) = host.get("/api/commitments?status=open", who.user).await;
    assert_eq!(ids(&listed), [second.as_str()], "{listed}");
    for bad in [
        json!({"status": "kept"}),
        json!({}),
        json!({"status": "done", "colour": 1}),
    ] {
        let (status, body) = host
            .send("PATCH", &path, Some(who.user), Body::Json(bad.clone()))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (_, body) = host.get(&path, who.user).await;
    assert_eq!(
        body["status"], "done",
        "a refused change changes nothing: {body}"
    );
    let (status, body) = host
        .send(
            "PATCH",
            &path,
            Some(who.admin),
            Body::Json(json!({"status": "open"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "open", "{body}");
    assert!(body["closed_by"].is_null(), "{body}");
    let (status, body) = host
        .send(
            "PATCH",
            &format!("/api/commitments/{second}"),
            Some(who.admin),
            Body::Json(json!({"status": "dismissed"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "dismissed", "{body}");
    let (status, _) = host.get("/api/commitments/cmt_nothing", who.user).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Nothing of it for another tenant or another organization; no organization key.
    for stranger in [who.other_tenant, who.other_org] {
        let (status, body) = host.get("/api/commitments", stranger).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(ids(&body), Vec::<String>::new(), "{body}");
        let (status, _) = host.get(&path, stranger).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = host
            .send(
                "PATCH",
                &path,
                Some(stranger),
                Body::Json(json!({"status": "dismissed"})),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, _) = host.get("/api/commitments", who.org_key).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, body) = host.get(&path, who.user).await;
    assert_eq!(body["status"], "open", "untouched by the strangers: {body}");
}
