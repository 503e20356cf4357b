//! `http_routes`, `chrome`, `rag_slots`.

use atrium_manifest::{BuiltinTab, Code, Method, RagScope, Tab};
use serde_json::{Value, json};

use crate::{fails, fails_at, minimal, ok, with};

fn routes(list: Value) -> Value {
    with(minimal(), "/http_routes", list)
}

#[test]
fn route_paths() {
    let m = ok(&routes(json!([
        { "path": "/invoices", "method": "get" },
        { "path": "/invoices/{id}", "method": "PATCH" },
        { "path": "/files/report-{year}.pdf", "method": "GET", "public": true },
        { "path": "/", "method": "POST" }
    ])));
    assert_eq!(m.http_routes[0].method, Method::Get);
    assert!(m.http_routes[2].public && !m.http_routes[0].public);
    for bad in [
        "invoices",
        "/Invoices",
        "/a//b",
        "/a/",
        "/a/{x}{y}",
        "/a/{x}/b/{x}",
        "/a/../b",
        "/a/{Id}",
    ] {
        fails_at(
            &routes(json!([{ "path": bad, "method": "GET" }])),
            "http_routes[0].path",
            Code::Pattern,
        );
    }
}

#[test]
fn reserved_first_segments() {
    for reserved in [
        "/health",
        "/manifest/x",
        "/tool",
        "/event/{id}",
        "/route",
        "/public/page",
    ] {
        fails_at(
            &routes(json!([{ "path": reserved, "method": "GET" }])),
            "http_routes[0].path",
            Code::Reserved,
        );
    }
    ok(&routes(
        json!([{ "path": "/healthz", "method": "GET" }, { "path": "/tools", "method": "GET" }, { "path": "/x/health", "method": "GET" }]),
    ));
}

#[test]
fn methods_and_public_routes() {
    fails_at(
        &routes(json!([{ "path": "/a", "method": "HEAD" }])),
        "http_routes[0].method",
        Code::InvalidValue,
    );
    fails_at(
        &routes(json!([{ "path": "/a", "method": "post", "public": true }])),
        "http_routes[0].method",
        Code::NotAllowed,
    );
    fails_at(
        &routes(json!([{ "path": "/a" }])),
        "http_routes[0].method",
        Code::Required,
    );
}

#[test]
fn duplicate_method_and_path() {
    fails_at(
        &routes(json!([{ "path": "/a", "method": "GET" }, { "path": "/a", "method": "get" }])),
        "http_routes[1].path",
        Code::Duplicate,
    );
    // Placeholders with other names match the same requests.
    fails_at(
        &routes(
            json!([{ "path": "/a/{id}", "method": "GET" }, { "path": "/a/{key}", "method": "GET" }]),
        ),
        "http_routes[1].path",
        Code::Duplicate,
    );
    ok(&routes(
        json!([{ "path": "/a", "method": "GET" }, { "path": "/a", "method": "POST" }]),
    ));
}

#[test]
fn at_most_thirty_routes() {
    let list = |n: usize| {
        json!(
            (0..n)
                .map(|i| json!({ "path": format!("/r{i}"), "method": "GET" }))
                .collect::<Vec<_>>()
        )
    };
    ok(&routes(list(30)));
    fails_at(&routes(list(31)), "http_routes", Code::Count);
}

#[test]
fn chrome_panel() {
    let m = ok(&with(
        minimal(),
        "/chrome/panel",
        json!({ "enabled": true }),
    ));
    assert_eq!(m.chrome.panel.tabs, vec![Tab::Builtin(BuiltinTab::Chat)]);
    let m = ok(&with(
        minimal(),
        "/chrome/panel",
        json!({ "enabled": true, "width": 720, "tabs": ["files", { "id": "stats", "label": "Stats" }], "default_tab": "stats" }),
    ));
    let Tab::Custom(custom) = &m.chrome.panel.tabs[1] else {
        panic!("custom tab")
    };
    assert_eq!(custom.path, "/panel/stats.html");
    assert_eq!(m.chrome.panel.default_tab, "stats");
    let m = ok(&with(
        minimal(),
        "/chrome/panel/tabs",
        json!(["settings", "chat"]),
    ));
    assert_eq!(m.chrome.panel.default_tab, "settings");
    fails_at(
        &with(minimal(), "/chrome/panel/width", json!(279)),
        "chrome.panel.width",
        Code::OutOfRange,
    );
    fails_at(
        &with(minimal(), "/chrome/panel/width", json!(721)),
        "chrome.panel.width",
        Code::OutOfRange,
    );
    fails_at(
        &with(minimal(), "/chrome/panel/tabs", json!(["inbox"])),
        "chrome.panel.tabs[0]",
        Code::InvalidValue,
    );
    fails_at(
        &with(minimal(), "/chrome/panel/tabs", json!(["chat", "chat"])),
        "chrome.panel.tabs[1]",
        Code::Duplicate,
    );
    let nine: Vec<Value> = (0..9)
        .map(|i| json!({ "id": format!("t{i}"), "label": "T" }))
        .collect();
    fails_at(
        &with(minimal(), "/chrome/panel/tabs", json!(nine)),
        "chrome.panel.tabs",
        Code::Count,
    );
    fails_at(
        &with(
            minimal(),
            "/chrome/panel/tabs",
            json!([{ "id": "t", "label": "L".repeat(41) }]),
        ),
        "chrome.panel.tabs[0].label",
        Code::Length,
    );
    fails_at(
        &with(minimal(), "/chrome/panel/tabs", json!([{ "label": "L" }])),
        "chrome.panel.tabs[0].id",
        Code::Required,
    );
    fails_at(
        &with(minimal(), "/chrome/panel/default_tab", json!("files")),
        "chrome.panel.default_tab",
        Code::UndeclaredReference,
    );
    fails_at(
        &with(
            minimal(),
            "/chrome/panel/tabs",
            json!([{ "id": "t", "label": "T", "path": "../x" }]),
        ),
        "chrome.panel.tabs[0].path",
        Code::Pattern,
    );
}

#[test]
fn rag_slots() {
    let m = ok(&with(
        minimal(),
        "/rag_slots",
        json!([{ "name": "contracts" }, { "name": "notes", "scope": "read_write", "required": true }]),
    ));
    assert_eq!(
        (m.rag_slots[0].scope, m.rag_slots[1].scope),
        (RagScope::Read, RagScope::ReadWrite)
    );
    ok(&with(
        minimal(),
        "/rag_slots",
        json!([{ "name": format!("a{}", "b".repeat(31)) }]),
    ));
    fails_at(
        &with(
            minimal(),
            "/rag_slots",
            json!([{ "name": format!("a{}", "b".repeat(32)) }]),
        ),
        "rag_slots[0].name",
        Code::Pattern,
    );
    fails_at(
        &with(minimal(), "/rag_slots", json!([{ "name": "Docs" }])),
        "rag_slots[0].name",
        Code::Pattern,
    );
    fails_at(
        &with(
            minimal(),
            "/rag_slots",
            json!([{ "name": "docs", "scope": "write" }]),
        ),
        "rag_slots[0].scope",
        Code::InvalidValue,
    );
    fails(
        &with(
            minimal(),
            "/rag_slots",
            json!([{ "name": "docs" }, { "name": "docs" }]),
        ),
        &[("rag_slots[1].name", Code::Duplicate)],
    );
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({ "name": format!("s{i}") }))
        .collect();
    fails_at(
        &with(minimal(), "/rag_slots", json!(eleven)),
        "rag_slots",
        Code::Count,
    );
}
