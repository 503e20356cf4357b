//! Container images for Atrium's compatibility shim.
//!
//! The spec's apps are container images that serve `/health`, `/manifest`, `/tool`, `/event`
//! and `/route` and call the platform back over HTTP. This crate knows how to get such an
//! image onto a host and run it; what the host says to it, and what it may say back, belongs
//! to the platform (`atrium_platform::containers`).
//!
//! - [`image`]: a tag pinned to its digest at registration ([`image::Images::pin`]), the image
//!   at that digest pulled once per host into a read-only root filesystem
//!   ([`image::Images::get`]), with credentials per registry, every blob's digest checked and
//!   memory bounded whatever the image's size;
//! - [`unpack`]: the layers applied without trusting them (whiteouts, no path escapes, no
//!   device nodes, size limits, owners shifted into the user namespace's range);
//! - [`spec`]: the OCI runtime spec a container runs under (namespaces, limits, no
//!   capabilities, seccomp);
//! - [`runc`]: starting and stopping containers under `runc`, and removing what a killed host
//!   left;
//! - [`exchange`]: one HTTP request to a container (in its namespace, or at an address an
//!   operator registered) with its answer's size capped;
//! - `netns` and `proxy`: the host's sockets inside a container's network namespace, which has
//!   only its loopback: the app's port as the host reaches it, the egress proxy that lets only
//!   `network.egress_hosts` through, and the way to the platform.

mod credentials;
pub mod exchange;
pub mod image;
mod netns;
mod proxy;
pub mod runc;
pub mod spec;
pub mod unpack;

pub use exchange::{ExchangeError, exchange, send_to};
pub use image::{Credentials, Image, ImageError, Images, PullConfig, PullLimits};
pub use runc::{Container, Launch, Runc, RuncError};
pub use unpack::IdShift;
