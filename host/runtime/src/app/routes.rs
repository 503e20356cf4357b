//! HTTP routes: a request on one of the manifest's `http_routes`, served by the app's
//! `wasi:http/incoming-handler` on a fresh instance, its response read under the result cap.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use wasmtime_wasi_http::WasiHttpView;

use super::call::{finish, release};
use super::{App, Code};
use crate::{CallError, HandlerError, Invocation};

/// What an HTTP route answered.
pub type RouteResponse = http::Response<Bytes>;

impl App {
    /// Serves an HTTP request on one of the routes in `http_routes`.
    pub async fn handle_http(
        &self,
        inv: &Invocation,
        request: http::Request<Bytes>,
    ) -> Result<RouteResponse, CallError> {
        if !self.has_http() {
            return Err(CallError::NotSupported(
                "the app serves no HTTP routes (it does not export wasi:http/incoming-handler)"
                    .into(),
            ));
        }
        self.verify().await?;
        let method = request.method().as_str().to_owned();
        let path = request.uri().path().to_owned();
        let route = self
            .manifest()
            .http_routes
            .iter()
            .find(|r| r.method.as_str() == method && r.match_path(&path).is_some())
            .ok_or_else(|| {
                CallError::NotDeclared(format!(
                    "no route `{method} {path}` is declared in http_routes"
                ))
            })?;
        if inv.public_route && !route.public {
            return Err(CallError::NotDeclared(format!(
                "route `{method} {}` is not public",
                route.path
            )));
        }
        let deadline = self.inner.runtime.config.deadline;
        let limit = self.inner.runtime.config.max_result_bytes;
        let component = match &self.inner.code {
            Code::Component(component) => component,
            Code::External(external) => {
                let response = tokio::time::timeout(deadline, external.route(inv, request, limit))
                    .await
                    .map_err(|_| CallError::Deadline(deadline))??;
                if response.body().len() > limit {
                    return Err(CallError::TooLarge {
                        what: "response body",
                        limit,
                    });
                }
                return Ok(response);
            }
        };
        let Some(indices) = component.http.clone() else {
            return Err(CallError::NotSupported(
                "the app serves no HTTP routes (it does not export wasi:http/incoming-handler)"
                    .into(),
            ));
        };
        let request = with_authority(request)?;
        let (mut store, instance) = self.instantiate(component, inv).await?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (req, out) = {
            let mut http = store.data_mut().http();
            let body = Full::new(request.body().clone())
                .map_err(|never| -> wasmtime_wasi_http::Error { match never {} });
            let req = http
                .new_incoming_request(
                    wasmtime_wasi_http::p2::bindings::http::types::Scheme::Http,
                    request.map(|_| body),
                )
                .map_err(|e| CallError::Internal(format!("{e:#}")))?;
            let out = http
                .new_response_outparam(tx)
                .map_err(|e| CallError::Internal(format!("{e:#}")))?;
            (req, out)
        };
        let guest = indices
            .load(&mut store, &instance)
            .map_err(|e| CallError::Internal(format!("{e:#}")))?;
        let runtime = self.inner.runtime.clone();
        let tenant = inv.tenant_id.clone();
        let cpu = self.call_cpu(inv);
        let account = cpu.account();
        let task = tokio::spawn(async move {
            let ((store, outcome), used) = runtime
                .background
                .run(&runtime.tenants, &tenant, cpu, async move {
                    let handled = guest.call_handle(&mut store, req, out);
                    let outcome = tokio::time::timeout(deadline, handled).await;
                    (store, outcome)
                })
                .await?;
            let result = match outcome {
                Ok(result) => finish(&store, &used, result.map(Ok::<(), HandlerError>), deadline),
                Err(_) => {
                    store.data().log.finish();
                    Err(CallError::Deadline(deadline))
                }
            };
            release(&runtime, store, account);
            result
        });
        let abort = task.abort_handle();
        let served = tokio::time::timeout(deadline, async move {
            let response = match rx.await {
                Ok(Ok(response)) => response,
                Ok(Err(code)) => {
                    task.await
                        .map_err(|e| CallError::Internal(e.to_string()))??;
                    return Err(CallError::Failed(format!(
                        "the route answered with an error: {code:?}"
                    )));
                }
                // The guest dropped the outparam without answering: its own error explains why.
                Err(_) => {
                    task.await
                        .map_err(|e| CallError::Internal(e.to_string()))??;
                    return Err(CallError::Contract(
                        "the route returned without setting a response".into(),
                    ));
                }
            };
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, limit).collect().await.map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    CallError::TooLarge {
                        what: "response body",
                        limit,
                    }
                } else {
                    CallError::Failed(format!("reading the response body failed: {e}"))
                }
            })?;
            task.await
                .map_err(|e| CallError::Internal(e.to_string()))??;
            Ok(http::Response::from_parts(parts, body.to_bytes()))
        })
        .await;
        match served {
            Ok(result) => result,
            Err(_) => {
                abort.abort();
                Err(CallError::Deadline(deadline))
            }
        }
    }
}

/// wasi:http needs an authority; requests from the platform's proxy carry only a path.
fn with_authority(request: http::Request<Bytes>) -> Result<http::Request<Bytes>, CallError> {
    if request.uri().authority().is_some() {
        return Ok(request);
    }
    let (mut parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    parts.uri = http::Uri::builder()
        .scheme("http")
        .authority("app.localhost")
        .path_and_query(path)
        .build()
        .map_err(|e| CallError::InvalidInput(format!("invalid request path: {e}")))?;
    Ok(http::Request::from_parts(parts, body))
}
