//! A real S3 server for the tests of object storage: moto's, installed from PyPI into the
//! build cache on first use (see [`crate::python::packages`]) and run on a free local port.
//!
//! [`S3Server::start`] blocks while pip and the server start, so async tests call it through
//! `tokio::task::spawn_blocking`.
//!
//! ```no_run
//! use atrium_test_artifacts::s3::S3Server;
//!
//! let mut s3 = S3Server::start("atrium-test");
//! // Point the store at `s3.endpoint()` with access key and secret "test", region
//! // "us-east-1" and plain http allowed; then look at what it wrote:
//! assert!(s3.keys("prefix/").is_empty());
//! ```

// A helper of tests: a server that does not start or answer means the test cannot go on.
#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Runs moto's S3 server behind a gate, creates the bucket, prints the gate's endpoint, then
/// answers each line: `list <prefix>` with the keys under the prefix (one line, a sorted JSON
/// array), `damage <key>` by overwriting that object with other bytes (`ok`), `stop` by
/// stopping moto and closing the gate's port and every connection through it (`ok`), `start`
/// by starting moto again and reopening the same port (`ok`). Moto keeps its objects in the
/// process, so a restarted server has the objects it had.
const SERVER: &str = r#"
import json
import socket
import sys
import threading
import boto3
from moto.server import ThreadedMotoServer

class Gate:
    """A TCP port in front of moto that can be closed, cutting every open connection."""

    def __init__(self):
        self.port = 0
        self.target = None
        self.listener = None
        self.lock = threading.Lock()
        self.open_sockets = set()

    def open(self, target):
        self.target = target
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self.accept, args=(listener,), daemon=True).start()

    def accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open_sockets.update((client, upstream))
            threading.Thread(target=self.pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self.pipe, args=(upstream, client), daemon=True).start()

    def pipe(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self.lock:
            self.open_sockets.discard(source)

    def close(self):
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        with self.lock:
            for s in self.open_sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.open_sockets.clear()

def moto(port=0):
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server, server.get_host_and_port()[1]

bucket = sys.argv[1]
server, moto_port = moto()
gate = Gate()
gate.open(moto_port)
endpoint = f"http://127.0.0.1:{gate.port}"
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{moto_port}", aws_access_key_id="test",
                  aws_secret_access_key="test", region_name="us-east-1")
s3.create_bucket(Bucket=bucket)
print(endpoint, flush=True)
for line in sys.stdin:
    command, _, arg = line.rstrip("\n").partition(" ")
    if command == "list":
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=arg):
            keys += [o["Key"] for o in page.get("Contents", [])]
        print(json.dumps(sorted(keys)), flush=True)
    elif command == "damage":
        s3.put_object(Bucket=bucket, Key=arg, Body=b"damaged")
        print("ok", flush=True)
    elif command == "stop":
        gate.close()
        server.stop()
        print("ok", flush=True)
    elif command == "start":
        server, _ = moto(moto_port)
        gate.open(moto_port)
        print("ok", flush=True)
server.stop()
"#;

/// A running moto S3 server with one empty bucket; it stops when dropped.
///
/// Its credentials are access key `test`, secret `test`, region `us-east-1`, over plain http.
pub struct S3Server {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    endpoint: String,
}

impl std::fmt::Debug for S3Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Server")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl S3Server {
    /// Starts the server with the bucket `bucket` created, and waits until it answers.
    ///
    /// # Panics
    ///
    /// When `python3` or pip cannot run, or the server does not start.
    pub fn start(bucket: &str) -> S3Server {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(SERVER)
            .arg(bucket)
            .env(
                "PYTHONPATH",
                crate::python::packages(
                    "moto",
                    "moto/server.py",
                    &["moto[s3]>=5.1,<6", "flask>=3,<4", "flask-cors>=4,<7"],
                ),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 starts");
        let input = child.stdin.take().expect("a piped stdin");
        let mut output = BufReader::new(child.stdout.take().expect("a piped stdout"));
        let mut endpoint = String::new();
        output
            .read_line(&mut endpoint)
            .expect("read the S3 server's endpoint");
        let endpoint = endpoint.trim().to_owned();
        assert!(
            endpoint.starts_with("http://127.0.0.1:"),
            "the S3 server did not start: {endpoint:?}"
        );
        S3Server {
            child,
            input,
            output,
            endpoint,
        }
    }

    /// The server's URL, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The keys of the objects in the bucket under `prefix`, sorted.
    ///
    /// # Panics
    ///
    /// When the server does not answer.
    pub fn keys(&mut self, prefix: &str) -> Vec<String> {
        let answer = self.ask(&format!("list {prefix}"));
        serde_json::from_str(&answer)
            .unwrap_or_else(|e| panic!("the S3 server answered {answer:?} ({e})"))
    }

    /// Overwrites the object `key` with other bytes, behind the back of whatever stored it.
    ///
    /// # Panics
    ///
    /// When the server does not answer or fails to write.
    pub fn damage(&mut self, key: &str) {
        assert_eq!(self.ask(&format!("damage {key}")), "ok");
    }

    /// Takes the server down: moto stops, and the endpoint's port closes with every
    /// connection through it cut, as when the storage service or the network to it fails.
    ///
    /// # Panics
    ///
    /// When the server does not answer.
    pub fn stop(&mut self) {
        assert_eq!(self.ask("stop"), "ok");
    }

    /// Brings the server back on the same endpoint, with the objects it had.
    ///
    /// # Panics
    ///
    /// When the server does not answer or cannot start.
    pub fn start_again(&mut self) {
        assert_eq!(self.ask("start"), "ok");
    }

    fn ask(&mut self, command: &str) -> String {
        writeln!(self.input, "{command}").expect("write to the S3 server");
        self.input.flush().expect("write to the S3 server");
        let mut line = String::new();
        self.output
            .read_line(&mut line)
            .expect("read the S3 server's answer");
        line.trim().to_owned()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
