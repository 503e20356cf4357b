//! Integration tests of `atrium-platform`, one module per area.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod oidc;
mod s3;
