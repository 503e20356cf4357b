//! The mention extractor of room messages (`sandbox::extract_mentions`), held to its rules on
//! generated messages: every `@<app>:<slug>` and `@user:<uuid>` is found whatever Markdown is
//! around it (bold, italics, code spans, links, list items, trailing punctuation), in order,
//! once each; nothing else is found; no text makes it panic.

use atrium_manifest::sandbox::extract_mentions;
use proptest::prelude::*;

/// A canonical key: an agent `<app>:<slug>` or a user `user:<uuid>`.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        (
            "[a-z][a-z0-9-]{0,20}[a-z0-9]",
            "[a-z][a-z0-9_]{0,15}[a-z0-9]"
        )
            .prop_map(|(app, slug)| format!("{app}:{slug}")),
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
            .prop_map(|uuid| format!("user:{uuid}")),
    ]
}

/// `@key` wrapped as Markdown writes it.
fn decorated(key: &str, style: u8) -> String {
    let m = format!("@{key}");
    match style % 9 {
        0 => m,
        1 => format!("**{m}**"),
        2 => format!("*{m}*"),
        3 => format!("_{m}_"),
        4 => format!("`{m}`"),
        5 => format!("[{m}](https://example.com/x)"),
        6 => format!("\n- {m}\n"),
        7 => format!("({m})"),
        _ => format!(
            "{m}{}",
            [".", ",", "!", "?", ";", ":"][usize::from(style) % 6]
        ),
    }
}

/// Words between the mentions: no `@`, and a separator on each side.
fn filler() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,!?éü\n]{0,20}".prop_map(|w| format!(" {w} "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_mention_is_found_once_in_order(
        parts in prop::collection::vec((key(), any::<u8>(), filler()), 0..30),
        lead in filler(),
    ) {
        let mut text = lead;
        let mut expected: Vec<String> = Vec::new();
        for (key, style, words) in &parts {
            text.push_str(&decorated(key, *style));
            text.push_str(words);
            if !expected.contains(key) {
                expected.push(key.clone());
            }
        }
        // Named again: still once, where it was first.
        if let Some((key, style, _)) = parts.first() {
            text.push_str(&decorated(key, style.wrapping_add(1)));
        }
        prop_assert_eq!(extract_mentions(&text), expected, "{}", text);
    }

    #[test]
    fn no_text_panics_and_what_is_found_is_in_it(text in "\\PC{0,300}") {
        let found = extract_mentions(&text);
        let mut seen = std::collections::HashSet::new();
        for key in &found {
            prop_assert!(seen.insert(key), "{} twice", key);
            let marker = format!("@{}", key);
            prop_assert!(text.contains(&marker), "{} is not in the text", key);
            prop_assert_eq!(key.matches(':').count(), 1);
        }
    }
}
