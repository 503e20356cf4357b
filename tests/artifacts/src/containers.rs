//! Container images for the tests of the compatibility shim, made the way a developer makes
//! them: a real registry (Debian's `docker-registry`, on a loopback port), images built with
//! `umoci` and pushed with `skopeo`, run by Debian's `runc`. [`crate::debian`] installs what is
//! missing with apt (the tests run as root on Debian).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tools of these tests: runc, umoci, skopeo, the registry and a static busybox.
pub fn tools() {
    crate::debian(&[
        ("/usr/sbin/runc", "runc"),
        ("/usr/bin/umoci", "umoci"),
        ("/usr/bin/skopeo", "skopeo"),
        ("/usr/bin/docker-registry", "docker-registry"),
        ("/bin/busybox", "busybox-static"),
    ]);
}

/// A free port on loopback.
#[allow(clippy::expect_used)]
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A registry on a loopback port, stopped when dropped.
pub struct Registry {
    /// Its `host:port`.
    pub address: String,
    /// Its storage directory.
    pub storage: PathBuf,
    child: Child,
    _dir: PathBuf,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self._dir);
    }
}

impl Registry {
    /// Starts one in a fresh directory under `dir`; with `user` set, it asks for that user's
    /// password (HTTP basic, htpasswd with bcrypt).
    ///
    /// # Panics
    ///
    /// When it does not start.
    #[allow(clippy::panic, clippy::expect_used)]
    pub fn start(dir: &Path, user: Option<(&str, &str)>) -> Registry {
        tools();
        let port = free_port();
        let dir = dir.join(format!("registry-{port}"));
        std::fs::create_dir_all(&dir).expect("registry dir");
        let storage = dir.join("data");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            storage.display()
        );
        if let Some((name, password)) = user {
            let hash = Command::new("python3")
                .args([
                    "-W",
                    "ignore",
                    "-c",
                    "import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))",
                    password,
                ])
                .output()
                .expect("python3 makes a bcrypt hash");
            let hash = String::from_utf8_lossy(&hash.stdout).trim().to_owned();
            assert!(hash.starts_with("$2"), "a bcrypt hash: {hash}");
            std::fs::write(dir.join("htpasswd"), format!("{name}:{hash}\n")).expect("htpasswd");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: atrium-tests\n    path: {}\n",
                dir.join("htpasswd").display()
            ));
        }
        std::fs::write(dir.join("config.yml"), config).expect("registry config");
        let child = Command::new("/usr/bin/docker-registry")
            .arg("serve")
            .arg(dir.join("config.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("docker-registry does not start: {e}"));
        let address = format!("127.0.0.1:{port}");
        let until = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&address).is_err() {
            assert!(
                Instant::now() < until,
                "the registry does not listen on {address}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Registry {
            address,
            storage,
            child,
            _dir: dir,
        }
    }
}

/// An image to build: files copied into an empty root, and its run configuration.
#[derive(Default)]
pub struct ImageSpec<'a> {
    /// `(path in the image, file on the host)`, executable.
    pub files: Vec<(&'a str, PathBuf)>,
    /// `(path in the image, content)`.
    pub texts: Vec<(&'a str, String)>,
    /// Symbolic links `(path, target)`.
    pub links: Vec<(&'a str, &'a str)>,
    /// `Entrypoint`.
    pub entrypoint: Vec<&'a str>,
    /// `Env`.
    pub env: Vec<&'a str>,
    /// `User`.
    pub user: Option<&'a str>,
}

fn run(command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?} cannot run: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds `spec` with umoci in `work` and pushes it to `registry` as `repository:tag` with
/// skopeo (with `creds`, `user:password`, when the registry asks). Returns the reference.
///
/// # Panics
///
/// When a tool fails.
#[allow(clippy::expect_used)]
pub fn push(
    work: &Path,
    registry: &Registry,
    repository: &str,
    tag: &str,
    spec: &ImageSpec<'_>,
    creds: Option<&str>,
) -> String {
    tools();
    let dir = work.join(format!("image-{repository}-{tag}-{}", free_port()));
    let layout = dir.join("layout");
    let bundle = dir.join("bundle");
    std::fs::create_dir_all(&dir).expect("image dir");
    run(Command::new("umoci")
        .arg("init")
        .arg("--layout")
        .arg(&layout));
    let image = format!("{}:{tag}", layout.display());
    run(Command::new("umoci").args(["new", "--image", &image]));
    run(Command::new("umoci")
        .args(["unpack", "--image", &image])
        .arg(&bundle));
    let rootfs = bundle.join("rootfs");
    for (path, source) in &spec.files {
        let at = rootfs.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("parent dir");
        std::fs::copy(source, &at).expect("copy into the image");
    }
    for (path, text) in &spec.texts {
        let at = rootfs.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("parent dir");
        std::fs::write(&at, text).expect("write into the image");
    }
    for (path, target) in &spec.links {
        let at = rootfs.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("parent dir");
        std::os::unix::fs::symlink(target, &at).expect("link in the image");
    }
    run(Command::new("umoci")
        .args(["repack", "--image", &image])
        .arg(&bundle));
    let mut config = Command::new("umoci");
    config.args(["config", "--image", &image]);
    for part in &spec.entrypoint {
        config.args(["--config.entrypoint", part]);
    }
    for env in &spec.env {
        config.args(["--config.env", env]);
    }
    if let Some(user) = spec.user {
        config.args(["--config.user", user]);
    }
    run(&mut config);
    let reference = format!("{}/{repository}:{tag}", registry.address);
    let mut copy = Command::new("skopeo");
    copy.args([
        "--insecure-policy",
        "copy",
        "--quiet",
        "--dest-tls-verify=false",
    ]);
    if let Some(creds) = creds {
        copy.args(["--dest-creds", creds]);
    }
    copy.arg(format!("oci:{image}"))
        .arg(format!("docker://{reference}"));
    run(&mut copy);
    let _ = std::fs::remove_dir_all(&dir);
    reference
}

/// An address of this machine that is not loopback, for an egress target the proxy may reach.
pub fn outside_address() -> Option<std::net::IpAddr> {
    let out = Command::new("hostname").arg("-I").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|a| a.parse().ok())
        .find(|a: &std::net::IpAddr| a.is_ipv4() && !a.is_loopback())
}
