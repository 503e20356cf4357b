//! Paths of the guest components built for the tests, and of their manifests.
//!
//! The build script compiles the examples and the test guests to `wasm32-wasip2`; each
//! constant names a component file, each `*_MANIFEST` its manifest.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));
