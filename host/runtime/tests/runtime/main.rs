//! The runtime against real components: the examples and the test guests, compiled to
//! wasm32-wasip2 by the artifacts crate's build script.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;
mod examples;
mod external;
mod hostile;
mod http;
mod imports;
mod isolation;
mod limits;
mod loading;
mod sdks;
