//! `atrium keys`: organization API keys for the /v1 API.
//!
//! The store is the host's, chosen as [`crate::hoststore`] says (`ATRIUM_DATABASE_URL`, the
//! data directory, the running host's; a new one only with `--create`). Exit codes: 0 success,
//! 1 bad input (an invalid name, an unknown key id, no store found), 2 the store could not be
//! opened or written.

use std::process::ExitCode;

use atrium_store::{Store, StoreError};

/// `atrium keys` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: KeysCommand,
    #[command(flatten)]
    store: crate::hoststore::StoreArgs,
}

#[derive(Debug, clap::Subcommand)]
enum KeysCommand {
    /// Create a key; the last line printed is the key alone. It is not shown again.
    Create {
        /// A name to recognise the key by.
        #[arg(long, default_value = "default")]
        name: String,
        /// The organization the key belongs to (created when new). Tenants and usage are
        /// per organization.
        #[arg(long, default_value = "default")]
        org: String,
    },
    /// List keys (never their secrets).
    List {
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key by id: requests with it get 401 from then on.
    Revoke {
        /// The key's id (`key_...`, from `atrium keys list`).
        id: String,
    },
}

/// Opens the host's store for `atrium serve`: `ATRIUM_DATABASE_URL` when set, else SQLite in
/// `data_dir`.
pub async fn open_store(data_dir: &std::path::Path) -> Result<Store, StoreError> {
    match std::env::var("ATRIUM_DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Store::open_url(url.trim()).await,
        _ => Store::open_sqlite(data_dir).await,
    }
}

fn exit_for(error: &StoreError) -> ExitCode {
    eprintln!("error: {error}");
    match error {
        StoreError::Invalid(_) | StoreError::NotFound(_) => ExitCode::from(1),
        _ => ExitCode::from(2),
    }
}

fn time(at: jiff::Timestamp) -> String {
    at.round(jiff::Unit::Second).unwrap_or(at).to_string()
}

/// Runs `atrium keys`.
pub fn run(args: &Args) -> ExitCode {
    crate::block_on(false, async {
        let store = match args.store.open().await {
            Ok((store, _)) => store,
            Err(code) => return code,
        };
        let code = match &args.command {
            KeysCommand::Create { name, org } => match store.create_key(org, name).await {
                Ok(key) => {
                    println!(
                        "Created key {} ({}) for organization {} ({}).",
                        key.id, key.name, key.org_name, key.org_id
                    );
                    println!("It is shown only now; send it as `Authorization: Bearer <key>`.");
                    println!("{}", key.secret);
                    ExitCode::SUCCESS
                }
                Err(e) => exit_for(&e),
            },
            KeysCommand::List { json } => match store.list_keys().await {
                Ok(keys) if *json => {
                    let rows: Vec<serde_json::Value> = keys
                        .iter()
                        .map(|k| {
                            serde_json::json!({
                                "id": k.id, "name": k.name, "organization": k.org_name, "org_id": k.org_id,
                                "prefix": k.prefix, "created_at": time(k.created_at),
                                "revoked_at": k.revoked_at.map(time),
                            })
                        })
                        .collect();
                    println!("{}", serde_json::Value::Array(rows));
                    ExitCode::SUCCESS
                }
                Ok(keys) => {
                    println!(
                        "{:<22} {:<16} {:<16} {:<14} {:<22} STATUS",
                        "ID", "NAME", "ORGANIZATION", "PREFIX", "CREATED"
                    );
                    for k in keys {
                        let status = k.revoked_at.map_or_else(
                            || "active".to_owned(),
                            |t| format!("revoked {}", time(t)),
                        );
                        println!(
                            "{:<22} {:<16} {:<16} {:<14} {:<22} {status}",
                            k.id,
                            k.name,
                            k.org_name,
                            k.prefix,
                            time(k.created_at)
                        );
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => exit_for(&e),
            },
            KeysCommand::Revoke { id } => match store.revoke_key(id).await {
                Ok(key) => {
                    println!(
                        "Revoked key {} ({}) of organization {}.",
                        key.id, key.name, key.org_name
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => exit_for(&e),
            },
        };
        store.close().await;
        code
    })
}
