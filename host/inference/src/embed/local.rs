//! The built-in local embedder: a lexical embedder, not a neural one.
//!
//! Each text is lower-cased and split into words (letters and digits); the vector counts
//! hashed features: every word (weight 1.0), every pair of neighbouring words (0.5), and the
//! character trigrams of every word padded with spaces (0.25 each, so that inflections and
//! typos still share features). Features are hashed into 1024 buckets with a sign bit (the
//! "hashing trick"), counts are damped with `1 + ln(count)`, and the vector is scaled to unit
//! length. Texts that share words and word pieces get a high cosine similarity; texts that
//! say the same thing with other words do not. It is deterministic, needs no network, and is
//! the host's default when no EU embedding provider is configured.

use super::DIMENSIONS;

/// The model name reported for the local embedder.
pub const MODEL: &str = "atrium-local-lexical";

/// FNV-1a, 64 bits: stable across processes and platforms.
fn hash(bytes: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64 ^ seed;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn add(counts: &mut [f32], feature: &str, kind: u64, weight: f32) {
    let h = hash(feature.as_bytes(), kind);
    let bucket = usize::try_from(h % DIMENSIONS as u64).unwrap_or(0);
    let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
    counts[bucket] += sign * weight;
}

/// Words of `text`: runs of letters and digits, lower-cased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The embedding of `text`: 1024 numbers of unit length (all zeros for a text without words).
pub fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIMENSIONS];
    let words = words(text);
    for word in &words {
        add(&mut v, word, 1, 1.0);
        let padded: Vec<char> = format!(" {word} ").chars().collect();
        for gram in padded.windows(3) {
            add(&mut v, &gram.iter().collect::<String>(), 3, 0.25);
        }
    }
    for pair in words.windows(2) {
        add(&mut v, &format!("{} {}", pair[0], pair[1]), 2, 0.5);
    }
    // Damp repeated features (a count c above 1 weighs 1 + ln c), keeping their sign.
    for x in &mut v {
        if x.abs() > 1.0 {
            *x = x.signum() * (1.0 + x.abs().ln());
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut v {
            *x /= norm;
        }
    }
    v
}

/// Approximate token count of `text` for metering: its words, at least one.
pub fn tokens(text: &str) -> u64 {
    u64::try_from(words(text).len().max(1)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn vectors_have_1024_numbers_of_unit_length_and_are_deterministic() {
        let v = embed("Invoices are due within thirty days.");
        assert_eq!(v.len(), 1024);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        assert_eq!(v, embed("Invoices are due within thirty days."));
        assert!(embed("  ,;  ").iter().all(|x| *x == 0.0));
    }

    #[test]
    fn shared_words_and_word_pieces_are_close_and_unrelated_text_is_not() {
        let invoice = embed("The invoice payment is overdue by thirty days");
        let similar = embed("Overdue invoice payments after thirty days");
        let unrelated = embed("Croissants are baked with butter at dawn");
        assert!(
            cosine(&invoice, &similar) > 0.5,
            "{}",
            cosine(&invoice, &similar)
        );
        assert!(
            cosine(&invoice, &unrelated) < 0.2,
            "{}",
            cosine(&invoice, &unrelated)
        );
        assert!(cosine(&invoice, &similar) > cosine(&invoice, &unrelated) + 0.3);
    }
}
