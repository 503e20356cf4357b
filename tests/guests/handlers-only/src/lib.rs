//! A component written against the `atrium:app/platform` world with wit-bindgen alone: it
//! exports the handlers and no `wasi:http` handler, so the host answers its routes with
//! "not supported by this app".

#[cfg(target_arch = "wasm32")]
// The bindings generated here export functions by name, which needs `unsafe` attributes.
#[allow(unsafe_code)]
mod component {
    wit_bindgen::generate!({ path: "../../../wit", world: "atrium:app/platform" });

    use atrium::app::types::{
        AppEvent, HandlerError, InboundEnvelope, Registration, RoomMessage, UserAdded,
    };

    struct HandlersOnly;

    fn none(what: &str) -> HandlerError {
        HandlerError::NoHandler(what.to_owned())
    }

    impl exports::atrium::app::handlers::Guest for HandlersOnly {
        fn describe() -> Result<Registration, HandlerError> {
            Ok(Registration {
                manifest: include_str!("../atrium.app.yaml").to_owned(),
                tools: vec!["hello".into()],
                lifecycle: vec![],
                schedules: vec![],
                events: vec![],
                room_messages: false,
                routes: vec![],
            })
        }
        fn call_tool(name: String, _args: String) -> Result<String, HandlerError> {
            match name.as_str() {
                "hello" => Ok(format!(
                    "\"hello from {}\"",
                    atrium::app::context::current().tenant_id
                )),
                _ => Err(none(&name)),
            }
        }
        fn on_install() -> Result<(), HandlerError> {
            Err(none("on_install"))
        }
        fn on_uninstall() -> Result<(), HandlerError> {
            Err(none("on_uninstall"))
        }
        fn on_inbound(_: InboundEnvelope) -> Result<(), HandlerError> {
            Err(none("on_inbound"))
        }
        fn on_user_added(_: UserAdded) -> Result<(), HandlerError> {
            Err(none("on_user_added"))
        }
        fn on_schedule(name: String) -> Result<(), HandlerError> {
            Err(none(&name))
        }
        fn on_event(event: AppEvent) -> Result<String, HandlerError> {
            Err(none(&event.event_name))
        }
        fn on_message(_: String, _: RoomMessage) -> Result<(), HandlerError> {
            Err(none("on_message"))
        }
    }

    export!(HandlersOnly);
}
