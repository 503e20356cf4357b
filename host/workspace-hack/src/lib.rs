//! No code: this crate only asks for the union of dependency features that `cargo build` and
//! `cargo test --workspace` need, so that the two share one dependency build (docs/building.md).
