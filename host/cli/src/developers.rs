//! `atrium developers`: developer accounts of the app registry, and their tokens.
//!
//! A host administration command, like `atrium keys`: it works on the host's store directly
//! (chosen as [`crate::hoststore`] says) and signs tokens with the host's key
//! (`ATRIUM_JWT_SECRET`, else `<data-dir>/jwt.key`, the one `atrium serve` uses). Exit codes: 0
//! success, 1 bad input (an invalid email or login, one already taken, an unknown developer
//! or organization, no store found), 2 the store or the signing key could not be opened.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use atrium_platform::identity::{JWT_SECRET_ENV, TokenIssuer};
use atrium_store::{Developer, NewDeveloper, Store, StoreError};

/// The organization of dev tenants when `--org` is not given.
const DEV_ORGANIZATION: &str = "developers";

/// `atrium developers` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: DevelopersCommand,
    #[command(flatten)]
    store: crate::hoststore::StoreArgs,
}

#[derive(Debug, clap::Subcommand)]
enum DevelopersCommand {
    /// Create a developer account; the last line printed is a developer token for it.
    Create {
        /// The developer's email address (tokens of an OpenID Connect provider are mapped to
        /// the account by it).
        #[arg(long)]
        email: String,
        /// The login name: letters, digits and single hyphens.
        #[arg(long)]
        login: String,
        /// Allow the developer to promote versions (registering is always allowed).
        #[arg(long)]
        publish_allowed: bool,
        /// The organization (id or name) of the developer's dev tenant (default: the
        /// organization `developers`, created when new).
        #[arg(long)]
        org: Option<String>,
        /// The developer's dev tenant, in `--org` (default: `<login>-dev`): `atrium deploy`
        /// installs each promoted version there, for the developer to try.
        #[arg(long)]
        tenant: Option<String>,
        /// Create the account without a dev tenant.
        #[arg(long, conflicts_with_all = ["org", "tenant"])]
        no_dev_tenant: bool,
        /// How many days the token is valid.
        #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=365))]
        ttl_days: u32,
    },
    /// Issue a new token for a developer (by id, email or login); the last line is the token.
    Token {
        /// The developer's id, email or login.
        developer: String,
        /// How many days the token is valid.
        #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=365))]
        ttl_days: u32,
    },
    /// List developer accounts.
    List {
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Suspend a developer: their tokens get 401 from then on.
    Suspend {
        /// The developer's id, email or login.
        developer: String,
    },
    /// Lift a suspension.
    Reinstate {
        /// The developer's id, email or login.
        developer: String,
    },
    /// Allow or forbid promotion (`--allowed true|false`).
    Publish {
        /// The developer's id, email or login.
        developer: String,
        /// Whether the developer may promote versions.
        #[arg(long, action = clap::ArgAction::Set)]
        allowed: bool,
    },
}

fn exit_for(error: &StoreError) -> ExitCode {
    eprintln!("error: {error}");
    match error {
        StoreError::Invalid(_) | StoreError::NotFound(_) | StoreError::Conflict(_) => {
            ExitCode::from(1)
        }
        _ => ExitCode::from(2),
    }
}

fn issuer(data_dir: &std::path::Path) -> Result<TokenIssuer, ExitCode> {
    let configured = std::env::var(JWT_SECRET_ENV).ok().filter(|s| !s.is_empty());
    TokenIssuer::load_or_create(data_dir, configured.as_deref()).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

fn token_for(
    issuer: &TokenIssuer,
    developer: &Developer,
    ttl_days: u32,
) -> Result<String, ExitCode> {
    let ttl = Duration::from_secs(u64::from(ttl_days) * 86_400);
    issuer
        .issue(&developer.id, &developer.email, ttl)
        .map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        })
}

async fn find(store: &Store, reference: &str) -> Result<Developer, ExitCode> {
    match store.find_developer(reference).await {
        Ok(Some(d)) => Ok(d),
        Ok(None) => {
            eprintln!("error: there is no developer `{reference}` (give an id, email or login)");
            Err(ExitCode::from(1))
        }
        Err(e) => Err(exit_for(&e)),
    }
}

fn describe(d: &Developer) -> String {
    let publish = if d.publish_allowed {
        "may publish"
    } else {
        "may not publish"
    };
    let status = if d.suspended_at.is_some() {
        ", suspended"
    } else {
        ""
    };
    format!("{} <{}> ({}, {publish}{status})", d.login, d.email, d.id)
}

/// Runs `atrium developers`.
pub fn run(args: &Args) -> ExitCode {
    crate::block_on(false, async {
        let (store, chosen) = match args.store.open().await {
            Ok(opened) => opened,
            Err(code) => return code,
        };
        let code = command(args, &store, &chosen.data_dir)
            .await
            .unwrap_or_else(|code| code);
        store.close().await;
        code
    })
}

async fn command(args: &Args, store: &Store, data_dir: &Path) -> Result<ExitCode, ExitCode> {
    match &args.command {
        DevelopersCommand::Create {
            email,
            login,
            publish_allowed,
            org,
            tenant,
            no_dev_tenant,
            ttl_days,
        } => {
            let issuer = issuer(data_dir)?;
            let dev_tenant = if *no_dev_tenant {
                None
            } else {
                let org = match org {
                    Some(org) => org.clone(),
                    None => store
                        .ensure_organization(DEV_ORGANIZATION)
                        .await
                        .map_err(|e| exit_for(&e))?,
                };
                let tenant = tenant
                    .clone()
                    .unwrap_or_else(|| format!("{}-dev", login.to_lowercase()));
                Some((org, tenant))
            };
            let new = NewDeveloper {
                email,
                login,
                publish_allowed: *publish_allowed,
                dev_tenant: dev_tenant
                    .as_ref()
                    .map(|(org, tenant)| (org.as_str(), tenant.as_str())),
            };
            let developer = store
                .create_developer(&new)
                .await
                .map_err(|e| exit_for(&e))?;
            let token = token_for(&issuer, &developer, *ttl_days)?;
            println!("Created developer {}.", describe(&developer));
            match &developer.dev_tenant {
                Some((org, tenant)) => println!(
                    "Their dev tenant is `{tenant}` of organization {org}: each version they promote is installed there to try."
                ),
                None => println!("They have no dev tenant (--no-dev-tenant)."),
            }
            println!(
                "Their token is valid for {ttl_days} days; `atrium developers token {}` issues another.",
                developer.login
            );
            println!("{token}");
        }
        DevelopersCommand::Token {
            developer,
            ttl_days,
        } => {
            let issuer = issuer(data_dir)?;
            let developer = find(store, developer).await?;
            let token = token_for(&issuer, &developer, *ttl_days)?;
            println!(
                "A token for {}, valid for {ttl_days} days:",
                describe(&developer)
            );
            println!("{token}");
        }
        DevelopersCommand::List { json } => {
            let developers = store.list_developers().await.map_err(|e| exit_for(&e))?;
            if *json {
                let rows: Vec<serde_json::Value> = developers
                    .iter()
                    .map(|d| {
                        serde_json::json!({
                            "id": d.id, "email": d.email, "login": d.login,
                            "publish_allowed": d.publish_allowed,
                            "suspended": d.suspended_at.is_some(),
                            "tenant": d.dev_tenant.as_ref().map(|(o, t)| serde_json::json!({"organization": o, "tenant": t})),
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(rows));
            } else {
                for d in &developers {
                    println!("{}", describe(d));
                }
            }
        }
        DevelopersCommand::Suspend { developer } | DevelopersCommand::Reinstate { developer } => {
            let suspend = matches!(args.command, DevelopersCommand::Suspend { .. });
            let developer = find(store, developer).await?;
            let developer = store
                .set_developer_suspended(&developer.id, suspend)
                .await
                .map_err(|e| exit_for(&e))?;
            println!("{}", describe(&developer));
        }
        DevelopersCommand::Publish { developer, allowed } => {
            let developer = find(store, developer).await?;
            let developer = store
                .set_publish_allowed(&developer.id, *allowed)
                .await
                .map_err(|e| exit_for(&e))?;
            println!("{}", describe(&developer));
        }
    }
    Ok(ExitCode::SUCCESS)
}
