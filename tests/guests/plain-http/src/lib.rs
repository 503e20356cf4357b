//! Any `wasi:http` component can serve an Atrium app's routes: this one knows nothing of the
//! Atrium SDK or the `atrium:app` world.

#[cfg(target_arch = "wasm32")]
mod component {
    use std::io::Write;

    use wasip2::http::types::{
        Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam,
    };

    struct Plain;

    impl wasip2::exports::http::incoming_handler::Guest for Plain {
        fn handle(request: IncomingRequest, out: ResponseOutparam) {
            let path = request.path_with_query().unwrap_or_default();
            if path == "/silent" {
                // Breaks the contract: returns without a response.
                return;
            }
            let headers = Fields::from_list(&[("content-type".to_owned(), b"text/plain".to_vec())])
                .unwrap_or_else(|_| Fields::new());
            let response = OutgoingResponse::new(headers);
            let Ok(body) = response.body() else { return };
            ResponseOutparam::set(out, Ok(response));
            if let Ok(mut stream) = body.write() {
                let _ = stream.write_all(format!("plain wasi:http answered {path}").as_bytes());
                let _ = stream.flush();
            }
            let _ = OutgoingBody::finish(body, None);
        }
    }

    wasip2::http::proxy::export!(Plain);
}
