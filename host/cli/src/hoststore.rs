//! Which store the host's administration commands (`keys`, `developers`, `tenants`) open, and
//! the record by which they find a running host's.
//!
//! A newcomer who runs `atrium developers create` in another directory than the host's must not
//! get a second, empty store whose tokens the host then refuses. So the commands never create a
//! store unless asked (`--create`), and say on standard error which one they opened:
//!
//! 1. `ATRIUM_DATABASE_URL` when set (PostgreSQL; the data directory still holds the signing
//!    key of developer tokens);
//! 2. else the data directory named by `--data-dir` or `ATRIUM_DATA_DIR`, which must hold a
//!    store (`atrium.db`);
//! 3. else `./.atrium` when it holds a store;
//! 4. else the data directory of the one host running on this machine as this user: `atrium
//!    serve` writes a record of itself (address, data directory, kind of store; never a
//!    database address, which may carry a password) under the state directory
//!    (`ATRIUM_STATE_DIR`, else `$XDG_STATE_HOME/atrium`, else `~/.local/state/atrium`) and
//!    removes it when it stops; a record whose host does not answer on its address is stale and
//!    is removed;
//! 5. else, with `--create`, a new store in `./.atrium` (or the named directory).
//!
//! Anything else exits 1 saying what to do.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use atrium_store::{Store, StoreError};

/// The arguments that choose the store, shared by `keys`, `developers` and `tenants`.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The host's data directory (SQLite database, signing key). Default: ./.atrium when it
    /// holds a store, else the running host's.
    #[arg(long, value_name = "DIR", env = "ATRIUM_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Create a new store when the data directory has none (a new host's first key, say).
    #[arg(long, global = true)]
    pub create: bool,
}

/// The store chosen.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The data directory (the SQLite database unless `url`, the signing key).
    pub data_dir: PathBuf,
    /// `ATRIUM_DATABASE_URL`.
    url: Option<String>,
    /// How it was found, for the message.
    how: String,
}

/// The SQLite database's file in a data directory.
const DATABASE: &str = "atrium.db";
/// The default data directory, as `atrium serve` has it.
const DEFAULT_DATA_DIR: &str = ".atrium";

impl StoreArgs {
    /// Chooses the store and opens it; a failure is printed and answered with its exit code
    /// (1 when no store was found, 2 when the one found cannot be opened).
    pub async fn open(&self) -> Result<(Store, Chosen), std::process::ExitCode> {
        let chosen = self.choose().map_err(|message| {
            eprintln!("error: {message}");
            std::process::ExitCode::from(1)
        })?;
        match chosen.open().await {
            Ok(store) => Ok((store, chosen)),
            Err(e) => {
                eprintln!("error: {e}");
                Err(std::process::ExitCode::from(2))
            }
        }
    }

    /// Chooses the store (see the module docs) and says which on standard error.
    pub fn choose(&self) -> Result<Chosen, String> {
        let chosen = self.find()?;
        eprintln!("{}", chosen.describe());
        Ok(chosen)
    }

    fn find(&self) -> Result<Chosen, String> {
        let url = std::env::var("ATRIUM_DATABASE_URL")
            .ok()
            .filter(|u| !u.trim().is_empty());
        if let Some(url) = url {
            return Ok(Chosen {
                data_dir: self
                    .data_dir
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR)),
                url: Some(url),
                how: "ATRIUM_DATABASE_URL".to_owned(),
            });
        }
        if let Some(dir) = &self.data_dir {
            if has_store(dir) || self.create {
                return Ok(Chosen {
                    data_dir: dir.clone(),
                    url: None,
                    how: if has_store(dir) {
                        "--data-dir"
                    } else {
                        "new, --create"
                    }
                    .to_owned(),
                });
            }
            return Err(format!(
                "{} holds no store ({DATABASE}): name the data directory of your host (the --data-dir of `atrium serve`), or pass --create to make a new store there",
                dir.display()
            ));
        }
        let default = PathBuf::from(DEFAULT_DATA_DIR);
        if has_store(&default) {
            return Ok(Chosen {
                data_dir: default,
                url: None,
                how: "./.atrium".to_owned(),
            });
        }
        let running = running_hosts();
        match running.as_slice() {
            [host] if !host.postgres => {
                return Ok(Chosen {
                    data_dir: host.data_dir.clone(),
                    url: None,
                    how: format!("the host running on {} (pid {})", host.addr, host.pid),
                });
            }
            [host] if !self.create => {
                return Err(format!(
                    "the host running on {} (pid {}) keeps its data in PostgreSQL: set ATRIUM_DATABASE_URL to its database",
                    host.addr, host.pid
                ));
            }
            [_, _, ..] if !self.create => {
                let list: Vec<String> = running
                    .iter()
                    .map(|h| format!("{} (pid {}, {})", h.addr, h.pid, h.data_dir.display()))
                    .collect();
                return Err(format!(
                    "several hosts are running ({}): pass --data-dir naming the one to administer",
                    list.join("; ")
                ));
            }
            _ => {}
        }
        if self.create {
            return Ok(Chosen {
                data_dir: default,
                url: None,
                how: "new, --create".to_owned(),
            });
        }
        Err(format!(
            "there is no store in ./{DEFAULT_DATA_DIR} and no running host was found: run this where `atrium serve` keeps its data, pass --data-dir DIR (or set ATRIUM_DATABASE_URL), or --create to make a new store here"
        ))
    }
}

impl Chosen {
    /// Opens the store.
    pub async fn open(&self) -> Result<Store, StoreError> {
        match &self.url {
            Some(url) => Store::open_url(url.trim()).await,
            None => Store::open_sqlite(&self.data_dir).await,
        }
    }

    /// `store: ...`, naming the database and how it was chosen.
    fn describe(&self) -> String {
        match &self.url {
            Some(url) => format!("store: {} ({})", redact(url), self.how),
            None => format!(
                "store: {} ({})",
                absolute(&self.data_dir.join(DATABASE)).display(),
                self.how
            ),
        }
    }
}

/// A database address without its password.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => "ATRIUM_DATABASE_URL (not shown: it does not parse)".to_owned(),
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn has_store(dir: &Path) -> bool {
    dir.join(DATABASE).is_file()
}

/// The record of a running host.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct HostRecord {
    /// The process.
    pub pid: u32,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its data directory, absolute.
    pub data_dir: PathBuf,
    /// It keeps its data in PostgreSQL (the address is not recorded).
    pub postgres: bool,
}

/// The directory of host records.
fn records_dir() -> Option<PathBuf> {
    let state = std::env::var_os("ATRIUM_STATE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_STATE_HOME")
                .filter(|v| !v.is_empty())
                .map(|d| PathBuf::from(d).join("atrium"))
        })
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state/atrium"))
        })?;
    Some(state.join("hosts"))
}

/// The hosts whose records answer on their address; stale records are removed.
fn running_hosts() -> Vec<HostRecord> {
    let Some(dir) = records_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let record = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<HostRecord>(&bytes).ok());
        match record {
            Some(record) if answers(record.addr) => found.push(record),
            _ => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    found.sort_by_key(|r| r.pid);
    found
}

/// Something accepts connections on `addr` (an unspecified address is tried on loopback).
fn answers(addr: SocketAddr) -> bool {
    let mut target = addr;
    if target.ip().is_unspecified() {
        target.set_ip(if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    TcpStream::connect_timeout(&target, Duration::from_millis(500)).is_ok()
}

/// A host's record, removed when dropped.
pub struct Registered(PathBuf);

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes the record of this host (`atrium serve`); `None` when the state directory cannot be
/// written (the host runs all the same; administration commands then need --data-dir).
pub fn register_running(addr: SocketAddr, data_dir: &Path, postgres: bool) -> Option<Registered> {
    let dir = records_dir()?;
    std::fs::create_dir_all(&dir).ok()?;
    let record = HostRecord {
        pid: std::process::id(),
        addr,
        data_dir: std::fs::canonicalize(data_dir).unwrap_or_else(|_| absolute(data_dir)),
        postgres,
    };
    let path = dir.join(format!("{}.json", record.pid));
    let partial = dir.join(format!(".{}.json.partial", record.pid));
    std::fs::write(&partial, serde_json::to_vec(&record).ok()?).ok()?;
    std::fs::rename(&partial, &path).ok()?;
    Some(Registered(path))
}
