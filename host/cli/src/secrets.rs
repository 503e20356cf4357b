//! `atrium secrets`: an app's dev-default secrets, visible to every install (a tenant's
//! override wins). Values go in and never come back: `get` and `list` show metadata only.
//!
//! `--app` names the app; without it, the `app_id` of `./atrium.app.yaml`.

use std::io::Read;
use std::process::ExitCode;

use atrium_server::views::{PutSecret, SecretList, SecretView};

use crate::apps::check_slug;
use crate::client::{Client, Failure, Target, print_json, print_table};

/// `atrium secrets` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SecretsCommand,
    /// The app (default: the app_id of ./atrium.app.yaml).
    #[arg(long, value_name = "SLUG", global = true)]
    app: Option<String>,
    #[command(flatten)]
    target: Target,
}

#[derive(Debug, clap::Subcommand)]
enum SecretsCommand {
    /// Set a secret: `KEY=VALUE`, or `KEY` alone to read the value from standard input.
    Set {
        /// `KEY=VALUE` (KEY matches ^[A-Z][A-Z0-9_]{0,63}$).
        assignment: String,
        /// What the secret is for (kept when omitted).
        #[arg(long)]
        description: Option<String>,
    },
    /// List the app's secrets (keys, descriptions, dates; never values).
    List {
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one secret's metadata (never its value).
    Get {
        /// The key.
        key: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a secret.
    Delete {
        /// The key.
        key: String,
    },
}

fn check_key(key: &str) -> Result<(), Failure> {
    if atrium_manifest::rules::is_secret_key(key) {
        Ok(())
    } else {
        // Only the start is shown: what was given may be a value passed by mistake.
        let shown: String = key.chars().take(4).collect();
        let more = if key.chars().count() > 4 { "..." } else { "" };
        Err(Failure::BadInput(format!(
            "`{shown}{more}` is not a secret key: it must match ^[A-Z][A-Z0-9_]{{0,63}}$ (upper-case letters, digits, underscores); give the value as KEY=VALUE"
        )))
    }
}

/// The app: `--app`, else the app_id of the manifest in the current directory.
fn app(args: &Args) -> Result<String, Failure> {
    if let Some(app) = &args.app {
        check_slug(app)?;
        return Ok(app.clone());
    }
    let path = crate::lint::DEFAULT_MANIFEST;
    let text = std::fs::read_to_string(path).map_err(|_| {
        Failure::BadInput(format!(
            "name the app with --app SLUG (there is no {path} here to take its app_id from)"
        ))
    })?;
    let manifest = atrium_manifest::parse(&text).map_err(|_| {
        Failure::BadInput(format!(
            "name the app with --app SLUG ({path} does not validate: `atrium lint` says why)"
        ))
    })?;
    Ok(manifest.app_id)
}

fn print_secret(secret: &SecretView) {
    println!("key:         {}", secret.key);
    println!(
        "description: {}",
        secret.description.as_deref().unwrap_or("")
    );
    println!("created:     {}", secret.created_at);
    println!("updated:     {}", secret.updated_at);
}

pub fn run(args: &Args) -> ExitCode {
    crate::client::run("secrets", async {
        let app = app(args)?;
        let path = format!("/api/dev/apps/{app}/secrets");
        match &args.command {
            SecretsCommand::Set {
                assignment,
                description,
            } => {
                let (key, value) = match assignment.split_once('=') {
                    Some((key, value)) => {
                        check_key(key)?;
                        (key.to_owned(), value.to_owned())
                    }
                    None => {
                        // The key is checked before anything is read: a value passed by
                        // mistake in its place is not waited on, nor printed whole.
                        check_key(assignment)?;
                        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                            eprintln!("Value of {assignment} (then Enter and Ctrl-D):");
                        }
                        let mut value = String::new();
                        std::io::stdin().read_to_string(&mut value).map_err(|e| {
                            Failure::BadInput(format!(
                                "cannot read the value from standard input: {e}"
                            ))
                        })?;
                        let value = value.strip_suffix('\n').unwrap_or(&value);
                        let value = value.strip_suffix('\r').unwrap_or(value);
                        (assignment.clone(), value.to_owned())
                    }
                };
                check_key(&key)?;
                let client = Client::configured(&args.target)?;
                let body = PutSecret {
                    value,
                    description: description.clone(),
                };
                let response = client
                    .send(reqwest::Method::PUT, &format!("{path}/{key}"), Some(&body))
                    .await?;
                let created = response.status() == reqwest::StatusCode::CREATED;
                println!(
                    "{} secret {key} of {app}; its value is never shown again.",
                    if created { "Set new" } else { "Replaced" }
                );
                Ok(())
            }
            SecretsCommand::List { json } => {
                let client = Client::configured(&args.target)?;
                let list: SecretList = client
                    .call(reqwest::Method::GET, &path, None::<&()>)
                    .await?;
                if *json {
                    return print_json(&list);
                }
                if list.secrets.is_empty() {
                    println!("{app} has no secrets.");
                    return Ok(());
                }
                let rows: Vec<Vec<String>> = list
                    .secrets
                    .iter()
                    .map(|s| {
                        vec![
                            s.key.clone(),
                            s.updated_at.clone(),
                            s.description.clone().unwrap_or_default(),
                        ]
                    })
                    .collect();
                print_table(&["KEY", "UPDATED", "DESCRIPTION"], &rows);
                Ok(())
            }
            SecretsCommand::Get { key, json } => {
                check_key(key)?;
                let client = Client::configured(&args.target)?;
                let secret: SecretView = client
                    .call(reqwest::Method::GET, &format!("{path}/{key}"), None::<&()>)
                    .await?;
                if *json {
                    return print_json(&secret);
                }
                print_secret(&secret);
                Ok(())
            }
            SecretsCommand::Delete { key } => {
                check_key(key)?;
                let client = Client::configured(&args.target)?;
                client
                    .send(
                        reqwest::Method::DELETE,
                        &format!("{path}/{key}"),
                        None::<&()>,
                    )
                    .await?;
                println!("Deleted secret {key} of {app}.");
                Ok(())
            }
        }
    })
}
