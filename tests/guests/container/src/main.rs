//! A container app for the compatibility shim's tests: a static binary (std and serde_json
//! only) that speaks the container protocol of docs/wit.md on `$PORT`, serves the manifest at
//! `$MANIFEST` (default `/app/atrium.app.yaml`) and calls the platform back at `$PLATFORM_URL`
//! with the `X-App-Mcp-Token` of the call it serves.
//!
//! Its tools make it misbehave on request, so that a test can watch the host contain it:
//!
//! | tool | does |
//! |---|---|
//! | `echo` | answers its arguments and what the call's headers and environment said |
//! | `call` | `POST`s `body` to the platform's `path` with the call's token (or `token`), answers the status and body |
//! | `fetch` | `GET`s `url` through `$HTTP_PROXY` |
//! | `direct` | tries a TCP connection to `host:port` without the proxy |
//! | `allocate` | allocates and touches `mb` MiB and holds them |
//! | `sleep` | sleeps `ms` |
//! | `sicken` | makes `/health` fail from now on |
//! | `exit` | ends the process |
//! | `fail`, `refuse` | answers a failure, a `ToolCallError` |
//! | `big` | answers a string of `bytes` bytes |
//! | `seen` | answers every `/event` dispatch it got |
//! | `whoami` | its uid, capabilities, and whether `/` and `/tmp` are writable |

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

/// The most bytes of a request body read.
const MAX_BODY: usize = 16 << 20;

/// Every `/event` dispatch, in order.
static SEEN: Mutex<Vec<Value>> = Mutex::new(Vec::new());
/// What `allocate` holds.
static HOARD: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

fn read_request(stream: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if stream.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        stream.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_BODY);
    let mut body = vec![0; length];
    stream.read_exact(&mut body)?;
    Ok(Some(Request {
        method,
        target,
        headers,
        body,
    }))
}

fn respond(stream: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if status < 400 { "OK" } else { "Error" },
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn main() {
    let port: u16 = env("PORT").and_then(|p| p.parse().ok()).unwrap_or(8080);
    let listener = match TcpListener::bind(("0.0.0.0", port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cannot listen on port {port}: {e}");
            std::process::exit(1);
        }
    };
    eprintln!("container guest listening on port {port}");
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || serve(stream));
    }
}

fn serve(stream: TcpStream) {
    let Ok(reader) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader);
    let mut stream = stream;
    let Ok(Some(request)) = read_request(&mut reader) else {
        return;
    };
    let (status, content_type, body) = handle(&request);
    respond(&mut stream, status, content_type, &body);
}

fn reply(value: &Value) -> (u16, &'static str, Vec<u8>) {
    (200, "application/json", value.to_string().into_bytes())
}

fn handle(request: &Request) -> (u16, &'static str, Vec<u8>) {
    let path = request.target.split('?').next().unwrap_or("/");
    match (request.method.as_str(), path) {
        ("GET", "/health") => {
            if std::path::Path::new("/tmp/unhealthy").exists() {
                (503, "text/plain", b"sick".to_vec())
            } else {
                (200, "text/plain", b"ok".to_vec())
            }
        }
        ("GET", "/manifest") => {
            let file = env("MANIFEST").unwrap_or_else(|| "/app/atrium.app.yaml".into());
            match std::fs::read(&file) {
                Ok(text) => (200, "application/yaml", text),
                Err(e) => (500, "text/plain", format!("{file}: {e}").into_bytes()),
            }
        }
        ("POST", "/tool") => {
            let body = request.json();
            let name = body["name"].as_str().unwrap_or_default();
            match tool(name, &body["args"], request) {
                Ok(result) => reply(&json!({"ok": true, "result": result})),
                Err(error) => reply(&json!({"ok": false, "error": error})),
            }
        }
        ("POST", "/event") => {
            let body = request.json();
            let kind = body["type"].as_str().unwrap_or_default().to_owned();
            SEEN.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(json!({"dispatch": body, "tenant": request.header("x-atrium-tenant")}));
            if kind == "schedule" && body["name"] == "unhandled" {
                return reply(&json!({"ok": false, "no_handler": true}));
            }
            if kind == "install" && request.header("x-atrium-tenant") == Some("refuses") {
                return reply(
                    &json!({"ok": false, "error": {"kind": "invalid_input", "message": "this tenant is refused"}}),
                );
            }
            reply(&json!({"ok": true, "result": {"handled": kind}}))
        }
        (method, path) if path.starts_with("/route/") || path.starts_with("/public/") => {
            reply(&json!({
                "method": method,
                "target": request.target,
                "body": String::from_utf8_lossy(&request.body),
                "tenant": request.header("x-atrium-tenant"),
                "public": request.header("x-atrium-public-route"),
                "authorization": request.header("authorization"),
                "cookie": request.header("cookie"),
            }))
        }
        _ => (404, "text/plain", b"no such path".to_vec()),
    }
}

fn failed(message: impl Into<String>) -> Value {
    json!({"kind": "failed", "message": message.into()})
}

fn tool(name: &str, args: &Value, request: &Request) -> Result<Value, Value> {
    match name {
        "echo" => Ok(json!({
            "args": args,
            "tenant": request.header("x-atrium-tenant"),
            "call": request.header("x-atrium-call"),
            "version": request.header("x-atrium-app-version"),
            "depth": request.header("x-service-chain-depth"),
            "visited": request.header("x-service-visited-agents"),
            "has_token": request.header("x-app-mcp-token").is_some(),
            "env": {
                "PLATFORM_URL": env("PLATFORM_URL"),
                "HTTP_PROXY": env("HTTP_PROXY"),
                "APP_ID": env("APP_ID"),
                "APP_VERSION": env("APP_VERSION"),
                "GREETING": env("GREETING"),
                "MARK": env("MARK"),
            },
        })),
        "call" => call_platform(args, request),
        "fetch" => fetch(args["url"].as_str().unwrap_or_default()),
        "direct" => {
            let address = format!(
                "{}:{}",
                args["host"].as_str().unwrap_or("127.0.0.1"),
                args["port"].as_u64().unwrap_or(80)
            );
            Ok(match address.parse::<std::net::SocketAddr>() {
                Ok(a) => match TcpStream::connect_timeout(&a, Duration::from_secs(3)) {
                    Ok(_) => json!({"connected": true}),
                    Err(e) => json!({"connected": false, "error": e.to_string()}),
                },
                Err(e) => json!({"connected": false, "error": e.to_string()}),
            })
        }
        "allocate" => {
            let mb = args["mb"].as_u64().unwrap_or(1) as usize;
            let mut hoard = HOARD
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for _ in 0..mb {
                hoard.push(vec![7u8; 1 << 20]);
            }
            Ok(json!({"allocated_mb": hoard.len()}))
        }
        "sleep" => {
            let ms = args["ms"].as_u64().unwrap_or(0);
            std::thread::sleep(Duration::from_millis(ms));
            Ok(json!({"slept_ms": ms}))
        }
        "sicken" => std::fs::write("/tmp/unhealthy", b"1")
            .map(|()| json!({"sick": true}))
            .map_err(|e| failed(e.to_string())),
        "exit" => std::process::exit(3),
        "fail" => Err(failed("failing as asked")),
        "refuse" => Err(json!({
            "kind": "tool", "tool_name": "mail.send", "decision": "scope_denied",
            "message": "the install has not granted mail.send", "neededScopes": ["mail.send"],
        })),
        "invalid" => Err(json!({"kind": "invalid_input", "message": "`id` is required"})),
        "big" => Ok(Value::String(
            "x".repeat(args["bytes"].as_u64().unwrap_or(0) as usize),
        )),
        "seen" => Ok(Value::Array(
            SEEN.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        )),
        "whoami" => {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let field = |key: &str| {
                status
                    .lines()
                    .find(|l| l.starts_with(key))
                    .map(|l| l[key.len()..].trim().to_owned())
            };
            Ok(json!({
                "uid": field("Uid:"),
                "cap_eff": field("CapEff:"),
                "no_new_privs": field("NoNewPrivs:"),
                "seccomp": field("Seccomp:"),
                "root_writable": std::fs::write("/written", b"1").is_ok(),
                "tmp_writable": std::fs::write("/tmp/written", b"1").is_ok(),
            }))
        }
        other => Err(json!({"kind": "invalid_input", "message": format!("no tool `{other}`")})),
    }
}

/// `host:port` and the path of an `http://` URL.
fn split_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    Some((authority, path.to_owned()))
}

/// One HTTP/1.1 exchange: the status and the body.
fn exchange(authority: &str, head: &str, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let address = authority
        .parse::<std::net::SocketAddr>()
        .map_err(|e| format!("{authority}: {e}"))?;
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5))
        .map_err(|e| format!("connecting to {authority}: {e}"))?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {line}"))?;
    let mut length = None;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).map_err(|e| e.to_string())?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            if name == "content-length" {
                length = value.trim().parse::<usize>().ok();
            }
            if name == "transfer-encoding" && value.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).map_err(|e| e.to_string())?;
            let size = usize::from_str_radix(size.trim(), 16).map_err(|e| e.to_string())?;
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).map_err(|e| e.to_string())?;
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = length {
        body.resize(length, 0);
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    } else {
        reader.read_to_end(&mut body).map_err(|e| e.to_string())?;
    }
    Ok((status, body))
}

/// `call`: a request to the platform as the SDK makes it.
fn call_platform(args: &Value, request: &Request) -> Result<Value, Value> {
    let platform = env("PLATFORM_URL").ok_or_else(|| failed("PLATFORM_URL is not set"))?;
    let (authority, base) =
        split_url(&platform).ok_or_else(|| failed("PLATFORM_URL is not http://"))?;
    let path = format!(
        "{}{}",
        base.trim_end_matches('/'),
        args["path"].as_str().unwrap_or("/api/mcp/tools-call")
    );
    let token = match args.get("token") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Null) => None,
        _ => request.header("x-app-mcp-token").map(str::to_owned),
    };
    let depth = args["depth"]
        .as_u64()
        .map(|d| d.to_string())
        .or_else(|| request.header("x-service-chain-depth").map(str::to_owned));
    let visited = request
        .header("x-service-visited-agents")
        .map(str::to_owned);
    let body = args["body"].to_string();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(depth) = depth {
        head.push_str(&format!("X-Service-Chain-Depth: {depth}\r\n"));
    }
    if let Some(visited) = visited.filter(|v| !v.is_empty()) {
        head.push_str(&format!("X-Service-Visited-Agents: {visited}\r\n"));
    }
    head.push_str("\r\n");
    let (status, answer) = exchange(&authority, &head, body.as_bytes()).map_err(failed)?;
    Ok(json!({
        "status": status,
        "body": serde_json::from_slice::<Value>(&answer)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&answer).into_owned())),
    }))
}

/// `fetch`: a GET through the egress proxy, as any HTTP client honouring `HTTP_PROXY` does.
fn fetch(url: &str) -> Result<Value, Value> {
    let proxy = env("HTTP_PROXY").ok_or_else(|| failed("HTTP_PROXY is not set"))?;
    let (proxy, _) = split_url(&proxy).ok_or_else(|| failed("HTTP_PROXY is not http://"))?;
    let (authority, _) = split_url(url).ok_or_else(|| failed("only http:// URLs"))?;
    let head = format!("GET {url} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    let (status, body) = exchange(&proxy, &head, &[]).map_err(failed)?;
    Ok(json!({"status": status, "body": String::from_utf8_lossy(&body)}))
}
