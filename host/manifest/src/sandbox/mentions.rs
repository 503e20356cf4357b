//! Mentions in room messages: which agents and users a message names.

/// The most agents one room message is routed to.
pub const MAX_ROUTED_MENTIONS: usize = 20;

/// Extracts `@<app>:<slug>` and `@user:<uuid>` mentions, in order, without duplicates.
pub fn extract_mentions(content: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (i, _) in content.match_indices('@') {
        let rest = &content[i + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':')))
            .unwrap_or(rest.len());
        let token = rest[..end].trim_end_matches([':', '-', '_']);
        let Some((left, right)) = token.split_once(':') else {
            continue;
        };
        if left.is_empty() || right.is_empty() || right.contains(':') {
            continue;
        }
        if !found.iter().any(|f| f == token) {
            found.push(token.to_owned());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::extract_mentions;

    #[test]
    fn mentions_survive_markdown_and_are_deduplicated() {
        let text = "**@invoice-desk:clerk** please ask @user:5f0c6f1e-1111-4222-8333-444455556666, then @invoice-desk:clerk again. mail me@ or @nobody";
        assert_eq!(
            extract_mentions(text),
            vec![
                "invoice-desk:clerk".to_owned(),
                "user:5f0c6f1e-1111-4222-8333-444455556666".to_owned()
            ]
        );
    }
}
