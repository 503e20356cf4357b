//! The compatibility shim's images and containers against the real tools: Debian's
//! `docker-registry` on a loopback port, images built with `umoci` and pushed with `skopeo`,
//! containers run by Debian's `runc` (the tests run as root).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_containers::{
    Credentials, IdShift, ImageError, Images, Launch, PullConfig, Runc, image::RunConfig,
};
use atrium_manifest::sandbox::EgressPolicy;
use atrium_test_artifacts::containers::{ImageSpec, Registry, outside_address, push, tools};
use oci_client::secrets::RegistryAuth;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The user namespace's range of these tests' containers.
const SHIFT: IdShift = IdShift {
    base: 100_000,
    size: 65_536,
};

/// A directory the containers' users can traverse (a temporary directory is `0700`).
fn workdir() -> tempfile::TempDir {
    tools();
    let dir = tempfile::Builder::new()
        .prefix("atrium-containers-")
        .tempdir_in("/tmp")
        .expect("a temporary directory");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("the directory opened to the containers' users");
    dir
}

fn config(registry: &Registry, credentials: Credentials) -> PullConfig {
    PullConfig {
        credentials,
        insecure: vec![registry.address.clone()],
        shift: Some(SHIFT),
        ..PullConfig::default()
    }
}

/// An image with a static busybox and `texts`, running `entrypoint`.
fn busybox<'a>(texts: Vec<(&'a str, String)>, entrypoint: Vec<&'a str>) -> ImageSpec<'a> {
    ImageSpec {
        files: vec![("/bin/busybox", PathBuf::from("/bin/busybox"))],
        texts,
        entrypoint,
        env: vec!["PATH=/bin"],
        ..ImageSpec::default()
    }
}

fn launch(id: &str, image: Arc<atrium_containers::Image>, port: u16) -> Launch {
    Launch {
        id: id.to_owned(),
        hostname: "app".into(),
        image,
        env: Vec::new(),
        port,
        memory_mb: 64,
        cpu_cores: 0.5,
        pids: 64,
        tmpfs_mb: 8,
        egress: EgressPolicy::new([]),
        platform: None,
        shift: SHIFT,
    }
}

/// `GET path` on a connection the container accepted, the whole answer.
async fn get(container: &atrium_containers::Container, path: &str) -> std::io::Result<String> {
    let mut stream = container.connect().await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: app\r\n\r\n").as_bytes())
        .await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// The answer to `GET path` once the container listens.
async fn get_when_up(container: &atrium_containers::Container, path: &str) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        match get(container, path).await {
            Ok(answer) if !answer.is_empty() => return answer,
            other => {
                assert!(
                    Instant::now() < until,
                    "the container does not answer on its port: {other:?}; it said: {}",
                    container.output(4096).await
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

fn rootfs_entries(store: &Path) -> usize {
    std::fs::read_dir(store.join("rootfs"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_is_pinned_at_registration_and_its_image_pulled_once_whatever_asks() {
    let work = workdir();
    let registry = Registry::start(work.path(), None);
    let first = busybox(
        vec![("/srv/version", "first".into())],
        vec!["/bin/busybox", "true"],
    );
    let reference = push(work.path(), &registry, "desk", "1", &first, None);
    let store = work.path().join("images");
    let images = Images::open(&store, config(&registry, Credentials::none())).unwrap();
    let pinned = images.pin(&reference).await.unwrap();
    assert!(
        pinned.starts_with(&format!("{}/desk@sha256:", registry.address)),
        "{pinned}"
    );
    assert_eq!(
        images.pin(&pinned).await.unwrap(),
        pinned,
        "a pinned reference pins to itself"
    );

    // The tag moves to another image: the registered version keeps the first.
    let second = busybox(
        vec![("/srv/version", "second".into())],
        vec!["/bin/busybox", "true"],
    );
    push(work.path(), &registry, "desk", "1", &second, None);
    let moved = images.pin(&reference).await.unwrap();
    assert_ne!(moved, pinned, "the tag now names another digest");

    let gets = (0..8).map(|_| {
        let images = images.clone();
        let pinned = pinned.clone();
        tokio::spawn(async move { images.get(&pinned).await })
    });
    let got: Vec<_> = futures::future::join_all(gets)
        .await
        .into_iter()
        .map(|r| r.unwrap().unwrap())
        .collect();
    assert_eq!(images.pulls(), 1, "eight first uses, one pull");
    for image in &got {
        assert!(Arc::ptr_eq(image, &got[0]));
    }
    let image = &got[0];
    assert_eq!(image.reference, pinned);
    assert_eq!(
        std::fs::read_to_string(image.rootfs.join("srv/version")).unwrap(),
        "first"
    );
    assert_eq!(
        image.run,
        RunConfig {
            entrypoint: vec!["/bin/busybox".into(), "true".into()],
            env: vec!["PATH=/bin".into()],
            ..image.run.clone()
        }
    );
    // Owned by the user namespace's root, read-only for the container.
    let meta = std::fs::metadata(image.rootfs.join("srv/version")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), SHIFT.base);

    // Another store on the same directory (the host restarted) finds it on disk.
    let again = Images::open(&store, config(&registry, Credentials::none())).unwrap();
    let cached = again.get(&pinned).await.unwrap();
    assert_eq!(again.pulls(), 0, "an unpacked image is not pulled again");
    assert_eq!(cached.rootfs, image.rootfs);

    // An unpinned reference is not pulled.
    let unpinned = images.get(&reference).await.unwrap_err();
    assert!(
        matches!(unpinned, ImageError::Reference { .. }),
        "{unpinned}"
    );
    let unknown = images
        .pin(&format!("{}/nothing:1", registry.address))
        .await
        .unwrap_err();
    assert!(matches!(unknown, ImageError::NotFound { .. }), "{unknown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_asks_for_credentials_gets_those_configured_for_it_or_refuses() {
    let work = workdir();
    let registry = Registry::start(work.path(), Some(("puller", "s3cret-pass")));
    let spec = busybox(Vec::new(), vec!["/bin/busybox", "true"]);
    let reference = push(
        work.path(),
        &registry,
        "private",
        "1",
        &spec,
        Some("puller:s3cret-pass"),
    );

    let anonymous = Images::open(
        work.path().join("a"),
        config(&registry, Credentials::none()),
    )
    .unwrap();
    let refused = anonymous.pin(&reference).await.unwrap_err();
    assert!(matches!(refused, ImageError::Auth { .. }), "{refused}");

    let wrong = Credentials::none().with(
        registry.address.clone(),
        RegistryAuth::Basic("puller".into(), "wrong".into()),
    );
    let wrong = Images::open(work.path().join("w"), config(&registry, wrong)).unwrap();
    let refused = wrong.pin(&reference).await.unwrap_err();
    assert!(matches!(refused, ImageError::Auth { .. }), "{refused}");
    assert!(refused.to_string().contains("refused access"), "{refused}");

    // Credentials for another registry are not sent to this one.
    let elsewhere = Credentials::none().with(
        "registry.example",
        RegistryAuth::Basic("puller".into(), "s3cret-pass".into()),
    );
    let elsewhere = Images::open(work.path().join("e"), config(&registry, elsewhere)).unwrap();
    assert!(matches!(
        elsewhere.pin(&reference).await.unwrap_err(),
        ImageError::Auth { .. }
    ));

    let docker_config = format!(
        r#"{{"auths": {{"{}": {{"username": "puller", "password": "s3cret-pass"}}}}}}"#,
        registry.address
    );
    let right = Credentials::from_docker_config(&docker_config).unwrap();
    let right = Images::open(work.path().join("r"), config(&registry, right)).unwrap();
    let pinned = right.pin(&reference).await.unwrap();
    let image = right.get(&pinned).await.unwrap();
    assert!(image.rootfs.join("bin/busybox").is_file());
}

/// Flips a byte in the middle of every layer blob (gzip) the registry stores.
fn corrupt_layers(storage: &Path) -> usize {
    let blobs = storage.join("docker/registry/v2/blobs/sha256");
    let mut corrupted = 0;
    for prefix in std::fs::read_dir(&blobs).unwrap() {
        for blob in std::fs::read_dir(prefix.unwrap().path()).unwrap() {
            let data = blob.unwrap().path().join("data");
            let mut bytes = std::fs::read(&data).unwrap();
            if bytes.starts_with(&[0x1f, 0x8b]) {
                let middle = bytes.len() / 2;
                bytes[middle] ^= 0xff;
                std::fs::write(&data, bytes).unwrap();
                corrupted += 1;
            }
        }
    }
    corrupted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_that_does_not_match_its_digest_is_refused_and_leaves_nothing() {
    let work = workdir();
    let registry = Registry::start(work.path(), None);
    let spec = busybox(
        vec![("/srv/data", "x".repeat(100_000))],
        vec!["/bin/busybox", "true"],
    );
    let reference = push(work.path(), &registry, "tampered", "1", &spec, None);
    let store = work.path().join("images");
    let images = Images::open(&store, config(&registry, Credentials::none())).unwrap();
    let pinned = images.pin(&reference).await.unwrap();
    assert!(corrupt_layers(&registry.storage) >= 1);
    let refused = images.get(&pinned).await.unwrap_err();
    assert!(
        matches!(refused, ImageError::Digest { .. }),
        "a digest error, not: {refused}"
    );
    assert_eq!(rootfs_entries(&store), 0, "nothing is unpacked");
    let tmp: Vec<_> = std::fs::read_dir(store.join("tmp")).unwrap().collect();
    assert!(tmp.is_empty(), "nothing is left in tmp/: {tmp:?}");
    // The failure is not remembered: the next use tries again (and fails again).
    assert!(images.get(&pinned).await.is_err());
    assert_eq!(images.pulls(), 2);
}

/// An image serving `/www` on `port` with busybox httpd.
fn httpd(port: u16) -> ImageSpec<'static> {
    let port: &'static str = Box::leak(port.to_string().into_boxed_str());
    busybox(
        vec![("/www/index.html", "hello from inside".into())],
        vec!["/bin/busybox", "httpd", "-f", "-p", port, "-h", "/www"],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_is_reached_on_its_port_only_through_the_host_and_stops_without_a_trace() {
    let work = workdir();
    let registry = Registry::start(work.path(), None);
    let port = atrium_test_artifacts::containers::free_port();
    let reference = push(work.path(), &registry, "web", "1", &httpd(port), None);
    let images = Images::open(
        work.path().join("images"),
        config(&registry, Credentials::none()),
    )
    .unwrap();
    let image = images
        .get(&images.pin(&reference).await.unwrap())
        .await
        .unwrap();
    let runc = Runc::new("/usr/sbin/runc", &work.path().join("runc"));
    assert!(runc.version().await.unwrap().contains("runc"));
    let container = runc
        .start(launch("web-1", image.clone(), port))
        .await
        .unwrap();
    let answer = get_when_up(&container, "/index.html").await;
    assert!(
        answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"),
        "{answer}"
    );
    assert!(answer.ends_with("hello from inside"), "{answer}");
    assert!(container.running().await);
    // The port is not published on the machine.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    if let Some(outside) = outside_address() {
        assert!(std::net::TcpStream::connect((outside, port)).is_err());
    }
    // Its processes run as the user namespace's ids, not as the host's root.
    let status = std::fs::read_to_string(format!("/proc/{}/status", container.pid())).unwrap();
    let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert!(uid_line.contains(&SHIFT.base.to_string()), "{uid_line}");
    let caps = status.lines().find(|l| l.starts_with("CapEff:")).unwrap();
    assert!(
        caps.ends_with("0000000000000000"),
        "no capabilities: {caps}"
    );
    let nnp = status
        .lines()
        .find(|l| l.starts_with("NoNewPrivs:"))
        .unwrap();
    assert!(nnp.ends_with('1'), "{nnp}");
    let seccomp = status.lines().find(|l| l.starts_with("Seccomp:")).unwrap();
    assert!(seccomp.ends_with('2'), "a seccomp filter: {seccomp}");

    let pid = container.pid();
    container.stop().await;
    assert_eq!(runc.list().await.unwrap(), Vec::<String>::new());
    assert!(!work.path().join("runc/bundles/web-1").exists());
    let until = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < until, "the container's process is gone");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A plain HTTP server on `address`, answering every request with `body`.
async fn outside_server(address: std::net::IpAddr, body: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind((address, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let _ = stream
                    .write_all(
                        format!(
                            "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    port
}

/// Tool `name` of the container guest with `args`: its reply's `result`, or its `error`.
async fn guest_tool(
    container: &atrium_containers::Container,
    name: &str,
    args: serde_json::Value,
) -> serde_json::Value {
    let body = serde_json::json!({"name": name, "args": args}).to_string();
    let request = http::Request::post("/tool")
        .header("host", "app")
        .header("content-type", "application/json")
        .body(bytes::Bytes::from(body))
        .unwrap();
    let response = container.send(request, 1 << 20).await.unwrap();
    let reply: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
    if reply["ok"] == true {
        reply["result"].clone()
    } else {
        reply["error"].clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn egress_reaches_only_the_hosts_the_manifest_names_through_the_host_proxy() {
    let Some(outside) = outside_address() else {
        panic!("this machine has no address besides loopback to test egress with");
    };
    let port = outside_server(outside, "outside answered").await;
    let work = workdir();
    let registry = Registry::start(work.path(), None);
    let spec = ImageSpec {
        files: vec![(
            "/app/guest",
            PathBuf::from(atrium_test_artifacts::CONTAINER_GUEST),
        )],
        texts: vec![("/app/atrium.app.yaml", "not read here".into())],
        entrypoint: vec!["/app/guest"],
        ..ImageSpec::default()
    };
    let reference = push(work.path(), &registry, "egress", "1", &spec, None);
    let images = Images::open(
        work.path().join("images"),
        config(&registry, Credentials::none()),
    )
    .unwrap();
    let image = images
        .get(&images.pin(&reference).await.unwrap())
        .await
        .unwrap();
    let runc = Runc::new("/usr/sbin/runc", &work.path().join("runc"));
    let app_port = atrium_test_artifacts::containers::free_port();
    let mut run = launch("egress-1", image, app_port);
    run.egress = EgressPolicy::new([outside.to_string().as_str(), "127.0.0.1"]);
    run.env = vec![
        ("PORT".into(), app_port.to_string()),
        (
            "HTTP_PROXY".into(),
            format!("http://127.0.0.1:{}", atrium_containers::runc::PROXY_PORT),
        ),
    ];
    let container = runc.start(run).await.unwrap();
    get_when_up(&container, "/health").await;
    let allowed = guest_tool(
        &container,
        "fetch",
        serde_json::json!({"url": format!("http://{outside}:{port}/")}),
    )
    .await;
    let named = guest_tool(
        &container,
        "fetch",
        serde_json::json!({"url": "http://blocked.example/"}),
    )
    .await;
    let loopback = guest_tool(
        &container,
        "fetch",
        serde_json::json!({"url": format!("http://127.0.0.1:{port}/")}),
    )
    .await;
    let direct = guest_tool(
        &container,
        "direct",
        serde_json::json!({"host": outside.to_string(), "port": port}),
    )
    .await;
    container.stop().await;
    assert_eq!(
        allowed,
        serde_json::json!({"status": 200, "body": "outside answered"}),
        "a named host is reached through the proxy"
    );
    assert_eq!(named["status"], 403, "a host not named is refused: {named}");
    assert!(
        named["body"]
            .as_str()
            .unwrap()
            .contains("network.egress_hosts"),
        "{named}"
    );
    assert_eq!(
        loopback["status"], 502,
        "the host's own loopback is refused even when named: {loopback}"
    );
    assert_eq!(
        direct["connected"], false,
        "nothing is reachable without the proxy: {direct}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_over_its_memory_limit_is_killed_alone_and_the_host_clears_what_a_crash_left() {
    let work = workdir();
    let registry = Registry::start(work.path(), None);
    let port = atrium_test_artifacts::containers::free_port();
    let web = push(work.path(), &registry, "web", "1", &httpd(port), None);
    let hog = busybox(
        Vec::new(),
        vec![
            "/bin/busybox",
            "sh",
            "-c",
            "echo start; /bin/busybox dd if=/dev/zero of=/dev/null bs=256M count=4; echo \"dd=$?\"",
        ],
    );
    let hog = push(work.path(), &registry, "hog", "1", &hog, None);
    let images = Images::open(
        work.path().join("images"),
        config(&registry, Credentials::none()),
    )
    .unwrap();
    let web = images.get(&images.pin(&web).await.unwrap()).await.unwrap();
    let hog = images.get(&images.pin(&hog).await.unwrap()).await.unwrap();
    let runc = Runc::new("/usr/sbin/runc", &work.path().join("runc"));
    let neighbour = runc.start(launch("web-1", web, port)).await.unwrap();
    get_when_up(&neighbour, "/index.html").await;
    let mut greedy = launch("hog-1", hog, 8080);
    greedy.memory_mb = 32;
    let greedy = runc.start(greedy).await.unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while greedy.running().await {
        assert!(Instant::now() < until, "the hog is never stopped");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let said = greedy.output(4096).await;
    assert!(said.contains("start"), "{said}");
    assert!(
        said.contains("dd=137"),
        "the hog was killed (SIGKILL) by the memory limit: {said}"
    );
    let answer = get(&neighbour, "/index.html").await.unwrap();
    assert!(
        answer.ends_with("hello from inside"),
        "the neighbour still serves: {answer}"
    );
    greedy.stop().await;

    // The host dies without stopping its container: the next host on the same directory
    // finds it and removes it.
    let pid = neighbour.pid();
    std::mem::forget(neighbour);
    let next = Runc::new("/usr/sbin/runc", &work.path().join("runc"));
    assert_eq!(next.list().await.unwrap(), vec!["web-1".to_owned()]);
    assert_eq!(next.clean_up().await.unwrap(), 1);
    assert!(next.list().await.unwrap().is_empty());
    assert!(!work.path().join("runc/bundles").exists());
    let until = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            Instant::now() < until,
            "the left container's process is gone"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
