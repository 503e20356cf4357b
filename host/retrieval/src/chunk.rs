//! Splitting text into overlapping chunks with `text-splitter`.
//!
//! Chunks are 500 to 1,000 characters. The splitter cuts at the largest semantic unit that
//! fits (paragraphs, then sentences, then words, then characters), so a chunk usually ends
//! where a sentence or paragraph does; neighbouring chunks share up to 150 characters, so a
//! passage cut in two is still whole in one of them. Surrounding whitespace is trimmed.

use text_splitter::{ChunkConfig, TextSplitter};

/// Fewest characters a chunk aims for (the last chunk of a text may be shorter).
pub const CHUNK_MIN_CHARS: usize = 500;
/// Most characters in a chunk.
pub const CHUNK_MAX_CHARS: usize = 1_000;
/// Characters neighbouring chunks may share.
pub const CHUNK_OVERLAP_CHARS: usize = 150;

/// A piece of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Position in the document, from 0.
    pub position: u32,
    /// The text.
    pub text: String,
}

/// The splitter with the sizes above.
pub struct Splitter {
    inner: TextSplitter<text_splitter::Characters>,
}

impl std::fmt::Debug for Splitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Splitter").finish_non_exhaustive()
    }
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter::new()
    }
}

impl Splitter {
    /// A splitter with the documented sizes.
    pub fn new() -> Self {
        // The overlap is smaller than the capacity, which is all with_overlap checks.
        let config = ChunkConfig::new(CHUNK_MIN_CHARS..CHUNK_MAX_CHARS)
            .with_overlap(CHUNK_OVERLAP_CHARS)
            .unwrap_or_else(|_| ChunkConfig::new(CHUNK_MIN_CHARS..CHUNK_MAX_CHARS))
            .with_trim(true);
        Splitter {
            inner: TextSplitter::new(config),
        }
    }

    /// The chunks of `text`, in order; none for a text of only whitespace.
    pub fn split(&self, text: &str) -> Vec<Chunk> {
        self.inner
            .chunks(text)
            .filter(|c| !c.trim().is_empty())
            .enumerate()
            .map(|(i, c)| Chunk {
                position: u32::try_from(i).unwrap_or(u32::MAX),
                text: c.to_owned(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_within_bounds_overlap_and_cover_the_text() {
        let sentence = "The invoice desk books every supplier invoice within two days. ";
        let text = sentence.repeat(80);
        let chunks = Splitter::new().split(&text);
        assert!(chunks.len() > 3, "{}", chunks.len());
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(c.position as usize, i);
            let n = c.text.chars().count();
            assert!(n <= CHUNK_MAX_CHARS, "{n}");
            if i + 1 < chunks.len() {
                assert!(n >= CHUNK_MIN_CHARS - sentence.len(), "{n}");
            }
        }
        // Neighbours share text.
        let tail: String = chunks[0]
            .text
            .chars()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        assert!(chunks[1].text.contains(tail.trim()), "no overlap");
        // Every word of the text is in some chunk.
        assert!(chunks.last().unwrap().text.ends_with("two days."));
    }

    #[test]
    fn short_and_blank_texts() {
        let s = Splitter::new();
        assert_eq!(s.split("  One line.  ").len(), 1);
        assert_eq!(s.split("One line.")[0].text, "One line.");
        assert!(s.split(" \n\t ").is_empty());
        // A long word without spaces is cut by characters.
        let word = "x".repeat(2500);
        assert!(
            s.split(&word)
                .iter()
                .all(|c| c.text.chars().count() <= CHUNK_MAX_CHARS)
        );
    }
}
