//! `runtime` and `network`.

use atrium_manifest::Code;
use serde_json::json;

use crate::{fails_at, minimal, ok, warns, with};

#[test]
fn image_reference() {
    for good in [
        "acme/app",
        "registry.example.com:5000/acme/app:1.2",
        "app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ] {
        ok(&with(minimal(), "/runtime/image", json!(good)));
    }
    for bad in [
        "",
        "Acme/App",
        "acme/app:",
        "acme//app",
        "https://ghcr.io/acme/app",
    ] {
        fails_at(
            &with(minimal(), "/runtime/image", json!(bad)),
            "runtime.image",
            Code::Pattern,
        );
    }
}

#[test]
fn port_range() {
    assert_eq!(
        ok(&with(minimal(), "/runtime/port", json!(1024)))
            .runtime
            .port,
        1024
    );
    assert_eq!(
        ok(&with(minimal(), "/runtime/port", json!(65535)))
            .runtime
            .port,
        65535
    );
    fails_at(
        &with(minimal(), "/runtime/port", json!(1023)),
        "runtime.port",
        Code::OutOfRange,
    );
    fails_at(
        &with(minimal(), "/runtime/port", json!(65536)),
        "runtime.port",
        Code::OutOfRange,
    );
    fails_at(
        &with(minimal(), "/runtime/port", json!("8080")),
        "runtime.port",
        Code::InvalidType,
    );
    fails_at(
        &with(minimal(), "/runtime/port", json!(8080.5)),
        "runtime.port",
        Code::InvalidType,
    );
}

#[test]
fn memory_range() {
    assert_eq!(
        ok(&with(minimal(), "/runtime/resources/memory_mb", json!(64)))
            .runtime
            .resources
            .memory_mb,
        64
    );
    assert_eq!(
        ok(&with(
            minimal(),
            "/runtime/resources/memory_mb",
            json!(4096)
        ))
        .runtime
        .resources
        .memory_mb,
        4096
    );
    fails_at(
        &with(minimal(), "/runtime/resources/memory_mb", json!(63)),
        "runtime.resources.memory_mb",
        Code::OutOfRange,
    );
    fails_at(
        &with(minimal(), "/runtime/resources/memory_mb", json!(4097)),
        "runtime.resources.memory_mb",
        Code::OutOfRange,
    );
}

#[test]
fn cpu_range() {
    ok(&with(minimal(), "/runtime/resources/cpu_cores", json!(0.1)));
    ok(&with(minimal(), "/runtime/resources/cpu_cores", json!(4)));
    fails_at(
        &with(minimal(), "/runtime/resources/cpu_cores", json!(0.09)),
        "runtime.resources.cpu_cores",
        Code::OutOfRange,
    );
    fails_at(
        &with(minimal(), "/runtime/resources/cpu_cores", json!(4.5)),
        "runtime.resources.cpu_cores",
        Code::OutOfRange,
    );
    fails_at(
        &with(minimal(), "/runtime/resources/cpu_cores", json!("1")),
        "runtime.resources.cpu_cores",
        Code::InvalidType,
    );
}

#[test]
fn env_map() {
    let m = ok(&with(
        minimal(),
        "/runtime/env",
        json!({ "LOG_LEVEL": "debug", "_X1": "" }),
    ));
    assert_eq!(
        m.runtime.env.get("LOG_LEVEL").map(String::as_str),
        Some("debug")
    );
    fails_at(
        &with(minimal(), "/runtime/env", json!({ "1BAD": "x" })),
        "runtime.env.1BAD",
        Code::Pattern,
    );
    fails_at(
        &with(minimal(), "/runtime/env", json!({ "PORT": 8080 })),
        "runtime.env.PORT",
        Code::InvalidType,
    );
    fails_at(
        &with(minimal(), "/runtime/env", json!(["A=b"])),
        "runtime.env",
        Code::InvalidType,
    );
    fails_at(
        &with(
            minimal(),
            "/runtime/env",
            json!({ "SERVICE_CHAIN_DEPTH": "1" }),
        ),
        "runtime.env.SERVICE_CHAIN_DEPTH",
        Code::Reserved,
    );
    warns(
        &with(minimal(), "/runtime/env", json!({ "STRIPE_API_KEY": "sk" })),
        "runtime.env.STRIPE_API_KEY",
        Code::PossibleSecret,
    );
}

#[test]
fn egress_hosts() {
    let m = ok(&with(
        minimal(),
        "/network/egress_hosts",
        json!(["API.example.com", "*.cdn.example"]),
    ));
    assert_eq!(
        m.network.egress_hosts,
        vec!["api.example.com", "*.cdn.example"]
    );
    fails_at(
        &with(
            minimal(),
            "/network/egress_hosts",
            json!(["https://api.example.com"]),
        ),
        "network.egress_hosts[0]",
        Code::Pattern,
    );
    fails_at(
        &with(
            minimal(),
            "/network/egress_hosts",
            json!(["a.example", "A.example"]),
        ),
        "network.egress_hosts[1]",
        Code::Duplicate,
    );
}
