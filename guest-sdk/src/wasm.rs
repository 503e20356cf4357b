//! The component side: the platform through the component's imports, and the export glue
//! that [`export!`](crate::export) expands to.

use std::io::{Read, Write};

use wasip2::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

use crate::bindings::atrium::app as wit;
use crate::http::{Request, Response};
use crate::{
    AgentCallError, App, Backend, BuildFn, CallInfo, Ctx, EmitResult, FetchResponse, HandlerError,
    LogLevel, Registration, RoomPost, ToolCallError,
};

/// Largest request body a route reads; a larger one gets 413.
pub const MAX_REQUEST_BODY: u64 = 1024 * 1024;

/// The platform through the component's imports. Contexts call it directly, never through a
/// `dyn Backend`, so that only the imports an app uses are linked (`ctx::Via`).
pub struct Imports;

impl Backend for Imports {
    fn call_info(&self) -> CallInfo {
        wit::context::current()
    }
    fn public_callback_url(&self, path: &str) -> Result<String, String> {
        wit::context::public_callback_url(path)
    }
    fn call_tool(&self, name: &str, args: &str) -> Result<String, ToolCallError> {
        wit::tools::call(name, args)
    }
    fn secret(&self, key: &str) -> Option<String> {
        wit::secrets::get(key)
    }
    fn config_get(&self, key: &str) -> Option<String> {
        wit::config::get(key)
    }
    fn config_all(&self) -> String {
        wit::config::all()
    }
    fn room_post(
        &self,
        room_id: &str,
        content: &str,
        from_agent: &str,
        metadata: Option<&str>,
    ) -> Result<RoomPost, ToolCallError> {
        wit::rooms::post(room_id, content, from_agent, metadata)
    }
    fn delegate(
        &self,
        target: &str,
        prompt: &str,
        from_agent: &str,
    ) -> Result<String, AgentCallError> {
        wit::team::delegate(target, prompt, from_agent)
    }
    fn invoke(&self, app: &str, agent: &str, prompt: &str) -> Result<String, AgentCallError> {
        wit::apps::invoke(app, agent, prompt)
    }
    fn fetch(
        &self,
        app: &str,
        path: &str,
        method: &str,
        body: Option<&[u8]>,
    ) -> Result<FetchResponse, AgentCallError> {
        wit::apps::fetch(app, path, method, body)
    }
    fn emit(&self, name: &str, payload: &str) -> Result<EmitResult, AgentCallError> {
        wit::events::emit(name, payload)
    }
    fn ask(&self, prompt: &str, agent: Option<&str>) -> Result<String, AgentCallError> {
        wit::agent::ask(prompt, agent)
    }
    fn add_commitment(
        &self,
        title: &str,
        content: &str,
        from_agent: &str,
        due_at: Option<&str>,
    ) -> Result<String, ToolCallError> {
        wit::commitments::add(title, content, from_agent, due_at)
    }
    fn log(&self, level: LogLevel, message: &str) {
        wit::logging::log(level, message);
    }
    fn http_send(&self, request: &crate::OutboundRequest) -> Result<Response, String> {
        send_outbound(request)
    }
}

fn build(build: BuildFn) -> Result<App, HandlerError> {
    build().map_err(|e| HandlerError::Registration(e.message))
}

thread_local! {
    /// The app, built once per instance. When the host pre-initialises the component, this is
    /// filled by `wizer-initialize` and every instance starts from the snapshot with it filled.
    static BUILT: std::cell::OnceCell<Result<App, HandlerError>> =
        const { std::cell::OnceCell::new() };
}

/// Runs `run` on the built app, building it first if this instance has not.
fn with_built<T>(
    build_app: BuildFn,
    run: impl FnOnce(&App) -> Result<T, HandlerError>,
) -> Result<T, HandlerError> {
    BUILT.with(|cell| match cell.get_or_init(|| build(build_app)) {
        Ok(app) => run(app),
        Err(e) => Err(e.clone()),
    })
}

/// `wizer-initialize`: builds the app so that the host's snapshot holds it. A registration
/// error is kept too and answered by every call, as without pre-initialisation.
pub fn initialize(build_app: BuildFn) {
    BUILT.with(|cell| {
        cell.get_or_init(|| build(build_app));
    });
}

/// `handlers.describe`.
pub fn describe(build_app: BuildFn) -> Result<Registration, HandlerError> {
    with_built(build_app, |app| Ok(app.registration()))
}

/// Runs one handler on the built app with a fresh context.
pub fn with_app<T>(
    build_app: BuildFn,
    run: impl FnOnce(&App, &Ctx<'_>) -> Result<T, HandlerError>,
) -> Result<T, HandlerError> {
    with_built(build_app, |app| run(app, &Ctx::in_component()))
}

/// `wasi:http/incoming-handler.handle`: reads the request, serves it on the registered routes,
/// writes the response.
pub fn handle_http(build_app: BuildFn, request: IncomingRequest, out: ResponseOutparam) {
    let response = match read_request(&request) {
        Ok(req) => with_built(build_app, |app| Ok(app.serve(&Ctx::in_component(), req)))
            .unwrap_or_else(|e| Response::text(500, &e.to_string())),
        Err(response) => response,
    };
    write_response(response, out);
}

fn read_request(request: &IncomingRequest) -> Result<Request, Response> {
    let method = match request.method() {
        Method::Get => "GET".to_owned(),
        Method::Head => "HEAD".to_owned(),
        Method::Post => "POST".to_owned(),
        Method::Put => "PUT".to_owned(),
        Method::Delete => "DELETE".to_owned(),
        Method::Connect => "CONNECT".to_owned(),
        Method::Options => "OPTIONS".to_owned(),
        Method::Trace => "TRACE".to_owned(),
        Method::Patch => "PATCH".to_owned(),
        Method::Other(other) => other,
    };
    let target = request.path_with_query().unwrap_or_else(|| "/".to_owned());
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (target, None),
    };
    let headers = request
        .headers()
        .entries()
        .into_iter()
        .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
        .collect();
    let mut body = Vec::new();
    if let Ok(incoming) = request.consume() {
        if let Ok(mut stream) = incoming.stream() {
            let read = (&mut stream)
                .take(MAX_REQUEST_BODY + 1)
                .read_to_end(&mut body);
            if read.is_err() {
                return Err(Response::text(400, "the request body could not be read"));
            }
        }
        if body.len() as u64 > MAX_REQUEST_BODY {
            return Err(Response::text(413, "the request body is larger than 1 MiB"));
        }
    }
    Ok(Request {
        method,
        path,
        query,
        headers,
        body,
        params: Vec::new(),
    })
}

fn write_response(response: Response, out: ResponseOutparam) {
    let entries: Vec<(String, Vec<u8>)> = response
        .headers
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.into_bytes()))
        .collect();
    let headers = Fields::from_list(&entries).unwrap_or_else(|_| Fields::new());
    let outgoing = OutgoingResponse::new(headers);
    let _ = outgoing.set_status_code(response.status);
    let Ok(body) = outgoing.body() else {
        return;
    };
    ResponseOutparam::set(out, Ok(outgoing));
    if let Ok(mut stream) = body.write() {
        let _ = stream.write_all(&response.body);
        let _ = stream.flush();
    }
    let _ = OutgoingBody::finish(body, None);
}

/// Largest outbound response body read.
pub const MAX_OUTBOUND_BODY: u64 = 4 * 1024 * 1024;

fn send_outbound(request: &crate::OutboundRequest) -> Result<Response, String> {
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{OutgoingRequest, Scheme};

    let (scheme, rest) = if let Some(rest) = request.url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else if let Some(rest) = request.url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else {
        return Err(format!(
            "`{}` is not an http:// or https:// URL",
            request.url
        ));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let entries: Vec<(String, Vec<u8>)> = request
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone().into_bytes()))
        .collect();
    let headers = Fields::from_list(&entries).map_err(|e| format!("invalid headers: {e:?}"))?;
    let outgoing = OutgoingRequest::new(headers);
    let method = match request.method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "HEAD" => Method::Head,
        other => Method::Other(other.to_owned()),
    };
    outgoing
        .set_method(&method)
        .map_err(|()| "invalid method".to_owned())?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| "invalid scheme".to_owned())?;
    outgoing
        .set_authority(Some(authority))
        .map_err(|()| format!("invalid host `{authority}`"))?;
    outgoing
        .set_path_with_query(Some(&path))
        .map_err(|()| format!("invalid path `{path}`"))?;
    let body = outgoing
        .body()
        .map_err(|()| "the request body is unavailable".to_owned())?;
    if !request.body.is_empty() {
        let mut stream = body
            .write()
            .map_err(|()| "the request body is unavailable".to_owned())?;
        stream
            .write_all(&request.body)
            .map_err(|e| format!("writing the request body failed: {e}"))?;
        stream
            .flush()
            .map_err(|e| format!("writing the request body failed: {e}"))?;
    }
    let future =
        outgoing_handler::handle(outgoing, None).map_err(|e| format!("request refused: {e:?}"))?;
    OutgoingBody::finish(body, None).map_err(|e| format!("request refused: {e:?}"))?;
    future.subscribe().block();
    let incoming = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(format!("request failed: {code:?}")),
        Some(Err(())) | None => return Err("request failed: no response".into()),
    };
    let status = incoming.status();
    let headers = incoming
        .headers()
        .entries()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let mut bytes = Vec::new();
    if let Ok(body) = incoming.consume()
        && let Ok(mut stream) = body.stream()
    {
        (&mut stream)
            .take(MAX_OUTBOUND_BODY)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("reading the response failed: {e}"))?;
    }
    Ok(Response {
        status,
        headers,
        body: bytes,
    })
}
