//! Outbound HTTP: which hosts an app may reach.
//!
//! An entry of `network.egress_hosts` is a host name that must match exactly
//! (case-insensitively), or `*.example.com`, which matches every subdomain of `example.com` but
//! not `example.com` itself. Ports are not restricted. The host checks a request's host before
//! any name lookup or connection (docs/runtime.md).

/// The hosts an app may reach.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    exact: Vec<String>,
    suffixes: Vec<String>,
}

impl EgressPolicy {
    /// A policy from the manifest's `network.egress_hosts`.
    pub fn new<'a>(hosts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut policy = EgressPolicy::default();
        for host in hosts {
            let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
            match host.strip_prefix("*.") {
                Some(suffix) => policy.suffixes.push(format!(".{suffix}")),
                None => policy.exact.push(host),
            }
        }
        policy
    }

    /// Whether `host` may be reached.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.exact.iter().any(|h| h == host)
            || self.suffixes.iter().any(|s| host.ends_with(s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_wildcard_hosts() {
        let p = EgressPolicy::new(["api.example.com", "*.stripe.com", "LOCALHOST"]);
        assert!(p.allows("api.example.com"));
        assert!(p.allows("API.Example.com."));
        assert!(!p.allows("example.com"));
        assert!(!p.allows("evil-api.example.com"));
        assert!(p.allows("a.stripe.com"));
        assert!(p.allows("a.b.stripe.com"));
        assert!(!p.allows("stripe.com"));
        assert!(!p.allows("notstripe.com"));
        assert!(p.allows("localhost"));
        assert!(!p.allows("127.0.0.1"));
        assert!(!EgressPolicy::default().allows("anything"));
    }
}
