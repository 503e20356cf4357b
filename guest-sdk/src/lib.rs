//! The Rust SDK for Atrium apps.
//!
//! An app embeds its manifest (validated at build time), registers its handlers on an [`App`],
//! and exports them with [`export!`]. Handlers reach the platform through [`Ctx`], whose fields
//! mirror `ctx` of docs/sdk.md: `ctx.tools.call`, `ctx.secrets.get`, `ctx.config`, `ctx.rooms.post`,
//! `ctx.team.delegate`, `ctx.apps.invoke` / `fetch`, `ctx.events.emit`, `ctx.agent.ask`,
//! `ctx.commitments.add`, `ctx.logger`, and `ctx.public_callback_url(path)`.
//!
//! ```ignore
//! use atrium_sdk::{App, Ctx, Error, ManifestInfo, RegistrationError};
//!
//! static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");
//!
//! #[derive(serde::Deserialize)]
//! struct Greet { name: String }
//!
//! fn greet(ctx: &Ctx, args: Greet) -> Result<String, Error> {
//!     Ok(format!("hello {} from {}", args.name, ctx.tenant_id()))
//! }
//!
//! pub fn app() -> Result<App, RegistrationError> {
//!     let mut app = App::new(&MANIFEST);
//!     app.tool("greet", greet)?;
//!     Ok(app)
//! }
//!
//! atrium_sdk::export!(app);
//! ```
//!
//! Registration rules (docs/sdk.md) are checked when the app is built, which
//! happens once per app version: the component exports `wizer-initialize`, which builds the app,
//! and the host snapshots the initialised instance (docs/runtime.md, "Pre-initialisation"), so
//! every call starts with the app already built. A host that does not pre-initialise builds it
//! at the start of every call, with the same result: a lifecycle handler needs its flag, a schedule its name,
//! an event handler a subscription, a route its `http_routes` entry, `scopes_required` must be
//! inside `required_scopes`, and nothing may be registered twice. Handlers are plain functions:
//! each call has its own instance, so the async requirement of the Python and TypeScript SDKs
//! has no counterpart here; the host does its waiting outside the guest.
//!
//! [`testing`] runs an app natively, without wasm, with mock tools, secrets and rooms.

mod app;
mod ctx;
mod error;
pub mod http;
mod manifest;
pub mod testing;
#[cfg(target_arch = "wasm32")]
mod wasm;

/// Bindings of the `atrium:app` contract (generated from `wit/`).
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "atrium:app/platform-preinit",
        pub_export_macro: true,
        export_macro_name: "export_platform",
        default_bindings_module: "atrium_sdk::bindings",
        additional_derives: [PartialEq, serde::Serialize, serde::Deserialize],
    });
}

pub use app::{App, ToolOptions};
pub use atrium_manifest::sandbox::Capability;
pub use atrium_sdk_macros::manifest;
pub use bindings::atrium::app::types::{
    AgentCallError, AppEvent, CallInfo, EmitResult, FetchResponse, HandlerError, InboundEnvelope,
    LogLevel, Registration, RoomMessage, RoomPost, SenderType, ToolCallError, UserAdded,
};
pub use ctx::{
    Agent, Apps, Backend, Commitments, Config, Ctx, Events, HttpClient, Logger, OutboundRequest,
    Rooms, Secrets, Team, Tools,
};
pub use error::{Error, RegistrationError, RegistrationErrorKind};
pub use manifest::{
    AgentInfo, LifecycleInfo, ManifestError, ManifestInfo, RouteInfo, SubscriptionInfo, ToolInfo,
    load_manifest, load_manifest_from_str,
};

/// What [`export!`] needs: the function that builds the app.
pub type BuildFn = fn() -> Result<App, RegistrationError>;

#[doc(hidden)]
pub mod __private {
    #[cfg(target_arch = "wasm32")]
    pub use crate::wasm::*;
    pub use serde_json::json;
    pub use wasip2;

    /// The build of an app exported with `export!(app, without_http)`: a registered route is
    /// a registration error, as the host would find it at load.
    pub fn without_http(
        built: Result<crate::App, crate::RegistrationError>,
    ) -> Result<crate::App, crate::RegistrationError> {
        built.and_then(crate::App::served_without_http)
    }
}

/// Exports an app from a component: `atrium_sdk::export!(app)` where
/// `fn app() -> Result<App, RegistrationError>`. The component then exports
/// `atrium:app/handlers` and `wasi:http/incoming-handler`. Outside wasm it expands to nothing,
/// so the same crate builds natively for its tests.
///
/// `atrium_sdk::export!(app, without_http)` leaves `wasi:http/incoming-handler` out, for an app
/// that declares no `http_routes`: the component then imports no `wasi:http` interface unless
/// its code sends requests through `ctx.http`, and each of its instances starts faster
/// (docs/sdk.md, "Lean components"). Registering a route in such an app is a registration
/// error.
#[macro_export]
macro_rules! export {
    (@handlers $build:path) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use $crate::bindings::exports::atrium::app::handlers::Guest;
            use $crate::{
                AppEvent, HandlerError, InboundEnvelope, Registration, RoomMessage, UserAdded,
            };

            pub struct AtriumApp;

            impl $crate::bindings::Guest for AtriumApp {
                fn wizer_initialize() {
                    $crate::__private::initialize($build)
                }
            }

            impl Guest for AtriumApp {
                fn describe() -> Result<Registration, HandlerError> {
                    $crate::__private::describe($build)
                }
                fn call_tool(name: String, args: String) -> Result<String, HandlerError> {
                    $crate::__private::with_app($build, |app, ctx| app.call_tool(ctx, &name, &args))
                }
                fn on_install() -> Result<(), HandlerError> {
                    $crate::__private::with_app($build, |app, ctx| app.lifecycle(ctx, "on_install"))
                }
                fn on_uninstall() -> Result<(), HandlerError> {
                    $crate::__private::with_app($build, |app, ctx| {
                        app.lifecycle(ctx, "on_uninstall")
                    })
                }
                fn on_inbound(envelope: InboundEnvelope) -> Result<(), HandlerError> {
                    $crate::__private::with_app($build, |app, ctx| app.inbound(ctx, envelope))
                }
                fn on_user_added(user: UserAdded) -> Result<(), HandlerError> {
                    $crate::__private::with_app($build, |app, ctx| app.user_added(ctx, user))
                }
                fn on_schedule(name: String) -> Result<(), HandlerError> {
                    $crate::__private::with_app($build, |app, ctx| app.schedule(ctx, &name))
                }
                fn on_event(event: AppEvent) -> Result<String, HandlerError> {
                    $crate::__private::with_app($build, |app, ctx| app.event(ctx, event))
                }
                fn on_message(
                    agent_slug: String,
                    message: RoomMessage,
                ) -> Result<(), HandlerError> {
                    $crate::__private::with_app($build, |app, ctx| {
                        app.room_message(ctx, &agent_slug, message)
                    })
                }
            }

            $crate::bindings::export_platform!(AtriumApp with_types_in $crate::bindings);
        };
    };
    ($build:path) => {
        $crate::export!(@handlers $build);
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            pub struct AtriumHttp;

            impl $crate::__private::wasip2::exports::http::incoming_handler::Guest for AtriumHttp {
                fn handle(
                    request: $crate::__private::wasip2::http::types::IncomingRequest,
                    out: $crate::__private::wasip2::http::types::ResponseOutparam,
                ) {
                    $crate::__private::handle_http($build, request, out)
                }
            }

            $crate::__private::wasip2::http::proxy::export!(AtriumHttp);
        };
    };
    ($build:path, without_http) => {
        #[cfg(target_arch = "wasm32")]
        fn __atrium_build_without_http() -> ::core::result::Result<$crate::App, $crate::RegistrationError> {
            $crate::__private::without_http($build())
        }
        #[cfg(not(target_arch = "wasm32"))]
        const _: $crate::BuildFn = $build;
        $crate::export!(@handlers __atrium_build_without_http);
    };
}
