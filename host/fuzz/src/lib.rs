//! Fuzz targets live in `tests/targets.rs`; see tools/fuzz and docs/security.md.
