//! Cargo considers `[build-dependencies]` only for a crate that has a build script; this one
//! exists so that the build-dependency features in Cargo.toml take part in feature resolution.

fn main() {}
