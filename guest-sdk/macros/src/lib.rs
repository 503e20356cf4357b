//! `manifest!`: embeds an app's manifest at build time, validated by `atrium-manifest`.
//!
//! An invalid manifest is a compile error that lists every problem with its line, column,
//! code and path, so an app that builds always carries a valid manifest. The macro expands to
//! an `atrium_sdk::ManifestInfo` value: the names the SDK checks registrations against, and the
//! manifest text itself (through `include_str!`, so cargo rebuilds when the file changes).

use std::path::PathBuf;

use atrium_manifest::{Manifest, SubscriptionTarget};
use proc_macro::TokenStream;
use quote::quote;
use syn::{LitStr, parse_macro_input};

/// Embeds and validates the manifest at `path` (relative to the crate's `Cargo.toml`).
///
/// ```ignore
/// static MANIFEST: atrium_sdk::ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");
/// ```
#[proc_macro]
pub fn manifest(input: TokenStream) -> TokenStream {
    let lit = parse_macro_input!(input as LitStr);
    match expand(&lit) {
        Ok(tokens) => tokens.into(),
        Err(message) => syn::Error::new(lit.span(), message)
            .to_compile_error()
            .into(),
    }
}

fn expand(lit: &LitStr) -> Result<proc_macro2::TokenStream, String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR")
        .map_err(|_| "CARGO_MANIFEST_DIR is not set".to_owned())?;
    expand_file(&PathBuf::from(dir).join(lit.value()))
}

/// Reads and validates the manifest at `path`; an error lists every problem.
fn expand_file(path: &std::path::Path) -> Result<proc_macro2::TokenStream, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the manifest {}: {e}", path.display()))?;
    let validation = atrium_manifest::validate(&text);
    let errors: Vec<String> = validation
        .errors()
        .map(|p| format!("  {}: {p}", path.display()))
        .collect();
    let manifest = match validation.manifest {
        Some(m) if errors.is_empty() => m,
        _ => {
            return Err(format!(
                "{} is not a valid manifest:\n{}",
                path.display(),
                errors.join("\n")
            ));
        }
    };
    let path_str = path.to_string_lossy().into_owned();
    Ok(info_tokens(&manifest, &path_str))
}

fn strs<'a>(items: impl IntoIterator<Item = &'a String>) -> proc_macro2::TokenStream {
    let items: Vec<&String> = items.into_iter().collect();
    quote! { &[#(#items),*] }
}

fn info_tokens(m: &Manifest, path: &str) -> proc_macro2::TokenStream {
    let app_id = &m.app_id;
    let version = &m.version;
    let required_scopes = strs(&m.required_scopes);
    let tools = m.tools.iter().map(|t| {
        let name = &t.name;
        let scopes = strs(&t.scopes_required);
        let visible = t.agent_visible;
        quote! { ::atrium_sdk::ToolInfo { name: #name, scopes_required: #scopes, agent_visible: #visible } }
    });
    let l = &m.lifecycle;
    let (on_install, on_uninstall, on_inbound, on_user_added) =
        (l.on_install, l.on_uninstall, l.on_inbound, l.on_user_added);
    let schedules = strs(l.schedules.iter().map(|s| &s.name));
    let agents = m.agents.iter().map(|a| {
        let (id, name, is_default) = (&a.id, &a.name, a.is_default);
        let team = strs(&a.team);
        quote! { ::atrium_sdk::AgentInfo { id: #id, name: #name, team: #team, is_default: #is_default } }
    });
    let emits = strs(&m.emits);
    let subscriptions = m.subscribes_to.iter().map(|s| {
        let (emitter, event) = (&s.emitter_app, &s.event_name);
        let agent = match &s.target {
            SubscriptionTarget::Agent(a) => quote! { ::core::option::Option::Some(#a) },
            _ => quote! { ::core::option::Option::None },
        };
        quote! { ::atrium_sdk::SubscriptionInfo { emitter_app: #emitter, event_name: #event, target_agent: #agent } }
    });
    let routes = m.http_routes.iter().map(|r| {
        let (method, route, public) = (r.method.as_str(), &r.path, r.public);
        quote! { ::atrium_sdk::RouteInfo { method: #method, path: #route, public: #public } }
    });
    let settings = strs(m.install_settings.iter().map(|s| &s.id));
    let egress_hosts = strs(&m.network.egress_hosts);
    quote! {
        ::atrium_sdk::ManifestInfo {
            source: ::core::include_str!(#path),
            app_id: #app_id,
            version: #version,
            required_scopes: #required_scopes,
            tools: &[#(#tools),*],
            lifecycle: ::atrium_sdk::LifecycleInfo {
                on_install: #on_install,
                on_uninstall: #on_uninstall,
                on_inbound: #on_inbound,
                on_user_added: #on_user_added,
                schedules: #schedules,
            },
            agents: &[#(#agents),*],
            emits: #emits,
            subscriptions: &[#(#subscriptions),*],
            routes: &[#(#routes),*],
            settings: #settings,
            egress_hosts: #egress_hosts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::expand_file;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("atrium-sdk-macros-{}-{name}", std::process::id()));
        std::fs::write(&path, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    #[test]
    fn an_invalid_manifest_is_a_compile_error_listing_every_problem() {
        let path = write(
            "bad.yaml",
            "apiVersion: platform/v1\napp_id: X\nversion: 1\nname: n\nruntime:\n  image: a/b:1\n",
        );
        let Err(message) = expand_file(&path) else {
            panic!("an invalid manifest expanded")
        };
        assert!(message.contains("is not a valid manifest:"), "{message}");
        for field in ["apiVersion", "app_id", "version"] {
            assert!(
                message.lines().any(|l| l.contains(&format!(": {field}: "))),
                "{field} missing in {message}"
            );
        }
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_missing_manifest_names_the_file() {
        let Err(message) = expand_file(std::path::Path::new("/no/such/atrium.app.yaml")) else {
            panic!("expanded")
        };
        assert!(
            message.starts_with("cannot read the manifest /no/such/atrium.app.yaml"),
            "{message}"
        );
    }

    #[test]
    fn a_valid_manifest_expands_to_its_names() {
        let path = write(
            "ok.yaml",
            "apiVersion: platform/v2\napp_id: good-app\nversion: 1.0.0\nname: n\nruntime:\n  image: a/b:1\nemits: [saved]\n",
        );
        let tokens = expand_file(&path).map_err(|e| e.to_string());
        let text = tokens.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(text.contains("app_id : \"good-app\""), "{text}");
        assert!(text.contains("emits : & [\"saved\"]"), "{text}");
        let _ = std::fs::remove_file(path);
    }
}
