//! Name and value grammars shared by the manifest, the SDK and the platform.
//!
//! Each function answers one rule of docs/manifest.md; the validator turns a `false` into a `pattern`
//! problem whose message quotes the rule.

/// App slug: lowercase alphanumerics and hyphens, starting with a letter, 3 to 64 chars.
pub const APP_SLUG_RULE: &str =
    "lowercase letters, digits and hyphens, starting with a letter, 3 to 64 characters";

/// Whether `s` is a valid app slug (`app_id`, `cross_app_dependencies[].app_id`, ...).
#[must_use]
pub fn is_app_slug(s: &str) -> bool {
    (3..=64).contains(&s.len()) && is_app_slug_chars(s)
}

/// The character rule of an app slug, without the length rule.
#[must_use]
pub fn is_app_slug_chars(s: &str) -> bool {
    starts_lower(s)
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn starts_lower(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

/// Lowercase slug: lowercase letters, digits, `-` and `_`, starting with a letter or digit.
#[must_use]
pub fn is_lower_slug(s: &str) -> bool {
    s.as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Letter-prefixed lowercase slug: as [`is_lower_slug`] but starting with a letter.
#[must_use]
pub fn is_letter_slug(s: &str) -> bool {
    starts_lower(s) && is_lower_slug(s)
}

/// Event name: lowercase letters, digits and underscores, starting with a letter.
#[must_use]
pub fn is_event_name(s: &str) -> bool {
    starts_lower(s)
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Tool name: lowercase alphanumerics and underscores (length is checked separately).
#[must_use]
pub fn is_tool_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// RAG slot name: `^[a-z][a-z0-9_]{0,31}$`.
#[must_use]
pub fn is_rag_slot_name(s: &str) -> bool {
    s.len() <= 32 && is_event_name(s)
}

/// Document-template slug: `^[a-z][a-z0-9_]*$`.
#[must_use]
pub fn is_template_slug(s: &str) -> bool {
    is_event_name(s)
}

/// Secret key: `^[A-Z][A-Z0-9_]{0,63}$`.
#[must_use]
pub fn is_secret_key(s: &str) -> bool {
    s.len() <= 64
        && s.as_bytes().first().is_some_and(u8::is_ascii_uppercase)
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Scope name: starts with a letter; letters, digits and `_ . : / -`; at most 128 chars.
#[must_use]
pub fn is_scope_name(s: &str) -> bool {
    s.len() <= 128
        && s.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'/' | b'-'))
}

/// Environment variable name: `^[A-Za-z_][A-Za-z0-9_]*$`.
#[must_use]
pub fn is_env_name(s: &str) -> bool {
    s.as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Egress host: a DNS hostname (RFC 1123 labels of 1 to 63 characters, at most 253 in all),
/// optionally prefixed with `*.` to match every subdomain. Compared in lower case.
#[must_use]
pub fn is_egress_host(s: &str) -> bool {
    let host = s.strip_prefix("*.").unwrap_or(s);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// OCI image reference: `[registry[:port]/]repository[:tag][@algorithm:digest]`, following
/// the distribution reference grammar (lowercase repository components separated by `/`,
/// separators `.`, `_`, `__` or dashes inside a component, a tag of up to 128 word
/// characters, dots and dashes). Returns what is wrong, or `None` when valid.
#[must_use]
pub fn image_reference_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".into());
    }
    if s.len() > 512 {
        return Some("is longer than 512 characters".into());
    }
    let (name_and_tag, digest) = match s.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (s, None),
    };
    if let Some(digest) = digest {
        let ok = digest.split_once(':').is_some_and(|(algo, hex)| {
            !algo.is_empty()
                && algo.bytes().all(|b| {
                    b.is_ascii_lowercase()
                        || b.is_ascii_digit()
                        || matches!(b, b'+' | b'.' | b'_' | b'-')
                })
                && hex.len() >= 32
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
        });
        if !ok {
            return Some(format!(
                "digest `{digest}` must be `algorithm:hex` (for example sha256:<64 hex digits>)"
            ));
        }
    }
    // A tag follows the last `:` that comes after the last `/` (a `:` before it is a port).
    let last_slash = name_and_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_and_tag[last_slash..].rfind(':') {
        Some(i) => (
            &name_and_tag[..last_slash + i],
            Some(&name_and_tag[last_slash + i + 1..]),
        ),
        None => (name_and_tag, None),
    };
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && tag
                .as_bytes()
                .first()
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !ok {
            return Some(format!(
                "tag `{tag}` must be 1 to 128 letters, digits, `_`, `.` or `-`, not starting with `.` or `-`"
            ));
        }
    }
    let mut components: Vec<&str> = name.split('/').collect();
    // The first component is a registry host when it has a `.` or `:` or is `localhost`.
    if components.len() > 1 {
        let first = components[0];
        if first.contains('.') || first.contains(':') || first == "localhost" {
            let (host, port) = match first.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (first, None),
            };
            if !is_egress_host(host) || host.starts_with("*.") {
                return Some(format!("registry `{first}` is not a valid host name"));
            }
            if port.is_some_and(|p| p.parse::<u16>().is_err()) {
                return Some(format!("registry `{first}` has an invalid port"));
            }
            components.remove(0);
        }
    }
    for component in components {
        if !is_repository_component(component) {
            return Some(format!(
                "repository component `{component}` must be lowercase letters and digits, separated by `.`, `_`, `__` or dashes"
            ));
        }
    }
    None
}

fn is_repository_component(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return false;
    }
    if !c
        .bytes()
        .all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || matches!(x, b'.' | b'_' | b'-'))
    {
        return false;
    }
    // Separators: one `.`, one or two `_`, or any number of `-`; never mixed or adjacent.
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// Whether `provider` is a mail integration (needed by `auto_default: mail_primary_email`):
/// one of the known mail providers, or any slug containing `mail`.
#[must_use]
pub fn is_mail_provider(provider: &str) -> bool {
    const KNOWN: [&str; 8] = [
        "gmail",
        "google",
        "outlook",
        "microsoft",
        "microsoft365",
        "office365",
        "imap",
        "exchange",
    ];
    KNOWN.contains(&provider) || provider.contains("mail")
}

/// The next patch version after `version` (its pre-release and build metadata dropped):
/// `0.1.0` gives `0.1.1`, `2.0.0-rc.1` gives `2.0.1`. `None` when `version` is not a semantic
/// version. What the developer tool and preflight suggest when a version is taken.
#[must_use]
pub fn next_patch(version: &str) -> Option<String> {
    let current = semver::Version::parse(version).ok()?;
    let patch = current.patch.checked_add(1)?;
    Some(semver::Version::new(current.major, current.minor, patch).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_patches() {
        assert_eq!(next_patch("0.1.0").as_deref(), Some("0.1.1"));
        assert_eq!(next_patch("1.9.9").as_deref(), Some("1.9.10"));
        assert_eq!(next_patch("2.0.0-rc.1+build.5").as_deref(), Some("2.0.1"));
        assert_eq!(next_patch("1.0"), None);
    }

    #[test]
    fn image_references() {
        for ok in [
            "ghcr.io/acme/invoices:1.2.0",
            "acme/app",
            "app",
            "localhost:5000/a/b_c__d:latest",
            "registry.example.com:443/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "a-b--c.d/e",
        ] {
            assert_eq!(image_reference_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "Acme/app",
            "acme//app",
            "acme/app:",
            "acme/app:-x",
            "acme/app@sha256:xyz",
            "acme/-app",
            "acme/a..b",
            "host:99999/a/b",
        ] {
            assert!(image_reference_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn slugs() {
        assert!(is_app_slug("invoice-bot"));
        assert!(!is_app_slug("ab"));
        assert!(!is_app_slug("1abc"));
        assert!(!is_app_slug("Abc"));
        assert!(is_rag_slot_name("contracts_2024"));
        assert!(!is_rag_slot_name(&"a".repeat(33)));
        assert!(is_secret_key("API_KEY"));
        assert!(!is_secret_key("api_key"));
        assert!(is_egress_host("*.example.com"));
        assert!(!is_egress_host("exa mple.com"));
        assert!(!is_egress_host("-x.com"));
    }
}
