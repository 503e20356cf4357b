//! Embeddings: 1024 numbers per input, unit-normalised, EU-only.
//!
//! This module has the built-in [`local`] embedder, which needs no network and no downloaded
//! weights; the EU provider embedders come with the retrieval work.

pub mod local;

/// The dimension of every embedding the host returns.
pub const DIMENSIONS: usize = 1024;
