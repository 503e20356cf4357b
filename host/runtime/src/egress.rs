//! Outbound HTTP: only to the hosts in `network.egress_hosts`, checked by the sandbox rules'
//! [`EgressPolicy`] on the request's host before any name lookup or connection.

use std::sync::Arc;

use wasmtime_wasi_http::{RequestOptions, WasiBody, WasiHttpHooks};

use atrium_manifest::sandbox::EgressPolicy;

use crate::logs::LogSink;

/// The `wasi:http` hooks of one call.
pub(crate) struct EgressHooks {
    pub policy: Arc<EgressPolicy>,
    pub log: LogSink,
}

type SendFuture = Box<
    dyn Future<
            Output = wasmtime_wasi_http::Result<(
                http::Response<WasiBody>,
                Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
            )>,
        > + Send,
>;

impl WasiHttpHooks for EgressHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> SendFuture {
        drop(fut);
        let host = request.uri().host().unwrap_or("").to_owned();
        if !self.policy.allows(&host) {
            self.log.record(
                crate::LogLevel::Warn,
                &format!(
                    "outbound request to `{host}` refused: the host is not in network.egress_hosts"
                ),
            );
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
            ))
        })
    }
}
