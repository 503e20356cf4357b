//! `runtime` and `network`.

use std::collections::BTreeMap;

use crate::model::{Network, Resources, RuntimeSection};
use crate::problem::{Code, Path};
use crate::read::{Cx, Obj};
use crate::rules;
use crate::tree::{Key, Node, Value};

/// Default `runtime.port`.
pub const DEFAULT_PORT: u16 = 8080;
/// Default `runtime.resources.memory_mb`.
pub const DEFAULT_MEMORY_MB: u32 = 256;
/// Default `runtime.resources.cpu_cores`.
pub const DEFAULT_CPU_CORES: f64 = 0.5;

/// Environment variables the platform sets itself for chain context; an app may not set them.
const RESERVED_ENV: [&str; 2] = ["SERVICE_CHAIN_DEPTH", "SERVICE_VISITED_AGENTS"];

pub(super) fn runtime(cx: &mut Cx, parent: &mut Obj<'_>) -> RuntimeSection {
    let mut runtime = RuntimeSection {
        image: String::new(),
        port: DEFAULT_PORT,
        resources: Resources {
            memory_mb: DEFAULT_MEMORY_MB,
            cpu_cores: DEFAULT_CPU_CORES,
        },
        env: BTreeMap::new(),
    };
    let Some(node) = parent.require(cx, "runtime", "a mapping with at least `image`") else {
        return runtime;
    };
    let Some(mut obj) = Obj::new(cx, parent.at("runtime"), node) else {
        return runtime;
    };
    if let Some((node, image)) = obj.req_string(cx, "image", "the OCI image reference of the app") {
        if let Some(problem) = rules::image_reference_problem(image) {
            cx.error(
                &obj.at("image"),
                node.pos,
                Code::Pattern,
                format!("`{image}` is not a valid OCI image reference: {problem}"),
            );
        }
        runtime.image = image.to_owned();
    }
    if let Some(node) = obj.get("port")
        && let Some(port) = cx.integer(&obj.at("port"), node, 1024, 65535)
    {
        runtime.port = u16::try_from(port).unwrap_or(DEFAULT_PORT);
    }
    if let Some(node) = obj.get("resources")
        && let Some(mut res) = Obj::new(cx, obj.at("resources"), node)
    {
        if let Some(node) = res.get("memory_mb")
            && let Some(mb) = cx.integer(&res.at("memory_mb"), node, 64, 4096)
        {
            runtime.resources.memory_mb = u32::try_from(mb).unwrap_or(DEFAULT_MEMORY_MB);
        }
        if let Some(node) = res.get("cpu_cores")
            && let Some(cores) = cx.number(&res.at("cpu_cores"), node, Some((0.1, 4.0)))
        {
            runtime.resources.cpu_cores = cores;
        }
        res.finish(cx, &["memory_mb", "cpu_cores"]);
    }
    if let Some(node) = obj.get("env") {
        let path = obj.at("env");
        match &node.value {
            Value::Map(entries) => {
                for (key, value) in entries {
                    env_var(cx, &path.field(&key.name), key, value, &mut runtime.env);
                }
            }
            other => cx.error(
                &path,
                node.pos,
                Code::InvalidType,
                format!(
                    "expected a mapping of variable names to string values, found {}",
                    other.kind()
                ),
            ),
        }
    }
    obj.finish(cx, &["image", "port", "resources", "env"]);
    runtime
}

fn env_var(cx: &mut Cx, path: &Path, key: &Key, value: &Node, env: &mut BTreeMap<String, String>) {
    if !rules::is_env_name(&key.name) {
        cx.error(path, key.pos, Code::Pattern, format!("`{}` is not a valid environment variable name: letters, digits and `_`, not starting with a digit", key.name));
    }
    if RESERVED_ENV.contains(&key.name.as_str()) {
        cx.error(
            path,
            key.pos,
            Code::Reserved,
            format!(
                "`{}` is set by the platform for chain context and cannot be set in runtime.env",
                key.name
            ),
        );
    }
    let upper = key.name.to_ascii_uppercase();
    if ["SECRET", "PASSWORD", "TOKEN", "API_KEY", "PRIVATE_KEY"]
        .iter()
        .any(|s| upper.contains(s))
    {
        cx.warning(path, key.pos, Code::PossibleSecret, format!("`{}` looks like a secret; runtime.env is not secret and is visible to operators: read secrets through the secrets API instead", key.name));
    }
    if let Some(text) = cx.string(path, value) {
        env.insert(key.name.clone(), text.to_owned());
    }
}

pub(super) fn network(cx: &mut Cx, parent: &mut Obj<'_>) -> Network {
    let mut network = Network::default();
    let Some(node) = parent.get("network") else {
        return network;
    };
    let Some(mut obj) = Obj::new(cx, parent.at("network"), node) else {
        return network;
    };
    if let Some(node) = obj.get("egress_hosts") {
        let path = obj.at("egress_hosts");
        let entries = cx.string_list(&path, node);
        let lowered: Vec<String> = entries
            .iter()
            .map(|(_, _, v)| v.to_ascii_lowercase())
            .collect();
        let mut seen = std::collections::HashSet::new();
        for (i, (p, n, v)) in entries.iter().enumerate() {
            if !rules::is_egress_host(v) {
                let hint = if v.contains("://") || v.contains('/') || v.contains(':') {
                    "; give the bare host name, without scheme, port or path"
                } else {
                    ""
                };
                cx.error(p, n.pos, Code::Pattern, format!("`{v}` is not a valid host name (DNS labels of letters, digits and `-`, optionally prefixed with `*.`){hint}"));
            } else if !seen.insert(lowered[i].as_str()) {
                cx.error(
                    p,
                    n.pos,
                    Code::Duplicate,
                    format!("host `{v}` is listed more than once"),
                );
            } else {
                network.egress_hosts.push(lowered[i].clone());
            }
        }
    }
    obj.finish(cx, &["egress_hosts"]);
    network
}
